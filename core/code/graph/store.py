"""Keeping a repository's code graph in SQL in step with its files.

`update_graph` is called by indexing with the files that were added or changed and those that
were removed. Only those files are parsed again (in a worker thread, or in worker processes
when there are many: see `core.code.graph.pool`); then the edges of the files that may resolve
differently are recomputed: the changed files themselves, files whose imports name a changed
file's module (or a package above it), files that used a global name a changed file defines
(the unique-name fallback), and files with an edge into a changed or removed file. Everything
is written in one transaction: a reader sees the old graph or the new one, never half of each.

Files that have no graph yet (indexed before the graph existed, or made with an older
`GRAPH_FORMAT`) count as changed, so existing repositories get a graph on their next index.
"""

from __future__ import annotations

import asyncio
import json
from collections import OrderedDict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from core.code.graph.extract import graph_language
from core.code.graph.gcpause import gc_paused
from core.code.graph.model import FileFacts
from core.code.graph.pool import GraphWorkers, encode, extract_many
from core.code.graph.resolve import Resolver, module_keys
from core.store.engine import Database

# Raise it whenever extraction or resolution of the same file gives different results, so
# stored graphs are remade on the next index.
# 2: string literals left out of unresolved names; 3: decorators' wrappers, yields,
# comprehensions, unpacking, slices, subclass attributes, loops' __iter__/__next__;
# 4: static methods' parameters, functions builtins call, dict.update; 5: no argument past
# `*args` or `*` taken for a keyword-only parameter
GRAPH_FORMAT = 5
EXTRACT_BATCH = 100  # files parsed per worker-thread hop
INSERT_BATCH = 2_000  # rows per INSERT statement
_GRAPH_LOCK_SPACE = 0x746367  # "tcg": advisory-lock key space of graph writes


@dataclass(frozen=True, slots=True)
class GraphUpdate:
    extracted: int = 0  # files parsed
    resolved: int = 0  # files whose edges were recomputed
    edges: int = 0  # edges written


def _walk_keys(value: Any, keys: set[str]) -> None:
    """Add the dotted names (`m:` each package up) and unbound globals (`n:`) in a value."""
    if not isinstance(value, list | tuple) or not value:
        return
    if value[0] == "m" and isinstance(value[1], str):
        parts = value[1].split(".")
        keys.update("m:" + ".".join(parts[:i]) for i in range(1, len(parts) + 1))
    elif value[0] == "n" and isinstance(value[1], str):
        keys.add("n:" + value[1])
    for item in value[1:]:
        _walk_keys(item, keys)


def _keys(facts: FileFacts) -> set[str]:
    """What a file's resolution may depend on: dotted names it imports (and each package
    above them) and global names bound nowhere in it."""
    keys: set[str] = set()

    def walk(value: Any) -> None:
        _walk_keys(value, keys)

    for ref in facts.references:
        for target in ref.targets:
            walk(target)
    for values in facts.names.values():
        for value in values:
            walk(value)
    for cls in facts.classes.values():
        for value in cls.bases:
            walk(value)
        for values in cls.members.values():
            for value in values:
                walk(value)
    for values in facts.returns.values():
        for value in values:
            walk(value)
    keys.update("m:" + star for star in facts.stars)
    return keys


def _provides(facts: FileFacts) -> set[str]:
    """The keys a file answers: its module names, and its top-level definitions."""
    keys = {"m:" + key for key in module_keys(facts)}
    keys.update(
        "n:" + d.symbol for d in facts.definitions if "." not in d.symbol and d.kind != "module"
    )
    return keys


def _interface(facts: FileFacts) -> str:
    """What other files can see of a file, line numbers left out: when an edit keeps it, no
    other file can resolve differently (only the lines of edges into it move)."""
    data = facts.as_json()
    data["defs"] = sorted((d.symbol, d.kind) for d in facts.definitions)
    del data["refs"]
    return json.dumps(data, sort_keys=True, default=list)


def _affected(
    files: dict[str, FileFacts], old: dict[str, FileFacts], changed: set[str], gone: set[str]
) -> set[str]:
    affected = {p for p in changed if p in files}
    changed = {
        p
        for p in changed
        if p not in old or p not in files or _interface(old[p]) != _interface(files[p])
    }
    if not changed and not gone:
        return affected
    provided: set[str] = set()
    bases: set[str] = set()
    for path in changed | gone:
        for facts in (files.get(path), old.get(path)):
            if facts is not None:
                provided |= _provides(facts)
                bases |= _base_keys(facts)
    for path, facts in files.items():
        if path in affected:
            continue
        # Files that use a changed one, and files holding its classes' bases: `self.attr`
        # that a base lacks resolves to what its subclasses define (see `Resolver`).
        if _keys(facts) & provided or _provides(facts) & bases:
            affected.add(path)
    return affected


def _base_keys(facts: FileFacts) -> set[str]:
    """The modules a file's classes take their bases from (as `_keys` names them)."""
    keys: set[str] = set()
    for cls in facts.classes.values():
        for value in cls.bases:
            _walk_keys(value, keys)
    return keys


def _decode(rows: Iterable[tuple[str, str]]) -> dict[str, FileFacts]:
    return {path: FileFacts.from_json(path, json.loads(text)) for path, text in rows}


def _resolve(files: dict[str, FileFacts], paths: Iterable[str]) -> list[dict[str, Any]]:
    rows: list[dict[str, Any]] = []
    with gc_paused():  # for the whole set: see core.code.graph.build
        resolver = Resolver(files)
        for path in sorted(paths):
            for e in resolver.edges(path):
                rows.append(
                    {
                        "kind": e.kind,
                        "source_path": e.source_path,
                        "source_symbol": e.source_symbol,
                        "source_line": e.source_line,
                        "target_path": e.target_path,
                        "target_symbol": e.target_symbol,
                        "target_line": e.target_line,
                        "target_name": e.target_name,
                        "confidence": e.confidence,
                    }
                )
        del resolver  # see `resolve_paths`
    return rows


def _moved_lines(
    old: dict[str, FileFacts], fresh: dict[str, FileFacts], stale: set[str]
) -> list[tuple[str, str, int]]:
    """(path, symbol, new line) of definitions of changed files that kept their name."""
    moved = []
    for path in stale:
        if path not in old or path not in fresh:
            continue
        before = {d.symbol: d.line for d in old[path].definitions}
        for d in fresh[path].definitions:
            if d.symbol in before and before[d.symbol] != d.line:
                moved.append((path, d.symbol, d.line))
    return moved


# Decoded facts of the repositories this process updated last, by GraphFile row id (a row is
# replaced, with a new id, whenever its file changes): a one-file update in a running bot does
# not decode the whole repository's facts again.
_CACHE: OrderedDict[tuple[str, int], dict[str, tuple[int, FileFacts]]] = OrderedDict()
CACHED_REPOS = 4


async def _stored_facts(
    db: Database, repo_id: int, stored: dict[str, tuple[int, int | None]]
) -> dict[str, FileFacts]:
    """The stored facts of the current format, from the cache where the row is unchanged."""
    from sqlmodel import col, select

    from core.store.models import GraphFile

    cached = _CACHE.get((db.url, repo_id), {})
    out: dict[str, FileFacts] = {}
    missing: list[str] = []
    for path, (fmt, row_id) in stored.items():
        if fmt != GRAPH_FORMAT:
            continue
        hit = cached.get(path)
        if hit is not None and hit[0] == row_id:
            out[path] = hit[1]
        else:
            missing.append(path)
    for start in range(0, len(missing), 500):
        async with db.session() as s:
            stmt = select(GraphFile.path, GraphFile.facts).where(
                col(GraphFile.repo_id) == repo_id,
                col(GraphFile.path).in_(missing[start : start + 500]),
            )
            rows = list((await s.exec(stmt)).all())
        out.update(await asyncio.to_thread(_decode, rows))
    return out


async def _remember(db: Database, repo_id: int, files: dict[str, FileFacts]) -> None:
    from sqlmodel import col, select

    from core.store.models import GraphFile

    async with db.session() as s:
        stmt = select(GraphFile.path, GraphFile.id).where(col(GraphFile.repo_id) == repo_id)
        ids = {path: row_id for path, row_id in (await s.exec(stmt)).all()}
    key = (db.url, repo_id)
    _CACHE[key] = {p: (row_id, f) for p, f in files.items() if (row_id := ids.get(p)) is not None}
    _CACHE.move_to_end(key)
    while len(_CACHE) > CACHED_REPOS:
        _CACHE.popitem(last=False)


async def _serialize(db: Database, session: Any, repo_id: int) -> None:
    """Two processes updating one repository's graph: PostgreSQL transactions would not see
    each other's rows; a per-repository advisory lock orders them (SQLite has one writer)."""
    if db.dialect != "postgresql":
        return
    from sqlalchemy import text

    await session.exec(
        text("SELECT pg_advisory_xact_lock(:space, :repo)"),
        params={"space": _GRAPH_LOCK_SPACE, "repo": repo_id},
    )


async def update_graph(
    db: Database,
    repo_id: int,
    root: Path,
    changed: Sequence[str],
    removed: Sequence[str],
    current: Sequence[str],
    workers: GraphWorkers | None = None,
) -> GraphUpdate:
    """Bring the graph of `repo_id` in line: `changed` files (added or modified) are parsed
    again, `removed` ones dropped, `current` is every indexed file now (files among them
    without a graph of this format are parsed too); many files are parsed by the `workers`
    processes when given (see `core.code.graph.pool`). See the module docstring."""
    from sqlmodel import col, select

    from core.store.models import GraphEdge, GraphFile

    async with db.session() as s:
        stmt = select(GraphFile.path, GraphFile.format, GraphFile.id).where(
            col(GraphFile.repo_id) == repo_id
        )
        stored = {path: (fmt, row_id) for path, fmt, row_id in (await s.exec(stmt)).all()}
    now = {p for p in current if graph_language(p) is not None}
    stale = {p for p in changed if p in now}
    stale |= {p for p in now if p not in stored or stored[p][0] != GRAPH_FORMAT}
    gone = (set(removed) | (set(stored) - now)) & set(stored)
    if not stale and not gone:
        return GraphUpdate()

    ordered = sorted(stale)
    extracted, texts = await extract_many(root, ordered, workers, EXTRACT_BATCH)
    known = await _stored_facts(db, repo_id, stored)
    files = {p: f for p, f in known.items() if p not in stale and p not in gone}
    old = {p: f for p, f in known.items() if p in stale or p in gone}
    fresh: dict[str, FileFacts] = {}
    for path in ordered:
        facts = extracted.get(path)
        if facts is None:  # unreadable or unparsable: an empty graph, so it is not retried
            facts = FileFacts(path, graph_language(path) or "", "")
        fresh[path] = facts
    files.update(fresh)

    async with db.session() as s:
        touched = sorted(stale | gone)
        pointing: set[str] = set()
        for start in range(0, len(touched), 500):
            stmt2 = (
                select(GraphEdge.source_path)
                .where(
                    col(GraphEdge.repo_id) == repo_id,
                    col(GraphEdge.target_path).in_(touched[start : start + 500]),
                )
                .distinct()
            )
            pointing.update((await s.exec(stmt2)).all())
    affected = await asyncio.to_thread(_affected, files, old, stale, gone)
    if affected - stale or gone:  # an interface changed: edges into it are re-resolved too
        affected |= {p for p in pointing if p in files}
    moved = _moved_lines(old, fresh, stale)
    edges = await asyncio.to_thread(_resolve, files, affected)
    await _write(db, repo_id, fresh, texts, gone, affected, edges, moved)
    await _remember(db, repo_id, files)
    return GraphUpdate(extracted=len(stale), resolved=len(affected), edges=len(edges))


async def _write(
    db: Database,
    repo_id: int,
    fresh: dict[str, FileFacts],
    texts: dict[str, str],
    gone: set[str],
    affected: set[str],
    edges: list[dict[str, Any]],
    moved: list[tuple[str, str, int]],
) -> None:
    from sqlmodel import col, delete, update

    from core.store.models import GraphEdge, GraphFile, GraphSymbol

    replaced = sorted(set(fresh) | gone)
    recomputed = sorted(affected | gone)
    files = [
        {
            "repo_id": repo_id,
            "path": path,
            "format": GRAPH_FORMAT,
            "facts": texts.get(path) or encode(facts),  # a worker's text is this encoding
        }
        for path, facts in fresh.items()
    ]
    symbols = [
        {
            "repo_id": repo_id,
            "path": path,
            "symbol": d.symbol,
            "name": d.symbol.rsplit(".", 1)[-1],
            "kind": d.kind,
            "line": d.line,
            "end_line": d.end_line,
        }
        for path, facts in fresh.items()
        for d in facts.definitions
    ]
    for row in edges:
        row["repo_id"] = repo_id
    async with db.session() as s:
        await _serialize(db, s, repo_id)
        for start in range(0, len(replaced), 500):
            part = replaced[start : start + 500]
            for table in (GraphFile, GraphSymbol):
                await s.exec(
                    delete(table).where(
                        col(table.repo_id) == repo_id,
                        col(table.path).in_(part),
                    )
                )
        for start in range(0, len(recomputed), 500):
            await s.exec(
                delete(GraphEdge).where(
                    col(GraphEdge.repo_id) == repo_id,
                    col(GraphEdge.source_path).in_(recomputed[start : start + 500]),
                )
            )
        for path, symbol, line in moved:  # edges into definitions that moved, not re-resolved
            await s.exec(
                update(GraphEdge)
                .where(
                    col(GraphEdge.repo_id) == repo_id,
                    col(GraphEdge.target_path) == path,
                    col(GraphEdge.target_symbol) == symbol,
                )
                .values(target_line=line)
            )
        inserts: list[tuple[Any, list[dict[str, Any]]]] = [
            (GraphFile, files),
            (GraphSymbol, symbols),
            (GraphEdge, edges),
        ]
        for model, rows in inserts:
            for start in range(0, len(rows), INSERT_BATCH):
                await db.insert_rows(s, model.__table__, rows[start : start + INSERT_BATCH])
