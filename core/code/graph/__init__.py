"""The code graph: who calls what, who extends what, who imports what.

`extract_*` modules read one file with its tree-sitter grammar and describe it as `FileFacts`
(definitions, name bindings, references, all symbolic); `resolve` links the references of
every file through imports, scopes and class hierarchies into `Edge`s; `store` keeps both in
SQL per file so that one changed file costs one extraction and the re-resolution of the files
that depend on it; `query` answers `/graph`, `threadline graph` and the `code_graph` tool.
"""
