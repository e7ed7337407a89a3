"""The SQLAlchemy table behind a SQLModel table model, typed.

SQLModel sets `__table__` on every `table=True` class without declaring it, so each direct use
needed an ignore comment; statements built on the Core table (INSERT ... ON CONFLICT, bulk
inserts, conditional UPDATEs) take it from here instead."""

from __future__ import annotations

from sqlalchemy import Table
from sqlmodel import SQLModel


def table_of(model: type[SQLModel]) -> Table:
    """`model`'s table; TypeError for a model that is not a table (`table=True` missing)."""
    found = model.__dict__.get("__table__")
    if not isinstance(found, Table):
        raise TypeError(f"{model.__name__} is not a table model")
    return found
