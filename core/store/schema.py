"""Which schema a database has, and bringing it to the one this code needs.

Every function here takes a synchronous SQLAlchemy Connection (the engine calls them through
`AsyncConnection.run_sync`) inside a transaction the caller holds, under the schema advisory
lock on PostgreSQL and SQLite's write lock when the schema is not at head, so processes
starting at once take turns.

A database is in one of four states:
- empty: created at head in one go (create_all and a version row: half the time of replaying
  every revision, bench/schema_setup.py, and the same tables, which the migration tests check);
- made by `create_all` of a release before migrations (tables, no `alembic_version`): the
  revision it matches is recorded, then it is upgraded like any other;
- behind head: upgraded when the caller may (`threadline db upgrade`, any process on SQLite),
  refused with what to run otherwise;
- at an unknown revision (a newer release wrote it): refused, never touched.

Alembic is imported only to upgrade: at head, start-up reads the version row and checks the
derived tables' columns, as it checked them before migrations.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from core.store.migrations import HEAD

# Tables that hold only what indexing derives from files on disk: when one of them predates a
# column the code needs, it is dropped and recreated (the next index rebuilds it) instead of
# failing on every query. Tables of record are never touched this way.
DERIVED_TABLES = ("code_chunks", "code_graph_files", "code_graph_symbols", "code_graph_edges")

VERSION_TABLE = "alembic_version"

# A database made by create_all before migrations is matched by its tables, newest first: all
# of revision 0001's tables of record make it 0001, `mcp_tool_pins` too makes it 0002, and
# `mcp_confirmations` 0003 (main had it before migrations were merged). Databases made since
# record their revision, so this list never grows.
_LEGACY_MARKERS = (("mcp_confirmations", "0003"), ("mcp_tool_pins", "0002"))
_LEGACY_BASE = "0001"
# The tables of revision 0001 (frozen, like the revision: never edit).
_FIRST_REVISION_TABLES = (
    "audit_log",
    "code_chunks",
    "code_graph_edges",
    "code_graph_files",
    "code_graph_symbols",
    "delivered_parts",
    "digest_runs",
    "digest_subscriptions",
    "memory_items",
    "model_calibration",
    "outbox",
    "processed_events",
    "quota_reservations",
    "quota_usage",
    "repo_chunk_formats",
    "repo_files",
    "repos",
    "tenant_settings",
    "thread_messages",
    "thread_skills",
    "thread_summaries",
    "usage_records",
    "vector_syncs",
)


class SchemaError(RuntimeError):
    """The database's schema cannot be used by this code as it is; the message says why and
    what to do. Start-up shows it as it is (never a traceback)."""


@dataclass(frozen=True)
class SchemaChange:
    """What bringing the schema to head did: `before` is None for a database that had no
    tables (or no recorded revision and too few tables to match one)."""

    before: str | None
    after: str
    created: bool = False

    @property
    def changed(self) -> bool:
        return self.created or self.before != self.after


@dataclass(frozen=True)
class SchemaStatus:
    """A database's schema as found: `current` is the recorded revision or, for a database
    made before migrations (`unversioned`), the one it matches (None: it matches none, or the
    database is `empty`)."""

    current: str | None
    head: str
    empty: bool = False
    unversioned: bool = False
    known: bool = True

    @property
    def up_to_date(self) -> bool:
        return self.current == self.head and not self.unversioned


def status(conn: Any) -> SchemaStatus:
    current = current_revision(conn)
    if current is not None:
        return SchemaStatus(current, HEAD, known=current == HEAD or current in known_revisions())
    if not has_tables(conn):
        return SchemaStatus(None, HEAD, empty=True)
    return SchemaStatus(legacy_revision(conn), HEAD, unversioned=True)


def current_revision(conn: Any) -> str | None:
    """The revision recorded in the database, or None when none is."""
    from sqlalchemy import inspect, text

    if not inspect(conn).has_table(VERSION_TABLE):
        return None
    rows = conn.execute(text(f"SELECT version_num FROM {VERSION_TABLE}")).scalars().all()
    if len(rows) > 1:
        raise SchemaError(
            f"the database records several schema revisions ({', '.join(sorted(rows))}); "
            "this release has one line of migrations: restore the backup taken before the "
            "last upgrade"
        )
    return rows[0] if rows else None


def legacy_revision(conn: Any) -> str | None:
    """The revision a database made by `create_all` of a release before migrations matches;
    None when it lacks some of the first revision's tables of record (older still: upgraded
    from the start, which creates only what is missing)."""
    from sqlalchemy import inspect

    have = set(inspect(conn).get_table_names())
    if not (_first_revision_tables() - set(DERIVED_TABLES)) <= have:
        return None
    for marker, revision in _LEGACY_MARKERS:
        if marker in have:
            return revision
    return _LEGACY_BASE


def has_tables(conn: Any) -> bool:
    from sqlalchemy import inspect

    return bool(set(inspect(conn).get_table_names()) & _first_revision_tables())


def prepare(conn: Any, *, may_upgrade: bool) -> SchemaChange:
    """Bring the database to head, or raise SchemaError saying why it cannot be."""
    before = current_revision(conn)
    if before == HEAD:
        rebuild_outdated_derived(conn)
        return SchemaChange(HEAD, HEAD)
    if before is None:
        if not has_tables(conn):
            _create_at_head(conn)
            return SchemaChange(None, HEAD, created=True)
        before = legacy_revision(conn)
        if before is not None:
            write_revision(conn, before)
            if before == HEAD:
                rebuild_outdated_derived(conn)
                return SchemaChange(before, HEAD)
    elif before not in known_revisions():
        raise SchemaError(
            f"database schema is at revision {before}, which this release does not know: a "
            f"newer Threadline wrote it (this release's newest is {HEAD}). Run the newer "
            "release, or restore the backup taken before upgrading"
        )
    if not may_upgrade:
        raise SchemaError(behind_message(before))
    from sqlalchemy.exc import DBAPIError

    try:
        upgrade_to_head(conn)
    except DBAPIError as exc:
        if transient(exc):
            raise
        # The same revision on the same schema fails the same way every time: it is not
        # retried, and the database's own words say what to fix.
        raise SchemaError(upgrade_failed(before, exc)) from exc
    rebuild_outdated_derived(conn)
    return SchemaChange(before, HEAD)


# Waits on another process's lock, worth trying again (PostgreSQL's SQLSTATEs: lock not
# available, deadlock detected, serialization failure). Anything else is the schema or the
# statement, and fails again the same way.
_TRANSIENT_SQLSTATES = frozenset({"55P03", "40P01", "40001"})
_TRANSIENT_SQLITE = ("database is locked", "database table is locked", "database is busy")


def transient(exc: BaseException) -> bool:
    """Whether a database error was a wait on someone else's lock (try again) rather than a
    schema or statement error (never retried)."""
    cause = getattr(exc, "orig", None) or exc
    if getattr(cause, "sqlstate", None) in _TRANSIENT_SQLSTATES:
        return True
    text = str(cause).lower()
    return type(cause).__name__ == "OperationalError" and any(
        words in text for words in _TRANSIENT_SQLITE
    )


def upgrade_failed(before: str | None, exc: BaseException) -> str:
    cause = getattr(exc, "orig", None) or exc
    lines = str(cause).strip().splitlines()
    detail = f"{type(cause).__name__}: {lines[0][:300]}" if lines else type(cause).__name__
    return (
        f"upgrading the database schema from {before or 'before schema migrations'} to {HEAD} "
        f"failed ({detail}). The upgrade was rolled back: the database is still "
        f"{describe(before)}. Fix what the error names, then start again"
    )


def behind_message(revision: str | None) -> str:
    return (
        f"database schema is {describe(revision)}, this release needs {HEAD}: "
        "back it up, then run `threadline db upgrade`"
    )


def describe(revision: str | None) -> str:
    return f"at {revision}" if revision else "from before schema migrations"


def upgrade_to_head(conn: Any) -> None:
    from alembic import command

    from core.store.migrations import alembic_config

    command.upgrade(alembic_config(conn), "head")


def known_revisions() -> set[str]:
    from alembic.script import ScriptDirectory

    from core.store.migrations import alembic_config

    script = ScriptDirectory.from_config(alembic_config())
    return {rev.revision for rev in script.walk_revisions()}


def write_revision(conn: Any, revision: str) -> None:
    """Record `revision` as Alembic does (its version table, one row)."""
    from sqlalchemy import Column, MetaData, PrimaryKeyConstraint, String, Table

    table = Table(
        VERSION_TABLE,
        MetaData(),
        Column("version_num", String(32), nullable=False),
        PrimaryKeyConstraint("version_num", name="alembic_version_pkc"),
    )
    table.create(conn, checkfirst=True)
    conn.execute(table.delete())
    conn.execute(table.insert().values(version_num=revision))


def rebuild_outdated_derived(conn: Any) -> None:
    """Drop a derived table that lacks a column the models have, and create it anew."""
    from sqlalchemy import inspect
    from sqlmodel import SQLModel

    from core.store import models  # noqa: F401  (registers the tables)

    inspector = inspect(conn)
    rebuilt = []
    for name in DERIVED_TABLES:
        table = SQLModel.metadata.tables[name]
        if inspector.has_table(name):
            have = {c["name"] for c in inspector.get_columns(name)}
            if {c.name for c in table.columns} <= have:
                continue
            table.drop(conn)
        rebuilt.append(table)
    if rebuilt:
        SQLModel.metadata.create_all(conn, tables=rebuilt)


def _create_at_head(conn: Any) -> None:
    from sqlmodel import SQLModel

    from core.store import models  # noqa: F401  (registers the tables)

    SQLModel.metadata.create_all(conn)
    write_revision(conn, HEAD)


def _first_revision_tables() -> set[str]:
    return set(_FIRST_REVISION_TABLES)
