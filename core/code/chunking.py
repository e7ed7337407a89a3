"""Cutting source files into the chunks that get embedded and searched.

`chunk_file(repo, path, text)` reads a file with its tree-sitter grammar (see `languages`) and
returns, in line order:

- a **class** chunk per class-like declaration: its header and member signatures, with method
  bodies elided (`{ ... }` or `...`);
- a **method** / **function** chunk per definition: the whole definition (leading comments,
  decorators and `export` included), named `Class.method(params)` or `stem.function(params)`.
  A definition over `MAX_FUNCTION_CHARS` is split between top-level statements of its body,
  each later piece starting with the signature again; a cut never falls inside a line;
- **file** chunks for what no definition covers (imports, module-level code) and for files
  with no grammar or no definitions: split at line boundaries, at most `MAX_FILE_CHARS` each
  (only a single line longer than that is cut, inside itself);
- Markdown is split by headings into **section** chunks named by their heading path.

`embed_text` is the text with a short header (path, enclosing class, signature), the string to
embed. Parsing is CPU-bound and synchronous: call it from a worker thread, not the event loop.

This module picks the chunker for a file and keeps `CHUNK_FORMAT`; the chunkers are apart:
`chunk_code` (tree-sitter grammars), `chunk_text` (lines and Markdown), and the record they
return, with the size limits, is `chunk.Chunk`. Two passes add what a file says elsewhere about
a definition to its embedding context: a Go type lists its methods, and a C function that a
Python extension registers gets its Python name and docstring (`chunk_pyext`).
"""

from __future__ import annotations

import dataclasses
import re

from core.code.chunk import Chunk
from core.code.chunk_code import ChunkBuilder
from core.code.chunk_pyext import with_python_docs
from core.code.chunk_text import file_chunks, markdown_chunks, split_lines
from core.code.languages import SPECS, language_for

# Raise it whenever chunks of the same file come out differently, so stored chunks are remade
# on the next index (2: content is redacted before chunking; 3: C functions that a Python
# extension registers carry their Python name and docstring). Only chunks whose embedding text
# changed are embedded again: the others keep their stored vectors (`CodeSearch.sync`).
CHUNK_FORMAT = 3
REDACTED_SINCE = 2  # chunks of this format or later were made from redacted text

_CPP_MARKERS = re.compile(r"\b(?:class|namespace|template|virtual|public:|private:)\b|::")


def chunk_file(repo: str, path: str, text: str) -> list[Chunk]:
    """The chunks of one file (an empty list for a blank file)."""
    text = text.replace("\r\n", "\n")
    language = language_for(path)
    if language == "cpp" and path.endswith(".h") and not _CPP_MARKERS.search(text):
        language = "c"  # `.h` is shared by C and C++: plain C headers get the C grammar
    if language == "markdown":
        return markdown_chunks(repo, path, text)
    if language is None or language not in SPECS:
        return file_chunks(repo, path, language or "text", split_lines(text))
    chunks = ChunkBuilder(repo, path, language, text).build()
    if language == "go":
        return _with_go_methods(chunks)
    if language in ("c", "cpp"):
        return with_python_docs(chunks, text)
    return chunks


def _with_go_methods(chunks: list[Chunk]) -> list[Chunk]:
    """Go declares methods outside their type: a type's chunk gets the signatures of the
    methods this file declares for it in its embedding context (its text stays the source)."""
    methods: dict[str, list[str]] = {}
    for c in chunks:
        if c.kind == "method" and "." in c.symbol:
            owner, signature = c.symbol.split(".", 1)
            methods.setdefault(owner, []).append(signature)
    if not methods:
        return chunks
    out = []
    for c in chunks:
        listed = methods.get(c.symbol) if c.kind == "class" else None
        if listed:
            context = c.embed_text.removesuffix(c.text).removesuffix("\n\n")
            context += "\nMethods: " + "; ".join(listed) + "\n\n"
            c = dataclasses.replace(c, embed_text=context + c.text)
        out.append(c)
    return out
