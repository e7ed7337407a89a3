"""Semantic code search as a service: keeping vectors in step with chunks, and searching.

SQL is the source of truth for chunks (`code_chunks`); the vector store holds one point per
chunk under the chunk's id. `sync` makes the store match SQL for one repository: points whose
chunk is gone are deleted, chunks without a point (or embedded from other content) are
embedded, and points filed under another role than their path has now (roles came later, or the
rules changed) get the new role without being embedded again. It is idempotent, so a crash
mid-way, a new embedding model (a new, empty collection), a new or rebuilt embedded shard, or
chunks written by another process (`threadline index` while the bot holds the embedded store)
are all repaired by the next sync.

A successful sync is recorded in SQL (`VectorSync`) under a key naming the collection, the
payload format and, for the embedded store, the shard's id (`generation`): a repository whose
chunks did not change since is skipped without opening the store, and a store that is not the
one synced into (an old local-mode store migrated to Qdrant Edge, a shard rebuilt or deleted)
is never mistaken for one in step.

The store is opened on first use: an embedded shard can be held by one process only, and
opening it should not slow down start-up or a command that never searches. A serving process
(`run`, `serve`, `worker`) opens it in the background soon after it starts when there is a
repository to search (`hold`, called by `bot.upkeep`), so that a `threadline search` in a shell
is answered by it from the start. The process that holds it shares it with the other local
ones (`core.code.store_socket`); a process using it through a holder that went away opens it
again, and then holds it itself.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar, cast

from core.code.chunk import Chunk, Kind
from core.code.chunking import REDACTED_SINCE
from core.code.redact import redact
from core.code.results import MAX_TOP_K, CodeResult
from core.code.roles import role_of
from core.code.selection import still_readable
from core.code.store_socket import HolderGone, RemoteBackend, UnknownRepository
from core.code.vectors import Mode, PointState, SearchHit, VectorStore, VectorStoreError
from core.store.tables import table_of

if TYPE_CHECKING:
    from core.store.engine import Database
    from core.store.models import CodeChunk, Repo

log = logging.getLogger(__name__)

# A holder asked to let the store go closes it within moments: look every TAKE_OVER_POLL s.
TAKE_OVER_WAIT, TAKE_OVER_POLL = 5.0, 0.05

T = TypeVar("T")

SNIPPET_LINES = 12
SNIPPET_CHARS = 600
SYNC_BATCH = 256
# Bumped when what a point's payload holds changes in a way a sync must repair (2: `role`; 3:
# packaging metadata became `generated`), so markers of syncs made before are not taken as
# current. A sync that finds only roles changed rewrites those payloads and embeds nothing.
PAYLOAD_VERSION = 3


@dataclass(frozen=True, slots=True)
class SyncResult:
    embedded: int
    deleted: int
    relabelled: int = 0  # points given their path's current role, without re-embedding
    reused: int = 0  # new chunks given the stored vector of a point with the same content


def _donors(
    have: Mapping[int, PointState], digests: set[str], keep: set[int], overwritten: set[int]
) -> dict[str, int]:
    """For each of `digests`, a stored point embedded from that content, if any: one that
    stays (`keep`) when there is such, else one about to be deleted; never one that this sync
    overwrites (its vector would change under the chunks reading it)."""
    out: dict[str, int] = {}
    for point_id, state in sorted(have.items()):
        if point_id in overwritten or not state.digest or state.digest not in digests:
            continue
        if state.digest not in out or point_id in keep:
            out[state.digest] = point_id
    return out


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
    """`open_store` builds the vector store (called once, on first use, in a worker thread);
    `collection` is the name it will use (known without opening it, see `collection_name`);
    `generation` returns the id of the store it would open without opening it (the embedded
    shard's id, None while there is no shard; see the module docstring)."""

    def __init__(
        self,
        db: Database,
        open_store: Callable[[], VectorStore],
        *,
        collection: str,
        generation: Callable[[], str | None] | None = None,
        release: Callable[[], None] | None = None,
    ) -> None:
        self._db = db
        self._release = release
        self._open_store = open_store
        self.collection = collection
        self._generation = generation or (lambda: "server")
        self._store: VectorStore | None = None
        self._opening: asyncio.Task[VectorStore] | None = None
        self._lock = asyncio.Lock()
        self._sync_lock = asyncio.Lock()

    async def store(self) -> VectorStore:
        """The vector store, opened now if needed. Raises `VectorStoreError` (safe to show)."""
        if self._store is not None:
            return self._store
        if self._opening is None:
            opening = asyncio.create_task(self._open(), name="open-vector-store")
            # Read here in case every caller gave up: else asyncio logs it as never retrieved.
            opening.add_done_callback(lambda t: t.cancelled() or t.exception())
            self._opening = opening
        # Shielded: a caller that gives up (a cancelled request, a stopping process) must not
        # strand a shard opened in its worker thread, still locked and never closed; the open
        # finishes, the store is kept, and `aclose` closes it.
        return await asyncio.shield(self._opening)

    async def _open(self) -> VectorStore:
        try:
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
                await store.close()  # releases the embedded shard, or the connection
                raise
            try:
                # Held here: `threadline search`/`index` in a shell use it through us.
                await store.share(search=self._whole_search, release=self._release)
            except OSError as exc:
                log.warning("the vector store is not shared with other processes: %s", exc)
            self._store = store
            return store
        finally:
            self._opening = None

    @property
    def held(self) -> bool:
        """Whether this process has the store open itself (not through another process)."""
        return self._store is not None and not isinstance(self._store.backend, RemoteBackend)

    async def hold(self, *, take_over: bool = False) -> bool:
        """Open the store now, for a process that serves searches (`bot.upkeep` calls this at
        start-up and then now and then), so that other local processes search through this one
        from the start. Returns whether this process holds it; when another one does (a
        one-shot command in a shell), the store is let go, so that the next call tries again
        to hold it. With `take_over`, a holder that lets go when asked (`threadline
        hold-search`) is asked to, and the store is opened again once it has (within
        `TAKE_OVER_WAIT` seconds). Raises `VectorStoreError`."""
        store = await self.store()
        if not isinstance(store.backend, RemoteBackend):
            return True
        released = take_over and await store.backend.release()
        await self._let_go(store)
        if not released:
            return False
        log.info("the vector store's holder in a shell was asked to let it go")
        loop = asyncio.get_running_loop()
        deadline = loop.time() + TAKE_OVER_WAIT
        while loop.time() < deadline:
            await asyncio.sleep(TAKE_OVER_POLL)  # it closes the store moments after answering
            try:
                store = await self.store()
            except VectorStoreError:  # closing still: held, and no longer shared
                continue
            if not isinstance(store.backend, RemoteBackend):
                return True
            await self._let_go(store)  # another holder came meanwhile: the next call asks it
            return False
        return False

    async def _let_go(self, store: VectorStore) -> None:
        async with self._lock:
            if self._store is store:
                self._store = None
        await store.close()  # nothing held: each call through the holder has its connection

    def idle_for(self) -> float | None:
        """Seconds since another process last used the store through this one; None when
        this process does not hold and share it."""
        return self._store.idle_for() if self._store is not None else None

    async def _whole_search(
        self, query: str, repos: Sequence[str] | None, k: int, roles: Sequence[str] | None
    ) -> dict[str, Any]:
        """A search asked for through the store socket (`threadline search` beside the bot):
        over `repos`, or every registered repository when None; the names searched and the
        results. Raises `UnknownRepository`."""
        from sqlmodel import col, select

        from core.store.models import Repo

        async with self._db.session() as s:
            known = list((await s.exec(select(Repo.name).order_by(col(Repo.name)))).all())
        for name in repos or ():
            if name not in known:
                raise UnknownRepository(name, known)
        names = list(repos) if repos is not None else known
        results = await self.search(query, names, k=k, roles=roles)
        return {"repos": names, "results": [r.as_wire() for r in results]}

    async def _use(self, work: Callable[[VectorStore], Awaitable[T]]) -> T:
        """`work` on the store; once more on a newly opened one if the process this one
        reached the store through went away (then this process may hold it itself)."""
        store = await self.store()
        try:
            return await work(store)
        except HolderGone:
            async with self._lock:
                if self._store is store:
                    self._store = None
                    await store.close()
            return await work(await self.store())

    async def aclose(self) -> None:
        if self._opening is not None:
            # An open under way (its caller gave up) ends in `_store`, closed here.
            await asyncio.gather(self._opening, return_exceptions=True)
        store, self._store = self._store, None
        if store is not None:
            await store.close()

    async def _sync_key(self) -> str | None:
        """The `VectorSync` key of the store `generation` names (None: no store yet)."""
        generation = await asyncio.to_thread(self._generation)  # may read a file
        if generation is None:
            return None
        return f"{self.collection}@p{PAYLOAD_VERSION}@{generation}"

    async def _wanted(self, repo_id: int) -> dict[int, tuple[str, str]]:
        """The repository's chunk ids in SQL, with their digests and roles."""
        from sqlmodel import col, select

        from core.store.models import CodeChunk

        async with self._db.session() as s:
            stmt = select(CodeChunk.id, CodeChunk.digest, CodeChunk.path).where(
                col(CodeChunk.repo_id) == repo_id
            )
            rows = (await s.exec(stmt)).all()
        roles = {p: role_of(p) for p in {p for _, _, p in rows}}  # per file, not per chunk
        return {int(i): (d, roles[p]) for i, d, p in rows if i is not None}

    async def in_sync(self, repo: Repo) -> bool:
        """Whether the last sync of `repo` into this store is still current (no chunk changed
        since): then the store need not even be opened."""
        from sqlmodel import col, select

        from core.store.models import VectorSync

        key = await self._sync_key()
        if key is None:
            return False
        async with self._db.session() as s:
            stmt = select(VectorSync).where(
                col(VectorSync.repo_id) == repo.id, col(VectorSync.collection) == key
            )
            return (await s.exec(stmt)).first() is not None

    async def _mark_synced(self, repo_id: int, synced: dict[int, tuple[str, str]]) -> None:
        from sqlmodel import col, delete, or_

        from core.store.models import VectorSync, utcnow

        key = await self._sync_key()
        # Only if no chunk changed while embedding (another process may index meanwhile).
        if key is None or await self._wanted(repo_id) != synced:
            return
        table = table_of(VectorSync)
        values = {"repo_id": repo_id, "collection": key, "synced_at": utcnow()}
        async with self._db.session() as s:
            # Markers of this collection's earlier stores (or payload formats) mean nothing now.
            await s.exec(
                delete(VectorSync).where(
                    col(VectorSync.repo_id) == repo_id,
                    or_(
                        col(VectorSync.collection) == self.collection,  # before sync keys
                        col(VectorSync.collection).startswith(
                            f"{self.collection}@", autoescape=True
                        ),
                    ),
                    col(VectorSync.collection) != key,
                )
            )
            await s.exec(self._db.upsert(table, values, ["repo_id", "collection"], ["synced_at"]))

    async def sync(
        self, repo: Repo, *, progress: Callable[[int, int], None] | None = None
    ) -> SyncResult:
        """Make the vector store hold exactly `repo`'s chunks; see the module docstring."""
        return await self._use(lambda store: self._sync(store, repo, progress))

    async def _sync(
        self, store: VectorStore, repo: Repo, progress: Callable[[int, int], None] | None
    ) -> SyncResult:
        from sqlmodel import col, select

        from core.store.models import CodeChunk

        assert repo.id is not None
        async with self._sync_lock:  # two syncs of one store would embed the same chunks twice
            wanted = await self._wanted(repo.id)
            have = await store.point_states(repo.name)
            stale = sorted(set(have) - set(wanted))
            # Absent, or embedded from other content under the same id (a reset database).
            missing = sorted(
                i for i, (digest, _) in wanted.items() if i not in have or have[i].digest != digest
            )
            relabel = {
                i: role
                for i, (digest, role) in wanted.items()
                if i in have and have[i].digest == digest and have[i].role != role
            }
            # A file is re-chunked whole when it changes, and every file when the chunk format
            # changes: most new chunks are old ones under a new id. A point embedded from the
            # same text (same digest, same model: this collection) gives its vector.
            donors = _donors(
                have, {wanted[i][0] for i in missing}, keep=set(wanted), overwritten=set(missing)
            )
            donor_ids = set(donors.values())
            await store.delete([i for i in stale if i not in donor_ids])
            await store.set_roles(relabel)
            embedded = reused = 0
            if progress is not None:
                progress(0, len(missing))
            for start in range(0, len(missing), SYNC_BATCH):
                ids = missing[start : start + SYNC_BATCH]
                async with self._db.session() as s:
                    rows = (await s.exec(select(CodeChunk).where(col(CodeChunk.id).in_(ids)))).all()
                items = [(int(r.id or 0), _as_chunk(repo.name, r)) for r in rows]
                vectors = await self._donated(store, [donors.get(r.digest) for r in rows])
                if vectors is None:  # this store cannot give vectors: stop asking
                    donors, vectors = {}, {}
                given = [(item, vectors[n]) for n, item in enumerate(items) if n in vectors]
                if given:
                    import numpy as np  # here: importing this module must stay light

                    rows_given = np.asarray([v for _, v in given], dtype=np.float32)
                    reused += await store.upsert([item for item, _ in given], vectors=rows_given)
                fresh = [item for n, item in enumerate(items) if n not in vectors]
                embedded += await store.upsert(fresh)
                if progress is not None:
                    progress(embedded + reused, len(missing))
            await store.delete(sorted(donor_ids.intersection(stale)))
            await self._mark_synced(repo.id, wanted)
        return SyncResult(
            embedded=embedded, deleted=len(stale), relabelled=len(relabel), reused=reused
        )

    @staticmethod
    async def _donated(
        store: VectorStore, donors: Sequence[int | None]
    ) -> dict[int, list[float]] | None:
        """Position in `donors` -> the vector stored under that donor point (a donor gone
        meanwhile gives none: that chunk is embedded); None when the store cannot give
        vectors at all."""
        wanted_ids = sorted({d for d in donors if d is not None})
        if not wanted_ids:
            return {}
        try:
            found = await store.stored_vectors(wanted_ids)
        except VectorStoreError as exc:  # a holder from before this operation, say
            log.info("stored vectors not reused (%s): embedding again", exc)
            return None
        return {n: found[d] for n, d in enumerate(donors) if d is not None and d in found}

    async def _texts(self, ids: Sequence[int], repos: Sequence[str]) -> dict[int, str]:
        """The texts of chunks `ids` of `repos`, as they may be shown: chunks are redacted when
        they are made, and rows of a repository whose chunks predate that (not re-indexed
        since) are redacted here. A quoted message is matched against these too, so that a
        secret cannot be confirmed by quoting it."""
        from sqlmodel import col, select

        from core.store.models import CodeChunk, Repo, RepoChunkFormat

        if not ids:
            return {}
        async with self._db.session() as s:
            # Columns, not rows: this runs on every search, and building 60 ORM objects cost
            # more than the query.
            stmt = select(CodeChunk.id, CodeChunk.repo_id, CodeChunk.path, CodeChunk.text)
            rows = (await s.exec(stmt.where(col(CodeChunk.id).in_(ids)))).all()
            formats = (
                select(Repo.id, RepoChunkFormat.version)
                .join(RepoChunkFormat, isouter=True)
                .where(col(Repo.name).in_(list(repos)))
            )
            current = {
                repo_id
                for repo_id, version in (await s.exec(formats)).all()
                if version is not None and version >= REDACTED_SINCE
            }
        if all(repo_id in current for _, repo_id, _, _ in rows):
            return {int(i or 0): text for i, _, _, text in rows}

        def texts_of() -> dict[int, str]:
            return {
                int(i or 0): text if repo_id in current else redact(text, path)
                for i, repo_id, path, text in rows
            }

        return await asyncio.to_thread(texts_of)

    async def search(
        self,
        query: str,
        repos: Sequence[str],
        *,
        k: int = 10,
        mode: Mode = "hybrid",
        roles: Sequence[str] | None = None,
    ) -> list[CodeResult]:
        """The best `k` chunks of `repos` (names the caller may read) with snippets; `roles`
        keeps only chunks of those roles (None: every role)."""
        from sqlmodel import col, select

        from core.store.models import Repo

        if not repos:
            return []
        read: dict[int, str] = {}  # texts the ranking read: the snippets need no second read

        async def texts_for(ids: Sequence[int]) -> dict[int, str]:
            found = await self._texts(ids, repos)
            read.update(found)
            return found

        hits: list[SearchHit] = await self._use(
            lambda store: store.search(
                query,
                repos=list(repos),
                roles=list(roles) if roles is not None else None,
                k=min(max(k, 1), MAX_TOP_K),
                mode=mode,
                texts=texts_for,
            )
        )
        if not hits:
            return []
        missing = [h.chunk_id for h in hits if h.chunk_id not in read]
        texts = {**read, **await self._texts(missing, repos)} if missing else read
        async with self._db.session() as s:
            stmt = select(Repo.name, Repo.root).where(col(Repo.name).in_(list(repos)))
            roots = {name: Path(root) for name, root in (await s.exec(stmt)).all()}
        # A hit whose chunk is gone from SQL was re-indexed since: leave it out.
        results = [
            CodeResult(
                h.repo,
                h.path,
                h.start_line,
                h.end_line,
                h.symbol,
                h.kind,
                h.role,
                h.score,
                snippet(texts[h.chunk_id]),
            )
            for h in hits
            if h.chunk_id in texts
        ]
        # The index is a snapshot: a file ignored, renamed to a secret-looking name or deleted
        # since it was indexed is not shown, whoever asks (tools, offline answers, the CLI).
        return await asyncio.to_thread(still_readable, results, roots)
