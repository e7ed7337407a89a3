"""Exactly-once bookkeeping for adapters: which events were taken, which reply parts posted.

Adapters ask core (they never touch the database): `claim` before work starts, so a retried or
duplicated delivery — or the same event seen by another process — is answered once; `posted`
and `record_post` let a retried delivery post only the parts that are known to be missing;
`mark_thread` / `thread_marked` remember the threads Threadline takes part in, so follow-ups
there continue the conversation without a new mention; `unmark_thread` ends that (a Discord
thread that was archived).
"""

from __future__ import annotations

from core.store.engine import Database
from core.store.tables import table_of


class EventLedger:
    def __init__(self, db: Database) -> None:
        self._db = db

    async def claim(self, platform: str, tenant: str, key: str) -> bool:
        """True for the first caller with this key, False for every later one."""
        from core.store.models import ProcessedEvent, utcnow

        stmt = self._db.insert_ignore(
            table_of(ProcessedEvent),
            {"platform": platform, "tenant": tenant, "event_key": key[:255], "at": utcnow()},
            ["platform", "tenant", "event_key"],
        ).returning(table_of(ProcessedEvent).c.id)
        # RETURNING, not rowcount: psycopg reports no reliable rowcount for ON CONFLICT here.
        async with self._db.session() as s:
            won = (await s.exec(stmt)).first()
        return won is not None

    async def claimed(self, platform: str, tenant: str, key: str) -> bool:
        """Whether `key` was claimed (read-only: claims nothing)."""
        from sqlmodel import col, select

        from core.store.models import ProcessedEvent

        stmt = (
            select(ProcessedEvent.id)
            .where(
                col(ProcessedEvent.platform) == platform,
                col(ProcessedEvent.tenant) == tenant,
                col(ProcessedEvent.event_key) == key[:255],
            )
            .limit(1)
        )
        async with self._db.session() as s:
            return (await s.exec(stmt)).first() is not None

    async def mark_thread(self, platform: str, tenant: str, channel: str, thread: str) -> None:
        """Remember that Threadline answers in this thread (idempotent)."""
        await self.claim(platform, tenant, _thread_key(channel, thread))

    async def thread_marked(self, platform: str, tenant: str, channel: str, thread: str) -> bool:
        return await self.claimed(platform, tenant, _thread_key(channel, thread))

    async def unmark_thread(self, platform: str, tenant: str, channel: str, thread: str) -> bool:
        """Forget that Threadline answers in this thread; True if it was marked."""
        from sqlalchemy import delete
        from sqlmodel import col

        from core.store.models import ProcessedEvent

        stmt = (
            delete(ProcessedEvent)
            .where(
                col(ProcessedEvent.platform) == platform,
                col(ProcessedEvent.tenant) == tenant,
                col(ProcessedEvent.event_key) == _thread_key(channel, thread)[:255],
            )
            .returning(col(ProcessedEvent.id))
        )
        async with self._db.session() as s:
            removed = (await s.exec(stmt)).first()
        return removed is not None

    async def posted(self, platform: str, delivery_key: str) -> dict[int, str]:
        """Parts already posted for a delivery: part index -> platform message id."""
        from sqlmodel import col, select

        from core.store.models import DeliveredPart

        stmt = select(DeliveredPart.part, DeliveredPart.message_id).where(
            col(DeliveredPart.platform) == platform,
            col(DeliveredPart.delivery_key) == delivery_key[:255],
        )
        async with self._db.session() as s:
            rows = (await s.exec(stmt)).all()
        return {part: message_id for part, message_id in rows}

    async def record_post(
        self, platform: str, delivery_key: str, part: int, message_id: str
    ) -> None:
        from core.store.models import DeliveredPart, utcnow

        stmt = self._db.insert_ignore(
            table_of(DeliveredPart),
            {
                "at": utcnow(),
                "platform": platform,
                "delivery_key": delivery_key[:255],
                "part": part,
                "message_id": message_id[:128],
            },
            ["platform", "delivery_key", "part"],
        )
        async with self._db.session() as s:
            await s.exec(stmt)


def _thread_key(channel: str, thread: str) -> str:
    return f"thread:{channel}:{thread}"
