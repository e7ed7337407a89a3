"""The Go code graph built during indexing (go.mod included) and kept in step when a function
moves to another file of its package, when one appears that a call was missing, and when a
file is deleted."""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path

import pytest

from core.code.graph.query import all_edges
from core.code.repos import RepoStore
from core.code.walk import index_repo
from core.store.engine import Database
from core.store.models import Repo

FILES = {
    "go.mod": "module example.com/shop\n\ngo 1.22\n",
    "main.go": 'package main\n\nimport "example.com/shop/store"\n\n'
    "func main() {\n\tstore.Open()\n\tstore.Close()\n}\n",
    "store/open.go": "package store\n\nfunc Open() {}\n",
}


@pytest.fixture
def db(open_db: Callable[[], Database]) -> Database:
    return open_db()


def write(root: Path, rel: str, text: str) -> None:
    path = root / rel
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    st = path.stat()
    os.utime(path, ns=(st.st_atime_ns, st.st_mtime_ns + 5_000_000_000))


async def call_pairs(db: Database, repo: Repo) -> set[tuple[str, str]]:
    assert repo.id is not None
    return {
        (f"{e.source_path}:{e.source_symbol}", f"{e.target_path}:{e.target_symbol}")
        if e.target_path is not None
        else (f"{e.source_path}:{e.source_symbol}", f"?{e.target_name}")
        for e in await all_edges(db, repo.id)
        if e.kind == "calls"
    }


async def test_go_graph_follows_new_moved_and_deleted_files(db: Database, tmp_path: Path) -> None:
    root = tmp_path / "shop"
    for rel, text in FILES.items():
        write(root, rel, text)
    repo = await RepoStore(db, tmp_path / "clones").register(str(root))
    await index_repo(db, repo)
    assert await call_pairs(db, repo) == {
        ("main.go:main", "store/open.go:Open"),
        ("main.go:main", "?store.Close"),
    }

    # A new file of the package defines Close: main.go, unchanged, is re-resolved.
    write(root, "store/close.go", "package store\n\nfunc Close() {}\n")
    await index_repo(db, repo)
    assert await call_pairs(db, repo) == {
        ("main.go:main", "store/open.go:Open"),
        ("main.go:main", "store/close.go:Close"),
    }

    # Open moves into close.go and open.go is deleted.
    write(root, "store/close.go", "package store\n\nfunc Close() {}\n\nfunc Open() {}\n")
    (root / "store/open.go").unlink()
    await index_repo(db, repo)
    assert await call_pairs(db, repo) == {
        ("main.go:main", "store/close.go:Open"),
        ("main.go:main", "store/close.go:Close"),
    }
