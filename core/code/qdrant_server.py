"""The vector store on a Qdrant server (`QDRANT_URL`), through qdrant-client.

For teams whose processes or machines share one index. The query is the same `QueryPlan` as
the embedded store's (`core.code.vector_query`), sent as one `query_points` call: the legs as
prefetches with their filters, fused server-side as the plan says (DBSF for hybrid search).
Tests drive this backend with qdrant-client's local mode
(`AsyncQdrantClient(location=":memory:")`) standing in for a server; that mode has no payload
indexes, hence `payload_indexes=False` there.
"""

from __future__ import annotations

import asyncio
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any, cast

from qdrant_client.http import models as qm

from core.code.vector_query import (
    DENSE,
    INDEXED_FIELDS,
    RRF_K,
    SPARSE,
    PointData,
    PointState,
    QueryPlan,
    Scored,
    SparseQuery,
    VectorStoreError,
    Where,
)

if TYPE_CHECKING:
    from qdrant_client import AsyncQdrantClient

SCROLL_BATCH = 4096
DELETE_BATCH = 1024


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip()
    return text.splitlines()[0] if text else type(exc).__name__


def _filter(where: Where) -> qm.Filter | None:
    must: list[qm.Condition] = [
        qm.FieldCondition(key=key, match=qm.MatchAny(any=values))
        for key, values in where.conditions()
    ]
    return qm.Filter(must=must) if must else None


def _vector(vector: list[float] | SparseQuery) -> list[float] | qm.SparseVector:
    if isinstance(vector, SparseQuery):
        return qm.SparseVector(indices=vector.indices, values=vector.values)
    return vector


class ServerBackend:
    """A `Backend` on a collection of a Qdrant server (or anything speaking its client API)."""

    def __init__(
        self, client: AsyncQdrantClient, collection: str, *, payload_indexes: bool = True
    ) -> None:
        self._client = client
        self.collection = collection
        self._payload_indexes = payload_indexes
        self._ready = False
        self._ready_lock = asyncio.Lock()

    @property
    def embedded(self) -> bool:
        return False

    def _error(self, exc: Exception) -> VectorStoreError:
        return VectorStoreError(f"the Qdrant server at QDRANT_URL failed: {_first_line(exc)}")

    async def ensure(self, dimension: int) -> None:
        if self._ready:
            return
        async with self._ready_lock:
            if self._ready:
                return
            try:
                if not await self._client.collection_exists(self.collection):
                    await self._client.create_collection(
                        self.collection,
                        vectors_config={
                            DENSE: qm.VectorParams(size=dimension, distance=qm.Distance.COSINE)
                        },
                        sparse_vectors_config={
                            SPARSE: qm.SparseVectorParams(modifier=qm.Modifier.IDF)
                        },
                    )
                if self._payload_indexes:
                    # Also on collections made before a field was filtered on (`role`).
                    info = await self._client.get_collection(self.collection)
                    for name in INDEXED_FIELDS:
                        if name not in (info.payload_schema or {}):
                            await self._client.create_payload_index(
                                self.collection, name, qm.PayloadSchemaType.KEYWORD, wait=True
                            )
            except Exception as exc:
                raise self._error(exc) from exc
            self._ready = True

    async def upsert(self, points: Sequence[PointData]) -> None:
        if not points:
            return
        structs = [
            qm.PointStruct(
                id=p.id,
                vector={
                    DENSE: p.dense,
                    SPARSE: qm.SparseVector(indices=p.sparse.indices, values=p.sparse.values),
                },
                payload=p.payload,
            )
            for p in points
        ]
        try:
            await self._client.upsert(self.collection, points=structs, wait=True)
        except Exception as exc:
            raise self._error(exc) from exc

    async def delete(self, ids: Sequence[int]) -> None:
        for start in range(0, len(ids), DELETE_BATCH):
            part: list[qm.ExtendedPointId] = list(ids[start : start + DELETE_BATCH])
            try:
                await self._client.delete(
                    self.collection, points_selector=qm.PointIdsList(points=part), wait=True
                )
            except Exception as exc:
                raise self._error(exc) from exc

    async def set_payload(self, ids: Sequence[int], payload: Mapping[str, Any]) -> None:
        if not ids:
            return
        points: list[qm.ExtendedPointId] = list(ids)
        try:
            await self._client.set_payload(
                self.collection, payload=dict(payload), points=points, wait=True
            )
        except Exception as exc:
            raise self._error(exc) from exc

    async def states(self, repo: str | None) -> dict[int, PointState]:
        where = _filter(Where(repos=(repo,))) if repo is not None else None
        out: dict[int, PointState] = {}
        offset: Any = None
        while True:
            try:
                records, offset = await self._client.scroll(
                    self.collection,
                    scroll_filter=where,
                    limit=SCROLL_BATCH,
                    offset=offset,
                    with_payload=["digest", "role"],
                    with_vectors=False,
                )
            except Exception as exc:
                raise self._error(exc) from exc
            for r in records:
                payload = r.payload or {}
                out[int(r.id)] = PointState(
                    str(payload.get("digest", "")), str(payload.get("role", ""))
                )
            if offset is None:
                return out

    async def dense_vectors(self, ids: Sequence[int]) -> dict[int, list[float]]:
        out: dict[int, list[float]] = {}
        for start in range(0, len(ids), SCROLL_BATCH):
            part: list[qm.ExtendedPointId] = list(ids[start : start + SCROLL_BATCH])
            try:
                records = await self._client.retrieve(
                    self.collection, part, with_payload=False, with_vectors=[DENSE]
                )
            except Exception as exc:
                raise self._error(exc) from exc
            for r in records:
                vector = r.vector.get(DENSE) if isinstance(r.vector, dict) else None
                if isinstance(vector, list) and all(isinstance(x, float) for x in vector):
                    out[int(r.id)] = cast(list[float], vector)
        return out

    async def query(self, plan: QueryPlan) -> list[Scored]:
        try:
            if plan.fusion_weights is None:
                (leg,) = plan.legs
                response = await self._client.query_points(
                    self.collection,
                    query=_vector(leg.vector),
                    using=leg.using,
                    query_filter=_filter(leg.where),
                    limit=plan.limit,
                    with_payload=True,
                )
            else:
                response = await self._client.query_points(
                    self.collection,
                    prefetch=[
                        qm.Prefetch(
                            query=_vector(leg.vector),
                            using=leg.using,
                            limit=leg.limit,
                            filter=_filter(leg.where),
                        )
                        for leg in plan.legs
                    ],
                    query=(
                        qm.FusionQuery(fusion=qm.Fusion.DBSF)
                        if plan.fusion == "dbsf"
                        else qm.RrfQuery(rrf=qm.Rrf(k=RRF_K, weights=list(plan.fusion_weights)))
                    ),
                    limit=plan.limit,
                    with_payload=True,
                )
        except Exception as exc:
            raise self._error(exc) from exc
        return [Scored(int(p.id), float(p.score), p.payload or {}) for p in response.points]

    async def close(self) -> None:
        await self._client.close()
