"""SQLModel tables. Timestamps are UTC; days are UTC calendar days ('YYYY-MM-DD')."""

from __future__ import annotations

from datetime import UTC, datetime

from sqlalchemy import Column, DateTime, Index, Text, UniqueConstraint
from sqlmodel import Field, SQLModel


def utcnow() -> datetime:
    return datetime.now(UTC)


def _ts() -> Column:  # type: ignore[type-arg]
    return Column(DateTime(timezone=True), nullable=False)


class QuotaUsage(SQLModel, table=True):
    """One daily counter: e.g. tokens used by one user of one tenant on one day.

    `reserved` holds in-flight reservations (taken before a model call, settled after), so
    concurrent requests cannot overspend. `warned` records that the 80% notice was given.
    """

    __tablename__ = "quota_usage"
    __table_args__ = (UniqueConstraint("platform", "tenant", "scope", "subject", "metric", "day"),)

    id: int | None = Field(default=None, primary_key=True)
    platform: str = Field(max_length=32)
    tenant: str = Field(max_length=128)
    scope: str = Field(max_length=16)  # "user" | "channel"
    subject: str = Field(max_length=128)
    metric: str = Field(max_length=32)  # "tokens" | "tts_chars"
    day: str = Field(max_length=10)
    used: int = 0
    reserved: int = 0
    warned: bool = False


class UsageRecord(SQLModel, table=True):
    """One model call's token usage, as the provider reported it."""

    __tablename__ = "usage_records"
    __table_args__ = (Index("ix_usage_tenant_day", "platform", "tenant", "day"),)

    id: int | None = Field(default=None, primary_key=True)
    at: datetime = Field(default_factory=utcnow, sa_column=_ts())
    day: str = Field(max_length=10)
    request_id: str = Field(max_length=64)
    platform: str = Field(max_length=32)
    tenant: str = Field(max_length=128)
    channel: str = Field(max_length=128)
    user: str = Field(max_length=128)
    provider: str = Field(max_length=64)
    model: str = Field(max_length=128)
    prompt_tokens: int = 0
    completion_tokens: int = 0
    cached_tokens: int = 0


class AuditEntry(SQLModel, table=True):
    """One proposed tool call and what the server did with it. Never holds raw arguments:
    only their size and a digest, so secrets passed to a tool do not land in the log."""

    __tablename__ = "audit_log"
    __table_args__ = (Index("ix_audit_tenant_at", "platform", "tenant", "at"),)

    id: int | None = Field(default=None, primary_key=True)
    at: datetime = Field(default_factory=utcnow, sa_column=_ts())
    request_id: str = Field(max_length=64)
    platform: str = Field(max_length=32)
    tenant: str = Field(max_length=128)
    channel: str = Field(max_length=128)
    thread: str = Field(max_length=128)
    user: str = Field(max_length=128)
    tool: str = Field(max_length=128)
    outcome: str = Field(max_length=32)  # "ok" or the rejection/error code
    detail: str = Field(default="", max_length=500)
    duration_ms: int = 0
    args_chars: int = 0
    args_sha256: str = Field(default="", max_length=64)


class ThreadMessage(SQLModel, table=True):
    """One message of a thread's conversation, in the chat-completions shape."""

    __tablename__ = "thread_messages"
    __table_args__ = (
        Index("ix_thread_messages_conv", "platform", "tenant", "channel", "thread", "id"),
    )

    id: int | None = Field(default=None, primary_key=True)
    at: datetime = Field(default_factory=utcnow, sa_column=_ts())
    platform: str = Field(max_length=32)
    tenant: str = Field(max_length=128)
    channel: str = Field(max_length=128)
    thread: str = Field(max_length=128)
    role: str = Field(max_length=16)
    content: str = Field(default="", sa_column=Column(Text, nullable=False, default=""))
    tool_calls: str | None = Field(default=None, sa_column=Column(Text, nullable=True))
    tool_call_id: str | None = Field(default=None, max_length=128)


class ThreadSummary(SQLModel, table=True):
    """A compaction summary of a thread's older messages: everything up to and including
    message `covers_through` is represented by `summary` (the newest row wins)."""

    __tablename__ = "thread_summaries"
    __table_args__ = (
        Index("ix_thread_summaries_conv", "platform", "tenant", "channel", "thread", "id"),
    )

    id: int | None = Field(default=None, primary_key=True)
    at: datetime = Field(default_factory=utcnow, sa_column=_ts())
    platform: str = Field(max_length=32)
    tenant: str = Field(max_length=128)
    channel: str = Field(max_length=128)
    thread: str = Field(max_length=128)
    covers_through: int
    summary: str = Field(sa_column=Column(Text, nullable=False))
