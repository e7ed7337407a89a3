"""What a Python C extension says about its own functions, put into their embedding context.

A C function that Python code calls (`mmh3_hash64`) is registered in a method table under the
name Python sees (`{"hash64", (PyCFunction)mmh3_hash64, METH_..., mmh3_hash64_doc}`), with its
documentation in a `PyDoc_STRVAR(mmh3_hash64_doc, "...")` elsewhere in the file. The function's
own chunk holds none of that English: people ask "the 64-bit hash pair ignores the signedness
flag", and what answers is an uncommented C body while the docstring sits in a file chunk of
its own. Here each such function's chunk gets the Python name and the start of its docstring
in its embedding header; its text stays the source.

Read with regular expressions over the file's text, not the syntax tree: the tables and the
`PyDoc_STRVAR` macro are plain token patterns, and the tree of a macro call is the grammar's
guess anyway.
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Sequence

from core.code.chunk import Chunk

MAX_DOC_CHARS = 300  # of the docstring, whitespace collapsed: the header stays short

_STRINGS = r'(?:\s*"(?:[^"\\\n]|\\.)*")+'
_DOC_VAR = re.compile(r"\bPyDoc_STRVAR\(\s*(\w+)\s*,(" + _STRINGS + r")\s*\)")
# {"name", (PyCFunction)(void (*)(void))c_function, FLAGS, doc} in a PyMethodDef table; the
# doc is a PyDoc_STRVAR name, PyDoc_STR("..."), a string literal, or NULL.
_ENTRY = re.compile(
    r'\{\s*"([A-Za-z_]\w*)"\s*,\s*(?:\([^(){}]*(?:\([^(){}]*\)[^(){}]*)*\)\s*)*(\w+)\s*,'
    r"\s*[\w\s|]+,\s*(\w+|PyDoc_STR\((" + _STRINGS + r")\s*\)|(" + _STRINGS + r"))\s*\}"
)
_LITERAL = re.compile(r'"((?:[^"\\\n]|\\.)*)"')
_ESCAPE = re.compile(r"\\(.)")
_SPACES = re.compile(r"\s+")


def _unquote(literals: str) -> str:
    """The text of adjacent C string literals, escapes read loosely, whitespace collapsed."""
    raw = "".join(_LITERAL.findall(literals))
    text = _ESCAPE.sub(lambda m: " " if m.group(1) in "ntr" else m.group(1), raw)
    return _SPACES.sub(" ", text).strip()


def _short(text: str) -> str:
    return text if len(text) <= MAX_DOC_CHARS else text[: MAX_DOC_CHARS - 3].rstrip() + "..."


def python_names(text: str) -> dict[str, tuple[str, str]]:
    """C function name -> (the name Python calls it by, its docstring shortened; "" if none)."""
    if "PyMethodDef" not in text:
        return {}
    docs = {m.group(1): _unquote(m.group(2)) for m in _DOC_VAR.finditer(text)}
    out: dict[str, tuple[str, str]] = {}
    for m in _ENTRY.finditer(text):
        py_name, c_name, doc = m.group(1), m.group(2), m.group(3)
        if m.group(4) is not None:
            doc_text = _unquote(m.group(4))
        elif m.group(5) is not None:
            doc_text = _unquote(m.group(5))
        else:
            doc_text = docs.get(doc, "")
        out.setdefault(c_name, (py_name, _short(doc_text)))
    return out


def with_python_docs(chunks: Sequence[Chunk], text: str) -> list[Chunk]:
    """`chunks` of a C or C++ file, functions registered for Python with that name and doc in
    their embedding context."""
    names = python_names(text)
    if not names:
        return list(chunks)
    out = []
    for c in chunks:
        found = (
            names.get(c.symbol.split("(", 1)[0].rsplit(".", 1)[-1])
            if c.kind == "function"
            else None
        )
        if found is not None:
            py_name, doc = found
            context = c.embed_text.removesuffix(c.text).removesuffix("\n\n")
            context += f"\nPython: {py_name}" + (f": {doc}" if doc else "") + "\n\n"
            c = dataclasses.replace(c, embed_text=context + c.text)
        out.append(c)
    return out
