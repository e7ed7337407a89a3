"""`threadline db upgrade` brings the database's schema to this release's (the operator's step
on PostgreSQL; SQLite is upgraded by any process that opens it); `threadline db current` says
where it is, exiting 1 when it is behind (or ahead: a newer release wrote it). `threadline db
check` compares the tables themselves with this release's models (a table dropped by hand
leaves the revision at head), exiting 1 on a difference; `threadline db repair` creates the
missing tables, empty."""

from __future__ import annotations

import argparse
import sys
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from core.store.engine import Database, SchemaStatus

EXIT_OK, EXIT_FAILED = 0, 1


def add_parser(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    db = sub.add_parser("db", help="database schema: upgrade it, or see its revision")
    actions = db.add_subparsers(dest="db_command", required=True, metavar="ACTION")
    actions.add_parser(
        "upgrade", help="upgrade the schema to this release's (back the database up first)"
    )
    actions.add_parser("current", help="the schema's revision; exit 1 when not this release's")
    actions.add_parser(
        "check", help="compare the tables with this release's; exit 1 on a difference"
    )
    actions.add_parser(
        "repair", help="create the tables this release needs that are missing (empty)"
    )


async def db_command(db: Database, args: argparse.Namespace) -> int:
    from sqlalchemy.exc import SQLAlchemyError

    from core.store.engine import SchemaError

    try:
        if args.db_command == "upgrade":
            return await _upgrade(db)
        if args.db_command == "check":
            return await _check(db)
        if args.db_command == "repair":
            return await _repair(db)
        return await _current(db)
    except SchemaError as exc:
        print(f"threadline db {args.db_command}: {exc}", file=sys.stderr)
        return EXIT_FAILED
    except (SQLAlchemyError, OSError) as exc:
        # The URL is not printed (it may hold a password); the driver's first line says what
        # went wrong (refused, authentication, a statement the database rejected).
        print(f"threadline db {args.db_command}: {_database_error(exc)}", file=sys.stderr)
        return EXIT_FAILED


def _database_error(exc: BaseException) -> str:
    cause = getattr(exc, "orig", None) or exc
    first = str(cause).strip().splitlines()[0] if str(cause).strip() else ""
    detail = f" ({first[:300]})" if first else ""
    return (
        f"the database (DATABASE_URL) failed: {type(cause).__name__}{detail}; "
        "nothing was changed by the step that failed (each runs in one transaction)"
    )


async def _upgrade(db: Database) -> int:
    change = await db.upgrade()
    if change.created:
        print(f"created the schema at {change.after}")
    elif change.before == change.after:
        print(f"already at {change.after}: nothing to do")
    else:
        print(f"upgraded {change.before or 'unversioned'} -> {change.after}")
    return EXIT_OK


async def _check(db: Database) -> int:
    found = await db.schema_status()
    if not found.up_to_date:
        await _current(db, found)  # behind, ahead or empty: that first
        return EXIT_FAILED
    needed, extra = await db.schema_differences()
    if not needed:
        print(f"at {found.head} (head): the schema matches this release's")
        for line in extra:
            print(f"  {line} (not this release's; left alone)")
        return EXIT_OK
    print(f"at {found.head} (head), but the schema differs from this release's:")
    for line in needed:
        print(f"  {line}")
    for line in extra:
        print(f"  {line} (not this release's; left alone)")
    print(
        f"{len(needed)} difference(s): restore the database from a backup, or run "
        "`threadline db repair` to create missing tables (empty)"
    )
    return EXIT_FAILED


async def _repair(db: Database) -> int:
    found = await db.schema_status()
    if not found.up_to_date:
        await _current(db, found)
        return EXIT_FAILED
    made, still = await db.create_missing_tables()
    if made:
        print(f"created the missing tables, empty: {', '.join(made)}")
    elif not still:
        print("nothing to repair: every table this release needs is there")
    if still:
        print(
            f"threadline db repair: missing {still.describe()}: a column cannot be remade with "
            "its values; restore the database from a backup",
            file=sys.stderr,
        )
        return EXIT_FAILED
    return EXIT_OK


async def _current(db: Database, found: SchemaStatus | None = None) -> int:
    found = found or await db.schema_status()
    if found.empty:
        print(f"empty database; this release's schema is {found.head} (made on first start)")
        return EXIT_FAILED
    if found.unversioned:
        matches = f"matches {found.current}" if found.current else "matches no revision"
        print(
            f"made before schema migrations ({matches}); head {found.head}: "
            "run `threadline db upgrade`"
        )
        return EXIT_FAILED
    if not found.known:
        print(
            f"at {found.current}, unknown to this release (head {found.head}): "
            "a newer release wrote it"
        )
        return EXIT_FAILED
    if found.up_to_date:
        print(f"at {found.current} (head): up to date")
        return EXIT_OK
    print(f"at {found.current}, head {found.head}: behind, run `threadline db upgrade`")
    return EXIT_FAILED
