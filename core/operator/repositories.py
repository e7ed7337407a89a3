"""The console's repositories: each registered repository's index state, and re-indexing one
in the background with its progress.

Repositories belong to the installation, not to a tenant (`core.code.repos`): which ones a
tenant's admin sees is the policy's `repos` key resolved for the admin's own identity, as it
decides which repositories their conversations may read; any other reads as unknown.

What is stored about an index: its files, chunks, graph edges, when it last ran
(`Repo.last_indexed_at`) and when vectors were last synced (`VectorSync`). The commit and
how long an index took are not stored: the page shows the commit the checkout has now, and the
duration and outcome of the re-indexes this process ran (kept in memory, `Reindexer`).
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING

from sqlalchemy import func
from sqlmodel import col, select

from core.code import messages
from core.code.checkout import head_commit
from core.code.repos import RepoError, RepoStore
from core.policy import ALL_REPOS, Identity, Policy
from core.store.engine import Database
from core.store.models import CodeChunk, GraphEdge, Repo, RepoFile, VectorSync

if TYPE_CHECKING:
    from core.code.indexer import Indexer, Stage

log = logging.getLogger(__name__)


@dataclass(frozen=True, slots=True)
class IndexProgress:
    """One re-index started from the console, as it stands."""

    repo: str
    by: str  # who started it (platform:tenant:user)
    started_at: datetime
    stage: str  # checkout | files | vectors | done | failed
    done: int  # of `total` in the stage (files scanned, chunks embedded)
    total: int
    finished_at: datetime | None = None
    seconds: float | None = None  # how long it took, once finished
    result: str = ""  # what the chat's `/index` would answer
    error: str = ""  # safe to show

    @property
    def running(self) -> bool:
        return self.stage not in ("done", "failed")

    @property
    def percent(self) -> int:
        return int(100 * self.done / self.total) if self.total else 0


@dataclass(frozen=True, slots=True)
class RepoRow:
    name: str
    origin: str  # the local path or the git URL, without credentials
    files: int
    chunks: int
    edges: int
    last_indexed_at: datetime | None
    vectors_synced_at: datetime | None  # the last sync of its chunks to the vector store
    commit: str | None  # what the checkout has now (not necessarily what was indexed), if asked
    last_run: IndexProgress | None  # this process's latest re-index of it


class AlreadyIndexing(Exception):
    """A re-index of this repository is running (the progress is on the exception)."""

    def __init__(self, progress: IndexProgress) -> None:
        super().__init__(progress.repo)
        self.progress = progress


@dataclass(slots=True)
class _Job:
    progress: IndexProgress
    started: float  # the timer's reading at the start (a duration, not a time of day)
    task: asyncio.Task[None] | None = field(default=None)


class Reindexer:
    """Re-indexes repositories in the background, one run per repository at a time, through
    the path `/index` takes (fetch a clone, then `Indexer.index`, which keeps the walking,
    hashing and parsing off the event loop). Per process: the progress of a run is in this
    process's memory, so the page that started it is the one that shows it."""

    def __init__(
        self,
        repos: RepoStore,
        indexer: Indexer,
        clock: Callable[[], datetime],
        timer: Callable[[], float] = time.monotonic,
    ) -> None:
        self._repos = repos
        self._indexer = indexer
        self._clock = clock
        self._timer = timer
        self._jobs: dict[str, _Job] = {}

    def progress(self, name: str) -> IndexProgress | None:
        job = self._jobs.get(name)
        return job.progress if job is not None else None

    def start(self, repo: Repo, by: str) -> IndexProgress:
        """Starts re-indexing `repo`; raises AlreadyIndexing while a run of it is not over."""
        current = self._jobs.get(repo.name)
        if current is not None and current.progress.running:
            raise AlreadyIndexing(current.progress)
        job = _Job(IndexProgress(repo.name, by, self._clock(), "checkout", 0, 0), self._timer())
        self._jobs[repo.name] = job
        job.task = asyncio.get_running_loop().create_task(self._run(job, repo))
        return job.progress

    async def wait(self, name: str) -> IndexProgress | None:
        """The run of `name` once it is over (tests, shutdown)."""
        job = self._jobs.get(name)
        if job is not None and job.task is not None:
            await asyncio.wait([job.task])
        return self.progress(name)

    async def _run(self, job: _Job, repo: Repo) -> None:
        def step(stage: Stage, done: int, total: int) -> None:
            # Called on the event loop between the indexer's batches: a plain assignment.
            job.progress = replace(job.progress, stage=stage, done=done, total=total)

        try:
            await self._repos.update_checkout(repo)
            report = await self._indexer.index(repo, progress=step)
        except RepoError as exc:
            self._finish(job, "failed", error=f"Re-indexing failed: {exc}")
        except Exception:
            log.exception("re-indexing %s from the console failed", repo.name)
            self._finish(job, "failed", error=messages.INDEX_FAILED)
        else:
            text = messages.index_done(repo.name, report.summary(), report.vectors_error)
            self._finish(job, "done", result=text.replace("`", ""))

    def _finish(self, job: _Job, stage: str, *, result: str = "", error: str = "") -> None:
        job.progress = replace(
            job.progress,
            stage=stage,
            finished_at=self._clock(),
            seconds=round(self._timer() - job.started, 1),
            result=result,
            error=error,
        )


def _aware(value: datetime | None) -> datetime | None:
    # SQLite hands timestamps back without a zone; they were written in UTC.
    if value is None or value.tzinfo is not None:
        return value
    return value.replace(tzinfo=UTC)


class RepoBoard:
    def __init__(self, db: Database, repos: RepoStore, policy: Policy) -> None:
        self._db = db
        self._repos = repos
        self._policy = policy

    def may_read(self, who: Identity, name: str) -> bool:
        """The policy's `repos` key for the admin's identity (what their conversations read)."""
        allowed = self._policy.resolve(who).repos
        return ALL_REPOS in allowed or name in allowed

    async def find(self, who: Identity, name: str) -> Repo | None:
        """The repository `name` if it exists and `who` may see it; None either way else."""
        if not self.may_read(who, name):
            return None
        return await self._repos.get(name)

    async def rows(
        self,
        who: Identity,
        jobs: Reindexer | None = None,
        *,
        name_has: str = "",
        with_commit: bool = False,
    ) -> tuple[RepoRow, ...]:
        """The repositories `who` may see (whose name contains `name_has`), with their counts;
        `with_commit` asks git for each checkout's commit (a process per repository: for one
        repository's page, not the list)."""
        repos = [
            r
            for r in await self._repos.all()
            if self.may_read(who, r.name) and name_has.lower() in r.name.lower()
        ]
        ids = [r.id for r in repos if r.id is not None]
        if not ids:
            return ()
        files, chunks, edges, synced = await self._counts(ids)
        commits: Sequence[str | None] = [None] * len(repos)
        if with_commit:
            commits = await asyncio.gather(*(asyncio.to_thread(_commit, r.root) for r in repos))
        return tuple(
            RepoRow(
                name=r.name,
                origin=r.origin,
                files=files.get(r.id or 0, 0),
                chunks=chunks.get(r.id or 0, 0),
                edges=edges.get(r.id or 0, 0),
                last_indexed_at=_aware(r.last_indexed_at),
                vectors_synced_at=synced.get(r.id or 0),
                commit=commit,
                last_run=jobs.progress(r.name) if jobs is not None else None,
            )
            for r, commit in zip(repos, commits, strict=True)
        )

    async def _counts(
        self, ids: Sequence[int]
    ) -> tuple[dict[int, int], dict[int, int], dict[int, int], dict[int, datetime]]:
        """Rows per repository in each derived table: one grouped query each, on the
        indexes that start with `repo_id`."""
        out: list[dict[int, int]] = []
        async with self._db.session() as s:
            for repo_id in (
                col(RepoFile.repo_id),
                col(CodeChunk.repo_id),
                col(GraphEdge.repo_id),
            ):
                query = select(repo_id, func.count()).where(repo_id.in_(ids)).group_by(repo_id)
                out.append({int(a): int(b) for a, b in (await s.exec(query)).all()})
            synced_query = (
                select(col(VectorSync.repo_id), func.max(col(VectorSync.synced_at)))
                .where(col(VectorSync.repo_id).in_(ids))
                .group_by(col(VectorSync.repo_id))
            )
            synced = {
                int(a): at
                for a, b in (await s.exec(synced_query)).all()
                if (at := _aware(b)) is not None
            }
        return out[0], out[1], out[2], synced


def _commit(root: str) -> str | None:
    path = Path(root)
    return head_commit(path) if path.is_dir() else None
