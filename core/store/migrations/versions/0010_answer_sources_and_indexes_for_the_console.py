"""Answer sources and two answer indexes for the console's conversations (issue 27).

`answers.sources`: where each answer came from (code lines and their forge links, memory
scopes, skills), as a short JSON list, so a thread's page can show them; until now they went to
the platform with the reply and were gone. Answers stored before have "[]" (no sources known).

The indexes: a thread's page reads its answers by (platform, tenant, channel, thread), and the
list's "asked by" filter the threads someone asked in by (platform, tenant, user); both read
the tenant's answers by time before. Building them reads the table once (on PostgreSQL writes
to answers wait meanwhile; one row per answer, so seconds).

Revision ID: 0010
Revises: 0009
Create Date: 2026-12-03
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0010"
down_revision: str | None = "0009"
branch_labels: str | None = None
depends_on: str | None = None


def upgrade() -> None:
    # A constant server default: PostgreSQL adds the column without rewriting the table, and
    # SQLite with a plain ALTER TABLE (batch mode copies nothing for these operations).
    with op.batch_alter_table("answers", schema=None) as batch_op:
        batch_op.add_column(sa.Column("sources", sa.Text(), server_default="[]", nullable=False))
        batch_op.create_index(
            "ix_answers_thread", ["platform", "tenant", "channel", "thread"], unique=False
        )
        batch_op.create_index("ix_answers_user", ["platform", "tenant", "user"], unique=False)


def downgrade() -> None:
    with op.batch_alter_table("answers", schema=None) as batch_op:
        batch_op.drop_index("ix_answers_user")
        batch_op.drop_index("ix_answers_thread")
        batch_op.drop_column("sources")
