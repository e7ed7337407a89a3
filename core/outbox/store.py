"""The outbox: messages core wants posted (digests, late replies), delivered by the adapters.

Core never talks to a platform. A producer `enqueue`s an `OutboxMessage` under an idempotency
key (enqueueing the same key again stores nothing), and the process that owns the platform
connection runs `drain` with the adapter's delivery function:

1. `claim` leases due rows to one owner atomically (PostgreSQL: `FOR UPDATE SKIP LOCKED`;
   SQLite: one writer at a time), so two drainers never deliver the same row at once; every
   claim counts as an attempt, so `OutboxItem.attempts > 0` tells the adapter that an earlier
   attempt may have posted part of the message (it then looks before posting again);
2. the adapter posts it and returns a reference to what it posted (`delivered`), or raises:
   `DeliveryError(retry=False)` for what retrying cannot fix (the channel is gone, the bot was
   removed), anything else is retried with exponential backoff and jitter until
   `max_attempts`, after which the row is `failed` and logged;
3. a drainer that dies leaves its lease behind: once it expires another drainer takes the row
   over; a drainer that stops cleanly `release`s its leases at once.

Delivery is at least once from the outbox's point of view; the adapters make it exactly once
on the platform as far as the platform allows (a delivery record per part, message metadata,
nonces; see `adapters/*/outbox.py`).
"""

from __future__ import annotations

import asyncio
import base64
import json
import logging
import os
import random
import secrets
import socket
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING, Any

from core.request import Attachment

if TYPE_CHECKING:
    from core.store.engine import Database

log = logging.getLogger("threadline.outbox")

PLATFORMS = frozenset({"slack", "discord", "console"})
KEY_LIMIT = 255
PENDING, DELIVERED, FAILED = "pending", "delivered", "failed"
DEFAULT_LEASE = timedelta(minutes=2)
MAX_ATTEMPTS = 10  # 10 s, 20 s, 40 s ... capped at 30 min: given up after about 70 minutes
BACKOFF_FIRST = timedelta(seconds=10)
BACKOFF_CAP = timedelta(minutes=30)
KEEP_FINISHED = timedelta(days=30)  # delivered/failed rows keep their key this long
PRUNE_EVERY = timedelta(hours=1)
ERROR_LIMIT = 2_000


def utcnow() -> datetime:
    return datetime.now(UTC)


@dataclass(frozen=True, slots=True)
class OutboxMessage:
    """What to post where. `text` is Markdown (like `Reply.text`).

    `thread` None posts a new top-level message in the channel. `title` names the message:
    Slack makes it the top-level message's first line and puts a long text in that message's
    thread; Discord posts a short message and opens a thread named after it for a long text.
    """

    platform: str  # "slack" | "discord" | "console"
    tenant: str
    channel: str
    text: str
    key: str  # idempotency key, at most 255 characters
    thread: str | None = None
    title: str | None = None
    attachments: tuple[Attachment, ...] = ()

    def __post_init__(self) -> None:
        if self.platform not in PLATFORMS:
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
    state: str  # "pending" | "delivered" | "failed"
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
    state: str
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


def owner_id() -> str:
    """This process as a lease owner: host, pid and a random part (pids are reused)."""
    return f"{socket.gethostname()[:80]}:{os.getpid()}:{secrets.token_hex(4)}"


def backoff(attempts: int, rng: random.Random | None = None) -> timedelta:
    """The pause after the `attempts`-th failed attempt: 10 s doubling to 30 min, plus up to
    25% of jitter (never past the cap), so drainers that failed together do not retry in step."""
    raw = BACKOFF_FIRST.total_seconds() * 2 ** max(0, min(attempts - 1, 30))
    jitter = (rng or random).uniform(1.0, 1.25)
    return timedelta(seconds=min(BACKOFF_CAP.total_seconds(), raw * jitter))


class Outbox:
    def __init__(
        self,
        db: Database,
        clock: Callable[[], datetime] = utcnow,
        *,
        max_attempts: int = MAX_ATTEMPTS,
        rng: random.Random | None = None,
    ) -> None:
        self._db = db
        self._clock = clock
        self.max_attempts = max_attempts
        self._rng = rng or random.Random()
        self._nudges: dict[str, asyncio.Event] = {}

    def _now(self) -> datetime:
        return _aware(self._clock())

    @staticmethod
    def _table() -> Any:
        from core.store.models import OutboxRow

        return OutboxRow.__table__  # type: ignore[attr-defined]

    # -- producing -----------------------------------------------------------------------------

    async def enqueue(self, message: OutboxMessage) -> bool:
        """Store the message for delivery; False when its key was already there."""
        now = self._now()
        t = self._table()
        stmt = self._db.insert_ignore(
            t,
            {
                "created_at": now,
                "key": message.key,
                "platform": message.platform,
                "tenant": message.tenant,
                "channel": message.channel,
                "thread": message.thread,
                "title": message.title,
                "text": message.text,
                "attachments": _dump_attachments(message.attachments),
                "state": PENDING,
                "attempts": 0,
                "next_attempt_at": now,
            },
            ["key"],
        ).returning(t.c.id)
        async with self._db.session() as s:
            stored = (await s.exec(stmt)).first()
        if stored is None:
            log.debug("outbox key %s already enqueued", message.key)
            return False
        self.nudge(message.platform)
        return True

    # -- draining ------------------------------------------------------------------------------

    async def claim(
        self,
        platform: str,
        owner: str,
        *,
        limit: int = 10,
        lease: timedelta = DEFAULT_LEASE,
    ) -> list[OutboxItem]:
        """Lease up to `limit` due rows of `platform` to `owner`, oldest due first. Rows leased
        to another owner are skipped until their lease expires."""
        from sqlalchemy import or_, select, update

        now = self._now()
        t = self._table()
        free = or_(t.c.lease_until.is_(None), t.c.lease_until <= now)
        due = (
            select(t.c.id)
            .where(
                t.c.platform == platform,
                t.c.state == PENDING,
                t.c.next_attempt_at <= now,
                free,
            )
            .order_by(t.c.next_attempt_at, t.c.id)
        )
        # Idle polls (most of them) stay reads: no write lock is taken when nothing is due.
        async with self._db.session() as s:
            if (await s.exec(due.limit(1))).first() is None:  # type: ignore[call-overload]
                return []
        # PostgreSQL skips rows another claimer has locked; SQLite has one writer anyway. A
        # CTE, evaluated once: as an `IN (subquery)` PostgreSQL may re-run the subquery while
        # updating, and its LIMIT then lets through rows beyond the first `limit`.
        due = due.limit(limit).with_for_update(skip_locked=True)
        chosen = due.cte("due").prefix_with("MATERIALIZED", dialect="postgresql")
        stmt = (
            update(t)
            .where(t.c.id.in_(select(chosen.c.id)), t.c.state == PENDING, free)
            .values(lease_owner=owner, lease_until=now + lease, attempts=t.c.attempts + 1)
            .returning(*t.c)
        )
        async with self._db.session() as s:
            rows = (await s.exec(stmt)).mappings().all()
        items = [_item(row, owner) for row in rows]
        items.sort(key=lambda item: (item.enqueued_at or now, item.id))
        return items

    async def delivered(self, item: OutboxItem, message_ref: str) -> None:
        """The message is on the platform: the row is done (whoever holds its lease now)."""
        from sqlalchemy import update

        t = self._table()
        stmt = (
            update(t)
            .where(t.c.id == item.id, t.c.state == PENDING)
            .values(
                state=DELIVERED,
                message_ref=message_ref[:128],
                finished_at=self._now(),
                lease_owner=None,
                lease_until=None,
                last_error=None,
            )
        )
        async with self._db.session() as s:
            await s.exec(stmt)

    async def failed(self, item: OutboxItem, error: str, *, retry: bool = True) -> None:
        """This attempt failed: retry after a backoff, or give up (after `max_attempts`, or at
        once with `retry=False`). Ignored when another drainer has taken the row over."""
        from sqlalchemy import update

        now = self._now()
        tries = item.attempts + 1
        give_up = not retry or tries >= self.max_attempts
        t = self._table()
        values: dict[str, Any] = {
            "lease_owner": None,
            "lease_until": None,
            "last_error": error[:ERROR_LIMIT],
        }
        if give_up:
            values.update(state=FAILED, finished_at=now)
        else:
            values["next_attempt_at"] = now + backoff(tries, self._rng)
        where = [t.c.id == item.id, t.c.state == PENDING, t.c.attempts == tries]
        if item.owner:
            where.append(t.c.lease_owner == item.owner)
        stmt = update(t).where(*where).values(**values).returning(t.c.id)
        async with self._db.session() as s:
            changed = (await s.exec(stmt)).first()
        if changed is None:
            log.info(
                "outbox item %s was taken over meanwhile; its failure is not recorded", item.id
            )
            return
        m = item.message
        if give_up:
            log.error(
                "outbox: gave up delivering %s to %s %s/%s after %d attempt(s): %s",
                m.key,
                m.platform,
                m.tenant,
                m.channel,
                tries,
                error,
            )
        else:
            log.warning(
                "outbox: delivering %s to %s %s/%s failed (attempt %d of %d, retrying at %s): %s",
                m.key,
                m.platform,
                m.tenant,
                m.channel,
                tries,
                self.max_attempts,
                values["next_attempt_at"].isoformat(timespec="seconds"),
                error,
            )

    async def unclaim(self, item: OutboxItem) -> None:
        """Hand back an item whose delivery never started (a shutdown, a batch that ran out
        of lease time): due again at once, and this claim does not count as an attempt."""
        from sqlalchemy import update

        t = self._table()
        stmt = (
            update(t)
            .where(
                t.c.id == item.id,
                t.c.state == PENDING,
                t.c.lease_owner == item.owner,
                t.c.attempts == item.attempts + 1,
            )
            .values(lease_owner=None, lease_until=None, attempts=t.c.attempts - 1)
        )
        async with self._db.session() as s:
            await s.exec(stmt)

    async def release(self, owner: str) -> None:
        """Drop every lease `owner` holds (a clean shutdown), so others need not wait them out."""
        from sqlalchemy import update

        t = self._table()
        stmt = (
            update(t)
            .where(t.c.lease_owner == owner, t.c.state == PENDING)
            .values(lease_owner=None, lease_until=None)
        )
        async with self._db.session() as s:
            await s.exec(stmt)

    async def backlog(self, platform: str | None = None) -> int:
        """Rows still to deliver (due or waiting for a retry)."""
        from sqlalchemy import func, select

        t = self._table()
        stmt = select(func.count()).select_from(t).where(t.c.state == PENDING)
        if platform is not None:
            stmt = stmt.where(t.c.platform == platform)
        async with self._db.session() as s:
            return int((await s.exec(stmt)).one()[0])  # type: ignore[call-overload]

    async def state(self, key: str) -> OutboxState | None:
        """Where the message with `key` stands, if it is (still) in the outbox."""
        from sqlalchemy import select

        t = self._table()
        stmt = select(
            t.c.state, t.c.attempts, t.c.message_ref, t.c.last_error, t.c.next_attempt_at
        ).where(t.c.key == key)
        async with self._db.session() as s:
            row = (await s.exec(stmt)).first()  # type: ignore[call-overload]
        if row is None:
            return None
        return OutboxState(str(row[0]), int(row[1]), row[2], row[3], _aware(row[4]))

    async def entries(
        self, states: tuple[str, ...] = (PENDING, FAILED), *, limit: int = 100
    ) -> list[OutboxEntry]:
        """Rows in these states, oldest first (what is waiting, what was given up)."""
        from sqlalchemy import select

        t = self._table()
        stmt = (
            select(
                t.c.key,
                t.c.platform,
                t.c.tenant,
                t.c.channel,
                t.c.state,
                t.c.attempts,
                t.c.created_at,
                t.c.next_attempt_at,
                t.c.last_error,
            )
            .where(t.c.state.in_(states))
            .order_by(t.c.created_at, t.c.id)
            .limit(limit)
        )
        async with self._db.session() as s:
            rows = (await s.exec(stmt)).all()  # type: ignore[call-overload]
        return [
            OutboxEntry(
                key=r[0],
                platform=r[1],
                tenant=r[2],
                channel=r[3],
                state=r[4],
                attempts=int(r[5]),
                created_at=_aware(r[6]),
                next_attempt_at=_aware(r[7]),
                last_error=r[8],
            )
            for r in rows
        ]

    async def retry(self, key: str) -> bool:
        """Queue a message that was given up on again, as new (after the channel or the bot's
        permissions were fixed). False when there is no failed message with this key."""
        from sqlalchemy import update

        t = self._table()
        stmt = (
            update(t)
            .where(t.c.key == key, t.c.state == FAILED)
            .values(
                state=PENDING,
                attempts=0,
                next_attempt_at=self._now(),
                finished_at=None,
                lease_owner=None,
                lease_until=None,
            )
            .returning(t.c.platform)
        )
        async with self._db.session() as s:
            platform = (await s.exec(stmt)).first()
        if platform is None:
            return False
        self.nudge(str(platform[0]))
        return True

    async def prune(self, older_than: timedelta = KEEP_FINISHED) -> int:
        """Delete delivered and failed rows finished longer ago than `older_than` (their keys
        may then be enqueued again). Returns how many went."""
        from sqlalchemy import delete

        t = self._table()
        stmt = (
            delete(t)
            .where(t.c.state.in_((DELIVERED, FAILED)), t.c.finished_at < self._now() - older_than)
            .returning(t.c.id)
        )
        async with self._db.session() as s:
            return len((await s.exec(stmt)).all())

    # -- waking a drainer of this process ---------------------------------------------------------

    def nudge(self, platform: str) -> None:
        """Wake this process's drainer of `platform` (a message was just enqueued here)."""
        event = self._nudges.get(platform)
        if event is not None:
            event.set()

    def _nudge_event(self, platform: str) -> asyncio.Event:
        return self._nudges.setdefault(platform, asyncio.Event())


Deliver = Callable[[OutboxItem], Awaitable[str]]


async def drain(
    outbox: Outbox,
    platform: str,
    owner: str,
    deliver: Deliver,
    *,
    every: float = 2.0,
    stop: asyncio.Event | None = None,
    limit: int = 10,
    lease: timedelta = DEFAULT_LEASE,
) -> None:
    """Deliver `platform`'s due messages until `stop` is set (or the task is cancelled):
    claim, deliver one by one in order, record; poll every `every` seconds (at once when this
    process enqueued something). A delivery that takes longer than half the lease is abandoned
    and retried, and no delivery of a batch starts later than half the lease after its claim
    (the rest is handed back), so none runs on while another drainer takes the row over.
    Leases are released on the way out."""
    stop = stop or asyncio.Event()
    nudge = outbox._nudge_event(platform)
    budget = lease.total_seconds() / 2
    pruned_at: datetime | None = None
    try:
        while not stop.is_set():
            nudge.clear()
            try:
                items = await outbox.claim(platform, owner, limit=limit, lease=lease)
            except Exception:
                log.exception("outbox: claiming %s messages failed", platform)
                items = []
            loop = asyncio.get_running_loop()
            claimed_at = loop.time()
            for n, item in enumerate(items):
                if stop.is_set() or loop.time() - claimed_at > budget:
                    await _hand_back(outbox, items[n:])
                    break
                await _deliver_one(outbox, item, deliver, budget)
            if pruned_at is None or outbox._now() - pruned_at >= PRUNE_EVERY:
                pruned_at = outbox._now()
                try:
                    await outbox.prune()
                except Exception:
                    log.exception("outbox: pruning finished rows failed")
            if len(items) == limit:
                continue  # more may be due
            await _wait_any(stop, nudge, every)
    finally:
        try:
            await asyncio.shield(outbox.release(owner))
        except Exception:
            log.exception("outbox: releasing the leases of %s failed", owner)


async def _deliver_one(outbox: Outbox, item: OutboxItem, deliver: Deliver, budget: float) -> None:
    try:
        async with asyncio.timeout(budget):
            ref = await deliver(item)
    except DeliveryError as exc:
        await _record_failure(outbox, item, exc.reason, retry=exc.retry)
    except TimeoutError:
        await _record_failure(outbox, item, f"no answer within {budget:g} s", retry=True)
    except Exception as exc:
        log.exception("outbox: delivering %s failed unexpectedly", item.message.key)
        await _record_failure(outbox, item, f"{type(exc).__name__}: {exc}", retry=True)
    else:
        try:
            await outbox.delivered(item, ref)
        except Exception:
            # Posted but not recorded: the lease expires, the next attempt finds the post.
            log.exception("outbox: recording the delivery of %s failed", item.message.key)


async def _hand_back(outbox: Outbox, items: list[OutboxItem]) -> None:
    for item in items:
        try:
            await asyncio.shield(outbox.unclaim(item))
        except Exception:
            log.exception("outbox: handing back %s failed", item.message.key)


async def _record_failure(outbox: Outbox, item: OutboxItem, error: str, *, retry: bool) -> None:
    try:
        await outbox.failed(item, error, retry=retry)
    except Exception:
        log.exception("outbox: recording the failure of %s failed", item.message.key)


async def _wait_any(stop: asyncio.Event, nudge: asyncio.Event, every: float) -> None:
    waits = [asyncio.ensure_future(stop.wait()), asyncio.ensure_future(nudge.wait())]
    try:
        await asyncio.wait(waits, timeout=every, return_when=asyncio.FIRST_COMPLETED)
    finally:
        for w in waits:
            w.cancel()
        await asyncio.gather(*waits, return_exceptions=True)


# -- rows <-> messages -----------------------------------------------------------------------------


def _aware(value: datetime) -> datetime:
    """SQLite hands timestamps back without their zone; they are UTC."""
    return value if value.tzinfo is not None else value.replace(tzinfo=UTC)


def _dump_attachments(attachments: tuple[Attachment, ...]) -> str:
    return json.dumps(
        [
            {
                "kind": a.kind,
                "filename": a.filename,
                "mime_type": a.mime_type,
                "data": base64.b64encode(a.data).decode("ascii"),
            }
            for a in attachments
        ]
    )


def _load_attachments(raw: str | None) -> tuple[Attachment, ...]:
    return tuple(
        Attachment(
            kind=a["kind"],
            filename=a["filename"],
            data=base64.b64decode(a["data"]),
            mime_type=a.get("mime_type") or "application/octet-stream",
        )
        for a in json.loads(raw or "[]")
    )


def _item(row: Any, owner: str) -> OutboxItem:
    message = OutboxMessage(
        platform=row["platform"],
        tenant=row["tenant"],
        channel=row["channel"],
        text=row["text"],
        key=row["key"],
        thread=row["thread"],
        title=row["title"],
        attachments=_load_attachments(row["attachments"]),
    )
    return OutboxItem(
        id=int(row["id"]),
        message=message,
        attempts=int(row["attempts"]) - 1,  # the claim counted this attempt already
        owner=owner,
        enqueued_at=_aware(row["created_at"]),
    )


__all__ = [
    "DeliveryError",
    "Outbox",
    "OutboxEntry",
    "OutboxItem",
    "OutboxMessage",
    "OutboxState",
    "backoff",
    "drain",
    "owner_id",
]
