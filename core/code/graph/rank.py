"""The ranking graph of a repository and its personalized PageRank, for the repo map
(`core.code.graph.repomap`): apart from the outline and the seeds because it is the numeric
part (NumPy) and the cached read of the stored graph from SQL.

Ranking is personalized PageRank over the stored reference graph, one node per definition
(`path`, `symbol`): calls, inherits and implements edges weigh their confidence, imports half
of it, contains (file > class > method, known from the symbols themselves) a little, so a class
and its methods share their rank. Each edge also passes `BACKWARD` of its weight from target to
source: the outline around a symbol should show who uses it as well as what it uses. The
teleport vector is the seeds, the files and symbols the conversation mentions
(`core.code.graph.focus`); without any, it is uniform, and the map shows what the whole
repository leans on most. A file ranks as its best definition.

PageRank is the small power iteration below with NumPy (already a dependency): a repository
of ~1,000 files is ~13k nodes and ~33k edges (each both ways), about a millisecond per step, so
networkx (pure Python, or SciPy for its own fast path) would add a dependency and be slower.
NumPy is imported when a graph is built or ranked, not with this module: building the app
(every `threadline` command) does not pay for it.

The ranking graph of a repository is kept in memory until its stored rows change
(`_fingerprint`), so only the first map after an index reads the whole graph from SQL.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from core.code.graph.model import MODULE
from core.store.engine import Database

if TYPE_CHECKING:
    import numpy as np
    from numpy.typing import NDArray

DAMPING = 0.85
KIND_WEIGHT = {"calls": 1.0, "inherits": 1.0, "implements": 1.0, "imports": 0.5, "contains": 0.2}
BACKWARD = 0.5


@dataclass(frozen=True, slots=True)
class Graph:
    """One repository's definitions and weighted reference edges, ready for ranking."""

    paths: list[str]
    symbols: list[str]
    kinds: list[str]
    lines: list[int]
    src: NDArray[np.int64]
    dst: NDArray[np.int64]
    weight: NDArray[np.float64]  # normalized: each node's outgoing weights sum to 1
    dangling: NDArray[np.bool_]
    by_name: dict[str, list[int]] = field(default_factory=dict)
    by_symbol: dict[str, list[int]] = field(default_factory=dict)
    by_path: dict[str, list[int]] = field(default_factory=dict)

    @property
    def size(self) -> int:
        return len(self.paths)


_CACHE: dict[int, tuple[tuple[Any, ...], Graph]] = {}
_CACHE_SIZE = 8


async def _fingerprint(db: Database, repo_id: int) -> tuple[Any, ...]:
    """Changes whenever the stored graph does: rows are rewritten with new ids on update."""
    from sqlmodel import col, func, select

    from core.store.models import GraphEdge, GraphSymbol

    async with db.session() as s:
        out: list[Any] = []
        for table in (GraphSymbol, GraphEdge):
            stmt = select(func.count(), func.max(table.id)).where(col(table.repo_id) == repo_id)
            out.extend((await s.exec(stmt)).one())
        return tuple(out)


async def load_graph(db: Database, repo_id: int) -> Graph | None:
    """The ranking graph of a repository (cached until its stored graph changes); None when
    it has no graph yet."""
    from sqlalchemy import select  # plain rows of six columns, no ORM objects
    from sqlmodel import col

    from core.store.models import GraphEdge, GraphSymbol

    key = await _fingerprint(db, repo_id)
    if not key[0]:
        return None
    cached = _CACHE.get(repo_id)
    if cached is not None and cached[0] == key:
        return cached[1]
    sym, edge = GraphSymbol, GraphEdge
    symbol_columns = (col(sym.path), col(sym.symbol), col(sym.kind), col(sym.line))
    edge_columns = (
        col(edge.kind),
        col(edge.source_path),
        col(edge.source_symbol),
        col(edge.target_path),
        col(edge.target_symbol),
        col(edge.confidence),
    )
    symbols_stmt = select(*symbol_columns).where(col(sym.repo_id) == repo_id)
    edges_stmt = select(*edge_columns).where(  # contains edges follow from the symbols
        col(edge.repo_id) == repo_id,
        col(edge.target_path).is_not(None),
        col(edge.kind) != "contains",
    )
    async with db.session() as s:
        # sqlmodel types `exec` for its own selects only; a Core select of columns runs on
        # the session's connection.
        connection = await s.connection()
        symbols = (await connection.execute(symbols_stmt)).all()
        edges = (await connection.execute(edges_stmt)).all()
    graph = await asyncio.to_thread(build_graph, symbols, edges)
    if len(_CACHE) >= _CACHE_SIZE:
        _CACHE.pop(next(iter(_CACHE)))
    _CACHE[repo_id] = (key, graph)
    return graph


def build_graph(
    symbols: Sequence[tuple[str, str, str, int]],
    edges: Iterable[tuple[str, str, str, str | None, str | None, float]],
) -> Graph:
    import numpy as np

    paths = [row[0] for row in symbols]
    names = [row[1] for row in symbols]
    kinds = [row[2] for row in symbols]
    lines = [row[3] for row in symbols]
    index = {(row[0], row[1]): i for i, row in enumerate(symbols)}
    src: list[int] = []
    dst: list[int] = []
    weight: list[float] = []
    get = index.get
    contains = KIND_WEIGHT["contains"]
    for i, (path, symbol, kind, _) in enumerate(symbols):  # file > class > method, as stored
        if kind == "module":
            continue
        owner, dot, _ = symbol.rpartition(".")
        parent = get((path, owner if dot else MODULE))
        if parent is not None:
            src += (parent, i)
            dst += (i, parent)
            weight += (contains, contains * BACKWARD)
    for kind, spath, ssym, tpath, tsym, confidence in edges:
        a = get((spath, ssym))
        b = None if tpath is None or tsym is None else get((tpath, tsym))
        w = KIND_WEIGHT.get(kind, 0.0) * confidence
        if a is None or b is None or a == b or w <= 0:
            continue
        src += (a, b)
        dst += (b, a)
        weight += (w, w * BACKWARD)
    n = len(paths)
    s = np.asarray(src, dtype=np.int64)
    d = np.asarray(dst, dtype=np.int64)
    w_arr = np.asarray(weight, dtype=np.float64)
    out = np.bincount(s, weights=w_arr, minlength=n)
    if len(w_arr):
        w_arr = w_arr / out[s]
    graph = Graph(paths, names, kinds, lines, s, d, w_arr, out == 0)
    for i in range(n):
        graph.by_path.setdefault(paths[i], []).append(i)
        if kinds[i] == "module":
            continue
        symbol = names[i]
        graph.by_symbol.setdefault(symbol, []).append(i)
        graph.by_name.setdefault(symbol.rsplit(".", 1)[-1], []).append(i)
    return graph


def pagerank(
    graph: Graph, personal: dict[int, float] | None = None, *, tol: float = 1e-8
) -> NDArray[np.float64]:
    """Personalized PageRank by power iteration; dangling nodes teleport like everyone else."""
    import numpy as np

    n = graph.size
    if n == 0:
        return np.zeros(0)
    p = np.full(n, 1.0 / n)
    if personal:
        p = np.zeros(n)
        for node, w in personal.items():
            p[node] += w
        p /= p.sum()
    rank = p.copy()
    for _ in range(100):
        spread = np.bincount(graph.dst, weights=graph.weight * rank[graph.src], minlength=n)
        lost = rank[graph.dangling].sum()
        new = DAMPING * (spread + lost * p) + (1 - DAMPING) * p
        done = float(np.abs(new - rank).sum()) < tol * n
        rank = new
        if done:
            break
    return rank
