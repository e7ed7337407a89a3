"""What adapters hand to core and get back.

These types are the whole contract between a chat platform and the agent: an adapter builds a
`Request` from a *verified* platform event and renders the `Reply`. Nothing else crosses.
"""

from __future__ import annotations

import uuid
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from typing import Literal, Protocol

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
    # Files attached to this message, not yet downloaded: core decides which to fetch.
    files: tuple[IncomingFile, ...] = ()
    # The thread's earlier messages, for a mention inside a thread; None at the top level and
    # on platforms without threads.
    earlier: ThreadReader | None = None

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


class FileFetchError(Exception):
    """A file could not be downloaded. The message is for people: it names the file and the
    reason (too large, timed out, not from the platform's file host), never a URL or token."""


class Fetch(Protocol):
    """Downloads an incoming file's bytes from the platform's own file host, reading at most
    `max_bytes` (more raises FileFetchError) within `timeout` seconds."""

    def __call__(self, *, max_bytes: int, timeout: float) -> Awaitable[bytes]: ...


@dataclass(frozen=True, slots=True)
class IncomingFile:
    """A file someone attached to their message, as the verified platform event describes it.

    Nothing is downloaded until core calls `fetch`; adapters build `fetch` so that it only
    ever reaches the platform's own file host (Slack's, Discord's CDN), never a URL taken from
    message text. `size` and `mime_type` are what the platform claims: core checks the bytes.
    """

    name: str
    size: int | None
    mime_type: str
    fetch: Fetch = field(repr=False, compare=False)
    # A recorded voice message (Discord's, a Slack audio clip), to be answered as speech.
    voice_message: bool = False


@dataclass(frozen=True, slots=True)
class ThreadMessage:
    """One earlier message of the thread, as the platform returned it to the bot (so only what
    the bot may read in that channel)."""

    author: str  # a display name where the platform gives one, else the user id
    text: str
    file_names: tuple[str, ...] = ()
    from_bot: bool = False  # Threadline's own message (core already has those in history)
    at: str = ""  # the platform's id/timestamp of the message, for incremental reads


class ThreadReader(Protocol):
    """The messages of the thread before the current one, oldest first. Implementations fetch
    a thread once and then only what is newer, and bound what they read."""

    async def earlier(self) -> Sequence[ThreadMessage]: ...


@dataclass(frozen=True, slots=True)
class Source:
    """Where part of an answer came from: a file and lines a tool returned this turn, a memory
    scope, a skill. `url` links to the forge at the indexed commit when the repository has a
    known remote; None shows `label` as text."""

    kind: Literal["code", "memory", "skill"]
    label: str  # `api/auth.py:10-42`, "channel memory", "incident-triage skill"
    url: str | None = None


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
    # Where the answer came from (files and lines its tools returned, memory, skills), at
    # most a handful; adapters show them after the text and the notices.
    sources: tuple[Source, ...] = ()
    notices: tuple[str, ...] = ()
    tool_calls: tuple[ToolCallRecord, ...] = ()
    usage: Usage = Usage()
    # A model answer people may rate: adapters put it into the 👍/👎 buttons under the answer
    # and hand clicks back as a `Rating`. None: nothing to rate (commands, failures).
    answer_id: str | None = None


@dataclass(frozen=True, slots=True)
class Rating:
    """A 👍/👎 click (and, for a 👎, the reason typed) on an answer, from a *verified* platform
    interaction: the rater's identity is the platform's, `answer_id` comes from the button.
    `link` points to the answer on the platform, for the `feedback` digest."""

    platform: str
    tenant: str
    channel: str
    user: str
    answer_id: str
    value: str  # "up" | "down"; core refuses anything else
    reason: str | None = None
    link: str | None = None
    roles: tuple[str, ...] = ()
