"""Which files of a repository Threadline reads, and incremental indexing of them.

`walk(root)` yields the readable files of a work tree: `.gitignore` files are honoured (the
root's and nested ones, with git's semantics through `pathspec`), vendored and generated
folders are skipped, and so are symlinks (they may point anywhere), binary files (a NUL byte in
the first 8 KiB), files over the size limit and files that look like secrets.

`index_repo(...)` brings a repository's `RepoFile` rows in line with the work tree: unchanged
files are recognised by size and mtime (then by hash when those moved), changed and new files
are hashed and stored, deleted ones removed. Its `IndexResult` names the paths that were added,
changed and removed: that is the seam where chunking and embedding will hook in (re-chunk the
upserted paths, drop the removed ones from the vector store). Nothing of that exists yet.
"""

from __future__ import annotations

import asyncio
import hashlib
import os
import stat
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING

from core.code.secrets import looks_secret

if TYPE_CHECKING:
    import pathspec

    from core.store.engine import Database
    from core.store.models import Repo

MAX_FILE_BYTES = 1_000_000
SNIFF_BYTES = 8_192
HASH_BATCH = 64  # files hashed per worker-thread hop (and per progress report)

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

Progress = Callable[[int, int], None]  # (files examined, files in the tree)


@dataclass(frozen=True, slots=True)
class WalkedFile:
    path: str  # relative to the root, "/"-separated
    size: int
    mtime_ns: int


@dataclass(frozen=True, slots=True)
class IndexResult:
    added: tuple[str, ...] = ()
    changed: tuple[str, ...] = ()
    removed: tuple[str, ...] = ()
    unchanged: int = 0
    chunks_written: int = 0

    @property
    def files(self) -> int:
        return len(self.added) + len(self.changed) + self.unchanged

    def summary(self) -> dict[str, int]:
        return {
            "added": len(self.added),
            "changed": len(self.changed),
            "removed": len(self.removed),
            "unchanged": self.unchanged,
            "files": self.files,
            "chunks_written": self.chunks_written,
        }


def is_binary(path: Path) -> bool:
    with path.open("rb") as fh:
        return b"\0" in fh.read(SNIFF_BYTES)


def _ignore_spec(directory: Path) -> pathspec.GitIgnoreSpec | None:
    import pathspec

    ignore = directory / ".gitignore"
    try:
        if ignore.is_symlink() or not ignore.is_file():
            return None
        lines = ignore.read_text(encoding="utf-8", errors="replace").splitlines()
    except OSError:
        return None
    return pathspec.GitIgnoreSpec.from_lines(lines)


def _ignored(specs: list[tuple[str, pathspec.GitIgnoreSpec]], rel: str, is_dir: bool) -> bool:
    """git's rule: the deepest .gitignore with a matching pattern decides (a `!pattern` in a
    nested file re-includes what a parent excluded)."""
    candidate = rel + "/" if is_dir else rel
    for base, spec in reversed(specs):
        sub = candidate[len(base) + 1 :] if base else candidate
        result = spec.check_file(sub)
        if result.include is not None:
            return bool(result.include)
    return False


def walk(root: Path, *, max_bytes: int = MAX_FILE_BYTES) -> Iterator[WalkedFile]:
    """The files of `root` Threadline may read, in a stable (sorted) order."""
    root = root.resolve()
    yield from _walk_dir(root, "", [], max_bytes)


def _walk_dir(
    directory: Path,
    rel: str,
    specs: list[tuple[str, pathspec.GitIgnoreSpec]],
    max_bytes: int,
) -> Iterator[WalkedFile]:
    spec = _ignore_spec(directory)
    if spec is not None:
        specs = [*specs, (rel, spec)]
    try:
        entries = sorted(os.scandir(directory), key=lambda e: e.name)
    except OSError:
        return
    for entry in entries:
        child = f"{rel}/{entry.name}" if rel else entry.name
        try:
            st = entry.stat(follow_symlinks=False)
        except OSError:
            continue
        if stat.S_ISLNK(st.st_mode):
            continue
        if stat.S_ISDIR(st.st_mode):
            if entry.name in SKIPPED_DIRS or _ignored(specs, child, True):
                continue
            yield from _walk_dir(Path(entry.path), child, specs, max_bytes)
        elif stat.S_ISREG(st.st_mode):
            if st.st_size > max_bytes or looks_secret(child) or _ignored(specs, child, False):
                continue
            try:
                if is_binary(Path(entry.path)):
                    continue
            except OSError:
                continue
            yield WalkedFile(child, st.st_size, st.st_mtime_ns)


def sha256_file(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as fh:
        for block in iter(lambda: fh.read(1 << 16), b""):
            digest.update(block)
    return digest.hexdigest()


def _hash_batch(root: Path, files: list[WalkedFile]) -> list[tuple[WalkedFile, str | None]]:
    out: list[tuple[WalkedFile, str | None]] = []
    for f in files:
        try:
            out.append((f, sha256_file(root / f.path)))
        except OSError:  # deleted or unreadable since the walk: treated as gone
            out.append((f, None))
    return out


async def index_repo(
    db: Database,
    repo: Repo,
    *,
    progress: Progress | None = None,
    max_bytes: int = MAX_FILE_BYTES,
    now: Callable[[], datetime] = lambda: datetime.now(UTC),
) -> IndexResult:
    """Bring `repo`'s RepoFile rows in line with its work tree; see the module docstring."""
    from sqlmodel import col, delete, select, update

    from core.store.models import Repo, RepoFile

    assert repo.id is not None
    root = Path(repo.root)
    tree = await asyncio.to_thread(lambda: list(walk(root, max_bytes=max_bytes)))
    async with db.session() as s:
        rows = (await s.exec(select(RepoFile).where(col(RepoFile.repo_id) == repo.id))).all()
    known = {r.path: r for r in rows}
    total = len(tree)

    unchanged = 0
    to_hash: list[WalkedFile] = []
    for f in tree:
        row = known.get(f.path)
        if row is not None and row.size == f.size and row.mtime_ns == f.mtime_ns:
            unchanged += 1
        else:
            to_hash.append(f)
    if progress is not None:
        progress(unchanged, total)

    added: list[str] = []
    changed: list[str] = []
    touched: list[str] = []  # same content, new mtime: only the stored mtime moves
    seen = {f.path for f in tree}
    stamp = now()
    done = unchanged
    table = RepoFile.__table__  # type: ignore[attr-defined]
    for start in range(0, len(to_hash), HASH_BATCH):
        batch = await asyncio.to_thread(_hash_batch, root, to_hash[start : start + HASH_BATCH])
        async with db.session() as s:
            for f, digest in batch:
                if digest is None:
                    seen.discard(f.path)
                    continue
                row = known.get(f.path)
                if row is not None and row.sha256 == digest:
                    unchanged += 1
                    touched.append(f.path)
                else:
                    (changed if row is not None else added).append(f.path)
                values = {
                    "repo_id": repo.id,
                    "path": f.path,
                    "sha256": digest,
                    "size": f.size,
                    "mtime_ns": f.mtime_ns,
                    "indexed_at": stamp,
                }
                await s.exec(
                    db.upsert(
                        table,
                        values,
                        ["repo_id", "path"],
                        ["sha256", "size", "mtime_ns", "indexed_at"],
                    )
                )
        done += len(batch)
        if progress is not None:
            progress(done, total)

    removed = sorted(set(known) - seen)
    async with db.session() as s:
        for start in range(0, len(removed), 500):
            part = removed[start : start + 500]
            await s.exec(
                delete(RepoFile).where(
                    col(RepoFile.repo_id) == repo.id, col(RepoFile.path).in_(part)
                )
            )
        file_count = len(added) + len(changed) + unchanged
        await s.exec(
            update(Repo)
            .where(col(Repo.id) == repo.id)
            .values(last_indexed_at=stamp, file_count=file_count)
        )
    repo.last_indexed_at = stamp
    repo.file_count = file_count
    # Chunks follow the files: new and changed ones are re-chunked, removed ones dropped, and
    # files indexed before they had chunks catch up. (Embedding will hook in here next.)
    from core.code.chunk_store import paths_without_chunks, replace_chunks

    current = sorted(seen)
    stale = set(added) | set(changed)
    missing = await paths_without_chunks(db, repo.id, [p for p in current if p not in stale])
    written = await replace_chunks(
        db, repo.id, repo.name, root, [*added, *changed, *missing], removed
    )
    return IndexResult(tuple(added), tuple(changed), tuple(removed), unchanged, written)


def excluded(root: Path, rel: str) -> bool:
    """Whether the walk would leave out the file `rel` for its folders or a .gitignore (the
    per-file checks, binary, size and secrets, are the caller's). `rel` is a clean relative
    path ("a/b.py"); `root` is resolved."""
    parts = rel.split("/")
    if any(part in SKIPPED_DIRS for part in parts[:-1]):
        return True
    specs: list[tuple[str, pathspec.GitIgnoreSpec]] = []
    base = ""
    directory = root
    for i, part in enumerate(parts):
        spec = _ignore_spec(directory)
        if spec is not None:
            specs.append((base, spec))
        child = f"{base}/{part}" if base else part
        if _ignored(specs, child, is_dir=i < len(parts) - 1):
            return True
        base, directory = child, directory / part
    return False
