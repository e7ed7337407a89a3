"""A database at head that lacks a table or a column the models have (dropped by hand, a partial
restore): start-up refuses naming what is missing and what to do, instead of answering
"something went wrong" on the first query that needs it; `threadline db check` lists the
differences (exit 1), and `threadline db repair` makes the missing tables, empty."""

from __future__ import annotations

import asyncio
import os
import subprocess
from collections.abc import AsyncIterator
from pathlib import Path

import pytest
from sqlalchemy import text

from core.store.engine import Database, SchemaError
from core.store.migrations import HEAD
from tests.support.processes import threadline_command


@pytest.fixture
async def db(database_url: str) -> AsyncIterator[Database]:
    database = Database(database_url)
    yield database
    await database.dispose()


async def drop(db: Database, *statements: str) -> None:
    await db.create_all()
    async with db.engine.begin() as conn:
        for statement in statements:
            await conn.execute(text(statement))


async def starting(url: str) -> SchemaError | None:
    """What a process starting on `url` is told (None: it starts)."""
    other = Database(url)
    try:
        await other.create_all()
    except SchemaError as exc:
        return exc
    finally:
        await other.dispose()
    return None


def threadline(tmp_path: Path, url: str, *args: str) -> subprocess.CompletedProcess[str]:
    empty = tmp_path / "empty.toml"
    empty.write_text("")
    env = {
        **os.environ,
        "THREADLINE_DATA_DIR": str(tmp_path / "data"),
        "THREADLINE_CONFIG": str(empty),
        "DATABASE_URL": url,
    }
    return subprocess.run(
        [*threadline_command(), *args],
        env=env,
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


async def test_start_up_refuses_a_database_missing_a_table_or_a_column(
    database_url: str, db: Database
) -> None:
    await drop(
        db,
        "DROP TABLE digest_runs",
        "ALTER TABLE thread_messages DROP COLUMN tool_call_id",
        "DROP TABLE code_chunks",  # derived: made again by itself (the next index fills it)
    )
    assert (await db.schema_status()).up_to_date  # the revision alone says all is well

    refused = await starting(database_url)

    assert refused is not None
    assert str(refused) == (
        f"the database schema is at {HEAD} but lacks what this release needs: "
        "table digest_runs; column thread_messages.tool_call_id. Restore the database from "
        "a backup (a table of record cannot be remade with its rows), or run `threadline db "
        "repair` to create the missing tables empty (missing columns need the backup); "
        "`threadline db check` lists every difference"
    )


async def test_a_database_that_matches_starts(database_url: str, db: Database) -> None:
    await db.create_all()
    assert await starting(database_url) is None


async def test_db_check_lists_the_differences_and_repair_makes_missing_tables(
    database_url: str, db: Database, tmp_path: Path
) -> None:
    healthy = await asyncio.to_thread(threadline, tmp_path, database_url, "db", "check")
    assert (healthy.returncode, healthy.stdout.strip()) == (
        1,
        f"empty database; this release's schema is {HEAD} (made on first start)",
    )
    await db.create_all()
    healthy = await asyncio.to_thread(threadline, tmp_path, database_url, "db", "check")
    assert (healthy.returncode, healthy.stdout.strip()) == (
        0,
        f"at {HEAD} (head): the schema matches this release's",
    )

    await drop(db, "DROP TABLE digest_runs", "DROP TABLE tenant_settings")
    checked = await asyncio.to_thread(threadline, tmp_path, database_url, "db", "check")
    assert checked.returncode == 1, checked.stderr
    assert "Traceback" not in checked.stderr
    lines = checked.stdout.strip().splitlines()
    assert lines[0] == f"at {HEAD} (head), but the schema differs from this release's:"
    assert "  missing table: digest_runs" in lines
    assert "  missing table: tenant_settings" in lines
    assert lines[-1].startswith("2 difference(s)")

    repaired = await asyncio.to_thread(threadline, tmp_path, database_url, "db", "repair")
    assert repaired.returncode == 0, repaired.stderr
    assert (
        repaired.stdout.strip() == "created the missing tables, empty: digest_runs, tenant_settings"
    )
    again = await asyncio.to_thread(threadline, tmp_path, database_url, "db", "check")
    assert again.returncode == 0, again.stdout
    assert await starting(database_url) is None


async def test_db_check_names_a_missing_column_and_repair_leaves_it_to_the_backup(
    database_url: str, db: Database, tmp_path: Path
) -> None:
    await drop(db, "ALTER TABLE thread_messages DROP COLUMN tool_call_id")
    checked = await asyncio.to_thread(threadline, tmp_path, database_url, "db", "check")
    assert checked.returncode == 1
    assert "  missing column: thread_messages.tool_call_id" in checked.stdout
    repaired = await asyncio.to_thread(threadline, tmp_path, database_url, "db", "repair")
    assert repaired.returncode == 1
    assert "thread_messages.tool_call_id" in repaired.stderr
    assert "backup" in repaired.stderr
    assert "Traceback" not in repaired.stderr
