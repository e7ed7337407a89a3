"""Indexes of the audit log for the console's audit page (issue 27): it pages a tenant's rows
newest first by (at, id), alone or filtered by user, channel, tool or outcome, by keyset. Each
of those walks reads one index in order; the old (platform, tenant, at) index is replaced by
(platform, tenant, at, id), which serves what it served (the overview's last hour).

Building them reads the table once per index: on PostgreSQL writes to audit_log wait meanwhile
(13 s for the five over a million rows on a 2-core machine with PostgreSQL 15).

Revision ID: 0008
Revises: 0007
Create Date: 2026-12-03
"""

from __future__ import annotations

from alembic import op

revision = "0008"
down_revision: str | None = "0007"
branch_labels: str | None = None
depends_on: str | None = None

INDEXES = {
    "ix_audit_tenant_at_id": ["platform", "tenant", "at", "id"],
    "ix_audit_tenant_user_at": ["platform", "tenant", "user", "at", "id"],
    "ix_audit_tenant_channel_at": ["platform", "tenant", "channel", "at", "id"],
    "ix_audit_tenant_tool_at": ["platform", "tenant", "tool", "at", "id"],
    "ix_audit_tenant_outcome_at": ["platform", "tenant", "outcome", "at", "id"],
}


def upgrade() -> None:
    # The new ones first: the old index serves its queries until its successor exists.
    for name, columns in INDEXES.items():
        op.create_index(name, "audit_log", columns, unique=False)
    op.drop_index("ix_audit_tenant_at", table_name="audit_log")


def downgrade() -> None:
    op.create_index("ix_audit_tenant_at", "audit_log", ["platform", "tenant", "at"], unique=False)
    for name in INDEXES:
        op.drop_index(name, table_name="audit_log")
