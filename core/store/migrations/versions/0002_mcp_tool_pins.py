"""MCP tool pins: each MCP tool's approved definition and its sha256, and a pending one.

Revision ID: 0002
Revises: 0001
Create Date: 2026-12-01
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0002"
down_revision: str | None = "0001"
branch_labels: str | None = None
depends_on: str | None = None


def upgrade() -> None:
    op.create_table(
        "mcp_tool_pins",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("server", sa.String(length=64), nullable=False),
        sa.Column("tool", sa.String(length=128), nullable=False),
        sa.Column("sha256", sa.String(length=64), nullable=False),
        sa.Column("definition", sa.Text(), nullable=False),
        sa.Column("approved_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("approved_by", sa.String(length=128), nullable=False),
        sa.Column("pending_sha256", sa.String(length=64), nullable=True),
        sa.Column("pending_definition", sa.Text(), nullable=True),
        sa.Column("pending_since", sa.DateTime(timezone=True), nullable=True),
        sa.PrimaryKeyConstraint("id"),
        sa.UniqueConstraint("server", "tool"),
    )


def downgrade() -> None:
    op.drop_table("mcp_tool_pins")
