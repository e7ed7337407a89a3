"""The schema as the last release before migrations made it (commit 2843b81's create_all):
every table, index, unique constraint and server default, written out so that it never
changes with the models.

A database made by `create_all` of an older release may already have some of these tables:
those are kept as they are (their rows are records), and only the missing ones are created.

Revision ID: 0001
Revises:
Create Date: 2026-12-01
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0001"
down_revision: str | None = None
branch_labels: str | None = None
depends_on: str | None = None


def upgrade() -> None:
    existing = set(sa.inspect(op.get_bind()).get_table_names())
    if "audit_log" not in existing:
        op.create_table(
            "audit_log",
            sa.Column("id", sa.Integer(), nullable=False),
            sa.Column("at", sa.DateTime(timezone=True), nullable=False),
            sa.Column("request_id", sa.String(length=64), nullable=False),
            sa.Column("platform", sa.String(length=32), nullable=False),
            sa.Column("tenant", sa.String(length=128), nullable=False),
            sa.Column("channel", sa.String(length=128), nullable=False),
            sa.Column("thread", sa.String(length=128), nullable=False),
            sa.Column("user", sa.String(length=128), nullable=False),
            sa.Column("tool", sa.String(length=128), nullable=False),
            sa.Column("outcome", sa.String(length=32), nullable=False),
            sa.Column("detail", sa.String(length=500), nullable=False),
            sa.Column("duration_ms", sa.Integer(), nullable=False),
            sa.Column("args_chars", sa.Integer(), nullable=False),
            sa.Column("args_sha256", sa.String(length=64), nullable=False),
            sa.PrimaryKeyConstraint("id"),
        )
        op.create_index(
            "ix_audit_tenant_at", "audit_log", ["platform", "tenant", "at"], unique=False
        )
    if "delivered_parts" not in existing:
        op.create_table(
            "delivered_parts",
            sa.Column("id", sa.Integer(), nullable=False),
            sa.Column("at", sa.DateTime(timezone=True), nullable=False),
            sa.Column("platform", sa.String(length=32), nullable=False),
            sa.Column("delivery_key", sa.String(length=255), nullable=False),
            sa.Column("part", sa.Integer(), nullable=False),
            sa.Column("message_id", sa.String(length=128), nullable=False),
            sa.PrimaryKeyConstraint("id"),
            sa.UniqueConstraint("platform", "delivery_key", "part"),
        )
    if "digest_subscriptions" not in existing:
        op.create_table(
            "digest_subscriptions",
            sa.Column("id", sa.Integer(), nullable=False),
            sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
            sa.Column("updated_at", sa.DateTime(timezone=True), nullable=False),
            sa.Column("platform", sa.String(length=32), nullable=False),
            sa.Column("tenant", sa.String(length=128), nullable=False),
            sa.Column("channel", sa.String(length=128), nullable=False),
            sa.Column("created_by", sa.String(length=128), nullable=False),
            sa.Column("kind", sa.String(length=32), nullable=False),
            sa.Column("cron", sa.String(length=128), nullable=False),
            sa.Column("tz", sa.String(length=64), nullable=False),
            sa.Column("repo", sa.String(length=128), nullable=True),
            sa.Column("skip_empty", sa.Boolean(), nullable=False),
            sa.Column("voice", sa.Boolean(), nullable=False),
            sa.Column("paused", sa.Boolean(), nullable=False),
            sa.PrimaryKeyConstraint("id"),
        )
        op.create_index(
            "ix_digest_subscriptions_channel",
            "digest_subscriptions",
            ["platform", "tenant", "channel"],
            unique=False,
        )
    if "memory_items" not in existing:
        op.create_table(
            "memory_items",
            sa.Column("id", sa.Integer(), nullable=False),
            sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
            sa.Column("updated_at", sa.DateTime(timezone=True), nullable=False),
            sa.Column("platform", sa.String(length=32), nullable=False),
            sa.Column("tenant", sa.String(length=128), nullable=False),
            sa.Column("scope", sa.String(length=16), nullable=False),
            sa.Column("scope_key", sa.String(length=128), nullable=False),
            sa.Column("author", sa.String(length=128), nullable=False),
            sa.Column("text", sa.Text(), nullable=False),
            sa.Column("fingerprint", sa.String(length=64), nullable=False),
            sa.PrimaryKeyConstraint("id"),
            sa.UniqueConstraint(
                "platform",
                "tenant",
                "scope",
                "scope_key",
                "fingerprint",
                name="uq_memory_items_fact",
            ),
        )
        op.create_index(
            "ix_memory_items_tenant", "memory_items", ["platform", "tenant"], unique=False
        )
    if "model_calibration" not in existing:
        op.create_table(
            "model_calibration",
            sa.Column("id", sa.Integer(), nullable=False),
            sa.Column("updated_at", sa.DateTime(timezone=True), nullable=False),
            sa.Column("provider", sa.String(length=64), nullable=False),
            sa.Column("model", sa.String(length=128), nullable=False),
            sa.Column("chars_per_token", sa.Float(), nullable=False),
            sa.Column("samples", sa.Integer(), nullable=False),
            sa.PrimaryKeyConstraint("id"),
            sa.UniqueConstraint("provider", "model"),
        )
    if "outbox" not in existing:
        op.create_table(
            "outbox",
            sa.Column("id", sa.Integer(), nullable=False),
            sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
            sa.Column("key", sa.String(length=255), nullable=False),
            sa.Column("platform", sa.String(length=32), nullable=False),
            sa.Column("tenant", sa.String(length=128), nullable=False),
            sa.Column("channel", sa.String(length=128), nullable=False),
            sa.Column("thread", sa.String(length=128), nullable=True),
            sa.Column("title", sa.Text(), nullable=True),
            sa.Column("text", sa.Text(), nullable=False),
            sa.Column("attachments", sa.Text(), nullable=False),
            sa.Column("state", sa.String(length=16), nullable=False),
            sa.Column("attempts", sa.Integer(), nullable=False),
            sa.Column("next_attempt_at", sa.DateTime(timezone=True), nullable=False),
            sa.Column("lease_owner", sa.String(length=128), nullable=True),
            sa.Column("lease_until", sa.DateTime(timezone=True), nullable=True),
            sa.Column("last_error", sa.Text(), nullable=True),
            sa.Column("message_ref", sa.String(length=128), nullable=True),
            sa.Column("finished_at", sa.DateTime(timezone=True), nullable=True),
            sa.PrimaryKeyConstraint("id"),
            sa.UniqueConstraint("key", name="uq_outbox_key"),
            sqlite_autoincrement=True,
        )
        op.create_index(
            "ix_outbox_due", "outbox", ["platform", "state", "next_attempt_at"], unique=False
        )
    if "processed_events" not in existing:
        op.create_table(
            "processed_events",
            sa.Column("id", sa.Integer(), nullable=False),
            sa.Column("at", sa.DateTime(timezone=True), nullable=False),
            sa.Column("platform", sa.String(length=32), nullable=False),
            sa.Column("tenant", sa.String(length=128), nullable=False),
            sa.Column("event_key", sa.String(length=255), nullable=False),
            sa.PrimaryKeyConstraint("id"),
            sa.UniqueConstraint("platform", "tenant", "event_key"),
        )
    if "quota_usage" not in existing:
        op.create_table(
            "quota_usage",
            sa.Column("id", sa.Integer(), nullable=False),
            sa.Column("platform", sa.String(length=32), nullable=False),
            sa.Column("tenant", sa.String(length=128), nullable=False),
            sa.Column("scope", sa.String(length=16), nullable=False),
            sa.Column("subject", sa.String(length=128), nullable=False),
            sa.Column("metric", sa.String(length=32), nullable=False),
            sa.Column("day", sa.String(length=10), nullable=False),
            sa.Column("used", sa.Integer(), nullable=False),
            sa.Column("reserved", sa.Integer(), nullable=False),
            sa.Column("warned", sa.Boolean(), nullable=False),
            sa.PrimaryKeyConstraint("id"),
            sa.UniqueConstraint("platform", "tenant", "scope", "subject", "metric", "day"),
        )
    if "repos" not in existing:
        op.create_table(
            "repos",
            sa.Column("id", sa.Integer(), nullable=False),
            sa.Column("name", sa.String(length=64), nullable=False),
            sa.Column("root", sa.Text(), nullable=False),
            sa.Column("origin", sa.Text(), nullable=False),
            sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
            sa.Column("last_indexed_at", sa.DateTime(timezone=True), nullable=True),
            sa.Column("file_count", sa.Integer(), nullable=False),
            sa.PrimaryKeyConstraint("id"),
            sa.UniqueConstraint("name"),
        )
    if "tenant_settings" not in existing:
        op.create_table(
            "tenant_settings",
            sa.Column("id", sa.Integer(), nullable=False),
            sa.Column("updated_at", sa.DateTime(timezone=True), nullable=False),
            sa.Column("platform", sa.String(length=32), nullable=False),
            sa.Column("tenant", sa.String(length=128), nullable=False),
            sa.Column("key", sa.String(length=64), nullable=False),
            sa.Column("value", sa.String(length=256), nullable=False),
            sa.Column("updated_by", sa.String(length=128), nullable=False),
            sa.PrimaryKeyConstraint("id"),
            sa.UniqueConstraint("platform", "tenant", "key"),
        )
    if "thread_messages" not in existing:
        op.create_table(
            "thread_messages",
            sa.Column("platform", sa.String(length=32), nullable=False),
            sa.Column("tenant", sa.String(length=128), nullable=False),
            sa.Column("channel", sa.String(length=128), nullable=False),
            sa.Column("thread", sa.String(length=128), nullable=False),
            sa.Column("id", sa.Integer(), nullable=False),
            sa.Column("at", sa.DateTime(timezone=True), nullable=False),
            sa.Column("role", sa.String(length=16), nullable=False),
            sa.Column("content", sa.Text(), nullable=False),
            sa.Column("tool_calls", sa.Text(), nullable=True),
            sa.Column("tool_call_id", sa.String(length=128), nullable=True),
            sa.PrimaryKeyConstraint("id"),
        )
        op.create_index(
            "ix_thread_messages_conv",
            "thread_messages",
            ["platform", "tenant", "channel", "thread", "id"],
            unique=False,
        )
    if "thread_skills" not in existing:
        op.create_table(
            "thread_skills",
            sa.Column("platform", sa.String(length=32), nullable=False),
            sa.Column("tenant", sa.String(length=128), nullable=False),
            sa.Column("channel", sa.String(length=128), nullable=False),
            sa.Column("thread", sa.String(length=128), nullable=False),
            sa.Column("id", sa.Integer(), nullable=False),
            sa.Column("at", sa.DateTime(timezone=True), nullable=False),
            sa.Column("skill", sa.String(length=64), nullable=False),
            sa.PrimaryKeyConstraint("id"),
            sa.UniqueConstraint("platform", "tenant", "channel", "thread", "skill"),
        )
    if "thread_summaries" not in existing:
        op.create_table(
            "thread_summaries",
            sa.Column("platform", sa.String(length=32), nullable=False),
            sa.Column("tenant", sa.String(length=128), nullable=False),
            sa.Column("channel", sa.String(length=128), nullable=False),
            sa.Column("thread", sa.String(length=128), nullable=False),
            sa.Column("id", sa.Integer(), nullable=False),
            sa.Column("at", sa.DateTime(timezone=True), nullable=False),
            sa.Column("covers_through", sa.Integer(), nullable=False),
            sa.Column("summary", sa.Text(), nullable=False),
            sa.PrimaryKeyConstraint("id"),
        )
        op.create_index(
            "ix_thread_summaries_conv",
            "thread_summaries",
            ["platform", "tenant", "channel", "thread", "id"],
            unique=False,
        )
    if "usage_records" not in existing:
        op.create_table(
            "usage_records",
            sa.Column("id", sa.Integer(), nullable=False),
            sa.Column("at", sa.DateTime(timezone=True), nullable=False),
            sa.Column("day", sa.String(length=10), nullable=False),
            sa.Column("request_id", sa.String(length=64), nullable=False),
            sa.Column("platform", sa.String(length=32), nullable=False),
            sa.Column("tenant", sa.String(length=128), nullable=False),
            sa.Column("channel", sa.String(length=128), nullable=False),
            sa.Column("user", sa.String(length=128), nullable=False),
            sa.Column("provider", sa.String(length=64), nullable=False),
            sa.Column("model", sa.String(length=128), nullable=False),
            sa.Column("prompt_tokens", sa.Integer(), nullable=False),
            sa.Column("completion_tokens", sa.Integer(), nullable=False),
            sa.Column("cached_tokens", sa.Integer(), nullable=False),
            sa.PrimaryKeyConstraint("id"),
        )
        op.create_index(
            "ix_usage_tenant_day", "usage_records", ["platform", "tenant", "day"], unique=False
        )
    if "code_chunks" not in existing:
        op.create_table(
            "code_chunks",
            sa.Column("id", sa.Integer(), nullable=False),
            sa.Column("repo_id", sa.Integer(), nullable=False),
            sa.Column("path", sa.Text(), nullable=False),
            sa.Column("language", sa.String(length=32), nullable=False),
            sa.Column("symbol", sa.Text(), nullable=False),
            sa.Column("kind", sa.String(length=16), nullable=False),
            sa.Column("start_line", sa.Integer(), nullable=False),
            sa.Column("end_line", sa.Integer(), nullable=False),
            sa.Column("text", sa.Text(), nullable=False),
            sa.Column("context", sa.Text(), server_default="", nullable=False),
            sa.Column("digest", sa.String(length=40), nullable=False),
            sa.ForeignKeyConstraint(["repo_id"], ["repos.id"], ondelete="CASCADE"),
            sa.PrimaryKeyConstraint("id"),
            sqlite_autoincrement=True,
        )
        op.create_index(
            "ix_code_chunks_repo_path", "code_chunks", ["repo_id", "path"], unique=False
        )
    if "code_graph_edges" not in existing:
        op.create_table(
            "code_graph_edges",
            sa.Column("id", sa.Integer(), nullable=False),
            sa.Column("repo_id", sa.Integer(), nullable=False),
            sa.Column("kind", sa.String(length=16), nullable=False),
            sa.Column("source_path", sa.Text(), nullable=False),
            sa.Column("source_symbol", sa.Text(), nullable=False),
            sa.Column("source_line", sa.Integer(), nullable=False),
            sa.Column("target_path", sa.Text(), nullable=True),
            sa.Column("target_symbol", sa.Text(), nullable=True),
            sa.Column("target_line", sa.Integer(), nullable=True),
            sa.Column("target_name", sa.Text(), nullable=False),
            sa.Column("confidence", sa.Float(), nullable=False),
            sa.ForeignKeyConstraint(["repo_id"], ["repos.id"], ondelete="CASCADE"),
            sa.PrimaryKeyConstraint("id"),
        )
        op.create_index(
            "ix_code_graph_edges_source",
            "code_graph_edges",
            ["repo_id", "source_path", "source_symbol"],
            unique=False,
        )
        op.create_index(
            "ix_code_graph_edges_target",
            "code_graph_edges",
            ["repo_id", "target_path", "target_symbol"],
            unique=False,
        )
    if "code_graph_files" not in existing:
        op.create_table(
            "code_graph_files",
            sa.Column("id", sa.Integer(), nullable=False),
            sa.Column("repo_id", sa.Integer(), nullable=False),
            sa.Column("path", sa.Text(), nullable=False),
            sa.Column("format", sa.Integer(), nullable=False),
            sa.Column("facts", sa.Text(), nullable=False),
            sa.ForeignKeyConstraint(["repo_id"], ["repos.id"], ondelete="CASCADE"),
            sa.PrimaryKeyConstraint("id"),
            sa.UniqueConstraint("repo_id", "path"),
        )
    if "code_graph_symbols" not in existing:
        op.create_table(
            "code_graph_symbols",
            sa.Column("id", sa.Integer(), nullable=False),
            sa.Column("repo_id", sa.Integer(), nullable=False),
            sa.Column("path", sa.Text(), nullable=False),
            sa.Column("symbol", sa.Text(), nullable=False),
            sa.Column("name", sa.Text(), nullable=False),
            sa.Column("kind", sa.String(length=16), nullable=False),
            sa.Column("line", sa.Integer(), nullable=False),
            sa.Column("end_line", sa.Integer(), nullable=False),
            sa.ForeignKeyConstraint(["repo_id"], ["repos.id"], ondelete="CASCADE"),
            sa.PrimaryKeyConstraint("id"),
        )
        op.create_index(
            "ix_code_graph_symbols_repo_name",
            "code_graph_symbols",
            ["repo_id", "name"],
            unique=False,
        )
        op.create_index(
            "ix_code_graph_symbols_repo_path",
            "code_graph_symbols",
            ["repo_id", "path"],
            unique=False,
        )
    if "digest_runs" not in existing:
        op.create_table(
            "digest_runs",
            sa.Column("id", sa.Integer(), nullable=False),
            sa.Column("subscription_id", sa.Integer(), nullable=False),
            sa.Column("scheduled_for", sa.DateTime(timezone=True), nullable=False),
            sa.Column("claimed_by", sa.String(length=128), nullable=False),
            sa.Column("claimed_at", sa.DateTime(timezone=True), nullable=False),
            sa.Column("lease_until", sa.DateTime(timezone=True), nullable=False),
            sa.Column("attempts", sa.Integer(), nullable=False),
            sa.Column("state", sa.String(length=16), nullable=False),
            sa.Column("detail", sa.String(length=500), nullable=False),
            sa.Column("finished_at", sa.DateTime(timezone=True), nullable=True),
            sa.ForeignKeyConstraint(
                ["subscription_id"], ["digest_subscriptions.id"], ondelete="CASCADE"
            ),
            sa.PrimaryKeyConstraint("id"),
            sa.UniqueConstraint("subscription_id", "scheduled_for"),
        )
    if "quota_reservations" not in existing:
        op.create_table(
            "quota_reservations",
            sa.Column("id", sa.Integer(), nullable=False),
            sa.Column("usage_id", sa.Integer(), nullable=False),
            sa.Column("amount", sa.Integer(), nullable=False),
            sa.Column("expires_at", sa.DateTime(timezone=True), nullable=False),
            sa.ForeignKeyConstraint(["usage_id"], ["quota_usage.id"], ondelete="CASCADE"),
            sa.PrimaryKeyConstraint("id"),
            sqlite_autoincrement=True,
        )
        op.create_index(
            "ix_quota_reservations_usage",
            "quota_reservations",
            ["usage_id", "expires_at"],
            unique=False,
        )
    if "repo_chunk_formats" not in existing:
        op.create_table(
            "repo_chunk_formats",
            sa.Column("repo_id", sa.Integer(), nullable=False),
            sa.Column("version", sa.Integer(), nullable=False),
            sa.ForeignKeyConstraint(["repo_id"], ["repos.id"], ondelete="CASCADE"),
            sa.PrimaryKeyConstraint("repo_id"),
        )
    if "repo_files" not in existing:
        op.create_table(
            "repo_files",
            sa.Column("id", sa.Integer(), nullable=False),
            sa.Column("repo_id", sa.Integer(), nullable=False),
            sa.Column("path", sa.Text(), nullable=False),
            sa.Column("sha256", sa.String(length=64), nullable=False),
            sa.Column("size", sa.BigInteger(), nullable=False),
            sa.Column("mtime_ns", sa.BigInteger(), nullable=False),
            sa.Column("indexed_at", sa.DateTime(timezone=True), nullable=False),
            sa.ForeignKeyConstraint(["repo_id"], ["repos.id"], ondelete="CASCADE"),
            sa.PrimaryKeyConstraint("id"),
            sa.UniqueConstraint("repo_id", "path"),
        )
        op.create_index(op.f("ix_repo_files_repo_id"), "repo_files", ["repo_id"], unique=False)
    if "vector_syncs" not in existing:
        op.create_table(
            "vector_syncs",
            sa.Column("repo_id", sa.Integer(), nullable=False),
            sa.Column("collection", sa.String(length=200), nullable=False),
            sa.Column("synced_at", sa.DateTime(timezone=True), nullable=False),
            sa.ForeignKeyConstraint(["repo_id"], ["repos.id"], ondelete="CASCADE"),
            sa.PrimaryKeyConstraint("repo_id", "collection"),
        )


def downgrade() -> None:
    raise NotImplementedError("the first revision is not undone: restore a backup instead")
