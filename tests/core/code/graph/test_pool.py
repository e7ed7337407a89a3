"""Extraction in worker processes: the same facts and edges as one thread, on a fixture
repository and on this repository's own code; a dead worker falls back to this process; small
updates never touch the pool."""

from __future__ import annotations

import json
import logging
import os
import signal
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from core.code.graph import pool
from core.code.graph.build import resolve_paths
from core.code.graph.extract import graph_language
from core.code.graph.model import Edge, FileFacts
from core.code.graph.pool import GraphWorkers, encode, extract_many
from core.code.graph.query import all_edges
from core.code.graph.store import update_graph
from core.code.walk import walk
from core.store.engine import Database
from core.store.models import GraphFile, Repo
from tests.support.paths import ROOT_DIR

REPO_ROOT = ROOT_DIR
FILES = {
    "pkg/__init__.py": "from .util import helper\nfrom .shapes import *\n",
    "pkg/util.py": "def helper(x):\n    return x\n\n\ndef unused():\n    pass\n",
    "pkg/shapes.py": (
        "class Shape:\n    def area(self):\n        return 0\n\n\n"
        "class Square(Shape):\n    def area(self):\n        return super().area() + 1\n"
    ),
    "main.py": (
        "from pkg import helper, Square\n\n\nclass Job:\n    def run(self):\n"
        "        return helper(Square().area())\n\n\n"
        "class Nightly(Job):\n    def run(self):\n        return super().run()\n"
    ),
    "web/app.js": "import { f } from './lib.js';\nexport function main() { return f(); }\n",
    "web/lib.js": "export function f() { return 1; }\n",
    "cmd/main.go": "package main\n\nfunc helper() int { return 1 }\n\nfunc main() { helper() }\n",
    "src/A.java": "class A { void a() { b(); } void b() {} }\n",
    "README.md": "# not code\n",
}


@pytest.fixture
def workers() -> Iterator[GraphWorkers]:
    """Two extraction workers, owned by the test as the app owns them."""
    owned = GraphWorkers(2)
    yield owned
    owned.close()


@pytest.fixture
def db(open_db: Callable[[], Database]) -> Database:
    return open_db()


def make(root: Path) -> Path:
    for rel, text in FILES.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(text)
    return root


def graph_paths(root: Path, *under: str) -> list[str]:
    return [
        f.path
        for f in walk(root)
        if graph_language(f.path) is not None and (not under or f.path.startswith(under))
    ]


def shape(facts: FileFacts | None) -> object:
    """What must not depend on the process that extracted a file: its definitions and
    references, containers' items sorted. (The values kept for names and returns may not be
    the same in two processes: extraction orders a container's items as sets order them, by
    string hashes that differ in each process, and a cut to the first values by their text
    then keeps different ones. The one-thread path has that too, across restarts; the edges
    are the same, as asserted below.)"""

    def walk(value: object) -> object:
        if isinstance(value, list):
            items = [walk(v) for v in value]
            if len(items) == 2 and items[0] == "L" and isinstance(items[1], list):
                return ["L", sorted(items[1], key=repr)]
            return items
        return value

    if facts is None:
        return None
    data = json.loads(encode(facts))
    return [data["language"], data["module"], data["defs"], walk(data["refs"])]


def edges_of(facts: dict[str, FileFacts | None]) -> list[Edge]:
    files = {p: f for p, f in facts.items() if f is not None}
    return [e for found in resolve_paths(files, sorted(files)).values() for e in found]


async def stored(db: Database, repo_id: int) -> tuple[list[str], dict[str, str]]:
    from sqlmodel import col, select

    edges = sorted(
        repr(
            (
                e.kind,
                e.source_path,
                e.source_symbol,
                e.source_line,
                e.target_path,
                e.target_symbol,
                e.target_line,
                e.target_name,
                e.confidence,
            )
        )
        for e in await all_edges(db, repo_id)
    )
    async with db.session() as s:
        rows = (
            await s.exec(
                select(GraphFile.path, GraphFile.facts).where(col(GraphFile.repo_id) == repo_id)
            )
        ).all()
    return edges, dict(rows)


async def test_a_fixture_repository_stores_the_same_graph_with_one_and_two_workers(
    db: Database, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, workers: GraphWorkers
) -> None:
    monkeypatch.setattr(pool, "POOL_MIN_FILES", 1)  # a handful of files through the pool
    monkeypatch.setattr(pool, "POOL_BATCH", 2)
    root = make(tmp_path / "api")
    paths = graph_paths(root)
    results = []
    for owner in (None, workers):
        async with db.session() as s:
            repo = Repo(name=f"api{owner is None}", root=str(root), origin=str(root))
            s.add(repo)
        assert repo.id is not None
        update = await update_graph(db, repo.id, root, paths, [], paths, owner)
        assert update.extracted == len(paths)
        results.append(await stored(db, repo.id))
    started = workers.pool()
    assert started is not None and started.started()  # the second run used the pool
    (edges1, facts1), (edges2, facts2) = results
    assert edges1 and edges1 == edges2
    assert facts1 == facts2
    assert any(e.startswith("('calls', 'main.py', 'Job.run'") for e in edges1)


async def test_this_repositorys_code_gives_the_same_facts_and_edges_with_two_workers(
    workers: GraphWorkers,
) -> None:
    paths = graph_paths(REPO_ROOT, "core/", "adapters/", "bot/")
    assert len(paths) > pool.POOL_MIN_FILES and len(paths) >= 150
    one, texts_one = await extract_many(REPO_ROOT, paths)
    started = workers.pool()
    assert started is not None
    await started.wait_started()  # else this process takes the first batches itself
    two, texts_two = await extract_many(REPO_ROOT, paths, workers)
    assert texts_one == {} and set(texts_two) == {p for p, f in two.items() if f is not None}
    assert set(one) == set(two) == set(paths)
    assert {p: shape(f) for p, f in one.items()} == {p: shape(f) for p, f in two.items()}
    assert all(texts_two[p] == encode(f) for p, f in two.items() if f is not None)
    assert edges_of(one) == edges_of(two)
    # The pool is kept: a second large extraction uses the same worker processes.
    first = started.pids()
    await extract_many(REPO_ROOT, paths[:60], workers)
    assert workers.pool() is started and started.pids() == first and len(first) == 2


async def test_a_dead_worker_falls_back_to_this_process_and_logs_once(
    caplog: pytest.LogCaptureFixture, workers: GraphWorkers
) -> None:
    # Twice what makes an extraction large enough for the pool: the point is the dead worker,
    # not the size (all of core/ took three times as long).
    paths = graph_paths(REPO_ROOT, "core/")[: 2 * pool.POOL_MIN_FILES]
    assert len(paths) == 2 * pool.POOL_MIN_FILES
    expected, _ = await extract_many(REPO_ROOT, paths)
    started = workers.pool()
    assert started is not None
    await started.wait_started()
    os.kill(next(iter(started.pids())), signal.SIGKILL)  # as the OOM killer or a segfault would
    with caplog.at_level(logging.WARNING, logger="core.code.graph.pool"):
        got, _ = await extract_many(REPO_ROOT, paths, workers)
    assert {p: shape(f) for p, f in got.items()} == {p: shape(f) for p, f in expected.items()}
    warnings = [r for r in caplog.records if r.name == "core.code.graph.pool"]
    assert len(warnings) == 1 and "in-process" in warnings[0].getMessage()
    # The broken pool was dropped: the next large extraction starts a new one.
    again, _ = await extract_many(REPO_ROOT, paths, workers)
    assert set(again) == set(expected)
    assert workers.pool() is not started


async def test_small_updates_do_not_start_the_pool(
    db: Database, tmp_path: Path, workers: GraphWorkers
) -> None:
    root = make(tmp_path / "api")
    paths = graph_paths(root)
    async with db.session() as s:
        repo = Repo(name="api", root=str(root), origin=str(root))
        s.add(repo)
    assert repo.id is not None
    await update_graph(db, repo.id, root, paths, [], paths, workers)
    await update_graph(db, repo.id, root, ["pkg/util.py"], [], paths, workers)
    assert workers._pool is None
