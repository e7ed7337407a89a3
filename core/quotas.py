"""Persistent daily quotas (tokens per user and per channel, TTS characters per user).

Counters live in the database, so a restart does not reset them and several processes share
them. Spending is two-phase: `reserve` before a model call (a conditional UPDATE, so concurrent
requests cannot overspend), `settle` with the real usage afterwards, `release` when the call
failed. Every reservation is also a row with an expiry (the request's deadline plus a margin):
one left behind by a process that died mid-request is given back by the next `reserve` or
`snapshot` of its counter. Days are UTC calendar days.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING, Literal

from core.store.engine import Database
from core.store.tables import table_of

if TYPE_CHECKING:
    from sqlalchemy import ColumnElement
    from sqlalchemy.sql.elements import SQLCoreOperations
    from sqlmodel.ext.asyncio.session import AsyncSession

Metric = Literal["tokens", "tts_chars"]
WARN_FRACTION = 0.8
# How long a reservation is held when the caller names no deadline (e.g. a TTS charge).
DEFAULT_HOLD = timedelta(minutes=10)


@dataclass(frozen=True, slots=True)
class QuotaKey:
    platform: str
    tenant: str
    scope: Literal["user", "channel"]
    subject: str
    metric: Metric


@dataclass(frozen=True, slots=True)
class QuotaLimit:
    key: QuotaKey
    limit: int
    label: str  # how the user hears about it: "your daily token budget"

    @property
    def unit(self) -> str:
        return "characters" if self.key.metric == "tts_chars" else "tokens"


@dataclass(frozen=True, slots=True)
class QuotaState:
    limit: QuotaLimit
    used: int
    reserved: int

    @property
    def remaining(self) -> int:
        return max(0, self.limit.limit - self.used - self.reserved)


class BudgetExhausted(Exception):
    """Not even the minimum a request needs is left; `needed` is that minimum."""

    def __init__(self, state: QuotaState, resets_at: datetime, needed: int) -> None:
        super().__init__(state.limit.label)
        self.state = state
        self.resets_at = resets_at
        self.needed = needed

    def explain(self, now: datetime) -> str:
        """What the user reads: the budget, what was needed, what is left, when it resets."""
        from core import messages

        st = self.state
        return messages.budget_exhausted(
            st.limit.label,
            self.needed,
            st.remaining,
            st.limit.limit,
            st.limit.unit,
            self.resets_at,
            now,
        )


@dataclass(slots=True)
class Reservation:
    day: str
    amount: int
    limits: tuple[QuotaLimit, ...]
    usage_ids: tuple[int, ...] = ()  # the counters' rows, one per limit
    row_ids: tuple[int, ...] = ()  # this reservation's rows, one per limit
    open: bool = field(default=True)


def warn_threshold(limit: int) -> int:
    """The first amount that is at least 80% of `limit` (rounded up: 5 of 7 is only 71%)."""
    return math.ceil(limit * WARN_FRACTION)


def utc_day(now: datetime) -> str:
    return now.astimezone(UTC).strftime("%Y-%m-%d")


def next_reset(now: datetime) -> datetime:
    today = now.astimezone(UTC).replace(hour=0, minute=0, second=0, microsecond=0)
    return today + timedelta(days=1)


class QuotaLedger:
    def __init__(self, db: Database, clock: Callable[[], datetime] = lambda: datetime.now(UTC)):
        self._db = db
        self._clock = clock

    def resets_at(self) -> datetime:
        return next_reset(self._clock())

    async def reserve(
        self,
        limits: Sequence[QuotaLimit],
        wanted: int,
        *,
        minimum: int,
        expires_at: datetime | None = None,
    ) -> Reservation:
        """Reserve up to `wanted` units on every limit at once, at least `minimum`, held until
        settled or released, or until `expires_at` (default: `DEFAULT_HOLD` from now).

        Returns the reservation (its `amount` may be less than `wanted` when little is left);
        raises `BudgetExhausted` naming the tightest limit when not even `minimum` fits.
        """
        from sqlmodel import col, update

        from core.store.models import QuotaReservation, QuotaUsage

        now = self._clock()
        day = utc_day(now)
        async with self._db.session() as s:
            # The insert comes first: it is a write, so on SQLite the transaction holds the
            # write lock before it reads, and the read-then-update below cannot race.
            for lim in limits:
                table = table_of(QuotaUsage)
                await s.exec(self._db.insert_ignore(table, _row(lim.key, day), _KEYS))
            usage_ids = [_required(await self._usage_id(s, lim.key, day)) for lim in limits]
            await _sweep(s, usage_ids, now)
            states = [await self._state(s, lim, day) for lim in limits]
            amount = min([wanted, *(st.remaining for st in states)])
            needed = max(1, minimum)
            if amount < needed:
                tightest = min(states, key=lambda st: st.remaining)
                raise BudgetExhausted(tightest, next_reset(now), needed)
            rows: list[QuotaReservation] = []
            for lim, usage_id in zip(limits, usage_ids, strict=True):
                result = await s.exec(
                    update(QuotaUsage)
                    .where(col(QuotaUsage.id) == usage_id)
                    .where(col(QuotaUsage.used) + col(QuotaUsage.reserved) + amount <= lim.limit)
                    .values(reserved=col(QuotaUsage.reserved) + amount)
                )
                if result.rowcount != 1:  # a concurrent writer took it (PostgreSQL)
                    state = await self._state(s, lim, day)
                    raise BudgetExhausted(state, next_reset(now), needed)
                row = QuotaReservation(
                    usage_id=usage_id, amount=amount, expires_at=expires_at or now + DEFAULT_HOLD
                )
                s.add(row)
                rows.append(row)
            await s.flush()
        return Reservation(
            day=day,
            amount=amount,
            limits=tuple(limits),
            usage_ids=tuple(usage_ids),
            row_ids=tuple(r.id for r in rows if r.id is not None),
        )

    async def settle(self, reservation: Reservation, actual: int) -> list[QuotaState]:
        """Turn the reservation into real usage; returns the quotas that just crossed 80%
        (each is reported exactly once per day, whichever process settles first)."""
        from sqlmodel import col, delete, update

        from core.store.models import QuotaReservation, QuotaUsage

        if not reservation.open:
            return []
        reservation.open = False
        crossed: list[QuotaState] = []
        async with self._db.session() as s:
            for lim, usage_id, row_id in zip(
                reservation.limits, reservation.usage_ids, reservation.row_ids, strict=True
            ):
                # Only a reservation still on the books is given back: an expired one was
                # already returned by whoever swept it.
                gone = await s.exec(
                    delete(QuotaReservation).where(col(QuotaReservation.id) == row_id)
                )
                held = reservation.amount if gone.rowcount == 1 else 0
                await s.exec(
                    update(QuotaUsage)
                    .where(col(QuotaUsage.id) == usage_id)
                    .values(
                        used=col(QuotaUsage.used) + max(0, actual),
                        reserved=_minus(col(QuotaUsage.reserved), held),
                    )
                )
                result = await s.exec(
                    update(QuotaUsage)
                    .where(col(QuotaUsage.id) == usage_id)
                    .where(col(QuotaUsage.warned).is_(False))
                    .where(col(QuotaUsage.used) >= warn_threshold(lim.limit))
                    .values(warned=True)
                )
                if result.rowcount == 1 and lim.limit > 0:
                    crossed.append(await self._state(s, lim, reservation.day))
        return crossed

    async def release(self, reservation: Reservation) -> None:
        await self.settle(reservation, 0)

    async def charge(self, limits: Sequence[QuotaLimit], amount: int) -> list[QuotaState]:
        """Spend a known amount at once (e.g. TTS characters): reserve exactly, then settle."""
        reservation = await self.reserve(limits, amount, minimum=amount)
        return await self.settle(reservation, amount)

    async def snapshot(self, limits: Sequence[QuotaLimit]) -> list[QuotaState]:
        now = self._clock()
        day = utc_day(now)
        async with self._db.session() as s:
            ids = [await self._usage_id(s, lim.key, day) for lim in limits]
            await _sweep(s, [i for i in ids if i is not None], now)
            return [await self._state(s, lim, day) for lim in limits]

    async def _usage_id(self, s: AsyncSession, key: QuotaKey, day: str) -> int | None:
        from sqlmodel import select

        from core.store.models import QuotaUsage

        return (await s.exec(select(QuotaUsage.id).where(*_where(key, day)))).first()

    async def _state(self, s: AsyncSession, lim: QuotaLimit, day: str) -> QuotaState:
        from sqlmodel import select

        from core.store.models import QuotaUsage

        # Columns, not the entity: the identity map would hand back values from before the
        # UPDATEs above.
        stmt = select(QuotaUsage.used, QuotaUsage.reserved).where(*_where(lim.key, day))
        row = (await s.exec(stmt)).first()
        return QuotaState(lim, row[0], row[1]) if row else QuotaState(lim, 0, 0)


def _required(usage_id: int | None) -> int:
    if usage_id is None:  # the INSERT ... ON CONFLICT DO NOTHING above guarantees a row
        raise RuntimeError("a quota counter row is missing right after it was inserted")
    return usage_id


async def _sweep(s: AsyncSession, usage_ids: Sequence[int], now: datetime) -> None:
    """Give back the expired reservations of these counters (left by a process that died
    mid-request). A row is returned by whoever deletes it, so two processes sweeping at once
    cannot both subtract it."""
    from sqlmodel import col, delete, select, update

    from core.store.models import QuotaReservation, QuotaUsage

    if not usage_ids:
        return
    stale = (
        await s.exec(
            select(QuotaReservation.id, QuotaReservation.usage_id, QuotaReservation.amount)
            .where(col(QuotaReservation.usage_id).in_(usage_ids))
            .where(col(QuotaReservation.expires_at) < now)
        )
    ).all()
    for row_id, usage_id, amount in stale:
        gone = await s.exec(delete(QuotaReservation).where(col(QuotaReservation.id) == row_id))
        if gone.rowcount == 1:
            await s.exec(
                update(QuotaUsage)
                .where(col(QuotaUsage.id) == usage_id)
                .values(reserved=_minus(col(QuotaUsage.reserved), amount))
            )


_KEYS = ["platform", "tenant", "scope", "subject", "metric", "day"]


def _row(key: QuotaKey, day: str) -> dict[str, object]:
    return {
        "platform": key.platform,
        "tenant": key.tenant,
        "scope": key.scope,
        "subject": key.subject,
        "metric": key.metric,
        "day": day,
        "used": 0,
        "reserved": 0,
        "warned": False,
    }


def _where(key: QuotaKey, day: str) -> list[ColumnElement[bool]]:
    from sqlmodel import col

    from core.store.models import QuotaUsage

    return [
        col(QuotaUsage.platform) == key.platform,
        col(QuotaUsage.tenant) == key.tenant,
        col(QuotaUsage.scope) == key.scope,
        col(QuotaUsage.subject) == key.subject,
        col(QuotaUsage.metric) == key.metric,
        col(QuotaUsage.day) == day,
    ]


def _minus(column: SQLCoreOperations[int], amount: int) -> ColumnElement[int]:
    from sqlalchemy import case

    return case((column >= amount, column - amount), else_=0)
