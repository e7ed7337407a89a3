"""MCP confirmations: tool calls waiting for their requesting user's yes or no, in SQL so that
the answer may reach any process.

Revision ID: 0003
Revises: 0002
Create Date: 2026-12-01
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0003"
down_revision: str | None = "0002"
branch_labels: str | None = None
depends_on: str | None = None


def upgrade() -> None:
    op.create_table(
        "mcp_confirmations",
        sa.Column("id", sa.String(length=64), nullable=False),
        sa.Column("request_id", sa.String(length=64), nullable=False),
        sa.Column("platform", sa.String(length=32), nullable=False),
        sa.Column("tenant", sa.String(length=128), nullable=False),
        sa.Column("channel", sa.String(length=128), nullable=False),
        sa.Column("thread", sa.String(length=128), nullable=False),
        sa.Column("user", sa.String(length=128), nullable=False),
        sa.Column("tool", sa.String(length=128), nullable=False),
        sa.Column("arguments", sa.String(length=400), nullable=False),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("expires_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("state", sa.String(length=16), nullable=False),
        sa.Column("answered_by", sa.String(length=128), nullable=True),
        sa.Column("answered_at", sa.DateTime(timezone=True), nullable=True),
        sa.PrimaryKeyConstraint("id"),
    )
    with op.batch_alter_table("mcp_confirmations", schema=None) as batch_op:
        batch_op.create_index("ix_mcp_confirmations_expires", ["expires_at"], unique=False)


def downgrade() -> None:
    with op.batch_alter_table("mcp_confirmations", schema=None) as batch_op:
        batch_op.drop_index("ix_mcp_confirmations_expires")
    op.drop_table("mcp_confirmations")
