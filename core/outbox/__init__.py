"""The outbox: messages core wants posted (digests, late replies), delivered by the adapters.

Core never talks to a platform. A producer `enqueue`s an `OutboxMessage` under an idempotency
key (enqueueing the same key again stores nothing), and the process that owns the platform
connection runs `drain` with the adapter's delivery function
(`core.adapter.ChatAdapter.deliver_outbox`):

1. `claim` leases due rows to one owner atomically (PostgreSQL: `FOR UPDATE SKIP LOCKED`;
   SQLite: one writer at a time), so two drainers never deliver the same row at once; every
   claim counts as an attempt, so `OutboxItem.attempts > 0` tells the adapter that an earlier
   attempt may have posted part of the message (it then looks before posting again);
2. the adapter posts it and returns a reference to what it posted (`delivered`), or raises:
   `DeliveryError(retry=False)` for what retrying cannot fix (the channel is gone, the bot was
   removed), anything else is retried with exponential backoff and jitter (`core.backoff`)
   until `max_attempts`, after which the row is `failed` and logged;
3. a drainer that dies leaves its lease behind: once it expires another drainer takes the row
   over; a drainer that stops cleanly `release`s its leases at once.

Delivery is at least once from the outbox's point of view; the adapters make it exactly once
on the platform as far as the platform allows (a delivery record per part, message metadata,
nonces; see `adapters/*/outbox.py`).

`types` holds the messages and states, `store` the SQL, `drain` the loop.
"""

from core.outbox.drain import PRUNE_EVERY, drain, owner_id
from core.outbox.store import (
    BACKOFF_CAP,
    BACKOFF_FIRST,
    DEFAULT_LEASE,
    KEEP_FINISHED,
    MAX_ATTEMPTS,
    Outbox,
    backoff,
    utcnow,
)
from core.outbox.types import (
    DELIVERED,
    FAILED,
    KEY_LIMIT,
    PENDING,
    Deliver,
    DeliveryError,
    DeliveryState,
    OutboxEntry,
    OutboxItem,
    OutboxMessage,
    OutboxState,
)

__all__ = [
    "BACKOFF_CAP",
    "BACKOFF_FIRST",
    "DEFAULT_LEASE",
    "DELIVERED",
    "FAILED",
    "KEEP_FINISHED",
    "KEY_LIMIT",
    "MAX_ATTEMPTS",
    "PENDING",
    "PRUNE_EVERY",
    "Deliver",
    "DeliveryError",
    "DeliveryState",
    "Outbox",
    "OutboxEntry",
    "OutboxItem",
    "OutboxMessage",
    "OutboxState",
    "backoff",
    "drain",
    "owner_id",
    "utcnow",
]
