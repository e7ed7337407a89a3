"""Indexing a repository end to end: files and chunks in SQL, then their vectors.

`Indexer.index` is what `threadline index`, `/index` and the demo index call. Progress is
reported per stage (`files`: walked and hashed, then chunked; `vectors`: chunks embedded) so a
progress bar or a thread message can show where a long index is. When the vector store cannot
be used (held by another process, model missing, server down) files and chunks are still
indexed and the report says why vectors were not; the next index (or sync) catches up.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Literal

from core.code.search import CodeSearch, SyncResult
from core.code.vectors import VectorStoreError
from core.code.walk import IndexResult, index_repo
from core.ordering import KeyedLocks

if TYPE_CHECKING:
    from core.code.graph.pool import GraphWorkers
    from core.store.engine import Database
    from core.store.models import Repo

log = logging.getLogger(__name__)

Stage = Literal["files", "vectors"]
StageProgress = Callable[[Stage, int, int], None]


@dataclass(frozen=True, slots=True)
class IndexReport:
    files: IndexResult
    vectors: SyncResult | None = None
    vectors_error: str | None = None  # why vectors were not updated (safe to show)

    def summary(self) -> dict[str, int]:
        out = self.files.summary()
        if self.vectors is not None:
            out["vectors_embedded"] = self.vectors.embedded
            out["vectors_reused"] = self.vectors.reused
            out["vectors_deleted"] = self.vectors.deleted
        return out


class Indexer:
    def __init__(
        self,
        db: Database,
        search: CodeSearch | None,
        graph_workers: GraphWorkers | None = None,
    ) -> None:
        self._db = db
        self._search = search
        self._graph_workers = graph_workers
        # One index of a repository at a time in this process: two overlapping runs would both
        # re-chunk the same changed files. (Across processes, run indexes one after another.)
        self._running = KeyedLocks()

    async def index(self, repo: Repo, *, progress: StageProgress | None = None) -> IndexReport:
        async with self._running.hold(repo.id):
            return await self._index(repo, progress)

    async def _index(self, repo: Repo, progress: StageProgress | None) -> IndexReport:
        def files(done: int, total: int) -> None:
            if progress is not None:
                progress("files", done, total)

        def vectors(done: int, total: int) -> None:
            if progress is not None:
                progress("vectors", done, total)

        result = await index_repo(self._db, repo, progress=files, graph_workers=self._graph_workers)
        if self._search is None:
            return IndexReport(result, vectors_error="semantic search is not configured")
        if not (result.chunks_written or result.removed) and await self._search.in_sync(repo):
            return IndexReport(result, SyncResult(embedded=0, deleted=0))
        try:
            synced = await self._search.sync(repo, progress=vectors)
        except VectorStoreError as exc:
            log.warning("vectors of %s not updated: %s", repo.name, exc)
            return IndexReport(result, vectors_error=str(exc))
        return IndexReport(result, synced)
