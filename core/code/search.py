"""Semantic code search as a service: keeping vectors in step with chunks, and searching.

SQL is the source of truth for chunks (`code_chunks`); the vector store holds one point per
chunk under the chunk's id. `sync` makes the store match SQL for one repository: points whose
chunk is gone are deleted, chunks without a point are embedded. It is idempotent, so a crash
mid-way, a new embedding model (a new, empty collection) or chunks written by another process
(`threadline index` while the bot holds the embedded store) are all repaired by the next sync.

The store is opened on first use: an embedded Qdrant loads its points into memory and can be
held by one process only, and neither should slow down start-up or a command that never
searches.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, cast

from core.code.chunking import Chunk, Kind
from core.code.redact import redact
from core.code.selection import still_readable
from core.code.vectors import Mode, SearchHit, VectorStore, VectorStoreError

if TYPE_CHECKING:
    from core.store.engine import Database
    from core.store.models import CodeChunk, Repo

log = logging.getLogger(__name__)

SNIPPET_LINES = 12
SNIPPET_CHARS = 600
MAX_TOP_K = 30
SYNC_BATCH = 256


@dataclass(frozen=True, slots=True)
class CodeResult:
    """One search result; `as_json` is the documented `threadline search --json` row."""

    repo: str
    path: str
    start_line: int
    end_line: int
    symbol: str
    kind: str
    score: float
    snippet: str

    def as_json(self) -> dict[str, Any]:
        row = asdict(self)
        row["score"] = round(self.score, 6)
        return row


@dataclass(frozen=True, slots=True)
class SyncResult:
    embedded: int
    deleted: int


def _as_chunk(repo: str, row: CodeChunk) -> Chunk:
    """A stored chunk as the chunker made it (what the vector store embeds)."""
    return Chunk(
        repo,
        row.path,
        row.language,
        row.symbol,
        cast(Kind, row.kind),
        row.start_line,
        row.end_line,
        row.text,
        row.context + row.text,
    )


def snippet(text: str) -> str:
    lines = text.splitlines()[:SNIPPET_LINES]
    out = "\n".join(lines)
    if len(out) > SNIPPET_CHARS:
        out = (
            out[:SNIPPET_CHARS].rsplit("\n", 1)[0]
            if "\n" in out[:SNIPPET_CHARS]
            else out[:SNIPPET_CHARS]
        )
    return out


class CodeSearch:
    """`open_store` builds the vector store (called once, on first use); `collection` is the
    name it will use (known without opening it, see `collection_name`)."""

    def __init__(
        self, db: Database, open_store: Callable[[], VectorStore], *, collection: str
    ) -> None:
        self._db = db
        self._open_store = open_store
        self.collection = collection
        self._store: VectorStore | None = None
        self._lock = asyncio.Lock()
        self._sync_lock = asyncio.Lock()

    async def store(self) -> VectorStore:
        """The vector store, opened now if needed. Raises `VectorStoreError` (safe to show)."""
        if self._store is not None:
            return self._store
        async with self._lock:
            if self._store is None:
                try:
                    store = await asyncio.to_thread(self._open_store)
                except VectorStoreError:
                    raise
                except (ModuleNotFoundError, RuntimeError, OSError, ValueError) as exc:
                    log.warning("vector store unavailable: %s", exc)
                    raise VectorStoreError(f"semantic search is unavailable: {exc}") from None
                try:
                    await store.ensure()
                except BaseException:
                    await store.close()  # releases the embedded store's lock, or the connection
                    raise
                self._store = store
            return self._store

    async def aclose(self) -> None:
        if self._store is not None:
            await self._store.close()
            self._store = None

    async def _wanted(self, repo_id: int) -> dict[int, str]:
        """The repository's chunk ids and digests in SQL."""
        from sqlmodel import col, select

        from core.store.models import CodeChunk

        async with self._db.session() as s:
            stmt = select(CodeChunk.id, CodeChunk.digest).where(col(CodeChunk.repo_id) == repo_id)
            return {int(i): d for i, d in (await s.exec(stmt)).all() if i is not None}

    async def in_sync(self, repo: Repo) -> bool:
        """Whether the last sync of `repo` into this collection is still current (no chunk
        changed since): then the store need not even be opened."""
        from sqlmodel import col, select

        from core.store.models import VectorSync

        async with self._db.session() as s:
            stmt = select(VectorSync).where(
                col(VectorSync.repo_id) == repo.id, col(VectorSync.collection) == self.collection
            )
            return (await s.exec(stmt)).first() is not None

    async def _mark_synced(self, repo_id: int, synced: dict[int, str]) -> None:
        from core.store.models import VectorSync, utcnow

        # Only if no chunk changed while embedding (another process may index meanwhile).
        if await self._wanted(repo_id) != synced:
            return
        table = VectorSync.__table__  # type: ignore[attr-defined]
        values = {"repo_id": repo_id, "collection": self.collection, "synced_at": utcnow()}
        async with self._db.session() as s:
            await s.exec(self._db.upsert(table, values, ["repo_id", "collection"], ["synced_at"]))

    async def sync(
        self, repo: Repo, *, progress: Callable[[int, int], None] | None = None
    ) -> SyncResult:
        """Make the vector store hold exactly `repo`'s chunks; see the module docstring."""
        from sqlmodel import col, select

        from core.store.models import CodeChunk

        assert repo.id is not None
        store = await self.store()
        async with self._sync_lock:  # two syncs of one store would embed the same chunks twice
            wanted = await self._wanted(repo.id)
            have = await store.point_digests(repo.name)
            stale = sorted(set(have) - set(wanted))
            # Absent, or embedded from other content under the same id (a reset database).
            missing = sorted(i for i, digest in wanted.items() if have.get(i) != digest)
            await store.delete(stale)
            done = 0
            if progress is not None:
                progress(0, len(missing))
            for start in range(0, len(missing), SYNC_BATCH):
                ids = missing[start : start + SYNC_BATCH]
                async with self._db.session() as s:
                    rows = (await s.exec(select(CodeChunk).where(col(CodeChunk.id).in_(ids)))).all()
                items = [(int(r.id or 0), _as_chunk(repo.name, r)) for r in rows]
                done += await store.upsert(items)
                if progress is not None:
                    progress(done, len(missing))
            await self._mark_synced(repo.id, wanted)
        return SyncResult(embedded=done, deleted=len(stale))

    async def search(
        self, query: str, repos: Sequence[str], *, k: int = 10, mode: Mode = "hybrid"
    ) -> list[CodeResult]:
        """The best `k` chunks of `repos` (names the caller may read) with snippets."""
        from sqlmodel import col, select

        from core.store.models import CodeChunk, Repo

        if not repos:
            return []
        store = await self.store()
        hits: list[SearchHit] = await store.search(
            query, repos=list(repos), k=min(max(k, 1), MAX_TOP_K), mode=mode
        )
        if not hits:
            return []
        async with self._db.session() as s:
            ids = [h.chunk_id for h in hits]
            rows = (await s.exec(select(CodeChunk).where(col(CodeChunk.id).in_(ids)))).all()
        # Chunks are redacted when they are made; again here for rows stored before that was so.
        texts = await asyncio.to_thread(lambda: {r.id: redact(r.text, r.path) for r in rows})
        # A hit whose chunk is gone from SQL was re-indexed since: leave it out.
        results = [
            CodeResult(
                h.repo,
                h.path,
                h.start_line,
                h.end_line,
                h.symbol,
                h.kind,
                h.score,
                snippet(texts[h.chunk_id]),
            )
            for h in hits
            if h.chunk_id in texts
        ]
        # The index is a snapshot: a file ignored, renamed to a secret-looking name or deleted
        # since it was indexed is not shown, whoever asks (tools, offline answers, the CLI).
        async with self._db.session() as s:
            stmt = select(Repo.name, Repo.root).where(col(Repo.name).in_(list(repos)))
            roots = {name: Path(root) for name, root in (await s.exec(stmt)).all()}
        return await asyncio.to_thread(still_readable, results, roots)
