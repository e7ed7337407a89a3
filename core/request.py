"""What adapters hand to core and get back.

These types are the whole contract between a chat platform and the agent: an adapter builds a
`Request` from a *verified* platform event and renders the `Reply`. Nothing else crosses.
"""

from __future__ import annotations

import uuid
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Literal

AttachmentKind = Literal["audio", "image", "file"]

# Called by core with a short status line while a request is being worked on ("Running
# `grep_code`..."); adapters show it however their platform can (an edited message, typing).
Progress = Callable[[str], Awaitable[None]]


@dataclass(frozen=True, slots=True)
class Request:
    """One message addressed to Threadline, with the identity the platform verified.

    `tenant` is the Slack team/enterprise id or the Discord guild id; data never crosses it.
    `thread` identifies the conversation inside the channel. `roles` holds whatever the platform
    verified about the user's roles (Discord role ids and names; empty on Slack).
    """

    platform: str
    tenant: str
    channel: str
    thread: str
    user: str
    text: str
    roles: tuple[str, ...] = ()
    flags: frozenset[str] = frozenset()
    request_id: str = field(default_factory=lambda: uuid.uuid4().hex)

    @property
    def conversation(self) -> ConversationKey:
        return ConversationKey(self.platform, self.tenant, self.channel, self.thread)


@dataclass(frozen=True, slots=True)
class ConversationKey:
    """Where a thread lives; history and per-thread ordering are keyed by it."""

    platform: str
    tenant: str
    channel: str
    thread: str

    def __str__(self) -> str:
        return f"{self.platform}:{self.tenant}:{self.channel}:{self.thread}"


@dataclass(frozen=True, slots=True)
class Attachment:
    """A file for the thread. Audio also carries what platforms show for a voice message:
    its length and a loudness outline (`waveform`: up to 256 bytes, 0-255 each)."""

    kind: AttachmentKind
    filename: str
    data: bytes
    mime_type: str = "application/octet-stream"
    title: str | None = None  # shown above the file where the platform has titles (Slack)
    duration_secs: float | None = None
    waveform: bytes | None = None

    def describe(self) -> dict[str, object]:
        out: dict[str, object] = {
            "kind": self.kind,
            "filename": self.filename,
            "mime_type": self.mime_type,
            "size": len(self.data),
        }
        if self.duration_secs is not None:
            out["duration_secs"] = round(self.duration_secs, 2)
        return out


@dataclass(frozen=True, slots=True)
class ToolCallRecord:
    """What the user (and `--json`) may see about a tool call: never its raw arguments."""

    name: str
    ok: bool
    error: str | None = None


@dataclass(frozen=True, slots=True)
class Usage:
    prompt_tokens: int = 0
    completion_tokens: int = 0
    cached_tokens: int = 0

    def __add__(self, other: Usage) -> Usage:
        return Usage(
            self.prompt_tokens + other.prompt_tokens,
            self.completion_tokens + other.completion_tokens,
            self.cached_tokens + other.cached_tokens,
        )

    @property
    def total_tokens(self) -> int:
        return self.prompt_tokens + self.completion_tokens


@dataclass(frozen=True, slots=True)
class Reply:
    """The answer to one `Request`.

    `ok` is False when the request failed (refused, errored, budget exhausted); adapters use it
    for exit codes and styling, never to decide anything. `ephemeral` marks personal results
    (e.g. `/budget`) that platforms which can should show only to the requester. `notices` are
    short side remarks (a budget warning) rendered after the text.
    """

    text: str
    ok: bool = True
    ephemeral: bool = False
    attachments: tuple[Attachment, ...] = ()
    citations: tuple[str, ...] = ()
    notices: tuple[str, ...] = ()
    tool_calls: tuple[ToolCallRecord, ...] = ()
    usage: Usage = Usage()
