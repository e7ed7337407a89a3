"""The lengths of the string columns, read from the tables: the one source of the limits that
commands check before storing what people typed (PostgreSQL refuses a longer value, and the
user saw "something went wrong"; SQLite kept it whole)."""

from __future__ import annotations

import functools
from collections.abc import Mapping

from sqlmodel import SQLModel

from core.store.tables import table_of

# Where each part of a request's identity is stored, under which column names: the identity
# may be no longer than the narrowest of them (a user id is also a memory item's author, a
# quota's subject, a user-scoped item's scope key).
_IDENTITY_COLUMNS: dict[str, tuple[str, ...]] = {
    "platform": ("platform",),
    "tenant": ("tenant",),
    "channel": ("channel", "scope_key", "subject"),
    "thread": ("thread",),
    "user": ("user", "author", "scope_key", "subject", "created_by", "updated_by"),
}


def column_limit(model: type[SQLModel], name: str) -> int:
    """The length of a string column of `model`."""
    length = getattr(table_of(model).c[name].type, "length", None)
    if not isinstance(length, int):
        raise ValueError(f"{model.__name__}.{name} has no length")
    return length


def overlong(model: type[SQLModel], values: Mapping[str, object]) -> tuple[str, int, int] | None:
    """The first string among `values` longer than its column of `model`: (name, length,
    limit), or None when all fit."""
    columns = table_of(model).c
    for name, value in values.items():
        limit = getattr(columns[name].type, "length", None) if name in columns else None
        if isinstance(value, str) and isinstance(limit, int) and len(value) > limit:
            return name, len(value), limit
    return None


@functools.cache
def identity_limits() -> dict[str, int]:
    """The longest platform, tenant, channel, thread and user id every table can hold."""
    from core.store import models  # noqa: F401  (registers the tables)

    limits: dict[str, int] = {}
    for part, names in _IDENTITY_COLUMNS.items():
        lengths = [
            length
            for table in SQLModel.metadata.tables.values()
            for column in table.columns
            if column.name in names
            and isinstance(length := getattr(column.type, "length", None), int)
        ]
        limits[part] = min(lengths)
    return limits
