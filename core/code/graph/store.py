"""Keeping a repository's code graph in SQL in step with its files.

`update_graph` is called by indexing with the files that were added or changed and those that
were removed. Only those files are parsed again (in a worker thread); then the edges of the
files that may resolve differently are recomputed: the changed files themselves, files whose
imports name a changed file's module (or a package above it), files that used a global name a
changed file defines (the unique-name fallback), and files with an edge into a changed or
removed file. Everything is written in one transaction: a reader sees the old graph or the
new one, never half of each.

Files that have no graph yet (indexed before the graph existed, or made with an older
`GRAPH_FORMAT`) count as changed, so existing repositories get a graph on their next index.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from core.code.graph.build import extract_batch
from core.code.graph.extract import graph_language
from core.code.graph.model import FileFacts
from core.code.graph.resolve import Resolver, module_keys
from core.store.engine import Database

# Raise it whenever extraction or resolution of the same file gives different results, so
# stored graphs are remade on the next index.
GRAPH_FORMAT = 1
EXTRACT_BATCH = 100  # files parsed per worker-thread hop
INSERT_BATCH = 2_000  # rows per INSERT statement
_GRAPH_LOCK_SPACE = 0x746367  # "tcg": advisory-lock key space of graph writes


@dataclass(frozen=True, slots=True)
class GraphUpdate:
    extracted: int = 0  # files parsed
    resolved: int = 0  # files whose edges were recomputed
    edges: int = 0  # edges written


def _keys(facts: FileFacts) -> set[str]:
    """What a file's resolution may depend on: dotted names it imports (and each package
    above them) and global names bound nowhere in it."""
    keys: set[str] = set()

    def walk(value: Any) -> None:
        if not isinstance(value, list) or not value:
            return
        if value[0] == "m" and isinstance(value[1], str):
            parts = value[1].split(".")
            keys.update("m:" + ".".join(parts[:i]) for i in range(1, len(parts) + 1))
        elif value[0] == "n" and isinstance(value[1], str):
            keys.add("n:" + value[1])
        for item in value[1:]:
            walk(item)

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


def _affected(
    files: dict[str, FileFacts], old: dict[str, FileFacts], changed: set[str], gone: set[str]
) -> set[str]:
    provided: set[str] = set()
    for path in changed | gone:
        for facts in (files.get(path), old.get(path)):
            if facts is not None:
                provided |= _provides(facts)
    affected = {p for p in changed if p in files}
    for path, facts in files.items():
        if path not in affected and _keys(facts) & provided:
            affected.add(path)
    return affected


def _decode(rows: Iterable[tuple[str, str]]) -> dict[str, FileFacts]:
    return {path: FileFacts.from_json(path, json.loads(text)) for path, text in rows}


def _resolve(files: dict[str, FileFacts], paths: Iterable[str]) -> list[dict[str, Any]]:
    resolver = Resolver(files)
    rows: list[dict[str, Any]] = []
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
    return rows


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
) -> GraphUpdate:
    """Bring the graph of `repo_id` in line: `changed` files (added or modified) are parsed
    again, `removed` ones dropped, `current` is every indexed file now (files among them
    without a graph of this format are parsed too). See the module docstring."""
    from sqlmodel import col, select

    from core.store.models import GraphEdge, GraphFile

    async with db.session() as s:
        stmt = select(GraphFile.path, GraphFile.format, GraphFile.facts).where(
            col(GraphFile.repo_id) == repo_id
        )
        stored = {path: (fmt, facts) for path, fmt, facts in (await s.exec(stmt)).all()}
    now = {p for p in current if graph_language(p) is not None}
    stale = {p for p in changed if p in now}
    stale |= {p for p in now if p not in stored or stored[p][0] != GRAPH_FORMAT}
    gone = (set(removed) | (set(stored) - now)) & set(stored)
    if not stale and not gone:
        return GraphUpdate()

    extracted: dict[str, FileFacts | None] = {}
    ordered = sorted(stale)
    for start in range(0, len(ordered), EXTRACT_BATCH):
        extracted.update(
            await asyncio.to_thread(extract_batch, root, ordered[start : start + EXTRACT_BATCH])
        )
    keep = [(p, text) for p, (fmt, text) in stored.items() if p not in stale and p not in gone]
    files = await asyncio.to_thread(_decode, keep)
    old_rows = [
        (p, stored[p][1]) for p in (stale | gone) if p in stored and stored[p][0] == GRAPH_FORMAT
    ]
    old = await asyncio.to_thread(_decode, old_rows)
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
    affected |= {p for p in pointing if p in files}
    edges = await asyncio.to_thread(_resolve, files, affected)
    await _write(db, repo_id, fresh, gone, affected, edges)
    return GraphUpdate(extracted=len(stale), resolved=len(affected), edges=len(edges))


async def _write(
    db: Database,
    repo_id: int,
    fresh: dict[str, FileFacts],
    gone: set[str],
    affected: set[str],
    edges: list[dict[str, Any]],
) -> None:
    from sqlalchemy import insert
    from sqlmodel import col, delete

    from core.store.models import GraphEdge, GraphFile, GraphSymbol

    replaced = sorted(set(fresh) | gone)
    recomputed = sorted(affected | gone)
    files = [
        {
            "repo_id": repo_id,
            "path": path,
            "format": GRAPH_FORMAT,
            "facts": json.dumps(facts.as_json(), separators=(",", ":")),
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
        inserts: list[tuple[Any, list[dict[str, Any]]]] = [
            (GraphFile, files),
            (GraphSymbol, symbols),
            (GraphEdge, edges),
        ]
        for table, rows in inserts:
            for start in range(0, len(rows), INSERT_BATCH):
                await s.exec(insert(table), params=rows[start : start + INSERT_BATCH])
