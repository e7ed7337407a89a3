"""Which files of a repository Threadline reads: one set of rules for the walk that indexes and
for every code tool that reads.

A file is readable when it is a regular file (not a symlink, and not under a symlinked folder:
either may point anywhere), no folder on its path is a vendored or generated one
(`SKIPPED_DIRS`), no `.gitignore` on its path ignores it (git's semantics through `pathspec`,
the root's and nested ones) unless git tracks it (git keeps a tracked file whatever a
`.gitignore` says: a file force-added in an ignored folder is part of the repository), its
name does not look like a secret (`core.code.secrets`), it is at most `MAX_FILE_BYTES`, and
its first 8 KiB hold no NUL byte (binary).

`walk()` applies these rules top-down; `Selection` answers them for one path at a time, caching
per folder, for what reaches a file some other way: ripgrep's hits (whatever `path_glob` the
model passed, or ignore files ripgrep reads and the walk does not), `read_file`'s path, a search
result indexed before the file became ignored.
"""

from __future__ import annotations

import os
import stat
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Literal, Protocol, TypeVar

from core.code.git_local import tracked_files
from core.code.secrets import looks_secret

if TYPE_CHECKING:
    import pathspec

MAX_FILE_BYTES = 1_000_000
SNIFF_BYTES = 8_192

SKIPPED_DIRS = frozenset(
    {
        ".git",
        ".hg",
        ".svn",
        "node_modules",
        "bower_components",
        "vendor",
        "third_party",
        "dist",
        "build",
        "out",
        "target",
        "__pycache__",
        ".venv",
        "venv",
        ".tox",
        ".nox",
        ".mypy_cache",
        ".pytest_cache",
        ".ruff_cache",
        ".gradle",
        ".next",
        ".nuxt",
        ".terraform",
        ".idea",
        ".eggs",
    }
)

# Why a file is not read; read_file turns these into its refusals.
Refusal = Literal["secret", "missing", "ignored", "symlink", "large", "binary"]
Specs = list[tuple[str, "pathspec.GitIgnoreSpec"]]  # (folder, its .gitignore), outermost first


def is_binary(path: Path) -> bool:
    with path.open("rb") as fh:
        return b"\0" in fh.read(SNIFF_BYTES)


def ignore_spec(directory: Path) -> pathspec.GitIgnoreSpec | None:
    import pathspec

    ignore = directory / ".gitignore"
    try:
        if ignore.is_symlink() or not ignore.is_file():
            return None
        lines = ignore.read_text(encoding="utf-8", errors="replace").splitlines()
    except OSError:
        return None
    return pathspec.GitIgnoreSpec.from_lines(lines)


def ignored(specs: Specs, rel: str, is_dir: bool) -> bool:
    """git's rule: the deepest .gitignore with a matching pattern decides (a `!pattern` in a
    nested file re-includes what a parent excluded)."""
    candidate = rel + "/" if is_dir else rel
    for base, spec in reversed(specs):
        sub = candidate[len(base) + 1 :] if base else candidate
        result = spec.check_file(sub)
        if result.include is not None:
            return bool(result.include)
    return False


def skipped_dir(name: str) -> bool:
    return name in SKIPPED_DIRS


def printable_name(name: str) -> bool:
    """Whether a file or folder name is text: names that are not UTF-8 reach Python as lone
    surrogates, which the database, JSON and chat platforms all refuse."""
    try:
        name.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def file_refusal(rel: str, st: os.stat_result, path: Path, max_bytes: int) -> Refusal | None:
    """The per-file rules, for a file whose folders are readable and that no .gitignore
    ignores; `st` is its lstat. The binary check reads the file, so it comes last."""
    if stat.S_ISLNK(st.st_mode):
        return "symlink"
    if not stat.S_ISREG(st.st_mode) or not printable_name(rel):
        return "missing"
    if looks_secret(rel):
        return "secret"
    if st.st_size > max_bytes:
        return "large"
    try:
        return "binary" if is_binary(path) else None
    except OSError:
        return "missing"


class TrackedFiles:
    """The files git tracks under a root, asked for once, and only the first time a
    `.gitignore` excludes something (most lookups never need git). Not in a git work tree, or
    git unavailable: nothing is tracked, and the `.gitignore` files decide alone."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self._files: frozenset[str] | None = None
        self._folders: frozenset[str] = frozenset()

    def _load(self) -> frozenset[str]:
        if self._files is None:
            files = tracked_files(self.root) or frozenset()
            folders = set()
            for path in files:
                folder = path.rpartition("/")[0]
                while folder and folder not in folders:
                    folders.add(folder)
                    folder = folder.rpartition("/")[0]
            self._files, self._folders = files, frozenset(folders)
        return self._files

    def has(self, rel: str) -> bool:
        """Whether git tracks the file `rel`."""
        return rel in self._load()

    def inside(self, folder: str) -> bool:
        """Whether git tracks a file somewhere in `folder`."""
        self._load()
        return folder in self._folders


class Selection:
    """The rules for one repository, asked per path (repo-relative, "/"-separated, clean: see
    `core.code.paths.clean_relative`). Caches per folder and per file: make one per request,
    so an edited .gitignore counts from the next one."""

    def __init__(self, root: Path, *, max_bytes: int = MAX_FILE_BYTES) -> None:
        self.root = root.resolve()
        self.max_bytes = max_bytes
        self._specs: dict[str, Specs] = {}
        self._skipped: dict[str, bool] = {}  # folder -> it or a parent is a skipped folder
        self._ignored: dict[str, bool] = {}  # folder -> a .gitignore ignores it or a parent
        self._tracked = TrackedFiles(self.root)
        self._links: dict[str, bool] = {}  # folder -> it or a parent is not a real folder
        self._files: dict[str, Refusal | None] = {}

    def _specs_in(self, folder: str) -> Specs:
        """The .gitignore files in force inside `folder` ("" is the root)."""
        cached = self._specs.get(folder)
        if cached is None:
            outer = self._specs_in(folder.rpartition("/")[0]) if folder else []
            spec = ignore_spec(self.root / folder)
            cached = [*outer, (folder, spec)] if spec is not None else outer
            self._specs[folder] = cached
        return cached

    def _folder_skipped(self, folder: str) -> bool:
        if not folder:
            return False
        cached = self._skipped.get(folder)
        if cached is None:
            parent, _, name = folder.rpartition("/")
            cached = self._folder_skipped(parent) or skipped_dir(name)
            self._skipped[folder] = cached
        return cached

    def _folder_ignored(self, folder: str) -> bool:
        if not folder:
            return False
        cached = self._ignored.get(folder)
        if cached is None:
            parent = folder.rpartition("/")[0]
            cached = self._folder_ignored(parent) or ignored(
                self._specs_in(parent), folder, is_dir=True
            )
            self._ignored[folder] = cached
        return cached

    def _folder_linked(self, folder: str) -> bool:
        if not folder:
            return False
        cached = self._links.get(folder)
        if cached is None:
            try:
                mode = os.lstat(self.root / folder).st_mode
                cached = not stat.S_ISDIR(mode)
            except OSError:
                cached = True
            cached = cached or self._folder_linked(folder.rpartition("/")[0])
            self._links[folder] = cached
        return cached

    def excluded(self, rel: str) -> bool:
        """Whether a folder on `rel`'s path is skipped, or a .gitignore ignores `rel` and git
        does not track it (no look at the file itself: it need not exist)."""
        folder = rel.rpartition("/")[0]
        if self._folder_skipped(folder):
            return True
        if self._folder_ignored(folder) or ignored(self._specs_in(folder), rel, False):
            return not self._tracked.has(rel)
        return False

    def refusal(self, rel: str) -> Refusal | None:
        """Why the walk would leave `rel` out, or None if it is readable. Checked in the order
        read_file explains them: a secret-looking name first, whatever else is true."""
        if rel in self._files:
            return self._files[rel]
        result: Refusal | None
        if not rel or looks_secret(rel):
            result = "secret" if rel else "missing"
        else:
            path = self.root / rel
            try:
                st = os.lstat(path)
            except OSError:
                st = None
            if st is None:
                result = "missing"
            elif self.excluded(rel):
                result = "ignored"
            elif self._folder_linked(rel.rpartition("/")[0]):
                result = "symlink"
            else:
                result = file_refusal(rel, st, path, self.max_bytes)
        self._files[rel] = result
        return result

    def allows(self, rel: str) -> bool:
        return self.refusal(rel) is None

    def known(self, rel: str) -> bool | None:
        """`allows(rel)` if already answered (no file system access), else None."""
        if rel in self._files:
            return self._files[rel] is None
        return None


class Located(Protocol):
    @property
    def repo(self) -> str: ...

    @property
    def path(self) -> str: ...


L = TypeVar("L", bound=Located)


def still_readable(items: Sequence[L], roots: Mapping[str, Path]) -> list[L]:
    """The items (search results) whose file is readable now: an index is a snapshot, and the
    file may have been ignored, renamed to a secret-looking name or deleted since."""
    selections: dict[str, Selection] = {}
    kept = []
    for item in items:
        root = roots.get(item.repo)
        if root is None:
            continue
        selection = selections.get(item.repo)
        if selection is None:
            selection = selections[item.repo] = Selection(root)
        if selection.allows(item.path):
            kept.append(item)
    return kept
