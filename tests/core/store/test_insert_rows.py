"""`Database.insert_rows`, the bulk write of indexing (chunks, graph edges): COPY on PostgreSQL,
one INSERT elsewhere. Text that COPY has to escape comes back as it went in, NULLs stay NULL,
and the rows are part of the session's transaction (a failure after them leaves nothing)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
from sqlmodel import col, select

from core.store.engine import Database
from core.store.models import GraphEdge, Repo

AWKWARD = [
    "tab\there",
    "new\nline and\r\ncarriage",
    "back\\slash \\N and \\t as text",
    "ünïcødé → 名前 🙂",
    "",
    "quote ' and \" and , and |",
]


def edge(repo_id: int, n: int, name: str, target: str | None) -> dict[str, Any]:
    return {
        "repo_id": repo_id,
        "kind": "calls",
        "source_path": f"src/{name}.py",
        "source_symbol": name,
        "source_line": n,
        "target_path": target,
        "target_symbol": None if target is None else name,
        "target_line": None if target is None else n * 2,
        "target_name": name,
        "confidence": 0.9 if n % 2 else 1.0,
    }


async def repo_id_of(db: Database) -> int:
    async with db.session() as s:
        repo = Repo(name="r", root="/nowhere", origin="/nowhere")
        s.add(repo)
    assert repo.id is not None
    return repo.id


async def stored(db: Database) -> list[GraphEdge]:
    async with db.session() as s:
        return list((await s.exec(select(GraphEdge).order_by(col(GraphEdge.source_line)))).all())


async def test_rows_come_back_exactly(open_db: Callable[[], Database]) -> None:
    db = open_db()
    repo_id = await repo_id_of(db)
    rows = [
        edge(repo_id, n, text, None if n % 3 == 0 else f"dir/{text}")
        for n, text in enumerate(AWKWARD, start=1)
    ]
    async with db.session() as s:
        await db.insert_rows(s, GraphEdge.__table__, rows)  # type: ignore[attr-defined]
        await db.insert_rows(s, GraphEdge.__table__, [])  # type: ignore[attr-defined]
    back = await stored(db)
    assert [
        {k: getattr(e, k) for k in rows[0]} for e in back
    ] == rows  # every text, number and NULL as written
    assert len({e.id for e in back}) == len(rows)  # ids from the table's own sequence


async def test_a_failure_after_the_rows_leaves_none_of_them(
    open_db: Callable[[], Database],
) -> None:
    db = open_db()
    repo_id = await repo_id_of(db)
    with pytest.raises(RuntimeError):
        async with db.session() as s:
            await db.insert_rows(
                s,
                GraphEdge.__table__,  # type: ignore[attr-defined]
                [edge(repo_id, n, "f", "a.py") for n in range(1, 500)],
            )
            raise RuntimeError("the rest of the write failed")
    assert await stored(db) == []


async def test_rows_of_a_repository_that_is_gone_are_refused_whole(
    open_db: Callable[[], Database],
) -> None:
    db = open_db()
    repo_id = await repo_id_of(db)
    rows = [edge(repo_id, 1, "f", None), edge(repo_id + 999, 2, "g", None)]
    with pytest.raises(Exception, match=r"(?i)foreign key"):
        async with db.session() as s:
            await db.insert_rows(s, GraphEdge.__table__, rows)  # type: ignore[attr-defined]
    assert await stored(db) == []
