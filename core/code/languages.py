"""Which tree-sitter grammar reads which file, and which of its nodes are definitions.

The grammars ship inside the `tree-sitter-language-pack` 0.13 wheel (compiled, nothing is
fetched at run time). A `LanguageSpec` names, per grammar, the node types that are classes
(containers whose members become methods), functions, and the wrappers whose range a
definition takes (decorators, `export`). Parsers are cached per thread: a tree-sitter `Parser`
must not be used by two threads at once, and chunking runs in worker threads.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from tree_sitter import Parser
    from tree_sitter_language_pack import SupportedLanguage


@dataclass(frozen=True, slots=True)
class LanguageSpec:
    name: SupportedLanguage  # the tree-sitter-language-pack name, also the chunk's `language`
    classes: frozenset[str]
    functions: frozenset[str]
    wrappers: frozenset[str] = frozenset()  # a definition's parent of this type lends its range


def _spec(
    name: SupportedLanguage, classes: str, functions: str, wrappers: str = ""
) -> tuple[str, LanguageSpec]:
    return name, LanguageSpec(
        name, frozenset(classes.split()), frozenset(functions.split()), frozenset(wrappers.split())
    )


_JS_CLASSES = "class_declaration class abstract_class_declaration"
_JS_FUNCTIONS = "function_declaration generator_function_declaration method_definition"
_TS_CLASSES = _JS_CLASSES + " interface_declaration enum_declaration"
_TS_FUNCTIONS = _JS_FUNCTIONS + " abstract_method_signature function_signature"

SPECS: dict[str, LanguageSpec] = dict(
    [
        _spec("python", "class_definition", "function_definition", "decorated_definition"),
        _spec(
            "java",
            "class_declaration interface_declaration enum_declaration record_declaration "
            "annotation_type_declaration",
            "method_declaration constructor_declaration compact_constructor_declaration",
        ),
        _spec("javascript", _JS_CLASSES, _JS_FUNCTIONS, "export_statement"),
        _spec("typescript", _TS_CLASSES, _TS_FUNCTIONS, "export_statement"),
        _spec("tsx", _TS_CLASSES, _TS_FUNCTIONS, "export_statement"),
        _spec("go", "type_spec", "function_declaration method_declaration"),
        _spec(
            "rust",
            "struct_item enum_item union_item trait_item impl_item",
            "function_item function_signature_item",
        ),
        _spec("c", "struct_specifier union_specifier", "function_definition"),
        _spec(
            "cpp",
            "class_specifier struct_specifier union_specifier",
            "function_definition",
            "template_declaration",
        ),
        _spec(
            "csharp",
            "class_declaration interface_declaration struct_declaration record_declaration "
            "enum_declaration",
            "method_declaration constructor_declaration destructor_declaration "
            "operator_declaration local_function_statement",
        ),
        _spec("ruby", "class module singleton_class", "method singleton_method"),
        _spec(
            "php",
            "class_declaration interface_declaration trait_declaration enum_declaration",
            "method_declaration function_definition",
        ),
        _spec("kotlin", "class_declaration object_declaration", "function_declaration"),
    ]
)

EXTENSIONS: dict[str, str] = {
    ".py": "python",
    ".pyi": "python",
    ".java": "java",
    ".js": "javascript",
    ".mjs": "javascript",
    ".cjs": "javascript",
    ".jsx": "javascript",
    ".ts": "typescript",
    ".mts": "typescript",
    ".cts": "typescript",
    ".tsx": "tsx",
    ".go": "go",
    ".rs": "rust",
    ".c": "c",
    ".h": "cpp",  # C or C++: the C++ grammar reads both well enough
    ".cc": "cpp",
    ".cpp": "cpp",
    ".cxx": "cpp",
    ".hh": "cpp",
    ".hpp": "cpp",
    ".hxx": "cpp",
    ".cs": "csharp",
    ".rb": "ruby",
    ".rake": "ruby",
    ".php": "php",
    ".kt": "kotlin",
    ".kts": "kotlin",
    ".md": "markdown",
    ".markdown": "markdown",
    ".mdx": "markdown",
}

FILENAMES: dict[str, str] = {"Rakefile": "ruby", "Gemfile": "ruby"}


def language_for(path: str) -> str | None:
    """The language of a file by its name, or None when Threadline has no grammar for it.
    The name and suffix as `PurePosixPath` gives them, without building one: this runs for
    every file of a repository on each index (a twentieth of a one-file graph update)."""
    name = path.rstrip("/").rpartition("/")[2]
    dot = name.rfind(".")
    suffix = name[dot:] if 0 < dot < len(name) - 1 else ""
    return FILENAMES.get(name) or EXTENSIONS.get(suffix.lower())


_local = threading.local()


def parser_for(language: str) -> Parser:
    """This thread's parser for a language in `SPECS` (created once per thread)."""
    cache: dict[str, Parser] | None = getattr(_local, "parsers", None)
    if cache is None:
        cache = {}
        _local.parsers = cache
    parser = cache.get(language)
    if parser is None:
        from tree_sitter_language_pack import get_parser

        parser = get_parser(SPECS[language].name)
        cache[language] = parser
    return parser
