"""`language_for` reads a path's name and suffix by hand: the same as `PurePosixPath` would."""

from __future__ import annotations

from pathlib import PurePosixPath

import pytest

from core.code.languages import EXTENSIONS, FILENAMES, language_for

TRICKY = [
    "main.py",
    "pkg/mod.PY",
    "a/b/c.tar.gz",
    ".bashrc",
    "dir/.hidden.py",
    "trailing.",
    "dir.d/noext",
    "x/y.test.ts",
    "Rakefile",
    "lib/Gemfile",
    "weird name with spaces.go",
    "ünï/cødé.rs",
    "a/b/",
    "..",
    "",
    "no/suffix/.",
]


@pytest.mark.parametrize("path", TRICKY)
def test_name_and_suffix_are_read_as_a_posix_path_reads_them(path: str) -> None:
    pure = PurePosixPath(path)
    expected = FILENAMES.get(pure.name) or EXTENSIONS.get(pure.suffix.lower())
    assert language_for(path) == expected


def test_known_languages_are_found() -> None:
    assert language_for("core/agent.py") == "python"
    assert language_for("web/App.TSX") == "tsx"
    assert language_for("Rakefile") == "ruby"
    assert language_for("README") is None
