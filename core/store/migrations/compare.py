"""How autogenerate compares the database with the models: shared by env.py (writing a
revision), the developer's check and the test that keeps the two in step."""

from __future__ import annotations

import re
from typing import Any

from sqlmodel.sql.sqltypes import AutoString


def render_item(type_: str, obj: Any, autogen_context: Any) -> str | bool:
    """SQLModel's AutoString is written as plain sa.String, so revisions never import sqlmodel
    (they must stay as they were written, whatever the models become)."""
    if type_ == "type" and isinstance(obj, AutoString):
        return f"sa.String(length={obj.length})" if obj.length else "sa.String()"
    return False


def _bare(default: str) -> str:
    """A server default as its bare value. SQLite reflects an empty-string default as ('')
    and PostgreSQL as ''::text, while Alembic renders the model's as an unquoted ''."""
    text = default.strip()
    text = re.sub(r"::[a-z ]+(\(\d+\))?$", "", text)
    while text.startswith("(") and text.endswith(")"):
        text = text[1:-1].strip()
    if len(text) >= 2 and text[0] == text[-1] == "'":
        text = text[1:-1].replace("''", "'")
    return text


def compare_server_default(
    context: Any,
    inspected_column: Any,
    metadata_column: Any,
    inspected_default: str | None,
    metadata_default: Any,
    rendered_metadata_default: str | None,
) -> bool | None:
    """True when the defaults differ; None leaves other cases to Alembic."""
    if inspected_default is None or rendered_metadata_default is None:
        return None
    return _bare(inspected_default) != _bare(rendered_metadata_default)


OPTIONS: dict[str, Any] = {
    "compare_type": True,
    "compare_server_default": compare_server_default,
    "render_item": render_item,
    # Batch operations: SQLite cannot ALTER most things, so they copy the table; on
    # PostgreSQL they are plain ALTERs.
    "render_as_batch": True,
}


def differences(conn: Any) -> list[Any]:
    """What autogenerate finds between the database on `conn` and the models."""
    from alembic.autogenerate import compare_metadata
    from alembic.migration import MigrationContext
    from sqlmodel import SQLModel

    import core.store.models  # noqa: F401  (registers the tables)

    context = MigrationContext.configure(conn, opts=OPTIONS)
    return list(compare_metadata(context, SQLModel.metadata))
