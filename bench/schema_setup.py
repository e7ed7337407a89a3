"""Schema set-up cost (not a pytest test): what a first `Database.create_all` costs now that
the schema is versioned, next to what it cost before migrations, on SQLite and PostgreSQL.

  before     SQLModel create_all with the derived-table check (the code before migrations)
  empty      Database.create_all on an empty database: create_all + head recorded
  at head    Database.create_all of a new handle on a database already at head
  migrate    every revision from the first on an empty database (what `empty` avoids)

The test suite makes a fresh database for almost every storage test, so `empty` against
`before` is what it pays. Each case runs `--runs` times (default 20), interleaved with the
others, each on a fresh SQLite file or PostgreSQL schema; the median and p95 are reported.

    python bench/schema_setup.py [--runs N] [--append bench/RESULTS.md]
"""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import sys
import tempfile
import time
import uuid
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bench.machine import append_results, percentile  # noqa: E402

PG_URL = os.environ.get("TEST_DATABASE_URL", "postgresql://postgres@127.0.0.1:5432/test")


def _before(conn: Any) -> None:
    from sqlmodel import SQLModel

    import core.store.models  # noqa: F401
    from core.store.schema import rebuild_outdated_derived

    SQLModel.metadata.create_all(conn)
    rebuild_outdated_derived(conn)  # the old code's derived-table check, same inspection


async def case_before(db: Any) -> None:
    from sqlalchemy import text

    from core.store.engine import _DDL_LOCK

    async with db.engine.begin() as conn:
        if db.dialect == "postgresql":
            await conn.execute(text("SELECT pg_advisory_xact_lock(:k)"), {"k": _DDL_LOCK})
        await conn.run_sync(_before)


async def case_empty(db: Any) -> None:
    await db.create_all()


async def case_migrate(db: Any) -> None:
    from core.store.schema import upgrade_to_head

    async with db.schema_connection() as conn:
        await conn.run_sync(upgrade_to_head)


async def timed(
    make_url: Callable[[], str], case: Callable[[Any], Awaitable[None]], *, at_head: bool
) -> float:
    from core.store.engine import Database

    url = make_url()
    if at_head:
        first = Database(url)
        await first.create_all()
        await first.dispose()
    db = Database(url)
    try:
        async with db.engine.connect():  # the connection itself is not what is measured
            pass
        start = time.perf_counter()
        await case(db)
        return time.perf_counter() - start
    finally:
        await db.dispose()


def sqlite_urls(folder: Path) -> Callable[[], str]:
    return lambda: f"sqlite:///{folder / f'{uuid.uuid4().hex}.db'}"


def pg_urls(schemas: list[str]) -> Callable[[], str]:
    import psycopg

    def make() -> str:
        schema = f"bench_{uuid.uuid4().hex[:12]}"
        with psycopg.connect(PG_URL, autocommit=True) as conn:
            conn.execute(f'CREATE SCHEMA "{schema}"')  # type: ignore[arg-type]
        schemas.append(schema)
        sep = "&" if "?" in PG_URL else "?"
        return f"{PG_URL}{sep}options=-csearch_path%3D{schema}"

    return make


def drop(schemas: list[str]) -> None:
    import psycopg

    with psycopg.connect(PG_URL, autocommit=True) as conn:
        for schema in schemas:
            conn.execute(f'DROP SCHEMA "{schema}" CASCADE')  # type: ignore[arg-type]


async def run(runs: int) -> list[tuple[str, str, list[float]]]:
    cases: list[tuple[str, Callable[[Any], Awaitable[None]], bool]] = [
        ("before", case_before, False),
        ("empty", case_empty, False),
        ("at head", case_empty, True),
        ("migrate", case_migrate, False),
    ]
    results = []
    schemas: list[str] = []
    with tempfile.TemporaryDirectory() as tmp:
        backends = [("sqlite", sqlite_urls(Path(tmp))), ("postgresql", pg_urls(schemas))]
        try:
            for backend, make_url in backends:
                for _, case, at_head in cases:  # warm-up: imports, caches
                    await timed(make_url, case, at_head=at_head)
                # Interleaved, so that load from elsewhere (other processes' DDL behind the
                # same advisory lock, say) falls on every case alike.
                seconds: dict[str, list[float]] = {name: [] for name, _, _ in cases}
                for _ in range(runs):
                    for name, case, at_head in cases:
                        seconds[name].append(await timed(make_url, case, at_head=at_head))
                for name, _, _ in cases:
                    results.append((backend, name, seconds[name]))
                    median = statistics.median(seconds[name]) * 1000
                    print(f"{backend:10} {name:8} median {median:.1f} ms")
        finally:
            drop(schemas)
    return results


def table(results: list[tuple[str, str, list[float]]]) -> str:
    lines = ["| backend | case | runs | median (ms) | p95 (ms) |", "|---|---|---:|---:|---:|"]
    for backend, name, seconds in results:
        lines.append(
            f"| {backend} | {name} | {len(seconds)} | {statistics.median(seconds) * 1000:.1f} "
            f"| {percentile(seconds, 95) * 1000:.1f} |"
        )
    return "\n".join(lines)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=20)
    parser.add_argument("--append", type=Path, metavar="FILE", help="append results (Markdown)")
    args = parser.parse_args()
    results = asyncio.run(run(args.runs))
    body = table(results)
    print(body)
    if args.append:
        append_results(
            args.append,
            "Schema set-up: create at head vs before migrations vs replaying revisions",
            body + "\n\nbefore = the create_all of the code before migrations; empty = "
            "`Database.create_all` on an empty database (create_all + head recorded); at head "
            "= a new handle's check of a database at head; migrate = every revision from the "
            "first.",
        )
        print(f"appended to {args.append}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
