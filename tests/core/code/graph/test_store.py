"""The code graph built during indexing and kept in step with edits, renames and deletions,
on SQLite and PostgreSQL; lookups, neighbourhoods and the edge dump from storage."""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path

import pytest

from core.code.graph.query import all_edges, lookup
from core.code.graph.render import describe
from core.code.repos import RepoStore
from core.code.walk import index_repo
from core.store.engine import Database
from core.store.models import Repo

PKG_INIT = "from .util import helper\n"
UTIL = "def helper(x):\n    return x\n\n\ndef unused():\n    pass\n"
MAIN = (
    "from pkg import helper\n\n\nclass Job:\n    def run(self):\n        return helper(1)\n\n\n"
    "class Nightly(Job):\n    def run(self):\n        return super().run()\n"
)


@pytest.fixture
def db(open_db: Callable[[], Database]) -> Database:
    return open_db()


def bump(path: Path) -> None:
    st = path.stat()
    os.utime(path, ns=(st.st_atime_ns, st.st_mtime_ns + 5_000_000_000))


def make(root: Path) -> Path:
    for rel, text in {"pkg/__init__.py": PKG_INIT, "pkg/util.py": UTIL, "main.py": MAIN}.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(text)
    (root / "README.md").write_text("# not code\n")
    return root


async def call_pairs(db: Database, repo: Repo) -> set[tuple[str, str]]:
    assert repo.id is not None
    return {
        (f"{e.source_path}:{e.source_symbol}", f"{e.target_path}:{e.target_symbol}")
        for e in await all_edges(db, repo.id)
        if e.kind == "calls" and e.target_path is not None
    }


async def test_graph_follows_edits_renames_and_deletions(db: Database, tmp_path: Path) -> None:
    root = make(tmp_path / "api")
    repo = await RepoStore(db, tmp_path / "clones").register(str(root))
    assert repo.id is not None
    await index_repo(db, repo)
    assert await call_pairs(db, repo) == {
        ("main.py:Job.run", "pkg/util.py:helper"),
        ("main.py:Nightly.run", "main.py:Job.run"),
    }
    kinds = {e.kind for e in await all_edges(db, repo.id)}
    assert kinds == {"calls", "imports", "inherits", "contains"}

    # Edit: the callee moves to another function of the same file; main.py is unchanged
    # but its edge into util.py is re-resolved.
    (root / "pkg/util.py").write_text("def unused():\n    pass\n\n\ndef helper(x):\n    return 2\n")
    bump(root / "pkg/util.py")
    await index_repo(db, repo)
    edges = await all_edges(db, repo.id)
    helper = next(e for e in edges if e.source_symbol == "Job.run" and e.kind == "calls")
    assert (helper.target_path, helper.target_symbol, helper.target_line) == (
        "pkg/util.py",
        "helper",
        5,
    )

    # Rename: util.py becomes tools.py, and the re-export follows it.
    (root / "pkg/util.py").rename(root / "pkg/tools.py")
    (root / "pkg/__init__.py").write_text("from .tools import helper\n")
    bump(root / "pkg/__init__.py")
    await index_repo(db, repo)
    assert ("main.py:Job.run", "pkg/tools.py:helper") in await call_pairs(db, repo)
    assert not any(e.target_path == "pkg/util.py" for e in await all_edges(db, repo.id))
    assert (await lookup(db, {repo.id: "api"}, "pkg/util.py:helper")).matches == []

    # Deletion: the call stays, unresolved, under its name.
    (root / "pkg/tools.py").unlink()
    await index_repo(db, repo)
    edges = await all_edges(db, repo.id)
    call = next(e for e in edges if e.source_symbol == "Job.run" and e.kind == "calls")
    assert (call.target_path, call.target_name) == (None, "helper")
    assert not any(e.source_path == "pkg/tools.py" for e in edges)


async def test_existing_repositories_get_a_graph_on_their_next_index(
    db: Database, tmp_path: Path
) -> None:
    from sqlmodel import col, delete

    from core.store.models import GraphEdge, GraphFile, GraphSymbol

    root = make(tmp_path / "api")
    repo = await RepoStore(db, tmp_path / "clones").register(str(root))
    assert repo.id is not None
    await index_repo(db, repo)
    before = await all_edges(db, repo.id)
    async with db.session() as s:  # as if indexed before the graph existed
        for table in (GraphEdge, GraphSymbol, GraphFile):
            await s.exec(delete(table).where(col(table.repo_id) == repo.id))
    again = await index_repo(db, repo)
    assert (again.added, again.changed) == ((), ())
    assert await all_edges(db, repo.id) == before


async def test_lookup_ambiguous_unknown_and_the_neighbourhood(db: Database, tmp_path: Path) -> None:
    root = make(tmp_path / "api")
    repo = await RepoStore(db, tmp_path / "clones").register(str(root))
    assert repo.id is not None
    await index_repo(db, repo)
    repos = {repo.id: "api"}

    ambiguous = await describe(db, repos, "run")
    assert not ambiguous.found
    assert ambiguous.data["status"] == "ambiguous"
    assert [c["symbol"] for c in ambiguous.data["candidates"]] == ["Job.run", "Nightly.run"]
    assert "main.py:Job.run (method, api: main.py:5)" in ambiguous.text

    unknown = await describe(db, repos, "helpr")
    assert unknown.data["status"] == "unknown"
    assert "`helper`" in unknown.text

    job = await describe(db, repos, "Job.run", depth=2)
    assert job.found, job.text
    callers = job.data["callers"]
    assert [(c["source"]["symbol"], c["depth"]) for c in callers] == [("Nightly.run", 1)]
    callees = job.data["callees"]
    assert callees[0]["target"] == {"path": "pkg/util.py", "symbol": "helper", "line": 1}
    assert "Callers:\n  Nightly.run (main.py:11) → Job.run" in job.text

    hierarchy = await describe(db, repos, "Job", sections=["hierarchy"])
    assert [s["source"]["symbol"] for s in hierarchy.data["extended_by"]] == ["Nightly"]
    assert "callers" not in hierarchy.data

    deep = await describe(db, repos, "helper", depth=2, sections=["callers"])
    assert [(c["source"]["symbol"], c["depth"]) for c in deep.data["callers"]] == [
        ("Job.run", 1),
        ("Nightly.run", 2),
    ]


async def test_a_new_subclass_and_a_second_edit_re_resolve_the_files_that_depend_on_them(
    db: Database, tmp_path: Path
) -> None:
    from core.code.graph.store import update_graph

    root = tmp_path / "jobs"
    root.mkdir()
    files = {
        "base.py": "class Job:\n    def run(self):\n        self.step()\n",
        "util.py": "def helper():\n    pass\n",
        "app.py": "from util import helper\n\ndef main():\n    helper()\n",
    }
    for rel, text in files.items():
        (root / rel).write_text(text)
    async with db.session() as s:
        repo = Repo(name="jobs", root=str(root), origin=str(root))
        s.add(repo)
    assert repo.id is not None
    await update_graph(db, repo.id, root, list(files), [], list(files))
    assert ("base.py:Job.run", "copy.py:Copy.step") not in await call_pairs(db, repo)

    # A subclass that defines what the base calls on self: the base's file is resolved
    # again although nothing it imports changed.
    (root / "copy.py").write_text(
        "from base import Job\n\nclass Copy(Job):\n    def step(self):\n        pass\n"
    )
    current = [*files, "copy.py"]
    await update_graph(db, repo.id, root, ["copy.py"], [], current)
    assert ("base.py:Job.run", "copy.py:Copy.step") in await call_pairs(db, repo)

    # util.py's facts from the first update are reused from memory: renaming helper there
    # must still reach app.py, which imports it.
    (root / "util.py").write_text("def helper2():\n    pass\n\nhelper = helper2\n")
    await update_graph(db, repo.id, root, ["util.py"], [], current)
    (root / "util.py").write_text("def helper3():\n    pass\n\nhelper = helper3\n")
    await update_graph(db, repo.id, root, ["util.py"], [], current)
    assert ("app.py:main", "util.py:helper3") in await call_pairs(db, repo)
