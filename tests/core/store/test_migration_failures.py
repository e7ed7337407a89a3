"""An upgrade that fails on the schema itself (here: revision 0003 creates `mcp_confirmations`,
which someone already made by hand): it is tried once, not retried; a SQLite file is copied
once per upgrade however often a crash-looping supervisor restarts the process; and the
database's own error is what start-up shows."""

from __future__ import annotations

import asyncio
import os
import subprocess
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import event, text

from core.store.engine import Database, SchemaError
from core.store.migrations import HEAD
from tests.support.processes import threadline_command


@pytest.fixture
async def db(database_url: str) -> AsyncIterator[Database]:
    database = Database(database_url)
    yield database
    await database.dispose()


async def at_0002_with_a_clashing_table(db: Database) -> None:
    from alembic import command

    from core.store.migrations import alembic_config

    async with db.schema_connection() as conn:
        await conn.run_sync(lambda sync: command.upgrade(alembic_config(sync), "0002"))
        await conn.execute(text("CREATE TABLE mcp_confirmations (id INTEGER PRIMARY KEY)"))


def count_creates(db: Database) -> list[str]:
    """The CREATE TABLE mcp_confirmations statements `db` sends (observed, not changed)."""
    seen: list[str] = []

    def before(_conn: Any, _cursor: Any, statement: str, *_: Any) -> None:
        if "CREATE TABLE mcp_confirmations" in statement:
            seen.append(statement)

    event.listen(db.engine.sync_engine, "before_cursor_execute", before)
    return seen


def backups(folder: Path) -> list[str]:
    return sorted(p.name for p in folder.glob("threadline.db.*"))


async def test_a_failing_revision_is_tried_once_and_its_error_shown(
    database_url: str, db: Database, tmp_path: Path
) -> None:
    await at_0002_with_a_clashing_table(db)
    sqlite = database_url.startswith("sqlite")
    for _start in range(3):  # a supervisor restarting a process that cannot start
        starting = Database(database_url)
        creates = count_creates(starting)
        try:
            with pytest.raises(SchemaError) as failed:
                await (starting.create_all() if sqlite else starting.upgrade())
        finally:
            await starting.dispose()
        assert len(creates) == 1  # never retried: the same DDL would fail the same way
        message = str(failed.value)
        assert message.startswith(f"upgrading the database schema from 0002 to {HEAD} failed")
        assert "mcp_confirmations" in message and "already exists" in message
        assert "still at 0002" in message
    assert (await db.schema_status()).current == "0002"  # rolled back: nothing half-done
    if sqlite:
        # One copy for this upgrade, however many times it was tried.
        assert backups(tmp_path) == [f"threadline.db.0002-to-{HEAD}.bak"]
        assert f"threadline.db.0002-to-{HEAD}.bak" in message


async def test_start_up_shows_the_databases_own_error(tmp_path: Path, write_policy: Any) -> None:
    path = tmp_path / "data" / "threadline.db"
    url = f"sqlite:///{path}"
    db = Database(url)
    try:
        await at_0002_with_a_clashing_table(db)
    finally:
        await db.dispose()
    empty = tmp_path / "empty.toml"
    empty.write_text("")
    env = {
        **os.environ,
        "THREADLINE_DATA_DIR": str(tmp_path / "data"),
        "THREADLINE_POLICY": str(write_policy()),
        "THREADLINE_CONFIG": str(empty),
        "DATABASE_URL": url,
    }
    done = await asyncio.to_thread(
        subprocess.run,
        [*threadline_command(), "ask", "/budget"],
        env=env,
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 1
    assert "Traceback" not in done.stderr
    assert "Threadline cannot start: upgrading the database schema from 0002" in done.stderr
    assert "mcp_confirmations already exists" in done.stderr
    assert backups(path.parent) == [f"threadline.db.0002-to-{HEAD}.bak"]


def test_only_lock_waits_are_retried() -> None:
    import sqlite3

    from sqlalchemy.exc import OperationalError, ProgrammingError

    from core.store.engine import transient

    def wrapped(orig: Exception) -> Any:
        return OperationalError("statement", {}, orig)

    assert transient(wrapped(sqlite3.OperationalError("database is locked")))
    assert transient(wrapped(sqlite3.OperationalError("database table is locked")))
    assert not transient(wrapped(sqlite3.OperationalError("table x already exists")))
    assert not transient(wrapped(sqlite3.OperationalError("no such column: roles")))
    assert not transient(ProgrammingError("statement", {}, sqlite3.ProgrammingError("bad")))

    import psycopg.errors

    for retried in (
        psycopg.errors.LockNotAvailable,
        psycopg.errors.DeadlockDetected,
        psycopg.errors.SerializationFailure,
    ):
        assert transient(wrapped(retried("waiting")))
    assert not transient(wrapped(psycopg.errors.DuplicateTable("already exists")))
    assert not transient(wrapped(psycopg.errors.UndefinedColumn("no such column")))
