"""The database handle: one async engine, created on first use.

SQLAlchemy is imported lazily so that commands that never touch the database (`--help`, an
offline question) start fast. The same code path serves SQLite (aiosqlite) and PostgreSQL
(psycopg 3); only URL normalisation and the upsert helper know the difference.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from sqlalchemy.ext.asyncio import AsyncEngine
    from sqlmodel.ext.asyncio.session import AsyncSession


# SQLite runs each CREATE TABLE on its own, so a racing process can win one table per attempt:
# allow at least one attempt per table, and then some.
_CREATE_ATTEMPTS = 40
_DDL_LOCK = 0x7468726561646C6E  # any constant bigint: "threadln" in ASCII


# Tables that hold only what indexing derives from files on disk: when one of them predates a
# column the code needs, it is dropped and recreated (the next index rebuilds it) instead of
# failing on every query. Tables of record are never touched this way.
DERIVED_TABLES = ("code_chunks", "code_graph_files", "code_graph_symbols", "code_graph_edges")


class DatabaseURLError(ValueError):
    pass


def _drop_outdated_derived(conn: Any) -> None:
    from sqlalchemy import inspect
    from sqlmodel import SQLModel

    inspector = inspect(conn)
    for name in DERIVED_TABLES:
        if not inspector.has_table(name):
            continue
        have = {c["name"] for c in inspector.get_columns(name)}
        table = SQLModel.metadata.tables[name]
        if not {c.name for c in table.columns} <= have:
            table.drop(conn)


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
        self._create_lock: asyncio.Lock | None = None

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
        """Create missing tables (idempotent; several processes may race on it).

        Concurrent first uses in this process wait for one another; another process creating
        the same tables at the same moment is waited for (PostgreSQL: an advisory lock) or,
        when its CREATE wins the race, the check is simply repeated (SQLite).
        """
        if self._ready:
            return
        if self._create_lock is None:
            self._create_lock = asyncio.Lock()
        async with self._create_lock:
            if self._ready:
                return
            from sqlalchemy import text
            from sqlalchemy.exc import DBAPIError
            from sqlmodel import SQLModel

            from core.store import models  # noqa: F401  (registers the tables)

            for attempt in range(_CREATE_ATTEMPTS):
                try:
                    async with self.engine.begin() as conn:
                        if self.dialect == "postgresql":
                            await conn.execute(
                                text("SELECT pg_advisory_xact_lock(:key)"), {"key": _DDL_LOCK}
                            )
                        await conn.run_sync(_drop_outdated_derived)
                        await conn.run_sync(SQLModel.metadata.create_all)
                    break
                except DBAPIError:
                    # "already exists": another process created it between check and create.
                    if attempt == _CREATE_ATTEMPTS - 1:
                        raise
                    await asyncio.sleep(0.005 * (attempt + 1))
            self._ready = True

    @asynccontextmanager
    async def session(self) -> AsyncIterator[AsyncSession]:
        """A session in one transaction: committed on success, rolled back on any error."""
        from sqlmodel.ext.asyncio.session import AsyncSession

        await self.create_all()
        async with AsyncSession(self.engine, expire_on_commit=False) as session:
            async with session.begin():
                yield session

    def insert_ignore(self, table: Any, values: dict[str, Any], keys: list[str]) -> Any:
        """INSERT ... ON CONFLICT DO NOTHING for the active dialect."""
        if self.dialect == "sqlite":
            from sqlalchemy.dialects.sqlite import insert as sqlite_insert

            return sqlite_insert(table).values(**values).on_conflict_do_nothing(index_elements=keys)
        from sqlalchemy.dialects.postgresql import insert as pg_insert

        return pg_insert(table).values(**values).on_conflict_do_nothing(index_elements=keys)

    def upsert(self, table: Any, values: dict[str, Any], keys: list[str], update: list[str]) -> Any:
        """INSERT ... ON CONFLICT (keys) DO UPDATE SET the `update` columns."""
        if self.dialect == "sqlite":
            from sqlalchemy.dialects.sqlite import insert as dialect_insert
        else:
            from sqlalchemy.dialects.postgresql import insert as dialect_insert  # type: ignore[assignment]
        stmt = dialect_insert(table).values(**values)
        return stmt.on_conflict_do_update(
            index_elements=keys, set_={name: stmt.excluded[name] for name in update}
        )

    async def dispose(self) -> None:
        if self._engine is not None:
            await self._engine.dispose()
            self._engine = None
            self._ready = False
