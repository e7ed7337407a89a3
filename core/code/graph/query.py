"""Questions to the stored code graph: which definitions a name means, and around one of them
what it extends and what extends it, what it imports, who calls it and what it calls, to a
depth. Every answer is bounded (`MAX_EDGES` per section) so a hub symbol cannot flood a reply.

A name is matched, in this order of preference: `path:symbol` exactly, a qualified symbol
(`Class.method`) exactly or as the tail of a longer one (`Outer.Inner.method`), the last part
of a symbol (`method`). Several matches are returned as candidates, never guessed between.
"""

from __future__ import annotations

import difflib
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

from core.code.graph.model import Edge
from core.store.engine import Database

MAX_DEPTH = 5
MAX_EDGES = 60  # per section
MAX_CANDIDATES = 20
Section = Literal["callers", "callees", "hierarchy", "imports"]
SECTIONS: tuple[Section, ...] = ("hierarchy", "imports", "callers", "callees")


@dataclass(frozen=True, slots=True)
class Symbol:
    repo: str
    path: str
    symbol: str
    kind: str
    line: int
    end_line: int

    def as_json(self) -> dict[str, Any]:
        return {
            "repo": self.repo,
            "path": self.path,
            "symbol": self.symbol,
            "kind": self.kind,
            "line": self.line,
            "end_line": self.end_line,
        }


@dataclass(frozen=True, slots=True)
class Step:
    """An edge reached at `depth` (1: touches the symbol itself)."""

    depth: int
    edge: Edge

    def as_json(self) -> dict[str, Any]:
        return {"depth": self.depth, **self.edge.as_json()}


@dataclass(slots=True)
class Neighbourhood:
    focus: Symbol
    depth: int
    sections: dict[str, list[Step]] = field(default_factory=dict)
    truncated: dict[str, bool] = field(default_factory=dict)

    def as_json(self) -> dict[str, Any]:
        return {
            "symbol": self.focus.as_json(),
            "depth": self.depth,
            **{name: [s.as_json() for s in steps] for name, steps in self.sections.items()},
            "truncated": [name for name, cut in self.truncated.items() if cut],
        }


@dataclass(frozen=True, slots=True)
class Lookup:
    """What a name means: one symbol, several candidates, or none (with close names)."""

    matches: list[Symbol]
    suggestions: list[str] = field(default_factory=list)


def _edge(row: Any) -> Edge:
    return Edge(
        row.kind,
        row.source_path,
        row.source_symbol,
        row.source_line,
        row.target_path,
        row.target_symbol,
        row.target_line,
        row.target_name,
        row.confidence,
    )


async def has_graph(db: Database, repo_id: int) -> bool:
    from sqlmodel import col, select

    from core.store.models import GraphFile

    async with db.session() as s:
        stmt = select(GraphFile.id).where(col(GraphFile.repo_id) == repo_id).limit(1)
        return (await s.exec(stmt)).first() is not None


async def lookup(db: Database, repos: dict[int, str], name: str) -> Lookup:
    """The definitions `name` may mean in these repositories (id -> name)."""
    from sqlmodel import col, or_, select

    from core.store.models import GraphSymbol

    name = name.strip()
    if not name or not repos:
        return Lookup([])
    path, sep, qualified = name.rpartition(":")
    if not sep:
        path, qualified = "", name
    last = qualified.rsplit(".", 1)[-1]
    async with db.session() as s:
        stmt = select(GraphSymbol).where(
            col(GraphSymbol.repo_id).in_(list(repos)),
            or_(col(GraphSymbol.name) == last, col(GraphSymbol.symbol) == qualified),
        )
        if path:
            stmt = stmt.where(col(GraphSymbol.path) == path)
        rows = (await s.exec(stmt.limit(2_000))).all()
    found = [Symbol(repos[r.repo_id], r.path, r.symbol, r.kind, r.line, r.end_line) for r in rows]
    tests: list[Callable[[Symbol], bool]] = [
        lambda x: x.symbol == qualified,
        lambda x: x.symbol.endswith("." + qualified),
        lambda x: x.symbol.rsplit(".", 1)[-1] == qualified,
    ]
    for test in tests:
        matches = [x for x in found if test(x)]
        if matches:
            matches.sort(key=lambda x: (x.repo, x.path, x.line))
            return Lookup(matches)
    return Lookup([], await _close_names(db, repos, last))


async def _close_names(db: Database, repos: dict[int, str], name: str) -> list[str]:
    from sqlmodel import col, select

    from core.store.models import GraphSymbol

    async with db.session() as s:
        stmt = (
            select(GraphSymbol.name)
            .where(col(GraphSymbol.repo_id).in_(list(repos)), col(GraphSymbol.kind) != "module")
            .distinct()
        )
        names = list((await s.exec(stmt)).all())
    lowered = {n.lower(): n for n in names}
    close = difflib.get_close_matches(name.lower(), list(lowered), n=5, cutoff=0.6)
    close += [low for low in lowered if name.lower() in low and low not in close][:5]
    return [lowered[c] for c in close[:5]]


async def _edges(db: Database, repo_id: int, where: Sequence[Any], limit: int) -> list[Edge]:
    from sqlmodel import col, select

    from core.store.models import GraphEdge

    async with db.session() as s:
        stmt = (
            select(GraphEdge)
            .where(col(GraphEdge.repo_id) == repo_id, *where)
            .order_by(col(GraphEdge.source_path), col(GraphEdge.source_line))
            .limit(limit)
        )
        return [_edge(r) for r in (await s.exec(stmt)).all()]


async def _walk(
    db: Database,
    repo_id: int,
    start: tuple[str, str],
    kinds: tuple[str, ...],
    forward: bool,
    depth: int,
) -> tuple[list[Step], bool]:
    """Breadth-first along `kinds` edges from `start`, `forward` (source -> target) or back."""
    from sqlmodel import col

    from core.store.models import GraphEdge

    steps: list[Step] = []
    seen = {start}
    frontier = [start]
    for level in range(1, depth + 1):
        following: list[tuple[str, str]] = []
        for path, symbol in frontier:
            if forward:
                where = [
                    col(GraphEdge.source_path) == path,
                    col(GraphEdge.source_symbol) == symbol,
                ]
            else:
                where = [
                    col(GraphEdge.target_path) == path,
                    col(GraphEdge.target_symbol) == symbol,
                ]
            where.append(col(GraphEdge.kind).in_(kinds))
            room = MAX_EDGES - len(steps)
            for edge in await _edges(db, repo_id, where, room + 1):
                if len(steps) >= MAX_EDGES:
                    return steps, True
                steps.append(Step(level, edge))
                node = (
                    (edge.target_path, edge.target_symbol)
                    if forward
                    else (edge.source_path, edge.source_symbol)
                )
                if node[0] is not None and node[1] is not None and node not in seen:
                    seen.add((node[0], node[1]))
                    following.append((node[0], node[1]))
        frontier = following
        if not frontier:
            break
    return steps, False


async def neighbourhood(
    db: Database,
    repo_id: int,
    focus: Symbol,
    *,
    depth: int = 2,
    sections: Sequence[Section] = SECTIONS,
) -> Neighbourhood:
    depth = max(1, min(depth, MAX_DEPTH))
    out = Neighbourhood(focus, depth)
    start = (focus.path, focus.symbol)
    walks: dict[str, tuple[tuple[str, ...], bool, int]] = {
        "extends": (("inherits", "implements"), True, depth),
        "extended_by": (("inherits", "implements"), False, depth),
        "imports": (("imports",), True, 1),
        "callers": (("calls",), False, depth),
        "callees": (("calls",), True, depth),
    }
    wanted = {
        "hierarchy": ("extends", "extended_by"),
        "imports": ("imports",),
        "callers": ("callers",),
        "callees": ("callees",),
    }
    for section in sections:
        for name in wanted[section]:
            kinds, forward, limit = walks[name]
            steps, cut = await _walk(db, repo_id, start, kinds, forward, limit)
            out.sections[name] = steps
            out.truncated[name] = cut
    return out


async def all_edges(db: Database, repo_id: int) -> list[Edge]:
    """Every edge of a repository, in a stable order (path, line, kind, target)."""
    from sqlmodel import col, select

    from core.store.models import GraphEdge

    async with db.session() as s:
        stmt = (
            select(GraphEdge)
            .where(col(GraphEdge.repo_id) == repo_id)
            .order_by(
                col(GraphEdge.source_path),
                col(GraphEdge.source_line),
                col(GraphEdge.kind),
                col(GraphEdge.source_symbol),
                col(GraphEdge.target_name),
                col(GraphEdge.id),
            )
        )
        return [_edge(r) for r in (await s.exec(stmt)).all()]
