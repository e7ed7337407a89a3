"""The console's repositories (core.operator.repositories), on SQLite and PostgreSQL: the
counts of each repository's index, only the repositories the admin's policy reads, and a
background re-index whose progress ends in the `/index` summary."""

from __future__ import annotations

import subprocess
from collections.abc import Callable
from pathlib import Path
from typing import Any

from sqlalchemy import func
from sqlmodel import col, select

from core.code.indexer import Indexer
from core.code.repos import RepoStore
from core.operator.repositories import AlreadyIndexing, Reindexer, RepoBoard
from core.policy import Identity, Policy
from core.store.models import CodeChunk, GraphEdge
from tests.support.clocks import Clock
from tests.support.code_repo import write

POLICY: dict[str, object] = {
    "defaults": {"permissions": ["ask", "code.read"]},
    "rules": [{"name": "beta", "match": {"tenant": "beta"}, "repos": ["web"]}],
}
ACME = Identity("slack", "acme", "C1", "ada", frozenset({"admin"}))
BETA = Identity("slack", "beta", "C1", "bob", frozenset({"admin"}))


def git_commit(root: Path) -> None:
    git = ["git", "-C", str(root), "-c", "user.email=t@example.org", "-c", "user.name=t"]
    subprocess.run([*git, "init", "-q"], check=True)
    subprocess.run([*git, "commit", "-q", "--allow-empty", "-m", "first"], check=True)


async def test_counts_visibility_and_a_reindex(
    open_db: Callable[[], Any], clock: Clock, tmp_path: Path
) -> None:
    db = open_db()
    await db.create_all()
    repos = RepoStore(db, tmp_path / "clones")
    for name in ("api", "web"):
        root = tmp_path / name
        write(root, "app.py", "def handler(event):\n    return helper(event)\n")
        write(root, "helper.py", "def helper(event):\n    return event\n")
        await repos.register(str(root), name)
    board = RepoBoard(db, repos, Policy.from_dict(POLICY))
    jobs = Reindexer(repos, Indexer(db, None), clock, timer=iter([0.0, 1.5]).__next__)

    assert [r.name for r in await board.rows(BETA)] == ["web"]
    assert await board.find(BETA, "api") is None and await board.find(ACME, "api") is not None
    [before] = await board.rows(ACME, name_has="AP", with_commit=True)
    assert (before.files, before.chunks, before.edges, before.last_indexed_at) == (0, 0, 0, None)
    assert before.commit is None  # not a git work tree
    git_commit(tmp_path / "web")
    [listed] = await board.rows(BETA)
    [shown] = await board.rows(BETA, name_has="web", with_commit=True)
    assert listed.commit is None and shown.commit is not None and len(shown.commit) == 40

    api = await repos.get("api")
    assert api is not None
    started = jobs.start(api, "slack:acme:ada")
    assert started.running and started.stage == "checkout"
    try:
        jobs.start(api, "slack:acme:ada")
        raise AssertionError("a second run started")
    except AlreadyIndexing as busy:
        assert busy.progress.started_at == started.started_at
    done = await jobs.wait("api")
    assert done is not None and done.stage == "done" and done.seconds == 1.5
    assert done.result.startswith("Indexed api: 2 files — 2 added")
    assert "semantic search is not configured" in done.result

    [after] = await board.rows(ACME, jobs, name_has="api")
    async with db.session() as s:
        chunks = (await s.exec(select(func.count()).select_from(CodeChunk))).one()
        edges = (await s.exec(select(func.count()).where(col(GraphEdge.repo_id) == api.id))).one()
    assert (after.files, after.chunks, after.edges) == (2, chunks, edges)
    assert after.chunks > 0 and after.edges > 0
    # The indexer stamps its own time (the wall clock): only that it is there.
    assert after.last_indexed_at is not None and after.last_run == done
