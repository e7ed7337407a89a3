"""`threadline db upgrade` brings the database's schema to this release's (the operator's step
on PostgreSQL; SQLite is upgraded by any process that opens it); `threadline db current` says
where it is, exiting 1 when it is behind (or ahead: a newer release wrote it)."""

from __future__ import annotations

import argparse
import sys
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from core.store.engine import Database

EXIT_OK, EXIT_FAILED = 0, 1


def add_parser(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    db = sub.add_parser("db", help="database schema: upgrade it, or see its revision")
    actions = db.add_subparsers(dest="db_command", required=True, metavar="ACTION")
    actions.add_parser(
        "upgrade", help="upgrade the schema to this release's (back the database up first)"
    )
    actions.add_parser("current", help="the schema's revision; exit 1 when not this release's")


async def db_command(db: Database, args: argparse.Namespace) -> int:
    from sqlalchemy.exc import SQLAlchemyError

    from core.store.engine import SchemaError

    try:
        if args.db_command == "upgrade":
            return await _upgrade(db)
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


async def _current(db: Database) -> int:
    found = await db.schema_status()
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
