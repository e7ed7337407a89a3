"""Digest subscriptions and run claims in SQL: the one source of truth every process reads.

A run of one subscription for one scheduled time is claimed by inserting
`(subscription_id, scheduled_for)` under a unique constraint: only the process whose insert won
does the work. The claim carries a lease; a claim still `running` after its lease ran out (its
process died mid-run) may be taken over by exactly one other process, through an UPDATE whose
WHERE clause still sees the expired lease (the database serializes the two UPDATEs, so the
second one matches no row).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any

from sqlalchemy import update
from sqlalchemy.exc import IntegrityError
from sqlmodel import col, select

from core.store.engine import Database
from core.store.limits import column_limit
from core.store.models import MAX_ROW_ID, DigestRun, DigestSubscription, TenantSetting
from core.store.tables import table_of

DEFAULT_LEASE = timedelta(minutes=5)
FINAL_STATES = frozenset({"posted", "empty", "skipped", "failed"})


MAX_CRON = column_limit(DigestSubscription, "cron")
MAX_ZONE = column_limit(DigestSubscription, "tz")
MAX_REPO = column_limit(DigestSubscription, "repo")


@dataclass(frozen=True, slots=True)
class Claim:
    run_id: int
    subscription_id: int
    scheduled_for: datetime
    owner: str


def _aware(value: datetime) -> datetime:
    # SQLite hands timestamps back without a zone; they were written in UTC.
    return value if value.tzinfo is not None else value.replace(tzinfo=UTC)


class DigestStore:
    def __init__(self, db: Database, clock: Callable[[], datetime] = lambda: datetime.now(UTC)):
        self._db = db
        self._clock = clock

    # -- subscriptions -------------------------------------------------------------------------

    async def add(self, sub: DigestSubscription) -> DigestSubscription:
        now = self._clock()
        sub.created_at = sub.updated_at = now
        async with self._db.session() as s:
            s.add(sub)
            await s.flush()
            await s.refresh(sub)
        return sub

    async def for_channel(
        self, platform: str, tenant: str, channel: str
    ) -> list[DigestSubscription]:
        async with self._db.session() as s:
            rows = await s.exec(
                select(DigestSubscription)
                .where(
                    col(DigestSubscription.platform) == platform,
                    col(DigestSubscription.tenant) == tenant,
                    col(DigestSubscription.channel) == channel,
                )
                .order_by(col(DigestSubscription.id))
            )
            return list(rows.all())

    async def get(self, sub_id: int) -> DigestSubscription | None:
        if not 0 < sub_id <= MAX_ROW_ID:  # a typed id out of range is just not there
            return None
        async with self._db.session() as s:
            return await s.get(DigestSubscription, sub_id)

    async def all(self) -> list[DigestSubscription]:
        async with self._db.session() as s:
            rows = await s.exec(select(DigestSubscription).order_by(col(DigestSubscription.id)))
            return list(rows.all())

    async def set_paused(self, sub_id: int, paused: bool) -> None:
        async with self._db.session() as s:
            await s.exec(
                update(DigestSubscription)
                .where(col(DigestSubscription.id) == sub_id)
                .values(paused=paused, updated_at=self._clock())
            )

    async def remove(self, sub_id: int) -> None:
        from sqlalchemy import delete

        async with self._db.session() as s:
            # Runs first: SQLite enforces the foreign key only when asked to, PostgreSQL always.
            await s.exec(delete(DigestRun).where(col(DigestRun.subscription_id) == sub_id))
            await s.exec(delete(DigestSubscription).where(col(DigestSubscription.id) == sub_id))

    async def signature(self) -> tuple[int, datetime | None]:
        """Changes to any subscription change this (count, newest update): schedulers compare
        it every minute to notice what another process changed."""
        from sqlalchemy import func

        async with self._db.session() as s:
            row = (
                await s.exec(select(func.count(), func.max(DigestSubscription.updated_at)))
            ).one()
        count, newest = row
        return int(count), _aware(newest) if newest is not None else None

    # -- the tenant's time zone -----------------------------------------------------------------

    async def tenant_zone(self, platform: str, tenant: str) -> str | None:
        async with self._db.session() as s:
            row = (
                await s.exec(
                    select(TenantSetting.value).where(
                        col(TenantSetting.platform) == platform,
                        col(TenantSetting.tenant) == tenant,
                        col(TenantSetting.key) == "timezone",
                    )
                )
            ).first()
        return row

    async def set_tenant_zone(self, platform: str, tenant: str, zone: str, by: str) -> None:
        values = {
            "platform": platform,
            "tenant": tenant,
            "key": "timezone",
            "value": zone,
            "updated_by": by,
            "updated_at": self._clock(),
        }
        async with self._db.session() as s:
            await s.exec(
                self._db.upsert(
                    table_of(TenantSetting),
                    values,
                    ["platform", "tenant", "key"],
                    ["value", "updated_by", "updated_at"],
                )
            )

    # -- runs ----------------------------------------------------------------------------------

    async def claim(
        self, sub_id: int, scheduled_for: datetime, owner: str, lease: timedelta = DEFAULT_LEASE
    ) -> Claim | None:
        """Claim one period; None when another process holds it or it is finished."""
        now = self._clock()
        try:
            async with self._db.session() as s:
                run = DigestRun(
                    subscription_id=sub_id,
                    scheduled_for=scheduled_for,
                    claimed_by=owner,
                    claimed_at=now,
                    lease_until=now + lease,
                )
                s.add(run)
                await s.flush()
                assert run.id is not None
                return Claim(run.id, sub_id, scheduled_for, owner)
        except IntegrityError:
            pass
        return await self._take_over(sub_id, scheduled_for, owner, now, lease)

    async def _take_over(
        self, sub_id: int, scheduled_for: datetime, owner: str, now: datetime, lease: timedelta
    ) -> Claim | None:
        async with self._db.session() as s:
            result: Any = await s.exec(
                update(DigestRun)
                .where(
                    col(DigestRun.subscription_id) == sub_id,
                    col(DigestRun.scheduled_for) == scheduled_for,
                    col(DigestRun.state) == "running",
                    col(DigestRun.lease_until) < now,
                )
                .values(
                    claimed_by=owner,
                    claimed_at=now,
                    lease_until=now + lease,
                    attempts=DigestRun.attempts + 1,
                )
                .returning(col(DigestRun.id))
            )
            row = result.first()
        if row is None:
            return None
        return Claim(int(row[0]), sub_id, scheduled_for, owner)

    async def finish(self, claim: Claim, state: str, detail: str = "") -> bool:
        """Record the outcome, only if this process still holds the claim."""
        assert state in FINAL_STATES
        async with self._db.session() as s:
            result: Any = await s.exec(
                update(DigestRun)
                .where(
                    col(DigestRun.id) == claim.run_id,
                    col(DigestRun.claimed_by) == claim.owner,
                    col(DigestRun.state) == "running",
                )
                .values(state=state, detail=detail[:500], finished_at=self._clock())
            )
            return bool(result.rowcount)

    async def release(self, owner: str) -> int:
        """Graceful shutdown: this process's unfinished claims may be taken over at once."""
        async with self._db.session() as s:
            result: Any = await s.exec(
                update(DigestRun)
                .where(col(DigestRun.claimed_by) == owner, col(DigestRun.state) == "running")
                .values(lease_until=self._clock() - timedelta(seconds=1))
            )
            return int(result.rowcount or 0)

    async def runs(self, sub_id: int, limit: int = 20) -> list[DigestRun]:
        async with self._db.session() as s:
            rows = await s.exec(
                select(DigestRun)
                .where(col(DigestRun.subscription_id) == sub_id)
                .order_by(col(DigestRun.scheduled_for).desc())
                .limit(limit)
            )
            return list(rows.all())

    async def known_runs(
        self, sub_ids: Sequence[int], since: datetime
    ) -> set[tuple[int, datetime]]:
        """(subscription, scheduled_for) of every run since `since` that is finished or held
        under a live lease; a claim whose lease ran out is not known (it may be taken over)."""
        if not sub_ids:
            return set()
        async with self._db.session() as s:
            rows = await s.exec(
                select(DigestRun.subscription_id, DigestRun.scheduled_for).where(
                    col(DigestRun.subscription_id).in_(sub_ids),
                    col(DigestRun.scheduled_for) >= since,
                    (col(DigestRun.state) != "running")
                    | (col(DigestRun.lease_until) >= self._clock()),
                )
            )
            return {(int(a), _aware(b)) for a, b in rows.all()}

    async def last_posted(self, sub_id: int, before: datetime) -> datetime | None:
        async with self._db.session() as s:
            row = (
                await s.exec(
                    select(DigestRun.scheduled_for)
                    .where(
                        col(DigestRun.subscription_id) == sub_id,
                        col(DigestRun.scheduled_for) < before,
                        col(DigestRun.state).in_(("posted", "empty")),
                    )
                    .order_by(col(DigestRun.scheduled_for).desc())
                    .limit(1)
                )
            ).first()
        return _aware(row) if row is not None else None
