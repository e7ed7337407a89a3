"""What every vector store backend shares: the stored point, the one query shape, the Protocol.

`core.code.vectors.VectorStore` decides *what* to store and *how* to search (one `QueryPlan`
per search); a backend only translates that into its engine's types: `core.code.edge_store`
(Qdrant Edge, embedded in this process, the default) or `core.code.qdrant_server`
(qdrant-client against a Qdrant server). Because both receive the same plan, the embedded and
the server path rank alike; `tests/core/code/test_vector_congruence.py` runs one scenario on both.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal, Protocol

DENSE: Literal["dense"] = "dense"
SPARSE: Literal["sparse"] = "sparse"
Fusion = Literal["rrf", "dbsf"]
# How hybrid search fuses its legs: distribution-based score fusion (each leg's scores scaled by
# their own mean and spread, then summed), not reciprocal rank fusion. RRF sees only ranks, so a
# chunk one leg finds far ahead of everything else (an error message's words, a rare name) lost
# to chunks that both legs ranked middling; DBSF keeps how far ahead it was. Chosen on the
# search benchmark's tuning corpora and checked on its held-out corpus (bench/RESULTS.md,
# issue 28). DBSF takes no weights: every leg counts alike.
HYBRID_FUSION: Fusion = "dbsf"
RRF_K = 60  # the usual constant: a list's top ranks matter, but no single list dominates
LEG_LIMIT = 60  # candidates each leg contributes to the fusion
# The exact-symbol leg: a chunk named by an identifier in the query gets a third list's vote.
SYMBOL_WEIGHT = 1.0
# Keyword payload indexes (where the backend has them): the fields searches filter on.
INDEXED_FIELDS = ("repo", "role", "name")


class VectorStoreError(RuntimeError):
    """The vector store cannot be used (busy, unreachable, misconfigured); safe to show."""


class StoreHeld(VectorStoreError):
    """Another opener holds the embedded store."""


HELD_MESSAGE = (
    "the embedded vector store is open in another Threadline process; stop it, or run "
    "a Qdrant server and set QDRANT_URL so several processes can share it"
)


@dataclass(frozen=True, slots=True)
class SparseQuery:
    indices: list[int]
    values: list[float]


@dataclass(frozen=True, slots=True)
class PointData:
    """One chunk as stored: its id, both vectors and the payload."""

    id: int
    dense: list[float]
    sparse: SparseQuery
    payload: dict[str, Any]


@dataclass(frozen=True, slots=True)
class PointState:
    """What the store knows of a point without its vectors: the digest of the text it was
    embedded from, and the role it is filed under ("" when the point predates roles)."""

    digest: str
    role: str


@dataclass(frozen=True, slots=True)
class Where:
    """A leg's filter: every given condition must hold (None: no condition on that field)."""

    repos: tuple[str, ...] | None = None
    roles: tuple[str, ...] | None = None
    names: tuple[str, ...] | None = None  # the exact-symbol leg: `name` is one of these

    def conditions(self) -> list[tuple[str, list[str]]]:
        """(payload field, accepted values) for each condition, in a fixed order."""
        fields = (("repo", self.repos), ("role", self.roles), ("name", self.names))
        return [(key, list(values)) for key, values in fields if values is not None]


@dataclass(frozen=True, slots=True)
class Leg:
    """One ranked list: nearest neighbours of `vector` in the `using` space, filtered."""

    using: Literal["dense", "sparse"]
    vector: list[float] | SparseQuery
    where: Where
    limit: int


@dataclass(frozen=True, slots=True)
class QueryPlan:
    """A search as the backends run it. With `fusion_weights` the legs are prefetches fused by
    `fusion`: reciprocal rank fusion (k = `RRF_K`, one weight per leg) or distribution-based
    score fusion (the weights unused); without, the single leg's own scores are the result."""

    legs: tuple[Leg, ...]
    limit: int
    fusion_weights: tuple[float, ...] | None = None
    fusion: Fusion = "rrf"


@dataclass(frozen=True, slots=True)
class Scored:
    id: int
    score: float
    payload: Mapping[str, Any]


class Backend(Protocol):
    """A vector engine holding one collection (the embedder's): points are written, deleted
    and searched by id. Every method may raise `VectorStoreError`."""

    @property
    def embedded(self) -> bool:
        """True for an engine inside this process (one process at a time)."""
        ...

    async def ensure(self, dimension: int) -> None:
        """Create the collection and its payload indexes if missing."""
        ...

    async def upsert(self, points: Sequence[PointData]) -> None: ...

    async def delete(self, ids: Sequence[int]) -> None: ...

    async def set_payload(self, ids: Sequence[int], payload: Mapping[str, Any]) -> None:
        """Set these payload fields on existing points (other fields stay)."""
        ...

    async def states(self, repo: str | None) -> dict[int, PointState]:
        """Every point (of `repo`, if given) and its state."""
        ...

    async def dense_vectors(self, ids: Sequence[int]) -> dict[int, list[float]]:
        """The stored dense vector of each of these points (ids not stored are left out)."""
        ...

    async def query(self, plan: QueryPlan) -> list[Scored]: ...

    async def close(self) -> None: ...
