"""The embedded vector store: a Qdrant Edge shard (Qdrant's own Rust engine) in this process.

One shard per embedding model, in its own directory (`<root>/<collection>`, under
`DATA_DIR/qdrant-edge` in the bot). Search is exact (no HNSW graph, `indexing_threshold=0`):
a fused, filtered query over ~15k chunks takes a few milliseconds, no graph has to be built
after an index, and results are those of a plain scan, as on the server stand-in in the tests.
A Qdrant server (`QDRANT_URL`) is the answer for indexes too big for that.

The engine is synchronous. Calls run in worker threads: queries concurrently (the shard is
safe to read from several threads, also while a write runs), writes one at a time, and `close`
waits for whatever is still running. Every write is flushed to the segments before it returns,
so the engine's write-ahead log would only duplicate it: the shard has none (it cost ~35 MB of
memory and ~100 MB of disk per shard). A write cut short by a crash is lost, which the next
sync repairs (vectors are derived from the SQL chunks).

One process opens a shard at a time: `<collection>.lock` beside the shard directory is held
(flock) while it is open, and a second opener, in this process or another, gets `StoreHeld`
(`core.code.store_socket` then lets it use the store through the holder). The OS releases the
lock of a process that died. A shard that cannot be loaded (corrupt files, an incompatible
configuration) is moved aside to `<collection>.broken` (replacing an older one) and replaced by
an empty shard: vectors are derived data, re-embedded by the next sync. The shard directory
holds a `threadline-shard-id` file, a random id written when the shard is made: sync markers in
SQL name it (see `core.code.search.CodeSearch`), so a replaced or deleted shard is never taken
to be in step with SQL.
"""

from __future__ import annotations

import asyncio
import logging
import os
import shutil
import uuid
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar, cast

from core.code.vector_query import (
    DENSE,
    HELD_MESSAGE,
    INDEXED_FIELDS,
    RRF_K,
    SPARSE,
    Fusion,
    PointData,
    PointState,
    QueryPlan,
    Scored,
    SparseQuery,
    StoreHeld,
    VectorStoreError,
    Where,
)

if TYPE_CHECKING:
    import qdrant_edge as qe

log = logging.getLogger(__name__)

T = TypeVar("T")

SHARD_ID_FILE = "threadline-shard-id"
BROKEN_SUFFIX = ".broken"
LOCK_SUFFIX = ".lock"
LOCAL_MODE_DIR = "qdrant"  # where qdrant-client's local mode kept vectors before Qdrant Edge
SCROLL_BATCH = 4096
DELETE_BATCH = 1024


def shard_generation(path: Path) -> str | None:
    """The id of the shard at `path` (written when it was made), or None if there is none."""
    try:
        text = (path / SHARD_ID_FILE).read_text(encoding="ascii").strip()
    except (OSError, UnicodeDecodeError):
        return None
    return text or None


def _new_generation(path: Path) -> None:
    tmp = path / f"{SHARD_ID_FILE}.tmp"
    tmp.write_text(uuid.uuid4().hex, encoding="ascii")
    tmp.replace(path / SHARD_ID_FILE)


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip()
    return text.splitlines()[0] if text else type(exc).__name__


def _config(dimension: int) -> qe.EdgeConfig:
    import qdrant_edge as qe

    return qe.EdgeConfig(
        vectors={
            DENSE: qe.EdgeVectorParams(
                size=dimension,
                distance=qe.Distance.Cosine,
                # Read through the OS page cache instead of pinned in this process: the bot
                # holding a 14k-chunk index stays ~33 MB smaller, at the same query speed.
                memory=qe.Memory.Cold,
            )
        },
        sparse_vectors={SPARSE: qe.EdgeSparseVectorParams(modifier=qe.Modifier.Idf)},
        optimizers=qe.EdgeOptimizersConfig(
            # 0 turns HNSW building off: exact search is fast at this size (module docstring),
            # and `optimize` then only vacuums and merges segments.
            indexing_threshold=0,
            # Vacuum any segment with a deleted point: until then the deleted points still
            # count in the sparse leg's IDF statistics, and rankings would drift from the
            # server path's after every re-index (a vacuum of 15k points takes ~0.3 s).
            deleted_threshold=0.0,
            vacuum_min_vector_number=1,
        ),
        wal_enabled=False,  # every write is flushed (module docstring)
    )


def lock_path(shard: Path) -> Path:
    return shard.with_name(shard.name + LOCK_SUFFIX)


class _Lock:
    """An exclusive, non-blocking flock on `<collection>.lock`, held while the shard is open.
    Without fcntl (not POSIX) nothing is locked."""

    def __init__(self, path: Path) -> None:
        self._path = path
        self._fd: int | None = None

    def acquire(self) -> None:
        try:
            import fcntl
        except ImportError:
            return
        self._path.parent.mkdir(parents=True, exist_ok=True)
        fd = os.open(self._path, os.O_RDWR | os.O_CREAT, 0o600)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            os.close(fd)
            raise StoreHeld(HELD_MESSAGE) from None
        self._fd = fd

    def release(self) -> None:
        fd, self._fd = self._fd, None
        if fd is not None:
            os.close(fd)  # closing the only descriptor releases the flock


def _has_segments(path: Path) -> bool:
    segments = path / "segments"
    return (path / "edge_config.json").exists() or (segments.is_dir() and any(segments.iterdir()))


def _create(path: Path, dimension: int) -> qe.EdgeShard:
    import qdrant_edge as qe

    path.mkdir(parents=True, exist_ok=True)
    try:
        shard = qe.EdgeShard.create(str(path), _config(dimension))
    except Exception as exc:
        raise VectorStoreError(
            f"the embedded vector store cannot be created at {path}: {_first_line(exc)}"
        ) from None
    _new_generation(path)
    return shard


def _rebuild(path: Path, dimension: int, why: Exception) -> qe.EdgeShard:
    broken = path.with_name(path.name + BROKEN_SUFFIX)
    log.warning(
        "the vector store at %s cannot be loaded (%s); it is moved to %s and an empty one "
        "takes its place: every indexed chunk is embedded again on the next sync",
        path,
        _first_line(why),
        broken,
    )
    try:
        if broken.exists():
            shutil.rmtree(broken)
        path.rename(broken)
    except OSError as exc:
        raise VectorStoreError(
            f"the embedded vector store at {path} cannot be loaded ({_first_line(why)}) and "
            f"cannot be moved aside ({exc.strerror or exc}); remove that directory to rebuild "
            "it (vectors are embedded again from the indexed chunks)"
        ) from None
    return _create(path, dimension)


def open_shard(path: Path, dimension: int) -> qe.EdgeShard:
    """The shard at `path`, made if missing, rebuilt if unreadable, with its payload indexes.
    Blocking; the caller holds the shard's lock."""
    import qdrant_edge as qe

    if not _has_segments(path):
        shard = _create(path, dimension)
    else:
        try:
            shard = qe.EdgeShard.load(str(path), _config(dimension))
        except Exception as exc:
            shard = _rebuild(path, dimension, exc)
        if shard_generation(path) is None:  # made by a process that died before writing it
            _new_generation(path)
    try:
        # Without them a filter reads every point's payload from disk (~14 ms a query at 10k
        # points instead of ~1 ms).
        present = set(shard.info().payload_schema)
        for name in INDEXED_FIELDS:
            if name not in present:
                shard.update(
                    qe.UpdateOperation.create_field_index(name, qe.PayloadSchemaType.Keyword)
                )
    except Exception as exc:
        shard.close()
        raise VectorStoreError(
            f"the embedded vector store at {path} failed: {_first_line(exc)}"
        ) from None
    return shard


def _flock_held(lock: Path) -> bool:
    """Whether another process holds `lock` (qdrant-client's local mode takes an exclusive
    flock on it while open)."""
    try:
        import fcntl
    except ImportError:  # not POSIX: assume it may be in use
        return True
    try:
        with lock.open("rb") as handle:
            try:
                fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except OSError:
                return True
            fcntl.flock(handle, fcntl.LOCK_UN)
    except FileNotFoundError:
        return False
    return False


def retire_local_mode_store(path: Path) -> bool:
    """Remove the vectors an older Threadline kept with qdrant-client's local mode at `path`
    (`DATA_DIR/qdrant`). Nothing reads them any more: the Qdrant Edge shard is filled from the
    SQL chunks by the next sync, and keeping a second copy of every vector (often hundreds of
    MB) would only cost disk. Left in place, with a warning, while an older Threadline still
    has it open. Returns whether it was removed."""
    if not ((path / "meta.json").is_file() or (path / "collection").is_dir()):
        return False
    if _flock_held(path / ".lock"):
        log.warning(
            "the old embedded vector store at %s is still open in another process (an older "
            "Threadline?); it is left in place: remove it once that process has stopped",
            path,
        )
        return False
    try:
        shutil.rmtree(path)
    except OSError as exc:
        log.warning("the old embedded vector store at %s could not be removed: %s", path, exc)
        return False
    log.warning(
        "removed the old embedded vector store at %s (qdrant-client local mode): vectors now "
        "live in a Qdrant Edge shard, and every indexed chunk is embedded again on the next sync",
        path,
    )
    return True


# -- translating the query shape ------------------------------------------------------------------
def _filter(where: Where) -> qe.Filter | None:
    import qdrant_edge as qe

    must: list[qe.ConditionType] = [
        qe.FieldCondition(key=key, match=qe.MatchAny(any=values))
        for key, values in where.conditions()
    ]
    return qe.Filter(must=must) if must else None


def _nearest(vector: list[float] | SparseQuery, using: str) -> qe.Query:
    import qdrant_edge as qe

    if isinstance(vector, SparseQuery):
        return qe.Query.Nearest(qe.SparseVector(vector.indices, vector.values), using=using)
    return qe.Query.Nearest(vector, using=using)


def _fusion(fusion: Fusion, weights: Sequence[float]) -> qe.Fusion:
    import qdrant_edge as qe

    # The stub types `Fusion.Rrf` and `Fusion.Dbsf` as classes nested in `Fusion`, not as one.
    if fusion == "dbsf":
        return cast("qe.Fusion", qe.Fusion.Dbsf())
    return cast("qe.Fusion", qe.Fusion.Rrf(k=RRF_K, weights=list(weights)))


def _request(plan: QueryPlan) -> qe.QueryRequest:
    import qdrant_edge as qe

    if plan.fusion_weights is None:
        (leg,) = plan.legs
        return qe.QueryRequest(
            limit=plan.limit,
            query=_nearest(leg.vector, leg.using),
            filter=_filter(leg.where),
            with_payload=True,
        )
    return qe.QueryRequest(
        limit=plan.limit,
        prefetches=[
            qe.Prefetch(
                limit=leg.limit, query=_nearest(leg.vector, leg.using), filter=_filter(leg.where)
            )
            for leg in plan.legs
        ],
        query=_fusion(plan.fusion, plan.fusion_weights),
        with_payload=True,
    )


class EdgeBackend:
    """A `Backend` on one Qdrant Edge shard; see the module docstring."""

    def __init__(
        self,
        shard: qe.EdgeShard,
        path: Path,
        *,
        lock: _Lock | None = None,
        on_close: Callable[[], None] | None = None,
    ) -> None:
        self._shard: qe.EdgeShard | None = shard
        self.path = path
        self._lock = lock
        self._on_close = on_close
        self._write_lock = asyncio.Lock()
        self._running = 0
        self._idle = asyncio.Event()
        self._idle.set()

    @classmethod
    def open(
        cls, path: Path, dimension: int, *, on_close: Callable[[], None] | None = None
    ) -> EdgeBackend:
        """Open (or make) the shard at `path`. Blocking: call it off the event loop. Raises
        `StoreHeld` while another opener has it."""
        lock = _Lock(lock_path(path))
        lock.acquire()
        try:
            shard = open_shard(path, dimension)
        except BaseException:
            lock.release()
            raise
        return cls(shard, path, lock=lock, on_close=on_close)

    @property
    def embedded(self) -> bool:
        return True

    def _done(self, _: object) -> None:
        self._running -= 1
        if not self._running:
            self._idle.set()

    async def _call(self, work: Callable[[qe.EdgeShard], T]) -> T:
        shard = self._shard
        if shard is None:
            raise VectorStoreError("the embedded vector store is closed")
        self._running += 1
        self._idle.clear()
        future = asyncio.get_running_loop().run_in_executor(None, work, shard)
        # Counted until the thread is done, even if the caller is cancelled meanwhile: close
        # must not pull the shard from under a running call.
        future.add_done_callback(self._done)
        try:
            return await future
        except VectorStoreError:
            raise
        except Exception as exc:
            raise VectorStoreError(
                f"the embedded vector store at {self.path} failed: {_first_line(exc)}"
            ) from exc

    async def _write(self, work: Callable[[qe.EdgeShard], T]) -> T:
        async with self._write_lock:
            return await self._call(work)

    async def ensure(self, dimension: int) -> None:
        """Nothing to do: the shard and its indexes are made when it is opened."""

    async def upsert(self, points: Sequence[PointData]) -> None:
        import qdrant_edge as qe

        if not points:
            return
        edge_points = [
            qe.Point(
                p.id,
                {DENSE: p.dense, SPARSE: qe.SparseVector(p.sparse.indices, p.sparse.values)},
                p.payload,
            )
            for p in points
        ]

        def work(shard: qe.EdgeShard) -> None:
            shard.update(qe.UpdateOperation.upsert_points(edge_points))
            shard.flush()

        await self._write(work)

    async def delete(self, ids: Sequence[int]) -> None:
        import qdrant_edge as qe

        if not ids:
            return
        batches: list[list[qe.PointId]] = [
            list(ids[i : i + DELETE_BATCH]) for i in range(0, len(ids), DELETE_BATCH)
        ]

        def work(shard: qe.EdgeShard) -> None:
            for batch in batches:
                shard.update(qe.UpdateOperation.delete_points(batch))
            shard.flush()
            shard.optimize()  # vacuums (see `_config`)

        await self._write(work)

    async def set_payload(self, ids: Sequence[int], payload: Mapping[str, Any]) -> None:
        import qdrant_edge as qe

        if not ids:
            return
        point_ids: list[qe.PointId] = list(ids)

        def work(shard: qe.EdgeShard) -> None:
            shard.update(qe.UpdateOperation.set_payload(point_ids, dict(payload)))
            shard.flush()

        await self._write(work)

    async def states(self, repo: str | None) -> dict[int, PointState]:
        import qdrant_edge as qe

        where = _filter(Where(repos=(repo,))) if repo is not None else None

        def work(shard: qe.EdgeShard) -> dict[int, PointState]:
            out: dict[int, PointState] = {}
            offset: qe.PointId | None = None
            while True:
                records, offset = shard.scroll(
                    qe.ScrollRequest(
                        offset=offset,
                        limit=SCROLL_BATCH,
                        filter=where,
                        with_payload=["digest", "role"],
                        with_vector=False,
                    )
                )
                for r in records:
                    payload = r.payload or {}
                    out[int(r.id)] = PointState(
                        str(payload.get("digest", "")), str(payload.get("role", ""))
                    )
                if offset is None:
                    return out

        return await self._call(work)

    async def dense_vectors(self, ids: Sequence[int]) -> dict[int, list[float]]:
        if not ids:
            return {}
        batches: list[list[qe.PointId]] = [
            list(ids[i : i + SCROLL_BATCH]) for i in range(0, len(ids), SCROLL_BATCH)
        ]

        def work(shard: qe.EdgeShard) -> dict[int, list[float]]:
            out: dict[int, list[float]] = {}
            for batch in batches:
                for r in shard.retrieve(batch, with_payload=False, with_vector=[DENSE]):
                    vectors = r.vector if isinstance(r.vector, dict) else {}
                    vector = vectors.get(DENSE)
                    if isinstance(vector, list) and all(isinstance(x, float) for x in vector):
                        out[int(r.id)] = cast(list[float], vector)
            return out

        return await self._call(work)

    async def query(self, plan: QueryPlan) -> list[Scored]:
        request = _request(plan)

        def work(shard: qe.EdgeShard) -> list[Scored]:
            return [
                Scored(int(p.id), float(p.score), p.payload or {}) for p in shard.query(request)
            ]

        return await self._call(work)

    async def close(self) -> None:
        shard = self._shard
        if shard is None:
            return
        async with self._write_lock:
            self._shard = None  # new calls fail from here on
            await self._idle.wait()

            def work() -> None:
                try:
                    shard.flush()
                finally:
                    shard.close()

            try:
                await asyncio.to_thread(work)
            finally:
                if self._lock is not None:
                    self._lock.release()
                if self._on_close is not None:
                    self._on_close()
