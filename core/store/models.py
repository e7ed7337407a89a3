"""SQLModel tables. Timestamps are UTC; days are UTC calendar days ('YYYY-MM-DD')."""

from __future__ import annotations

from datetime import UTC, datetime

from sqlalchemy import BigInteger, Column, DateTime, Index, Text, UniqueConstraint
from sqlmodel import Field, SQLModel

# The largest id an integer primary key holds on every backend (PostgreSQL's INTEGER): ids that
# users type are checked against it, so 10**30 is "no such item" rather than a database error.
MAX_ROW_ID = 2**31 - 1


def utcnow() -> datetime:
    return datetime.now(UTC)


def _ts() -> Column[datetime]:
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


class QuotaReservation(SQLModel, table=True):
    """One in-flight reservation on one daily counter (`QuotaUsage.reserved` is their sum).

    A reservation outlives its request only when the process died mid-request: past
    `expires_at` (the request's deadline plus a margin) the next reservation on the counter
    deletes it and gives its amount back, so a crash does not eat a budget for the day.
    """

    __tablename__ = "quota_reservations"
    # AUTOINCREMENT: SQLite would otherwise hand a swept reservation's id to the next one,
    # and the late settle of the first would delete the second.
    __table_args__ = (
        Index("ix_quota_reservations_usage", "usage_id", "expires_at"),
        {"sqlite_autoincrement": True},
    )

    id: int | None = Field(default=None, primary_key=True)
    usage_id: int = Field(foreign_key="quota_usage.id", ondelete="CASCADE")
    amount: int
    expires_at: datetime = Field(sa_column=_ts())


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


class UsageDay(SQLModel, table=True):
    """One UTC day of one channel, user or model of a tenant: the sums of its usage records,
    added to in the transaction that writes each record. The console's usage page reads these
    (90 days by user is at most days x users small rows) instead of summing every model call."""

    __tablename__ = "usage_daily"

    platform: str = Field(max_length=32, primary_key=True)
    tenant: str = Field(max_length=128, primary_key=True)
    breakdown: str = Field(max_length=16, primary_key=True)  # "channel" | "user" | "model"
    day: str = Field(max_length=10, primary_key=True)
    subject: str = Field(max_length=128, primary_key=True)
    prompt_tokens: int = Field(default=0, sa_type=BigInteger)
    completion_tokens: int = Field(default=0, sa_type=BigInteger)
    cached_tokens: int = Field(default=0, sa_type=BigInteger)
    requests: int = 0


class AuditEntry(SQLModel, table=True):
    """One proposed tool call and what the server did with it. Never holds raw arguments:
    only their size and a digest, so secrets passed to a tool do not land in the log."""

    __tablename__ = "audit_log"
    # The console pages the log newest first by (at, id), for the tenant alone or filtered by
    # one of user, channel, tool or outcome: each walk is one of these indexes, read in order.
    __table_args__ = (
        Index("ix_audit_tenant_at_id", "platform", "tenant", "at", "id"),
        Index("ix_audit_tenant_user_at", "platform", "tenant", "user", "at", "id"),
        Index("ix_audit_tenant_channel_at", "platform", "tenant", "channel", "at", "id"),
        Index("ix_audit_tenant_tool_at", "platform", "tenant", "tool", "at", "id"),
        Index("ix_audit_tenant_outcome_at", "platform", "tenant", "outcome", "at", "id"),
    )

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


class _Conversation(SQLModel):
    """The key of one conversation: a thread of a channel of a tenant on a platform."""

    platform: str = Field(max_length=32)
    tenant: str = Field(max_length=128)
    channel: str = Field(max_length=128)
    thread: str = Field(max_length=128)


class ThreadMessage(_Conversation, table=True):
    """One message of a thread's conversation, in the chat-completions shape."""

    __tablename__ = "thread_messages"
    __table_args__ = (
        Index("ix_thread_messages_conv", "platform", "tenant", "channel", "thread", "id"),
        # The console's overview counts a tenant's questions and answers of the last day.
        Index("ix_thread_messages_tenant_at", "platform", "tenant", "at"),
    )

    id: int | None = Field(default=None, primary_key=True)
    at: datetime = Field(default_factory=utcnow, sa_column=_ts())
    role: str = Field(max_length=16)
    content: str = Field(default="", sa_column=Column(Text, nullable=False, default=""))
    tool_calls: str | None = Field(default=None, sa_column=Column(Text, nullable=True))
    tool_call_id: str | None = Field(default=None, max_length=128)


class ThreadSummary(_Conversation, table=True):
    """A compaction summary of a thread's older messages: everything up to and including
    message `covers_through` is represented by `summary` (the newest row wins)."""

    __tablename__ = "thread_summaries"
    __table_args__ = (
        Index("ix_thread_summaries_conv", "platform", "tenant", "channel", "thread", "id"),
    )

    id: int | None = Field(default=None, primary_key=True)
    at: datetime = Field(default_factory=utcnow, sa_column=_ts())
    covers_through: int
    summary: str = Field(sa_column=Column(Text, nullable=False))


class ThreadSkill(_Conversation, table=True):
    """A skill loaded in a thread (by the model or by `/skill`), so that it can be given to the
    model again once compaction has summarized the turn that loaded it."""

    __tablename__ = "thread_skills"
    __table_args__ = (UniqueConstraint("platform", "tenant", "channel", "thread", "skill"),)

    id: int | None = Field(default=None, primary_key=True)
    at: datetime = Field(default_factory=utcnow, sa_column=_ts())
    skill: str = Field(max_length=64)


class MemoryItem(SQLModel, table=True):
    """One long-term fact, saved for a scope of one tenant.

    `scope` is "channel" (`scope_key` = the channel id), "global" (the whole tenant; `scope_key`
    is "") or "user" (`scope_key` = the user id; visible to that user only). `fingerprint` is the
    sha256 of the normalised text: saving the same fact in the same scope again finds the row
    through the unique constraint instead of storing it twice.
    """

    __tablename__ = "memory_items"
    __table_args__ = (
        UniqueConstraint(
            "platform", "tenant", "scope", "scope_key", "fingerprint", name="uq_memory_items_fact"
        ),
        Index("ix_memory_items_tenant", "platform", "tenant"),
    )

    id: int | None = Field(default=None, primary_key=True)
    created_at: datetime = Field(default_factory=utcnow, sa_column=_ts())
    updated_at: datetime = Field(default_factory=utcnow, sa_column=_ts())
    platform: str = Field(max_length=32)
    tenant: str = Field(max_length=128)
    scope: str = Field(max_length=16)  # "channel" | "global" | "user"
    scope_key: str = Field(default="", max_length=128)
    author: str = Field(max_length=128)
    text: str = Field(sa_column=Column(Text, nullable=False))
    fingerprint: str = Field(max_length=64)


class ProcessedEvent(SQLModel, table=True):
    """A platform event (or message) claimed for processing; the unique key makes retries,
    duplicate deliveries and other processes see that it is taken."""

    __tablename__ = "processed_events"
    __table_args__ = (UniqueConstraint("platform", "tenant", "event_key"),)

    id: int | None = Field(default=None, primary_key=True)
    at: datetime = Field(default_factory=utcnow, sa_column=_ts())
    platform: str = Field(max_length=32)
    tenant: str = Field(max_length=128)
    event_key: str = Field(max_length=255)


class DeliveredPart(SQLModel, table=True):
    """One posted part of a reply, so a retried delivery posts only what is missing."""

    __tablename__ = "delivered_parts"
    __table_args__ = (UniqueConstraint("platform", "delivery_key", "part"),)

    id: int | None = Field(default=None, primary_key=True)
    at: datetime = Field(default_factory=utcnow, sa_column=_ts())
    platform: str = Field(max_length=32)
    delivery_key: str = Field(max_length=255)
    part: int
    message_id: str = Field(default="", max_length=128)


class ModelCalibration(SQLModel, table=True):
    """The learned characters-per-token ratio of one provider's model, so a new process starts
    from what earlier ones measured instead of the conservative default."""

    __tablename__ = "model_calibration"
    __table_args__ = (UniqueConstraint("provider", "model"),)

    id: int | None = Field(default=None, primary_key=True)
    updated_at: datetime = Field(default_factory=utcnow, sa_column=_ts())
    provider: str = Field(max_length=64)
    model: str = Field(max_length=128)
    chars_per_token: float
    samples: int = 0


class Repo(SQLModel, table=True):
    """A code repository Threadline reads: a local directory indexed in place, or a git URL
    cloned under the data dir. Which conversations may read it is the policy's `repos` key."""

    __tablename__ = "repos"

    id: int | None = Field(default=None, primary_key=True)
    name: str = Field(max_length=64, unique=True)
    root: str = Field(sa_column=Column(Text, nullable=False))  # absolute path of the work tree
    origin: str = Field(sa_column=Column(Text, nullable=False))  # the local path or git URL given
    created_at: datetime = Field(default_factory=utcnow, sa_column=_ts())
    last_indexed_at: datetime | None = Field(
        default=None, sa_column=Column(DateTime(timezone=True), nullable=True)
    )
    file_count: int = 0


class RepoChunkFormat(SQLModel, table=True):
    """Which chunk format a repository's stored chunks were made with
    (`core.code.chunking.CHUNK_FORMAT`): chunks of an older format are remade on the next index,
    whether or not their files changed (say, chunks stored before content was redacted)."""

    __tablename__ = "repo_chunk_formats"

    repo_id: int = Field(foreign_key="repos.id", primary_key=True, ondelete="CASCADE")
    version: int


class RepoFile(SQLModel, table=True):
    """One indexed file of a repository, with what re-indexing compares: size and mtime first
    (cheap), then the content hash."""

    __tablename__ = "repo_files"
    __table_args__ = (UniqueConstraint("repo_id", "path"),)

    id: int | None = Field(default=None, primary_key=True)
    repo_id: int = Field(foreign_key="repos.id", ondelete="CASCADE", index=True)
    path: str = Field(sa_column=Column(Text, nullable=False))  # relative, "/"-separated
    sha256: str = Field(max_length=64)
    size: int = Field(sa_column=Column(BigInteger, nullable=False))
    mtime_ns: int = Field(sa_column=Column(BigInteger, nullable=False))
    indexed_at: datetime = Field(default_factory=utcnow, sa_column=_ts())


class CodeChunk(SQLModel, table=True):
    """One chunk of an indexed file (see core/code/chunking.py): what semantic search embeds.
    Rows are replaced per file whenever the file's content changes."""

    __tablename__ = "code_chunks"
    # AUTOINCREMENT: SQLite would otherwise hand the ids of deleted rows to new ones, and a
    # chunk id is also its vector's id in Qdrant.
    __table_args__ = (
        Index("ix_code_chunks_repo_path", "repo_id", "path"),
        {"sqlite_autoincrement": True},
    )

    id: int | None = Field(default=None, primary_key=True)
    repo_id: int = Field(foreign_key="repos.id", ondelete="CASCADE")
    path: str = Field(sa_column=Column(Text, nullable=False))
    language: str = Field(max_length=32)
    symbol: str = Field(sa_column=Column(Text, nullable=False))
    kind: str = Field(max_length=16)
    start_line: int
    end_line: int
    text: str = Field(sa_column=Column(Text, nullable=False))
    # The header embedded before `text` (path, enclosing class, signature): the chunk's
    # embedding input is `context + text`.
    context: str = Field(default="", sa_column=Column(Text, nullable=False, server_default=""))
    # sha1 of what gets embedded (context + text): the vector store keeps it in the payload, so
    # a point whose chunk changed under the same id (a reset database) is re-embedded.
    digest: str = Field(default="", max_length=40)


class VectorSync(SQLModel, table=True):
    """A repository whose chunks the vector collection `collection` holds exactly, as of the
    last successful sync. Any change to the repository's chunks deletes the row first, so a
    re-index that changed nothing can skip the vector store (which another process may hold)."""

    __tablename__ = "vector_syncs"

    repo_id: int = Field(foreign_key="repos.id", primary_key=True, ondelete="CASCADE")
    collection: str = Field(primary_key=True, max_length=200)
    synced_at: datetime = Field(default_factory=utcnow, sa_column=_ts())


class GraphFile(SQLModel, table=True):
    """The code graph's reading of one file (core/code/graph): its `FileFacts` as JSON and the
    `GRAPH_FORMAT` they were made with. Derived from the file; remade whenever it changes."""

    __tablename__ = "code_graph_files"
    __table_args__ = (UniqueConstraint("repo_id", "path"),)

    id: int | None = Field(default=None, primary_key=True)
    repo_id: int = Field(foreign_key="repos.id", ondelete="CASCADE")
    path: str = Field(sa_column=Column(Text, nullable=False))
    format: int
    facts: str = Field(sa_column=Column(Text, nullable=False))


class GraphSymbol(SQLModel, table=True):
    """A definition of the code graph: `symbol` is qualified inside its file (`Class.method`,
    `function.inner`, `<module>`), `name` its last part, what people type."""

    __tablename__ = "code_graph_symbols"
    __table_args__ = (
        Index("ix_code_graph_symbols_repo_name", "repo_id", "name"),
        Index("ix_code_graph_symbols_repo_path", "repo_id", "path"),
    )

    id: int | None = Field(default=None, primary_key=True)
    repo_id: int = Field(foreign_key="repos.id", ondelete="CASCADE")
    path: str = Field(sa_column=Column(Text, nullable=False))
    symbol: str = Field(sa_column=Column(Text, nullable=False))
    name: str = Field(sa_column=Column(Text, nullable=False))
    kind: str = Field(max_length=16)
    line: int
    end_line: int


class GraphEdge(SQLModel, table=True):
    """One edge of the code graph (calls, inherits, implements, imports, contains), from a
    symbol at a line of a file to a definition, or to a bare `target_name` when unresolved."""

    __tablename__ = "code_graph_edges"
    __table_args__ = (
        Index("ix_code_graph_edges_source", "repo_id", "source_path", "source_symbol"),
        Index("ix_code_graph_edges_target", "repo_id", "target_path", "target_symbol"),
    )

    id: int | None = Field(default=None, primary_key=True)
    repo_id: int = Field(foreign_key="repos.id", ondelete="CASCADE")
    kind: str = Field(max_length=16)
    source_path: str = Field(sa_column=Column(Text, nullable=False))
    source_symbol: str = Field(sa_column=Column(Text, nullable=False))
    source_line: int
    target_path: str | None = Field(default=None, sa_column=Column(Text, nullable=True))
    target_symbol: str | None = Field(default=None, sa_column=Column(Text, nullable=True))
    target_line: int | None = None
    target_name: str = Field(sa_column=Column(Text, nullable=False))
    confidence: float


class DigestSubscription(SQLModel, table=True):
    """A digest a channel asked for: what kind, when (cron in a time zone) and its options."""

    __tablename__ = "digest_subscriptions"
    __table_args__ = (Index("ix_digest_subscriptions_channel", "platform", "tenant", "channel"),)

    id: int | None = Field(default=None, primary_key=True)
    created_at: datetime = Field(default_factory=utcnow, sa_column=_ts())
    updated_at: datetime = Field(default_factory=utcnow, sa_column=_ts())
    platform: str = Field(max_length=32)
    tenant: str = Field(max_length=128)
    channel: str = Field(max_length=128)
    created_by: str = Field(max_length=128)
    kind: str = Field(max_length=32)
    cron: str = Field(max_length=128)
    tz: str = Field(max_length=64)
    repo: str | None = Field(default=None, max_length=128)
    skip_empty: bool = False
    voice: bool = False
    paused: bool = False
    # The creator's roles as the platform verified them when the digest was added (a JSON
    # array): runs read with these roles under the policy of the day, never with more. Last,
    # where its revision added it; rows from before it have none.
    roles: str = Field(
        default="[]", sa_column=Column(Text, nullable=False, default="[]", server_default="[]")
    )


class DigestRun(SQLModel, table=True):
    """One period of one subscription, claimed before it runs: the unique key makes the
    process whose insert won the only one that does the work; `lease_until` lets another
    process take over a claim whose process died."""

    __tablename__ = "digest_runs"
    __table_args__ = (UniqueConstraint("subscription_id", "scheduled_for"),)

    id: int | None = Field(default=None, primary_key=True)
    subscription_id: int = Field(foreign_key="digest_subscriptions.id", ondelete="CASCADE")
    scheduled_for: datetime = Field(sa_column=_ts())
    claimed_by: str = Field(max_length=128)
    claimed_at: datetime = Field(default_factory=utcnow, sa_column=_ts())
    lease_until: datetime = Field(sa_column=_ts())
    attempts: int = 1
    # running | posted | empty | skipped | failed
    state: str = Field(default="running", max_length=16)
    detail: str = Field(default="", max_length=500)
    finished_at: datetime | None = Field(default=None, sa_column=Column(DateTime(timezone=True)))


class OutboxRow(SQLModel, table=True):
    """A message core wants posted (a digest, a late reply), waiting for the process that owns
    the platform connection to deliver it (`core.outbox`). `key` is the producer's idempotency
    key: enqueueing it again stores nothing. A row is leased to one drainer at a time
    (`lease_owner` until `lease_until`); `attempts` counts the deliveries started."""

    __tablename__ = "outbox"
    __table_args__ = (
        UniqueConstraint("key", name="uq_outbox_key"),
        Index("ix_outbox_due", "platform", "state", "next_attempt_at"),
        {"sqlite_autoincrement": True},
    )

    id: int | None = Field(default=None, primary_key=True)
    created_at: datetime = Field(default_factory=utcnow, sa_column=_ts())
    key: str = Field(max_length=255)
    platform: str = Field(max_length=32)
    tenant: str = Field(max_length=128)
    channel: str = Field(max_length=128)
    thread: str | None = Field(default=None, max_length=128)
    title: str | None = Field(default=None, sa_column=Column(Text, nullable=True))
    text: str = Field(sa_column=Column(Text, nullable=False))
    attachments: str = Field(default="[]", sa_column=Column(Text, nullable=False))  # JSON
    state: str = Field(default="pending", max_length=16)  # pending | delivered | failed
    attempts: int = 0
    next_attempt_at: datetime = Field(default_factory=utcnow, sa_column=_ts())
    lease_owner: str | None = Field(default=None, max_length=128)
    lease_until: datetime | None = Field(
        default=None, sa_column=Column(DateTime(timezone=True), nullable=True)
    )
    last_error: str | None = Field(default=None, sa_column=Column(Text, nullable=True))
    message_ref: str | None = Field(default=None, max_length=128)
    finished_at: datetime | None = Field(
        default=None, sa_column=Column(DateTime(timezone=True), nullable=True)
    )


class TenantSetting(SQLModel, table=True):
    """A setting of one tenant (a Slack workspace, a Discord server), e.g. its time zone."""

    __tablename__ = "tenant_settings"
    __table_args__ = (UniqueConstraint("platform", "tenant", "key"),)

    id: int | None = Field(default=None, primary_key=True)
    updated_at: datetime = Field(default_factory=utcnow, sa_column=_ts())
    platform: str = Field(max_length=32)
    tenant: str = Field(max_length=128)
    key: str = Field(max_length=64)
    value: str = Field(max_length=256)
    updated_by: str = Field(max_length=128)


class McpToolPin(SQLModel, table=True):
    """An MCP tool's approved definition (name, description, input schema, annotations as
    canonical JSON) and its sha256. A server that later lists a different definition gets it
    recorded as `pending_*` and the tool disabled until an admin runs `/mcp approve SERVER`."""

    __tablename__ = "mcp_tool_pins"
    __table_args__ = (UniqueConstraint("server", "tool"),)

    id: int | None = Field(default=None, primary_key=True)
    server: str = Field(max_length=64)
    tool: str = Field(max_length=128)
    sha256: str = Field(max_length=64)
    definition: str = Field(sa_column=Column(Text, nullable=False))
    approved_at: datetime = Field(default_factory=utcnow, sa_column=_ts())
    approved_by: str = Field(default="(first connect)", max_length=128)
    pending_sha256: str | None = Field(default=None, max_length=64)
    pending_definition: str | None = Field(default=None, sa_column=Column(Text, nullable=True))
    pending_since: datetime | None = Field(
        default=None, sa_column=Column(DateTime(timezone=True), nullable=True)
    )


class McpConfirmation(SQLModel, table=True):
    """A tool call waiting for its requesting user's yes or no (core/mcp/confirm.py). In SQL
    so that the answer may reach any process (a Slack button click lands on whichever web
    process the load balancer picks) while the process running the request waits for it.
    `id` is unguessable and goes into the buttons; the answer is one conditional UPDATE of a
    pending, unexpired row, so the first answer counts and counts once."""

    __tablename__ = "mcp_confirmations"
    # Rows are dropped a while after they expire (ConfirmationStore.create): the audit log keeps
    # what happened.
    __table_args__ = (Index("ix_mcp_confirmations_expires", "expires_at"),)

    id: str = Field(primary_key=True, max_length=64)
    request_id: str = Field(max_length=64)
    platform: str = Field(max_length=32)
    tenant: str = Field(max_length=128)
    channel: str = Field(max_length=128)
    thread: str = Field(max_length=128)
    user: str = Field(max_length=128)  # the requesting user: the only one who may answer
    tool: str = Field(max_length=128)
    arguments: str = Field(max_length=400)  # a capped summary, as the prompt shows it
    created_at: datetime = Field(default_factory=utcnow, sa_column=_ts())
    expires_at: datetime = Field(sa_column=_ts())
    state: str = Field(
        default="pending", max_length=16
    )  # pending|confirmed|declined|expired|withdrawn
    answered_by: str | None = Field(default=None, max_length=128)
    answered_at: datetime | None = Field(
        default=None, sa_column=Column(DateTime(timezone=True), nullable=True)
    )
    # The full arguments (indented JSON, secrets redacted, bounded) when the question shortened
    # them: a Discord "Full arguments" click may reach any process.
    details: str | None = Field(default=None, sa_column=Column(Text, nullable=True))


class Answer(SQLModel, table=True):
    """An answer Threadline gave, as feedback needs it: where it was given and what made it
    (model, skills, tools), never its text (that stays in the thread's own history). `id` is
    unguessable and goes into the rating buttons under the answer. `sources` is where the answer
    came from, as shown to the people who asked (`core.feedback.store.encode_sources`)."""

    __tablename__ = "answers"
    __table_args__ = (
        Index("ix_answers_tenant", "platform", "tenant", "created_at"),
        # The console's conversations: a thread's answers, and the threads someone asked in.
        Index("ix_answers_thread", "platform", "tenant", "channel", "thread"),
        Index("ix_answers_user", "platform", "tenant", "user"),
    )

    id: str = Field(primary_key=True, max_length=64)
    created_at: datetime = Field(default_factory=utcnow, sa_column=_ts())
    platform: str = Field(max_length=32)
    tenant: str = Field(max_length=128)
    channel: str = Field(max_length=128)
    thread: str = Field(max_length=128)
    user: str = Field(max_length=128)  # who asked
    model: str = Field(default="", max_length=128)
    skills: str = Field(default="", max_length=500)  # comma-separated names
    tools: str = Field(default="", max_length=500)  # comma-separated names, in order of use
    # A JSON list of {"kind", "label", "url"?}, capped; "[]" for none (and for answers stored
    # before sources were).
    sources: str = Field(default="[]", sa_column=Column(Text, nullable=False, server_default="[]"))


class AnswerRating(SQLModel, table=True):
    """One person's 👍/👎 on one answer: rating again replaces it (the last click wins)."""

    __tablename__ = "answer_ratings"
    __table_args__ = (
        UniqueConstraint("answer_id", "user", name="uq_answer_ratings_user"),
        Index("ix_answer_ratings_tenant", "platform", "tenant", "updated_at"),
    )

    id: int | None = Field(default=None, primary_key=True)
    answer_id: str = Field(foreign_key="answers.id", ondelete="CASCADE", max_length=64)
    platform: str = Field(max_length=32)
    tenant: str = Field(max_length=128)
    channel: str = Field(max_length=128)
    user: str = Field(max_length=128)
    value: str = Field(max_length=8)  # up | down
    reason: str | None = Field(default=None, max_length=300)
    link: str | None = Field(default=None, max_length=500)  # the answer on the platform
    created_at: datetime = Field(default_factory=utcnow, sa_column=_ts())
    updated_at: datetime = Field(default_factory=utcnow, sa_column=_ts())


class ConsoleLink(SQLModel, table=True):
    """A sign-in link to the operator console (`core.operator.links`) and, once redeemed, the
    session it opened. Only the SHA-256 of the link's token is stored: a database dump signs
    nobody in. Any process can redeem it (the row is claimed with a conditional update)."""

    __tablename__ = "console_links"
    __table_args__ = (UniqueConstraint("token_sha256", name="uq_console_links_token"),)

    id: int | None = Field(default=None, primary_key=True)
    token_sha256: str = Field(max_length=64)
    platform: str = Field(max_length=32)
    tenant: str = Field(max_length=128)
    channel: str = Field(default="", max_length=128)
    user: str = Field(max_length=128)
    roles: str = Field(default="", max_length=500)  # comma-separated, as verified
    created_at: datetime = Field(default_factory=utcnow, sa_column=_ts())
    expires_at: datetime = Field(sa_column=_ts())
    redeemed_at: datetime | None = Field(
        default=None, sa_column=Column(DateTime(timezone=True), nullable=True)
    )
    session_until: datetime | None = Field(
        default=None, sa_column=Column(DateTime(timezone=True), nullable=True)
    )
    signed_out_at: datetime | None = Field(
        default=None, sa_column=Column(DateTime(timezone=True), nullable=True)
    )


class ProcessBeat(SQLModel, table=True):
    """A long-running process (`serve`, `worker`, `run`) as it last reported itself: written by
    the process every few seconds (`core.operator.processes`), removed when it stops. The
    console's overview lists the live ones and which chat platforms each has connected."""

    __tablename__ = "process_beats"

    id: str = Field(primary_key=True, max_length=128)  # the outbox owner id: host, pid, random
    command: str = Field(max_length=16)
    host: str = Field(max_length=255)
    pid: int
    started_at: datetime = Field(sa_column=_ts())
    seen_at: datetime = Field(sa_column=_ts())
    # JSON object: platform -> its state in this process ("ok" or why not)
    platforms: str = Field(
        default="{}", sa_column=Column(Text, nullable=False, default="{}", server_default="{}")
    )
