"""Digest subscriptions keep their creator's verified roles (a JSON array), so that a run reads
with exactly those roles under the current policy. Subscriptions made before this revision get
no roles: they may read less than before (what the policy grants without roles), never more.

Revision ID: 0004
Revises: 0003
Create Date: 2026-12-03
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0004"
down_revision: str | None = "0003"
branch_labels: str | None = None
depends_on: str | None = None


def upgrade() -> None:
    with op.batch_alter_table("digest_subscriptions", schema=None) as batch_op:
        batch_op.add_column(sa.Column("roles", sa.Text(), server_default="[]", nullable=False))


def downgrade() -> None:
    with op.batch_alter_table("digest_subscriptions", schema=None) as batch_op:
        batch_op.drop_column("roles")
