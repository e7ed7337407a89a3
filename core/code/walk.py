"""Walking a repository's readable files, and incremental indexing of them.

`walk(root)` yields the readable files of a work tree, by the rules of `core.code.selection`
(which every code tool applies too): `.gitignore` files are honoured (the root's and nested
ones) for the files git does not track, vendored and generated folders are skipped, and so
are symlinks, binary files, files over the size limit and files that look like secrets.

`index_repo(...)` brings a repository's `RepoFile` rows in line with the work tree: unchanged
files are recognised by size and mtime (then by hash when those moved), changed and new files
are hashed and stored, deleted ones removed; then the chunks of added and changed files are
recomputed (`core.code.chunk_store`), and so is their part of the code graph
(`core.code.graph.store`). Its `IndexResult` names the paths that were added,
changed and removed.
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
from typing import TYPE_CHECKING, Any

from core.code.selection import (
    MAX_FILE_BYTES,
    SKIPPED_DIRS,
    Selection,
    Specs,
    TrackedFiles,
    file_refusal,
    ignore_spec,
    ignored,
    is_binary,
    printable_name,
    skipped_dir,
)
from core.store.tables import table_of

if TYPE_CHECKING:
    from core.code.graph.pool import GraphWorkers
    from core.store.engine import Database
    from core.store.models import Repo

__all__ = ["MAX_FILE_BYTES", "SKIPPED_DIRS", "excluded", "index_repo", "is_binary", "walk"]

HASH_BATCH = 64  # files hashed per worker-thread hop (and per progress report)

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


def walk(root: Path, *, max_bytes: int = MAX_FILE_BYTES) -> Iterator[WalkedFile]:
    """The files of `root` Threadline may read, in a stable (sorted) order."""
    root = root.resolve()
    yield from _walk_dir(root, "", [], max_bytes, TrackedFiles(root), only_tracked=False)


def _walk_dir(
    directory: Path,
    rel: str,
    specs: Specs,
    max_bytes: int,
    tracked: TrackedFiles,
    *,
    only_tracked: bool,
) -> Iterator[WalkedFile]:
    """`only_tracked`: a .gitignore ignores this folder, so only what git tracks in it is read
    (as in git, nothing inside an ignored folder can be un-ignored)."""
    spec = ignore_spec(directory)
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
        if stat.S_ISDIR(st.st_mode):
            if skipped_dir(entry.name) or not printable_name(entry.name):
                continue
            inner = only_tracked or ignored(specs, child, True)
            if inner and not tracked.inside(child):
                continue
            yield from _walk_dir(
                Path(entry.path), child, specs, max_bytes, tracked, only_tracked=inner
            )
        else:
            if (only_tracked or ignored(specs, child, False)) and not tracked.has(child):
                continue
            if file_refusal(child, st, Path(entry.path), max_bytes) is None:
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
    graph_workers: GraphWorkers | None = None,
) -> IndexResult:
    """Bring `repo`'s RepoFile rows in line with its work tree; see the module docstring.
    `graph_workers` parse many files for the code graph on other cores."""
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
    table = table_of(RepoFile)
    for start in range(0, len(to_hash), HASH_BATCH):
        batch = await asyncio.to_thread(_hash_batch, root, to_hash[start : start + HASH_BATCH])
        records: list[dict[str, Any]] = []
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
            records.append(
                {
                    "repo_id": repo.id,
                    "path": f.path,
                    "sha256": digest,
                    "size": f.size,
                    "mtime_ns": f.mtime_ns,
                    "indexed_at": stamp,
                }
            )
        async with db.session() as s:  # one statement per batch: one per file took longer
            await db.upsert_rows(
                s, table, records, ["repo_id", "path"], ["sha256", "size", "mtime_ns", "indexed_at"]
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
    # Chunks of an older format (made before secrets were redacted, say) are all remade.
    from core.code.chunk_store import (
        chunk_format,
        paths_without_chunks,
        record_chunk_format,
        replace_chunks,
    )
    from core.code.chunking import CHUNK_FORMAT

    current = sorted(seen)
    stale = set(added) | set(changed)
    rest = [p for p in current if p not in stale]
    if await chunk_format(db, repo.id) != CHUNK_FORMAT:
        missing = rest
    else:
        missing = await paths_without_chunks(db, repo.id, rest)
    written = await replace_chunks(
        db, repo.id, repo.name, root, [*added, *changed, *missing], removed
    )
    await record_chunk_format(db, repo.id)
    # The code graph follows the same files (files without a graph yet catch up there).
    from core.code.graph.store import update_graph

    await update_graph(
        db, repo.id, root, [*added, *changed], removed, current, workers=graph_workers
    )
    return IndexResult(tuple(added), tuple(changed), tuple(removed), unchanged, written)


def excluded(root: Path, rel: str) -> bool:
    """Whether the walk would leave out the file `rel` for its folders or a .gitignore (the
    per-file checks are `Selection.refusal`'s). `rel` is a clean relative path ("a/b.py")."""
    return Selection(root).excluded(rel)
