"""Console sign-in links and their sessions (issue 27, the operator console): the SHA-256 of
each single-use link's token, whom it signs in (platform, tenant, channel, user, roles), when
it expires, and the session it opened (until when, signed out when); and an index of thread
messages by tenant and time, for the console's overview.

Revision ID: 0007
Revises: 0006
Create Date: 2026-12-03
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0007"
down_revision: str | None = "0006"
branch_labels: str | None = None
depends_on: str | None = None


def upgrade() -> None:
    op.create_table(
        "console_links",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("token_sha256", sa.String(length=64), nullable=False),
        sa.Column("platform", sa.String(length=32), nullable=False),
        sa.Column("tenant", sa.String(length=128), nullable=False),
        sa.Column("channel", sa.String(length=128), nullable=False),
        sa.Column("user", sa.String(length=128), nullable=False),
        sa.Column("roles", sa.String(length=500), nullable=False),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("expires_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("redeemed_at", sa.DateTime(timezone=True), nullable=True),
        sa.Column("session_until", sa.DateTime(timezone=True), nullable=True),
        sa.Column("signed_out_at", sa.DateTime(timezone=True), nullable=True),
        sa.PrimaryKeyConstraint("id"),
        sa.UniqueConstraint("token_sha256", name="uq_console_links_token"),
    )
    op.create_index(
        "ix_thread_messages_tenant_at",
        "thread_messages",
        ["platform", "tenant", "at"],
        unique=False,
    )


def downgrade() -> None:
    op.drop_index("ix_thread_messages_tenant_at", table_name="thread_messages")
    op.drop_table("console_links")
