"""Persistent daily quotas (tokens per user and per channel, TTS characters per user).

Counters live in the database, so a restart does not reset them and several processes share
them. Spending is two-phase: `reserve` before a model call (a conditional UPDATE, so concurrent
requests cannot overspend), `settle` with the real usage afterwards, `release` when the call
failed. Days are UTC calendar days.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING, Literal

from core.store.engine import Database

if TYPE_CHECKING:
    from sqlalchemy import ColumnElement
    from sqlalchemy.sql.elements import SQLCoreOperations
    from sqlmodel.ext.asyncio.session import AsyncSession

Metric = Literal["tokens", "tts_chars"]
WARN_FRACTION = 0.8


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
    def __init__(self, state: QuotaState, resets_at: datetime) -> None:
        super().__init__(state.limit.label)
        self.state = state
        self.resets_at = resets_at


@dataclass(slots=True)
class Reservation:
    day: str
    amount: int
    limits: tuple[QuotaLimit, ...]
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
        self, limits: Sequence[QuotaLimit], wanted: int, *, minimum: int
    ) -> Reservation:
        """Reserve up to `wanted` units on every limit at once, at least `minimum`.

        Returns the reservation (its `amount` may be less than `wanted` when little is left);
        raises `BudgetExhausted` naming the tightest limit when not even `minimum` fits.
        """
        from sqlmodel import col, update

        from core.store.models import QuotaUsage

        day = utc_day(self._clock())
        async with self._db.session() as s:
            # The insert comes first: it is a write, so on SQLite the transaction holds the
            # write lock before it reads, and the read-then-update below cannot race.
            for lim in limits:
                table = QuotaUsage.__table__  # type: ignore[attr-defined]
                await s.exec(self._db.insert_ignore(table, _row(lim.key, day), _KEYS))
            states = [await self._state(s, lim, day) for lim in limits]
            amount = min([wanted, *(st.remaining for st in states)])
            if amount < max(1, minimum):
                tightest = min(states, key=lambda st: st.remaining)
                raise BudgetExhausted(tightest, next_reset(self._clock()))
            for lim in limits:
                result = await s.exec(
                    update(QuotaUsage)
                    .where(*_where(lim.key, day))
                    .where(col(QuotaUsage.used) + col(QuotaUsage.reserved) + amount <= lim.limit)
                    .values(reserved=col(QuotaUsage.reserved) + amount)
                )
                if result.rowcount != 1:  # a concurrent writer took it (PostgreSQL)
                    raise BudgetExhausted(await self._state(s, lim, day), self.resets_at())
        return Reservation(day=day, amount=amount, limits=tuple(limits))

    async def settle(self, reservation: Reservation, actual: int) -> list[QuotaState]:
        """Turn the reservation into real usage; returns the quotas that just crossed 80%
        (each is reported exactly once per day, whichever process settles first)."""
        from sqlmodel import col, update

        from core.store.models import QuotaUsage

        if not reservation.open:
            return []
        reservation.open = False
        crossed: list[QuotaState] = []
        async with self._db.session() as s:
            for lim in reservation.limits:
                await s.exec(
                    update(QuotaUsage)
                    .where(*_where(lim.key, reservation.day))
                    .values(
                        used=col(QuotaUsage.used) + max(0, actual),
                        reserved=_minus(col(QuotaUsage.reserved), reservation.amount),
                    )
                )
                result = await s.exec(
                    update(QuotaUsage)
                    .where(*_where(lim.key, reservation.day))
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
        day = utc_day(self._clock())
        async with self._db.session() as s:
            return [await self._state(s, lim, day) for lim in limits]

    async def _state(self, s: AsyncSession, lim: QuotaLimit, day: str) -> QuotaState:
        from sqlmodel import select

        from core.store.models import QuotaUsage

        # Columns, not the entity: the identity map would hand back values from before the
        # UPDATEs above.
        stmt = select(QuotaUsage.used, QuotaUsage.reserved).where(*_where(lim.key, day))
        row = (await s.exec(stmt)).first()
        return QuotaState(lim, row[0], row[1]) if row else QuotaState(lim, 0, 0)


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
