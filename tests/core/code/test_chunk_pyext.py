"""A Python C extension's method table and docstrings reach its functions' embedding context."""

from __future__ import annotations

from core.code.chunk_pyext import MAX_DOC_CHARS, python_names
from core.code.chunking import chunk_file

EXTENSION = r"""#include <Python.h>

PyDoc_STRVAR(
    hasher_hash64_doc,
    "hash64(key, seed=0, signed=True) -> tuple[int, int]\n"
    "\n"
    "Return a hash as a tuple of two 64-bit integers.\n"
    "The \"signed\" flag is keyword-only.\n");

static PyObject *
hasher_hash64(PyObject *self, PyObject *const *args, Py_ssize_t nargs)
{
    return Py_BuildValue("(KK)", 0, 0);
}

static PyObject *
hasher_reset(PyObject *self, PyObject *unused)
{
    Py_RETURN_NONE;
}

static PyObject *
hasher_bare(PyObject *self, PyObject *unused)
{
    Py_RETURN_NONE;
}

static int
helper_not_exported(int x)
{
    return x + 1;
}

static PyMethodDef HasherMethods[] = {
    {"hash64", (PyCFunction)(void (*)(void))hasher_hash64, METH_FASTCALL | METH_KEYWORDS,
     hasher_hash64_doc},
    {"reset", (PyCFunction)hasher_reset, METH_NOARGS, PyDoc_STR("Forget " "what was fed.")},
    {"bare", hasher_bare, METH_NOARGS, NULL},
    {NULL, NULL, 0, NULL}
};
"""


def _by_name(path: str = "src/hasher.c", text: str = EXTENSION) -> dict[str, str]:
    return {
        c.symbol.split("(", 1)[0]: c.embed_text
        for c in chunk_file("r", path, text)
        if c.kind == "function"
    }


def test_the_table_names_each_c_function_by_its_python_name_and_docstring() -> None:
    names = python_names(EXTENSION)
    assert names["hasher_hash64"] == (
        "hash64",
        "hash64(key, seed=0, signed=True) -> tuple[int, int] Return a hash as a tuple of two "
        '64-bit integers. The "signed" flag is keyword-only.',
    )
    assert names["hasher_reset"] == ("reset", "Forget what was fed.")
    assert names["hasher_bare"] == ("bare", "")
    assert "helper_not_exported" not in names


def test_registered_functions_carry_it_in_their_embedding_context_only() -> None:
    chunks = {c.symbol.split("(", 1)[0]: c for c in chunk_file("r", "src/hasher.c", EXTENSION)}
    hash64 = chunks["hasher.hasher_hash64"]
    assert "\nPython: hash64: hash64(key, seed=0, signed=True)" in hash64.embed_text
    assert hash64.embed_text.endswith(hash64.text)
    assert "Python:" not in hash64.text  # the source itself is untouched
    assert "Python: reset: Forget what was fed.\n\n" in chunks["hasher.hasher_reset"].embed_text
    assert "Python: bare\n\n" in chunks["hasher.hasher_bare"].embed_text
    assert "Python:" not in chunks["hasher.helper_not_exported"].embed_text


def test_cpp_extensions_are_read_too_and_other_c_is_left_alone() -> None:
    assert "Python: hash64" in _by_name("src/hasher.cpp")["hasher.hasher_hash64"]
    plain = EXTENSION.replace("PyMethodDef", "Table")
    assert not any("Python:" in text for text in _by_name(text=plain).values())


def test_a_long_docstring_is_cut_short() -> None:
    long_doc = "Return " + "a very long description " * 50
    text = EXTENSION.replace('Forget " "what was fed.', long_doc)
    (_, doc) = python_names(text)["hasher_reset"]
    assert len(doc) <= MAX_DOC_CHARS
    assert doc.endswith("...")


def test_malformed_tables_and_docstrings_name_nothing_and_fail_nothing() -> None:
    broken = [
        'PyMethodDef m[] = {{"f", (PyCFunction)f, METH_NOARGS',  # cut off
        'PyMethodDef PyDoc_STRVAR(doc, "never closed',
        "PyMethodDef " + '{"a", (' * 20_000,  # a hostile file: no backtracking blow-up
        'PyMethodDef {"a", ' + "(x)" * 20_000,
    ]
    for text in broken:
        assert python_names(text) == {}
        chunk_file("r", "src/broken.c", text)
