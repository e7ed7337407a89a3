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
derived tables' columns, as it checked them before migrations, and that every table and column
the models have is there (a table dropped by hand leaves the revision at head; without this
check the first query that needs it failed as "something went wrong").
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from core.errors import ConfigError
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


class SchemaError(ConfigError, RuntimeError):
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


@dataclass(frozen=True)
class SchemaGaps:
    """What the models have that the database lacks: tables and `table.column`s (derived
    tables are not counted: start-up makes them again)."""

    tables: tuple[str, ...] = ()
    columns: tuple[str, ...] = ()

    def __bool__(self) -> bool:
        return bool(self.tables or self.columns)

    def describe(self) -> str:
        parts = []
        if self.tables:
            parts.append(f"{_plural('table', self.tables)} {', '.join(self.tables)}")
        if self.columns:
            parts.append(f"{_plural('column', self.columns)} {', '.join(self.columns)}")
        return "; ".join(parts)


def _plural(noun: str, items: tuple[str, ...]) -> str:
    return noun if len(items) == 1 else f"{noun}s"


def gaps(conn: Any) -> SchemaGaps:
    """The tables and columns of the models the database lacks (reads the catalogue only)."""
    from sqlalchemy import inspect
    from sqlmodel import SQLModel

    from core.store import models  # noqa: F401  (registers the tables)

    inspector = inspect(conn)
    have = set(inspector.get_table_names())
    wanted = [
        t for name, t in sorted(SQLModel.metadata.tables.items()) if name not in DERIVED_TABLES
    ]
    present = [t.name for t in wanted if t.name in have]
    reflected = inspector.get_multi_columns(filter_names=present) if present else {}
    found = {table: {c["name"] for c in cols} for (_schema, table), cols in reflected.items()}
    columns = [
        f"{t.name}.{c.name}"
        for t in wanted
        if t.name in have
        for c in t.columns
        if c.name not in found.get(t.name, set())
    ]
    return SchemaGaps(tuple(t.name for t in wanted if t.name not in have), tuple(columns))


def gaps_message(found: SchemaGaps) -> str:
    return (
        f"the database schema is at {HEAD} but lacks what this release needs: "
        f"{found.describe()}. Restore the database from a backup (a table of record cannot "
        "be remade with its rows), or run `threadline db repair` to create the missing tables "
        "empty (missing columns need the backup); `threadline db check` lists every difference"
    )


def create_missing_tables(conn: Any) -> SchemaGaps:
    """Create the tables the models have and the database lacks (empty, with their indexes);
    returns what is missing afterwards (columns: they cannot be remade with their values)."""
    from sqlmodel import SQLModel

    missing = gaps(conn)
    if missing.tables:
        tables = [SQLModel.metadata.tables[name] for name in missing.tables]
        SQLModel.metadata.create_all(conn, tables=tables)
    return SchemaGaps(columns=missing.columns)


def differences(conn: Any) -> tuple[list[str], list[str]]:
    """Every difference between the database and the models, as lines for people to read:
    (what the models have that the database lacks or has otherwise; what only the database
    has, such as tables of another application in the same schema)."""
    from core.store.migrations.compare import differences as compare

    missing_tables = set(gaps(conn).tables)
    needed: list[str] = []
    extra: list[str] = []
    for diff in compare(conn):
        for change in diff if isinstance(diff, list) else [diff]:
            line = _describe_difference(change, missing_tables)
            if line is None:
                continue
            (extra if change[0].startswith("remove_") else needed).append(line)
    return needed, extra


def _describe_difference(change: tuple[Any, ...], missing_tables: set[str]) -> str | None:
    kind = change[0]
    if kind in ("add_table", "remove_table"):
        return f"{'missing' if kind == 'add_table' else 'extra'} table: {change[1].name}"
    if kind in ("add_column", "remove_column"):
        which = "missing" if kind == "add_column" else "extra"
        return f"{which} column: {change[2]}.{change[3].name}"
    if kind in ("add_index", "remove_index", "add_constraint", "remove_constraint"):
        item = change[1]
        table = item.table.name if item.table is not None else "?"
        if kind.startswith("add_") and table in missing_tables:
            return None  # made with its table
        what = "index" if kind.endswith("index") else "constraint"
        which = "missing" if kind.startswith("add_") else "extra"
        return f"{which} {what}: {item.name} on {table}"
    if kind.startswith("modify_"):
        table, column, have, want = change[2], change[3], change[5], change[6]
        attribute = kind.removeprefix("modify_")
        return f"column {table}.{column}: {attribute} is {have!r}, this release has {want!r}"
    return str(change)


def prepare(conn: Any, *, may_upgrade: bool) -> SchemaChange:
    """Bring the database to head, or raise SchemaError saying why it cannot be."""
    change = _bring_to_head(conn, may_upgrade=may_upgrade)
    if not change.created and (missing := gaps(conn)):
        raise SchemaError(gaps_message(missing))
    return change


def _bring_to_head(conn: Any, *, may_upgrade: bool) -> SchemaChange:
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
