"""The outbox's SQL store: enqueue under an idempotency key, claim with a lease, record the
outcome, and what operators look at (`threadline outbox`). See `core.outbox` for the whole
protocol; `core.outbox.drain` runs it.

Claims are atomic: PostgreSQL uses `FOR UPDATE SKIP LOCKED`, SQLite has one writer at a time.
"""

from __future__ import annotations

import asyncio
import base64
import json
import logging
import random
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING, Any

from core.backoff import Backoff
from core.outbox.types import (
    DELIVERED,
    FAILED,
    PENDING,
    DeliveryState,
    OutboxEntry,
    OutboxItem,
    OutboxMessage,
    OutboxState,
)
from core.platforms import Platforms
from core.request import Attachment
from core.store.tables import table_of

if TYPE_CHECKING:
    from sqlalchemy import Table

    from core.store.engine import Database

log = logging.getLogger("threadline.outbox")

DEFAULT_LEASE = timedelta(minutes=2)
MAX_ATTEMPTS = 10  # 10 s, 20 s, 40 s ... capped at 30 min: given up after about 70 minutes
BACKOFF_FIRST = timedelta(seconds=10)
BACKOFF_CAP = timedelta(minutes=30)
# Up to 25% of jitter, never past the cap (operators are told "at most 30 minutes").
RETRY = Backoff(
    first=BACKOFF_FIRST.total_seconds(),
    limit=BACKOFF_CAP.total_seconds(),
    jitter=(1.0, 1.25),
    strict=True,
)
KEEP_FINISHED = timedelta(days=30)  # delivered/failed rows keep their key this long
ERROR_LIMIT = 2_000


def utcnow() -> datetime:
    return datetime.now(UTC)


def backoff(attempts: int, rng: random.Random | None = None) -> timedelta:
    """The pause after the `attempts`-th failed attempt: 10 s doubling to 30 min, plus up to
    25% of jitter (never past the cap), so drainers that failed together do not retry in step."""
    return timedelta(seconds=RETRY.delay(attempts, rng))


class Outbox:
    def __init__(
        self,
        db: Database,
        clock: Callable[[], datetime] = utcnow,
        *,
        max_attempts: int = MAX_ATTEMPTS,
        rng: random.Random | None = None,
        platforms: Platforms | None = None,
    ) -> None:
        """`platforms`: the registered platforms, the only ones `enqueue` accepts (None: any
        well-formed name, for tools and tests that know their platforms)."""
        self._db = db
        self.platforms = platforms
        self._clock = clock
        self.max_attempts = max_attempts
        self._rng = rng or random.Random()
        self._nudges: dict[str, asyncio.Event] = {}

    def now(self) -> datetime:
        return _aware(self._clock())

    @staticmethod
    def _table() -> Table:
        from core.store.models import OutboxRow

        return table_of(OutboxRow)

    # -- producing -----------------------------------------------------------------------------

    async def enqueue(self, message: OutboxMessage, *, not_before: datetime | None = None) -> bool:
        """Store the message for delivery (not before `not_before`, if given); False when its
        key was already there. Raises `ValueError` for a platform that is not registered."""
        if self.platforms is not None and not self.platforms.known(message.platform):
            raise ValueError(f"unknown outbox platform {message.platform!r}")
        now = self.now()
        due = max(now, _aware(not_before)) if not_before is not None else now
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
                "next_attempt_at": due,
            },
            ["key"],
        ).returning(t.c.id)
        async with self._db.session() as s:
            stored = (await s.exec(stmt)).first()
        if stored is None:
            log.debug("outbox key %s already enqueued", message.key)
            return False
        if due == now:
            self.nudge(message.platform)
        return True

    async def cancel(self, key: str) -> bool:
        """Withdraw a message that is still waiting (no drainer holds it); False when there is
        none under `key`, or one is being delivered right now."""
        from sqlalchemy import delete, or_

        now = self.now()
        t = self._table()
        free = or_(t.c.lease_until.is_(None), t.c.lease_until <= now)
        stmt = delete(t).where(t.c.key == key, t.c.state == PENDING, free).returning(t.c.id)
        async with self._db.session() as s:
            return (await s.exec(stmt)).first() is not None

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

        now = self.now()
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
                finished_at=self.now(),
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

        now = self.now()
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
        return OutboxState(DeliveryState(row[0]), int(row[1]), row[2], row[3], _aware(row[4]))

    async def entries(
        self, states: tuple[DeliveryState, ...] = (PENDING, FAILED), *, limit: int = 100
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
                state=DeliveryState(r[4]),
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
                next_attempt_at=self.now(),
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
            .where(t.c.state.in_((DELIVERED, FAILED)), t.c.finished_at < self.now() - older_than)
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

    def nudge_event(self, platform: str) -> asyncio.Event:
        """What this process's drainer of `platform` waits on between polls."""
        return self._nudges.setdefault(platform, asyncio.Event())


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
    "BACKOFF_CAP",
    "BACKOFF_FIRST",
    "DEFAULT_LEASE",
    "KEEP_FINISHED",
    "MAX_ATTEMPTS",
    "Outbox",
    "backoff",
    "utcnow",
]
