"""What the outbox holds and hands out: messages, claimed items, states, the delivery error."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from datetime import datetime
from enum import StrEnum

from core.platforms import NAME
from core.request import Attachment

KEY_LIMIT = 255


class DeliveryState(StrEnum):
    """Where a row stands; stored as its value."""

    PENDING = "pending"  # due, leased or waiting for a retry
    DELIVERED = "delivered"
    FAILED = "failed"  # given up on: `threadline outbox retry KEY` queues it again


PENDING = DeliveryState.PENDING
DELIVERED = DeliveryState.DELIVERED
FAILED = DeliveryState.FAILED


@dataclass(frozen=True, slots=True)
class OutboxMessage:
    """What to post where. `text` is Markdown (like `Reply.text`).

    `platform` is a registered platform name (`core.platforms`; the outbox refuses others).
    `thread` None posts a new top-level message in the channel. `title` names the message:
    Slack makes it the top-level message's first line and puts a long text in that message's
    thread; Discord posts a short message and opens a thread named after it for a long text.
    """

    platform: str
    tenant: str
    channel: str
    text: str
    key: str  # idempotency key, at most 255 characters
    thread: str | None = None
    title: str | None = None
    attachments: tuple[Attachment, ...] = ()

    def __post_init__(self) -> None:
        if not NAME.fullmatch(self.platform):
            raise ValueError(f"unknown outbox platform {self.platform!r}")
        if not self.key or len(self.key) > KEY_LIMIT:
            raise ValueError(f"an outbox key must have 1 to {KEY_LIMIT} characters")
        if not self.channel:
            raise ValueError("an outbox message needs a channel")
        if not (self.text.strip() or self.title or self.attachments):
            raise ValueError("an outbox message needs a text, a title or an attachment")


@dataclass(frozen=True, slots=True)
class OutboxItem:
    """A claimed row. `attempts` counts the attempts started *before* this one: above 0, an
    earlier attempt may have posted (part of) the message without recording it."""

    id: int
    message: OutboxMessage
    attempts: int
    owner: str = ""
    enqueued_at: datetime | None = None


@dataclass(frozen=True, slots=True)
class OutboxState:
    state: DeliveryState
    attempts: int  # attempts started
    message_ref: str | None  # what the platform posted (delivered)
    last_error: str | None
    next_attempt_at: datetime


@dataclass(frozen=True, slots=True)
class OutboxEntry:
    """One row as operators see it (`threadline outbox`)."""

    key: str
    platform: str
    tenant: str
    channel: str
    state: DeliveryState
    attempts: int
    created_at: datetime
    next_attempt_at: datetime
    last_error: str | None


class DeliveryError(Exception):
    """An adapter could not deliver an item. `retry=False`: retrying cannot help (the channel
    is gone, the bot was removed from it); the row fails at once."""

    def __init__(self, reason: str, *, retry: bool = True) -> None:
        super().__init__(reason)
        self.reason = reason
        self.retry = retry


Deliver = Callable[[OutboxItem], Awaitable[str]]

__all__ = [
    "DELIVERED",
    "FAILED",
    "KEY_LIMIT",
    "PENDING",
    "Deliver",
    "DeliveryError",
    "DeliveryState",
    "OutboxEntry",
    "OutboxItem",
    "OutboxMessage",
    "OutboxState",
]
