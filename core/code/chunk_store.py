"""Keeping a repository's chunks in step with its files.

Indexing tells this module which files were added, changed or removed; their chunks are
recomputed (tree-sitter parsing runs in a worker thread, off the event loop) and replaced per
file in one transaction per batch, so a file never has half of its old and half of its new
chunks. Embedding into the vector store reads from here.

A file's text is redacted (`core.code.redact`) before it is chunked, so no key, token or
password is stored in SQL, embedded, or hashed into a sparse vector: the chunk text, its
context header (signatures included) and everything derived from them hold
`[redacted secret]` instead.
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from core.code.chunk import Chunk, embed_digest
from core.code.chunking import CHUNK_FORMAT, chunk_file
from core.code.redact import redact
from core.store.engine import Database
from core.store.tables import table_of

BATCH = 50  # files per worker-thread call and per transaction
_CHUNK_LOCK_SPACE = 0x74636B  # "tck": the advisory-lock key space of chunk writes


def _chunk_batch(repo: str, root: Path, paths: Sequence[str]) -> list[tuple[str, list[Chunk]]]:
    out = []
    for rel in paths:
        try:
            text = (root / rel).read_text(encoding="utf-8", errors="replace")
        except OSError:  # deleted or unreadable since the walk: it simply has no chunks
            text = ""
        out.append((rel, chunk_file(repo, rel, redact(text, rel))))
    return out


async def paths_without_chunks(db: Database, repo_id: int, paths: Sequence[str]) -> list[str]:
    """Indexed files that have no chunks yet (e.g. indexed before chunking existed)."""
    from sqlmodel import col, select

    from core.store.models import CodeChunk

    async with db.session() as s:
        stmt = select(CodeChunk.path).where(col(CodeChunk.repo_id) == repo_id).distinct()
        chunked = set((await s.exec(stmt)).all())
    return [p for p in paths if p not in chunked]


async def chunk_format(db: Database, repo_id: int) -> int:
    """The format the repository's chunks were made with; 0 when unknown (made before formats
    were recorded)."""
    from sqlmodel import col, select

    from core.store.models import RepoChunkFormat

    async with db.session() as s:
        stmt = select(RepoChunkFormat.version).where(col(RepoChunkFormat.repo_id) == repo_id)
        found = (await s.exec(stmt)).first()
    return found or 0


async def record_chunk_format(db: Database, repo_id: int) -> None:
    from core.store.models import RepoChunkFormat

    table = table_of(RepoChunkFormat)
    values = {"repo_id": repo_id, "version": CHUNK_FORMAT}
    async with db.session() as s:
        await s.exec(db.upsert(table, values, ["repo_id"], ["version"]))


async def _serialize_repo_writes(db: Database, session: Any, repo_id: int) -> None:
    """Two processes indexing one repository at once (the CLI beside the bot): on PostgreSQL
    their delete-then-insert transactions would not see each other's uncommitted rows and both
    insert, duplicating chunks; a transaction-scoped advisory lock per repository orders them.
    SQLite already runs one writing transaction at a time."""
    if db.dialect != "postgresql":
        return
    from sqlalchemy import text

    await session.exec(
        text("SELECT pg_advisory_xact_lock(:space, :repo)"),
        params={"space": _CHUNK_LOCK_SPACE, "repo": repo_id},
    )


async def replace_chunks(
    db: Database, repo_id: int, repo: str, root: Path, paths: Sequence[str], removed: Sequence[str]
) -> int:
    """Re-chunk `paths`, drop the chunks of `removed`; returns how many chunks were written."""
    from sqlmodel import col, delete

    from core.store.models import CodeChunk, VectorSync

    if not paths and not removed:
        return 0
    # The vectors are about to fall behind: forget that they were in step, before any change.
    async with db.session() as s:
        await s.exec(delete(VectorSync).where(col(VectorSync.repo_id) == repo_id))
    written = 0
    for start in range(0, len(removed), 500):
        async with db.session() as s:
            await s.exec(
                delete(CodeChunk).where(
                    col(CodeChunk.repo_id) == repo_id,
                    col(CodeChunk.path).in_(removed[start : start + 500]),
                )
            )
    for start in range(0, len(paths), BATCH):
        batch = await asyncio.to_thread(_chunk_batch, repo, root, paths[start : start + BATCH])
        async with db.session() as s:
            await _serialize_repo_writes(db, s, repo_id)
            await s.exec(
                delete(CodeChunk).where(
                    col(CodeChunk.repo_id) == repo_id,
                    col(CodeChunk.path).in_([rel for rel, _ in batch]),
                )
            )
            rows = [
                {
                    "repo_id": repo_id,
                    "path": c.path,
                    "language": c.language,
                    "symbol": c.symbol,
                    "kind": c.kind,
                    "start_line": c.start_line,
                    "end_line": c.end_line,
                    "text": c.text,
                    "context": c.embed_text.removesuffix(c.text),
                    "digest": embed_digest(c.embed_text),
                }
                for _rel, chunks in batch
                for c in chunks
            ]
            # Plain rows: adding model objects one by one cost the ORM's unit of work several
            # times the chunking itself.
            await db.insert_rows(s, table_of(CodeChunk), rows)
            written += len(rows)
    return written


async def chunk_counts(db: Database) -> dict[int, int]:
    """Chunks per repository id."""
    from sqlmodel import col, func, select

    from core.store.models import CodeChunk

    async with db.session() as s:
        stmt = select(CodeChunk.repo_id, func.count()).group_by(col(CodeChunk.repo_id))
        return {repo_id: n for repo_id, n in (await s.exec(stmt)).all()}
