"""A pending confirmation keeps the full arguments when its question shortened them, so that a
Discord "Full arguments" click answered by any process can show them. Nullable: rows of
earlier releases (and questions that shortened nothing) have none.

Revision ID: 0005
Revises: 0004
Create Date: 2026-12-03
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0005"
down_revision: str | None = "0004"
branch_labels: str | None = None
depends_on: str | None = None


def upgrade() -> None:
    with op.batch_alter_table("mcp_confirmations", schema=None) as batch_op:
        batch_op.add_column(sa.Column("details", sa.Text(), nullable=True))


def downgrade() -> None:
    with op.batch_alter_table("mcp_confirmations", schema=None) as batch_op:
        batch_op.drop_column("details")
