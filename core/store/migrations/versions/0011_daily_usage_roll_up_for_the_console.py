"""A daily roll-up of usage for the console's usage page (issue 27).

`usage_daily` holds, per tenant, UTC day and channel, user or model, the sums of the usage
records (prompt, completion and cached tokens, model calls). Each model call adds to its three
rows in the transaction that writes its record, so the page reads at most days x keys small
rows instead of summing every call (90 days by user summed 80,000 calls per request).

The upgrade fills it from the records already there: one pass over `usage_records` per
breakdown (on PostgreSQL, writes of usage wait meanwhile; seconds for a million calls).

Revision ID: 0011
Revises: 0010
Create Date: 2026-12-03
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0011"
down_revision: str | None = "0010"
branch_labels: str | None = None
depends_on: str | None = None

BREAKDOWNS = ("channel", "user", "model")


def upgrade() -> None:
    op.create_table(
        "usage_daily",
        sa.Column("platform", sa.String(length=32), nullable=False),
        sa.Column("tenant", sa.String(length=128), nullable=False),
        sa.Column("breakdown", sa.String(length=16), nullable=False),
        sa.Column("day", sa.String(length=10), nullable=False),
        sa.Column("subject", sa.String(length=128), nullable=False),
        sa.Column("prompt_tokens", sa.BigInteger(), nullable=False),
        sa.Column("completion_tokens", sa.BigInteger(), nullable=False),
        sa.Column("cached_tokens", sa.BigInteger(), nullable=False),
        sa.Column("requests", sa.Integer(), nullable=False),
        sa.PrimaryKeyConstraint("platform", "tenant", "breakdown", "day", "subject"),
    )
    for breakdown in BREAKDOWNS:
        # The column names are this module's constants, never input.
        op.execute(
            f"""
            INSERT INTO usage_daily (platform, tenant, breakdown, day, subject, prompt_tokens,
                                     completion_tokens, cached_tokens, requests)
            SELECT platform, tenant, '{breakdown}', day, "{breakdown}", sum(prompt_tokens),
                   sum(completion_tokens), sum(cached_tokens), count(*)
            FROM usage_records
            GROUP BY platform, tenant, day, "{breakdown}"
            """
        )


def downgrade() -> None:
    op.drop_table("usage_daily")
