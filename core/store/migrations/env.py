"""Alembic's entry: migrates the connection handed over in `config.attributes` (see
`core.store.migrations.alembic_config`). Offline SQL scripts are not supported: the same
revisions run on SQLite and PostgreSQL, and the database decides which one this is."""

from __future__ import annotations

from alembic import context
from sqlmodel import SQLModel

import core.store.models  # noqa: F401  (registers the tables autogenerate compares with)
from core.store.migrations.compare import OPTIONS


def run() -> None:
    if context.is_offline_mode():
        raise RuntimeError("offline (--sql) migrations are not supported")
    connection = context.config.attributes.get("connection")
    if connection is None:
        raise RuntimeError("run migrations through core.store.schema, which opens the database")
    context.configure(connection=connection, target_metadata=SQLModel.metadata, **OPTIONS)
    with context.begin_transaction():
        context.run_migrations()


run()
