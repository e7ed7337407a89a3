"""Schema migrations: the revisions make what the models describe, and a database made by the
release before migrations (tests/fixtures/migrations, remade by generate.py there) upgrades
with every row it holds, on SQLite and PostgreSQL."""

from __future__ import annotations

import asyncio
import json
import os
import socket
import sqlite3
import subprocess
from collections.abc import AsyncIterator, Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from core.store.engine import DERIVED_TABLES, Database, SchemaError
from core.store.migrations import HEAD
from tests.support.paths import FIXTURES_DIR
from tests.support.processes import threadline_command

FIXTURES = FIXTURES_DIR / "migrations"
OLD = "2843b81"
OLD_REVISION = "0001"  # what that release's tables match

HOW_TO_MIGRATE = (
    "the models and the migrations disagree (above: what the models have that the migrations "
    "do not make). Every table change ships as a migration: run `make migration MSG='what "
    "changed'` (python -m core.store.migrations.dev revision -m ...), review the file it "
    "writes under core/store/migrations/versions/, and commit it; see "
    "core/store/migrations/README.md"
)


# Columns revisions added to tables of record since that release, with what old rows get.
ADDED_COLUMNS: dict[str, dict[str, Any]] = {
    "digest_subscriptions": {"roles": "[]"},  # 0004: made before roles were kept, so none
}


def expected_rows() -> dict[str, list[dict[str, Any]]]:
    rows: dict[str, list[dict[str, Any]]] = json.loads(
        (FIXTURES / f"rows_{OLD}.json").read_text(encoding="utf-8")
    )
    for name, added in ADDED_COLUMNS.items():
        rows[name] = [{**row, **added} for row in rows.get(name, [])]
    return rows


def load_fixture(url: str) -> None:
    """The old release's database: its DDL and rows, as that release's create_all made them."""
    if url.startswith("sqlite"):
        sql = (FIXTURES / f"schema_{OLD}.sqlite.sql").read_text(encoding="utf-8")
        with sqlite3.connect(url.split(":///", 1)[1]) as con:
            con.executescript(sql)
        return
    import psycopg

    sql = (FIXTURES / f"schema_{OLD}.postgresql.sql").read_text(encoding="utf-8")
    with psycopg.connect(url, autocommit=True) as con:
        con.execute(sql)  # a script of many statements, without parameters


def _plain(value: Any) -> Any:
    """A stored value as the fixture's JSON writes it (SQLite gives timestamps back without
    their zone: they are UTC)."""
    if isinstance(value, datetime):
        aware = value if value.tzinfo is not None else value.replace(tzinfo=UTC)
        return aware.astimezone(UTC).isoformat()
    return value


def _table(name: str) -> Any:
    from sqlmodel import SQLModel

    import core.store.models  # noqa: F401  (registers the tables)

    return SQLModel.metadata.tables[name]


async def stored_rows(db: Database, name: str) -> list[dict[str, Any]]:
    from sqlalchemy import select

    table = _table(name)
    async with db.engine.connect() as conn:
        result = await conn.execute(select(table).order_by(*table.primary_key.columns))
        return [{k: _plain(v) for k, v in row._mapping.items()} for row in result]


async def assert_every_row_kept(db: Database, *, only: bool = True) -> None:
    """Every row of every table of record, every column, as the old release stored it; with
    `only`, and no other row (a bot that ran since may have added some)."""
    for name, rows in expected_rows().items():
        stored = await stored_rows(db, name)
        if name in DERIVED_TABLES and not stored:
            continue  # derived data may be rebuilt by the next index
        if only:
            keys = [c.name for c in _table(name).primary_key.columns]
            assert stored == sorted(rows, key=lambda row: [row[k] for k in keys]), name
        else:
            assert [row for row in rows if row not in stored] == [], name


async def model_differences(db: Database) -> list[Any]:
    from core.store.migrations.dev import differences

    async with db.engine.connect() as conn:
        return await conn.run_sync(differences)


async def migrate_from_empty(db: Database) -> None:
    """Every revision from the first, as an operator's oldest database would take them (the
    start-up path creates an empty database at head in one go instead)."""
    from core.store.schema import upgrade_to_head

    async with db.schema_connection() as conn:
        await conn.run_sync(upgrade_to_head)


@pytest.fixture
async def db(database_url: str) -> AsyncIterator[Database]:
    database = Database(database_url)
    yield database
    await database.dispose()


# -- the revisions themselves ----------------------------------------------------------------


def test_the_revisions_have_one_head_and_HEAD_names_it() -> None:
    from alembic.script import ScriptDirectory

    from core.store.migrations import alembic_config

    heads = ScriptDirectory.from_config(alembic_config()).get_heads()
    assert len(heads) == 1, (
        f"several heads {heads}: give the newer revision the other as its parent"
    )
    assert heads == [HEAD], (
        f"core/store/migrations/__init__.py says HEAD = {HEAD!r}, the newest revision is "
        f"{heads[0]!r}: set HEAD to it"
    )


async def test_the_migrations_make_what_the_models_describe(db: Database) -> None:
    await migrate_from_empty(db)
    found = await model_differences(db)
    assert not found, "\n".join(map(str, found)) + "\n" + HOW_TO_MIGRATE


async def test_a_database_created_at_head_matches_the_migrations(db: Database) -> None:
    """The start-up path creates an empty database with create_all: it must be the schema the
    revisions make, or databases would differ by how old they are."""
    await db.create_all()
    assert (await db.schema_status()).up_to_date
    assert not await model_differences(db)


def _parts(sql: str) -> tuple[str, frozenset[str]]:
    """A CREATE statement as its head and its top-level clauses (columns keep their order:
    they are numbered; constraints, which the two paths list in different orders, do not)."""
    sql = " ".join(sql.split())
    head, _, body = sql.partition("(")
    clauses, depth, current = [], 0, ""
    for char in body.rsplit(")", 1)[0]:
        depth += char == "("
        depth -= char == ")"
        if char == "," and depth == 0:
            clauses.append(current.strip())
            current = ""
        else:
            current += char
    clauses.append(current.strip())
    columns = [
        c for c in clauses if not c.startswith(("PRIMARY", "UNIQUE", "FOREIGN", "CONSTRAINT"))
    ]
    rest = [c for c in clauses if c not in columns]
    return head + sql.rsplit(")", 1)[1], frozenset(
        [*(f"{i}:{c}" for i, c in enumerate(columns)), *rest]
    )


def _sqlite_schema(path: Path) -> list[tuple[str, str, Any]]:
    with sqlite3.connect(path) as con:
        rows = con.execute(
            "SELECT type, name, sql FROM sqlite_master WHERE name NOT LIKE 'sqlite_%' "
            "AND name != 'alembic_version' ORDER BY type, name"
        ).fetchall()
    return [(t, n, _parts(s or "")) for t, n, s in rows]


async def test_on_sqlite_created_and_migrated_schemas_are_the_same_sql(tmp_path: Path) -> None:
    """compare_metadata does not see SQLite's AUTOINCREMENT (ids never reused: a chunk id is
    its vector's id) nor column order; the DDL SQLite keeps does."""
    created, migrated = (
        Database(f"sqlite:///{tmp_path / 'a.db'}"),
        Database(f"sqlite:///{tmp_path / 'b.db'}"),
    )
    try:
        await created.create_all()
        await migrate_from_empty(migrated)
    finally:
        await created.dispose()
        await migrated.dispose()
    assert _sqlite_schema(tmp_path / "a.db") == _sqlite_schema(tmp_path / "b.db")


# -- upgrading the old release's database ---------------------------------------------------


def test_the_fixture_has_rows_in_every_table_of_that_release() -> None:
    from core.store.schema import _FIRST_REVISION_TABLES

    rows = expected_rows()
    assert set(rows) == set(_FIRST_REVISION_TABLES)
    assert [name for name, table_rows in rows.items() if not table_rows] == []


async def test_the_old_release_database_upgrades_with_every_row(
    database_url: str, db: Database
) -> None:
    load_fixture(database_url)
    before = await db.schema_status()
    assert before.unversioned and before.current == OLD_REVISION

    change = await db.upgrade()

    assert (change.before, change.after) == (OLD_REVISION, HEAD)
    assert (await db.schema_status()).up_to_date
    await assert_every_row_kept(db)
    assert not await model_differences(db)
    # 0011 rolled the old usage up by day and channel, user and model.
    rolled = {
        (r["breakdown"], r["day"], r["subject"]): (r["prompt_tokens"], r["requests"])
        for r in await stored_rows(db, "usage_daily")
    }
    expected: dict[tuple[str, str, str], tuple[int, int]] = {}
    for record in expected_rows()["usage_records"]:
        for breakdown in ("channel", "user", "model"):
            key = (breakdown, record["day"], record[breakdown])
            prompt, calls = expected.get(key, (0, 0))
            expected[key] = (prompt + record["prompt_tokens"], calls + 1)
    assert rolled == expected
    # The upgraded database works: new rows take ids after the old ones.
    from core.events import EventLedger

    assert await EventLedger(db).claim("slack", "T0123ABCD", "Ev-after-upgrade") is True
    assert [r["id"] for r in await stored_rows(db, "processed_events")] == [1, 2, 3]


def _backups(folder: Path) -> list[Path]:
    return sorted(folder.glob("threadline.db.*.bak"))


async def test_starting_on_the_old_database_upgrades_sqlite_and_refuses_postgresql(
    database_url: str, db: Database, tmp_path: Path
) -> None:
    """Any process upgrades a SQLite file by itself (keeping a copy); on PostgreSQL, shared by
    many processes, upgrading is the operator's step and start-up says which."""
    load_fixture(database_url)
    if database_url.startswith("sqlite"):
        await db.create_all()
        assert (await db.schema_status()).up_to_date
        [backup] = _backups(tmp_path)
        assert backup.name.startswith(f"threadline.db.{OLD_REVISION}-")
        with sqlite3.connect(backup) as con:
            assert con.execute("SELECT count(*) FROM thread_messages").fetchone() == (4,)
    else:
        with pytest.raises(SchemaError) as refused:
            await db.create_all()
        assert str(refused.value) == (
            f"database schema is at {OLD_REVISION}, this release needs {HEAD}: "
            "back it up, then run `threadline db upgrade`"
        )
        assert (await db.schema_status()).current == OLD_REVISION  # matched; nothing written
        assert not (await db.schema_status()).up_to_date
        await db.upgrade()
        await db.create_all()
    await assert_every_row_kept(db)


async def test_an_older_database_missing_tables_gets_them_and_keeps_its_rows(
    database_url: str, db: Database
) -> None:
    """A database of a release older still (here: only `repos`, as that release made it)
    matches no revision: the first one creates just the tables it lacks."""
    load_fixture(database_url)
    from sqlalchemy import text

    async with db.engine.begin() as conn:
        for name in reversed(list(expected_rows())):
            if name != "repos":
                await conn.execute(text(f'DROP TABLE "{name}"'))
    assert (await db.schema_status()).current is None

    if database_url.startswith("postgresql"):
        starting = Database(database_url)
        try:
            with pytest.raises(SchemaError) as refused:
                await starting.create_all()
        finally:
            await starting.dispose()
        assert str(refused.value).startswith(
            f"database schema is from before schema migrations, this release needs {HEAD}"
        )
    change = await db.upgrade()

    assert (change.before, change.after) == (None, HEAD)
    assert [r["name"] for r in await stored_rows(db, "repos")] == ["threadline", "crème-brûlée"]
    assert not await model_differences(db)


async def test_a_revision_that_copies_a_parent_table_keeps_its_childrens_rows(
    database_url: str, db: Database
) -> None:
    """What a later revision may well do: change a column of `repos`, which SQLite does by
    copying the table. With foreign keys enforced, dropping the old copy would cascade-delete
    every repository's files, chunks and vector syncs; the schema connection prevents that,
    and enforces them again afterwards."""
    import sqlalchemy as sa
    from alembic.migration import MigrationContext
    from alembic.operations import Operations

    load_fixture(database_url)
    await db.upgrade()

    def loosen_origin(conn: Any) -> None:
        ops = Operations(MigrationContext.configure(conn))
        with ops.batch_alter_table("repos") as batch:
            batch.alter_column("origin", existing_type=sa.Text(), nullable=True)

    async with db.schema_connection() as conn:
        await conn.run_sync(loosen_origin)

    await assert_every_row_kept(db)
    if database_url.startswith("sqlite"):
        async with db.engine.connect() as conn:
            assert (await conn.exec_driver_sql("PRAGMA foreign_keys")).all() == [(1,)]


@pytest.mark.parametrize("made_at", ["0002", "0003"])
async def test_a_database_made_by_create_all_before_migrations_is_matched(
    database_url: str, db: Database, made_at: str
) -> None:
    """Releases before migrations made their tables with create_all and recorded nothing:
    0002's tables (the release this issue started from) and 0003's (main just before
    migrations were merged, with `mcp_confirmations`) are told apart by their tables."""
    from alembic import command
    from sqlalchemy import text

    from core.store.migrations import alembic_config

    async with db.schema_connection() as conn:
        await conn.run_sync(lambda sync: command.upgrade(alembic_config(sync), made_at))
        await conn.execute(text("DROP TABLE alembic_version"))
    status = await db.schema_status()
    assert (status.current, status.unversioned) == (made_at, True)

    change = await db.upgrade()

    assert (change.before, change.after) == (made_at, HEAD)
    assert (await db.schema_status()).up_to_date
    assert not await model_differences(db)


async def test_a_database_at_head_upgrades_as_a_no_op(db: Database) -> None:
    await db.create_all()
    change = await db.upgrade()
    assert (change.before, change.after, change.changed) == (HEAD, HEAD, False)
    assert not await model_differences(db)


async def test_a_database_a_newer_release_wrote_is_refused_untouched(
    database_url: str, db: Database
) -> None:
    from sqlalchemy import text

    await db.create_all()
    async with db.engine.begin() as conn:
        await conn.execute(text("UPDATE alembic_version SET version_num = '0999'"))
    other = Database(database_url)  # a process starting now
    try:
        with pytest.raises(SchemaError, match="0999, which this release does not know"):
            await other.create_all()
    finally:
        await other.dispose()
    with pytest.raises(SchemaError, match="a newer Threadline wrote it"):
        await db.upgrade()
    status = await db.schema_status()
    assert (status.current, status.known) == ("0999", False)


async def test_processes_upgrading_at_once_upgrade_once(database_url: str) -> None:
    """Several processes starting on the old database at the same moment (each `Database` is
    one): all end at head, the rows are kept, and only one did the upgrade."""
    load_fixture(database_url)
    handles = [Database(database_url) for _ in range(4)]
    try:
        changes = await asyncio.gather(*(h.upgrade() for h in handles))
        assert sorted(str(c.before) for c in changes) == [OLD_REVISION, HEAD, HEAD, HEAD]
        await assert_every_row_kept(handles[0])
    finally:
        for h in handles:
            await h.dispose()


async def test_an_empty_database_is_created_at_head_by_concurrent_first_starts(
    database_url: str,
) -> None:
    handles = [Database(database_url) for _ in range(4)]
    try:
        await asyncio.gather(*(h.create_all() for h in handles))
        assert (await handles[0].schema_status()).up_to_date
        assert not await model_differences(handles[0])
    finally:
        for h in handles:
            await h.dispose()


# -- the command line ------------------------------------------------------------------------


@pytest.fixture
def cli(tmp_path: Path, write_policy: Any) -> Iterator[Any]:
    empty = tmp_path / "empty.toml"
    empty.write_text("")
    env = dict(os.environ)
    env.update(
        THREADLINE_DATA_DIR=str(tmp_path / "data"),
        THREADLINE_POLICY=str(write_policy()),
        THREADLINE_CONFIG=str(empty),
        PYTHONUNBUFFERED="1",
    )

    class Cli:
        def __call__(
            self, *args: str, url: str, stdin: str = ""
        ) -> subprocess.CompletedProcess[str]:
            return subprocess.run(
                [*threadline_command(), *args],
                env={**env, "DATABASE_URL": url},
                cwd=tmp_path,
                input=stdin,
                capture_output=True,
                text=True,
                timeout=120,
                check=False,
            )

        def start(self, *args: str, url: str) -> subprocess.Popen[str]:
            proc = subprocess.Popen(
                [*threadline_command(), *args],
                env={**env, "DATABASE_URL": url},
                cwd=tmp_path,
                stdin=subprocess.DEVNULL,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                text=True,
            )
            started.append(proc)
            return proc

    started: list[subprocess.Popen[str]] = []
    yield Cli()
    for proc in started:
        if proc.poll() is None:
            proc.kill()
            proc.wait()


async def test_threadline_db_upgrades_the_old_release_database(
    database_url: str, db: Database, cli: Any
) -> None:
    load_fixture(database_url)

    behind = cli("db", "current", url=database_url)
    assert behind.returncode == 1, behind.stderr
    assert behind.stdout.strip() == (
        f"made before schema migrations (matches {OLD_REVISION}); head {HEAD}: "
        "run `threadline db upgrade`"
    )
    upgraded = cli("db", "upgrade", url=database_url)
    assert upgraded.returncode == 0, upgraded.stderr
    assert upgraded.stdout.strip() == f"upgraded {OLD_REVISION} -> {HEAD}"
    again = cli("db", "upgrade", url=database_url)
    assert (again.returncode, again.stdout.strip()) == (0, f"already at {HEAD}: nothing to do")
    current = cli("db", "current", url=database_url)
    assert (current.returncode, current.stdout.strip()) == (0, f"at {HEAD} (head): up to date")

    await assert_every_row_kept(db)
    assert not await model_differences(db)


@pytest.mark.parametrize("old", [True, False], ids=["old release", "empty"])
async def test_processes_starting_at_once_upgrade_or_create_once(
    database_url: str, db: Database, cli: Any, old: bool
) -> None:
    """Real processes, so the database's own locks are what keeps them apart (PostgreSQL's
    advisory lock, SQLite's write lock), not this process's."""
    if old:
        load_fixture(database_url)
    procs = [cli.start("db", "upgrade", url=database_url) for _ in range(3)]
    outputs = [proc.communicate(timeout=120) for proc in procs]
    assert [proc.returncode for proc in procs] == [0, 0, 0], outputs
    said = sorted(out.strip() for out, _ in outputs)
    did = f"upgraded {OLD_REVISION} -> {HEAD}" if old else f"created the schema at {HEAD}"
    assert said == sorted([did, *[f"already at {HEAD}: nothing to do"] * 2])
    if old:
        await assert_every_row_kept(db)
    assert not await model_differences(db)


async def test_start_up_on_a_database_it_cannot_use_says_why_without_a_traceback(
    database_url: str, db: Database, cli: Any
) -> None:
    from sqlalchemy import text

    if database_url.startswith("postgresql"):  # behind head: the operator upgrades
        load_fixture(database_url)
        for command in (("worker",), ("ask", "/budget")):
            refused = cli(*command, url=database_url)
            assert refused.returncode == 1
            assert "Traceback" not in refused.stderr
            assert refused.stderr.strip().endswith(
                f"database schema is at {OLD_REVISION}, this release needs {HEAD}: "
                "back it up, then run `threadline db upgrade`"
            ), refused.stderr
        await db.upgrade()
    else:
        await db.create_all()
    async with db.engine.begin() as conn:
        await conn.execute(text("UPDATE alembic_version SET version_num = 'f00d'"))
    for command in (("worker",), ("db", "current"), ("db", "upgrade")):
        refused = cli(*command, url=database_url)
        assert refused.returncode == 1
        assert "Traceback" not in refused.stderr
        assert "f00d" in refused.stdout + refused.stderr
        assert "newer" in refused.stdout + refused.stderr


async def test_threadline_run_upgrades_an_old_sqlite_file_by_itself(
    tmp_path: Path, cli: Any
) -> None:
    path = tmp_path / "data" / "threadline.db"
    path.parent.mkdir()
    url = f"sqlite:///{path}"
    load_fixture(url)

    ran = cli("run", url=url, stdin="/budget\n")  # the console; it ends at end of input

    assert ran.returncode == 0, ran.stderr
    assert "Traceback" not in ran.stderr
    assert f"database schema is at {OLD_REVISION}, this release needs {HEAD}" in ran.stderr
    db = Database(url)
    try:
        assert (await db.schema_status()).up_to_date
        await assert_every_row_kept(db, only=False)  # the digest scheduler ran a missed digest
    finally:
        await db.dispose()


def test_threadline_db_says_plainly_when_the_database_is_unreachable(cli: Any) -> None:
    with socket.socket() as closed:  # a port nothing listens on once this is closed
        closed.bind(("127.0.0.1", 0))
        port = closed.getsockname()[1]
    url = f"postgresql://threadline:s3cret-pw@127.0.0.1:{port}/threadline"
    for action in ("upgrade", "current"):
        done = cli("db", action, url=url)
        assert done.returncode == 1
        assert "Traceback" not in done.stderr
        assert done.stderr.startswith(f"threadline db {action}: the database (DATABASE_URL)")
        assert "s3cret-pw" not in done.stderr + done.stdout
