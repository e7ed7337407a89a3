"""The database handle: one async engine, created on first use.

SQLAlchemy is imported lazily so that commands that never touch the database (`--help`, an
offline question) start fast. The same code path serves SQLite (aiosqlite) and PostgreSQL
(psycopg 3); only URL normalisation and the upsert helper know the difference.
"""

from __future__ import annotations

import asyncio
import logging
import weakref
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from functools import cache
from pathlib import Path
from typing import TYPE_CHECKING, Any

from core.backoff import Backoff
from core.errors import ConfigError
from core.shielded import to_the_end
from core.store.schema import (
    DERIVED_TABLES,
    SchemaChange,
    SchemaError,
    SchemaGaps,
    SchemaStatus,
    transient,
)

log = logging.getLogger(__name__)

if TYPE_CHECKING:
    from sqlalchemy.ext.asyncio import AsyncConnection, AsyncEngine
    from sqlmodel.ext.asyncio.session import AsyncSession

__all__ = [
    "DERIVED_TABLES",
    "Database",
    "DatabaseURLError",
    "SchemaChange",
    "SchemaError",
    "SchemaGaps",
    "SchemaStatus",
    "normalize_url",
    "sqlite_url",
    "transient",
]


# Schema set-up that fails on a wait for another process's lock (SQLite's busy timeout, a
# PostgreSQL deadlock) is tried again; the locks below make that rare. Any other error (a
# revision that does not fit the schema) fails the same way again: it is never retried, since
# each try of an upgrade on SQLite began with a copy of the whole file.
_LOCKED_ATTEMPTS = 5
# Another process is migrating: 50 ms doubling, with jitter so waiting processes spread out.
SCHEMA_LOCKED = Backoff(first=0.05, limit=5.0)
_DDL_LOCK = 0x7468726561646C6E  # any constant bigint: "threadln" in ASCII


@cache
def _session_class() -> type[AsyncSession]:
    """SQLModel's session whose commit, rollback and close run to the end when the task is
    cancelled meanwhile (a process's stop cancels its tasks wherever they are), the
    cancellation going on after them (`core.shielded`): a commit cut halfway has no known
    outcome, and a cut rollback left the pool to reset the connection itself, which it logs as
    an error with a traceback. Made on first use: SQLAlchemy is imported lazily."""
    from sqlmodel.ext.asyncio.session import AsyncSession

    class FinishingSession(AsyncSession):
        async def commit(self) -> None:
            await to_the_end(super().commit())

        async def rollback(self) -> None:
            await to_the_end(super().rollback())

        async def close(self) -> None:
            await to_the_end(super().close())

    return FinishingSession


class DatabaseURLError(ConfigError, ValueError):
    """DATABASE_URL cannot be used; the message names its scheme at most."""


# Schema work of every handle in this process takes turns: Alembic keeps its migration context
# in module globals, and two upgrades on one event loop (greenlets switch at every query) would
# overwrite each other's. One lock per event loop, since an asyncio.Lock belongs to one.
_SCHEMA_LOCKS: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, asyncio.Lock] = (
    weakref.WeakKeyDictionary()
)


def _schema_lock() -> asyncio.Lock:
    loop = asyncio.get_running_loop()
    lock = _SCHEMA_LOCKS.get(loop)
    if lock is None:
        lock = _SCHEMA_LOCKS[loop] = asyncio.Lock()
    return lock


def normalize_url(url: str) -> str:
    """Map the URLs people write to the async drivers we ship."""
    url = url.strip()
    scheme, sep, rest = url.partition("://")
    if not sep:
        raise DatabaseURLError(
            "DATABASE_URL must look like sqlite:///path/to/file.db or "
            "postgresql://user@host:5432/dbname"
        )
    scheme = scheme.lower()
    if scheme in ("postgres", "postgresql", "postgresql+psycopg", "postgresql+psycopg_async"):
        return f"postgresql+psycopg://{rest}"
    if scheme in ("sqlite", "sqlite+aiosqlite"):
        return f"sqlite+aiosqlite://{rest}"
    raise DatabaseURLError(
        f"DATABASE_URL scheme {scheme!r} is not supported; use sqlite:// or postgresql://"
    )


def sqlite_url(path: Path) -> str:
    return f"sqlite+aiosqlite:///{path}"


class Database:
    def __init__(
        self,
        url: str,
        *,
        echo: bool = False,
        connect_args: dict[str, Any] | None = None,
        pool_size: int = 15,
        max_overflow: int = 5,
    ):
        self.url = normalize_url(url)
        self._echo = echo
        self._connect_args = connect_args or {}
        # PostgreSQL only: this process never holds more than pool_size + max_overflow.
        self._pool = {"pool_size": pool_size, "max_overflow": max_overflow}
        self._engine: AsyncEngine | None = None
        self._ready = False

    @property
    def dialect(self) -> str:
        return "sqlite" if self.url.startswith("sqlite") else "postgresql"

    @property
    def engine(self) -> AsyncEngine:
        if self._engine is None:
            self._engine = self._create_engine()
        return self._engine

    def _create_engine(self) -> AsyncEngine:
        from sqlalchemy import event
        from sqlalchemy.ext.asyncio import create_async_engine

        if self.dialect == "sqlite":
            path = self.url.split(":///", 1)[1]
            if path and path != ":memory:":
                Path(path).parent.mkdir(parents=True, exist_ok=True)
            engine = create_async_engine(
                self.url, echo=self._echo, connect_args={"timeout": 30, **self._connect_args}
            )

            @event.listens_for(engine.sync_engine, "connect")
            def _pragmas(dbapi_conn: Any, _record: Any) -> None:
                # WAL lets readers proceed during a write; busy_timeout makes concurrent
                # writers wait instead of failing with "database is locked".
                cur = dbapi_conn.cursor()
                cur.execute("PRAGMA journal_mode=WAL")
                cur.execute("PRAGMA busy_timeout=30000")
                cur.execute("PRAGMA foreign_keys=ON")
                cur.close()

            return engine
        return create_async_engine(
            self.url,
            echo=self._echo,
            pool_pre_ping=True,
            connect_args=self._connect_args,
            **self._pool,
        )

    async def create_all(self) -> None:
        """Make sure the schema is the one this code needs; every session waits for it.

        An empty database is created at the newest revision. One behind it is upgraded here
        on SQLite (the one-process default); on PostgreSQL, shared by many processes, that is
        the operator's step (`threadline db upgrade`, i.e. `upgrade`), and SchemaError says so.
        A database a newer release wrote raises SchemaError too. Concurrent first uses in this
        process wait for one another; other processes are waited for (PostgreSQL: an advisory
        lock; SQLite: its write lock).
        """
        if not self._ready:
            await self._prepare(may_upgrade=self.dialect == "sqlite")

    async def upgrade(self) -> SchemaChange:
        """Bring the schema to the newest revision, whatever the backend (`threadline db
        upgrade`); a no-op at head."""
        return await self._prepare(may_upgrade=True)

    async def schema_status(self) -> SchemaStatus:
        """The schema's revision and this code's, read without changing anything."""
        from core.store.schema import status

        async with self.engine.connect() as conn:
            return await conn.run_sync(status)

    async def schema_differences(self) -> tuple[list[str], list[str]]:
        """How the schema differs from the models (`threadline db check`), read without
        changing anything: (what this release needs otherwise; what only the database has)."""
        from core.store.schema import differences

        async with self.engine.connect() as conn:
            return await conn.run_sync(differences)

    async def create_missing_tables(self) -> tuple[tuple[str, ...], SchemaGaps]:
        """Create the tables of the models that a database at head lacks, empty (`threadline
        db repair`). Returns the tables made and what is still missing (columns)."""
        from core.store.schema import create_missing_tables, gaps

        async with _schema_lock(), self.schema_connection() as conn:
            before = await conn.run_sync(gaps)
            after = await conn.run_sync(create_missing_tables)
        return before.tables, after

    async def _prepare(self, *, may_upgrade: bool) -> SchemaChange:
        async with _schema_lock():
            from sqlalchemy.exc import DBAPIError

            for attempt in range(_LOCKED_ATTEMPTS):
                try:
                    change = await self._prepare_once(may_upgrade=may_upgrade)
                    break
                except DBAPIError as exc:
                    if not transient(exc) or attempt == _LOCKED_ATTEMPTS - 1:
                        raise
                    log.info("the schema is locked by another process; trying again")
                    await asyncio.sleep(SCHEMA_LOCKED.delay(attempt + 1))
            self._ready = True
            return change

    async def _prepare_once(self, *, may_upgrade: bool) -> SchemaChange:
        from functools import partial

        from core.store.schema import prepare, status

        locked = True
        backup = None
        if self.dialect == "sqlite":
            async with self.engine.connect() as conn:
                found = await conn.run_sync(status)
                if may_upgrade and not (found.up_to_date or found.empty or not found.known):
                    backup = await self._back_up(conn, found)
            # At head nothing is written (but an outdated derived table), so a process starting
            # beside a busy one does not queue for its write lock.
            locked = not found.up_to_date
        try:
            async with self.schema_connection(locked=locked) as conn:
                return await conn.run_sync(partial(prepare, may_upgrade=may_upgrade))
        except SchemaError as exc:
            message = str(exc)
            if backup is not None:
                message += f" (a copy from before the upgrade is kept in {backup})"
            if exc.__cause__ is not None:  # an upgrade failed (not a refusal before one)
                log.error("database schema: %s", message)
            raise SchemaError(message) from exc.__cause__

    @asynccontextmanager
    async def schema_connection(self, *, locked: bool = True) -> AsyncIterator[AsyncConnection]:
        """A connection for changing the schema, in one transaction (committed at the end,
        rolled back on error). `locked`: other processes changing the schema wait meanwhile
        (PostgreSQL: an advisory lock; SQLite: the write lock, so they never see half-made
        tables). On SQLite foreign keys are not enforced meanwhile: SQLite changes most columns
        by copying the table, and with them enforced, dropping the old copy of a parent table
        would cascade-delete its children's rows."""
        if self.dialect == "postgresql":
            from sqlalchemy import text

            # PostgreSQL's DDL is transactional: create, stamp and upgrade commit together.
            async with self.engine.begin() as conn:
                if locked:
                    await conn.execute(
                        text("SELECT pg_advisory_xact_lock(:key)"), {"key": _DDL_LOCK}
                    )
                yield conn
            return
        async with self.engine.connect() as conn:
            # The pragma only takes effect outside a transaction: it goes first, and is set
            # back after the commit.
            await conn.exec_driver_sql("PRAGMA foreign_keys=OFF")
            if locked:
                await conn.exec_driver_sql("BEGIN IMMEDIATE")
            try:
                yield conn
                await conn.commit()
            except BaseException:
                await conn.rollback()
                raise
            finally:
                await _foreign_keys_on(conn)

    @asynccontextmanager
    async def session(self) -> AsyncIterator[AsyncSession]:
        """A session in one transaction: committed on success, rolled back on any error. Its
        commit, rollback and close run to the end even when the task is cancelled meanwhile
        (`_session_class`)."""
        await self.create_all()
        session = _session_class()(self.engine, expire_on_commit=False)
        try:
            await session.begin()
            try:
                yield session
            except BaseException:
                await session.rollback()
                raise
            await session.commit()
        finally:
            await session.close()

    async def insert_rows(self, session: Any, table: Any, rows: list[dict[str, Any]]) -> None:
        """Many rows (dicts with the same keys) into `table`, in `session`'s transaction: a
        COPY on PostgreSQL, one executemany INSERT elsewhere. For the big writes of indexing
        (chunks, graph edges): the ORM's bulk insert took twenty times a Core one, and on
        PostgreSQL a COPY a fraction of the driver's executemany."""
        if not rows:
            return
        connection = await session.connection()
        if self.dialect != "postgresql":
            await connection.execute(table.insert(), rows)
            return
        from psycopg import sql

        raw = await connection.get_raw_connection()
        driver = raw.driver_connection  # psycopg's AsyncConnection, in the session's transaction
        columns = list(rows[0])
        statement = sql.SQL("COPY {} ({}) FROM STDIN").format(
            sql.Identifier(table.name), sql.SQL(", ").join(map(sql.Identifier, columns))
        )
        async with driver.cursor() as cursor, cursor.copy(statement) as copy:
            for row in rows:
                await copy.write_row([row[c] for c in columns])

    def _insert(self, table: Any) -> Any:
        """The dialect's INSERT of `table` (it knows ON CONFLICT)."""
        if self.dialect == "sqlite":
            from sqlalchemy.dialects.sqlite import insert as sqlite_insert

            return sqlite_insert(table)
        from sqlalchemy.dialects.postgresql import insert as pg_insert

        return pg_insert(table)

    def insert_ignore(self, table: Any, values: dict[str, Any], keys: list[str]) -> Any:
        """INSERT ... ON CONFLICT DO NOTHING for the active dialect."""
        return self._insert(table).values(**values).on_conflict_do_nothing(index_elements=keys)

    def upsert(self, table: Any, values: dict[str, Any], keys: list[str], update: list[str]) -> Any:
        """INSERT ... ON CONFLICT (keys) DO UPDATE SET the `update` columns."""
        return self._upserting(self._insert(table).values(**values), keys, update)

    def upsert_adding(
        self, table: Any, values: dict[str, Any], keys: list[str], add: list[str]
    ) -> Any:
        """INSERT ... ON CONFLICT (keys) DO UPDATE adding the `add` columns' values to the row
        already there (counters that concurrent writers bump without a read first)."""
        stmt = self._insert(table).values(**values)
        return stmt.on_conflict_do_update(
            index_elements=keys,
            set_={name: table.c[name] + stmt.excluded[name] for name in add},
        )

    async def upsert_rows(
        self,
        session: Any,
        table: Any,
        rows: list[dict[str, Any]],
        keys: list[str],
        update: list[str],
    ) -> None:
        """`upsert` of many rows (dicts with the same keys) in one executemany statement."""
        if rows:
            connection = await session.connection()
            await connection.execute(self._upserting(self._insert(table), keys, update), rows)

    @staticmethod
    def _upserting(stmt: Any, keys: list[str], update: list[str]) -> Any:
        return stmt.on_conflict_do_update(
            index_elements=keys, set_={name: stmt.excluded[name] for name in update}
        )

    async def dispose(self) -> None:
        if self._engine is not None:
            await self._engine.dispose()
            self._engine = None
            self._ready = False

    async def _back_up(self, conn: AsyncConnection, found: SchemaStatus) -> str | None:
        """A SQLite file about to be upgraded is copied first (`VACUUM INTO`: consistent even
        with other processes writing), since `threadline run` upgrades it unasked. One copy
        per upgrade (from one revision to another): a process restarted after a failed
        upgrade keeps the first copy instead of filling the disk with more. Returns its path."""
        import os
        import uuid

        from core.store.schema import describe

        path = self.url.split(":///", 1)[1]
        if not path or path == ":memory:":
            return None
        backup = f"{path}.{found.current or 'unversioned'}-to-{found.head}.bak"
        if await asyncio.to_thread(os.path.exists, backup):
            log.warning(
                "database schema is %s, this release needs %s: upgrading (the copy made "
                "before this upgrade was first tried is kept in %s)",
                describe(found.current),
                found.head,
                backup,
            )
            return backup
        # Written under a name of its own, then linked into place: of processes starting at
        # once, the first copy wins and none fails on another's half-written file.
        partial = f"{backup}.{os.getpid()}-{uuid.uuid4().hex[:8]}.partial"
        try:
            await conn.exec_driver_sql("VACUUM INTO ?", (partial,))
            await conn.commit()
            await asyncio.to_thread(_put_in_place, partial, backup)
        finally:
            await asyncio.to_thread(_remove, partial)
        log.warning(
            "database schema is %s, this release needs %s: upgrading (a copy is kept in %s)",
            describe(found.current),
            found.head,
            backup,
        )
        return backup


def _put_in_place(partial: str, backup: str) -> None:
    """`partial` as `backup` unless that exists (another process's copy came first)."""
    import os

    try:
        os.link(partial, backup)
    except FileExistsError:
        pass
    except OSError:  # a file system without hard links
        if not os.path.exists(backup):
            os.replace(partial, backup)


def _remove(path: str) -> None:
    Path(path).unlink(missing_ok=True)


async def _foreign_keys_on(conn: AsyncConnection) -> None:
    await conn.exec_driver_sql("PRAGMA foreign_keys=ON")
    await conn.commit()
