"""Token usage: parsing what providers report, and recording it per model call."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from datetime import datetime
from typing import TYPE_CHECKING, Any

from core.request import Usage
from core.session import ToolSession
from core.store.engine import Database

if TYPE_CHECKING:
    from core.store.models import UsageRecord

# Providers report cached prompt tokens under different names: OpenAI-style nested details,
# DeepSeek's prompt_cache_hit_tokens, and input_cache_hit_tokens from others.
_CACHED_FLAT_KEYS = ("prompt_cache_hit_tokens", "input_cache_hit_tokens")


# No single model call uses more; a bigger count is a provider bug, and the database's
# integer columns must never overflow on it.
MAX_REPORTED_TOKENS = 10_000_000


def _count(value: Any) -> int:
    """A reported token count as a sane int: negatives, non-numbers and booleans become 0."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        return 0
    if value != value:  # NaN
        return 0
    return min(MAX_REPORTED_TOKENS, max(0, int(value)))


def parse_usage(raw: Mapping[str, Any] | None) -> Usage | None:
    """What the provider reported, clamped to 0..MAX_REPORTED_TOKENS per field; None when it
    reported nothing. Whether the counts are believable is the caller's call (`settled`)."""
    if not raw:
        return None
    candidates = [raw.get(key) for key in _CACHED_FLAT_KEYS]
    details = raw.get("prompt_tokens_details")
    if isinstance(details, Mapping):
        candidates.append(details.get("cached_tokens"))
    # Some providers send both spellings with one of them zero: take what was reported.
    cached = max((_count(c) for c in candidates), default=0)
    prompt = _count(raw.get("prompt_tokens"))
    return Usage(
        prompt_tokens=prompt,
        completion_tokens=_count(raw.get("completion_tokens")),
        cached_tokens=min(cached, prompt),
    )


def settled(reported: Usage | None, prompt_estimate: int, completion_estimate: int) -> Usage:
    """The usage to charge for one model call: the provider's counts where it gave believable
    ones, the local estimate where a count is missing or zero for a non-empty side of the
    exchange (a provider reporting 0 must not make answers free)."""
    if reported is None:
        return Usage(prompt_estimate, completion_estimate)
    prompt = reported.prompt_tokens if reported.prompt_tokens > 0 else prompt_estimate
    completion = reported.completion_tokens
    if completion <= 0:
        completion = completion_estimate
    return Usage(prompt, completion, min(reported.cached_tokens, prompt))


ROLL_UP_KEY = ["platform", "tenant", "breakdown", "day", "subject"]
_COUNTS = ("prompt_tokens", "completion_tokens", "cached_tokens")


async def write_usage(db: Database, records: Sequence[UsageRecord]) -> None:
    """The records and their additions to the daily roll-up (`usage_daily`), in one
    transaction: a record and its sums land together or not at all."""
    from core.store.models import UsageDay
    from core.store.tables import table_of

    rolled = table_of(UsageDay)
    async with db.session() as s:
        for record in records:
            s.add(record)
            counts = {name: getattr(record, name) for name in _COUNTS}
            # Always channel, user, model in this order, so two writers lock rows in one order.
            for breakdown in ("channel", "user", "model"):
                row = {
                    "platform": record.platform,
                    "tenant": record.tenant,
                    "breakdown": breakdown,
                    "day": record.day,
                    "subject": getattr(record, breakdown),
                    "requests": 1,
                    **counts,
                }
                await s.exec(db.upsert_adding(rolled, row, ROLL_UP_KEY, [*_COUNTS, "requests"]))


class UsageRecorder:
    def __init__(self, db: Database, clock: Callable[[], datetime] | None = None) -> None:
        """`clock`: when usage happened and which UTC day it counts for (default: now)."""
        self._db = db
        self._clock = clock

    def _now(self) -> datetime:
        from core.store.models import utcnow

        return self._clock() if self._clock is not None else utcnow()

    async def record(self, session: ToolSession, provider: str, model: str, usage: Usage) -> None:
        from core.quotas import utc_day
        from core.store.models import UsageRecord

        now = self._now()
        who = session.identity
        record = UsageRecord(
            at=now,
            day=utc_day(now),
            request_id=session.request_id,
            platform=who.platform,
            tenant=who.tenant,
            channel=who.channel,
            user=who.user,
            provider=provider,
            model=model,
            prompt_tokens=usage.prompt_tokens,
            completion_tokens=usage.completion_tokens,
            cached_tokens=usage.cached_tokens,
        )
        await write_usage(self._db, [record])

    async def today(self, session: ToolSession) -> Usage:
        """The user's usage today in this tenant (for /budget)."""
        from sqlmodel import col, func, select

        from core.quotas import utc_day
        from core.store.models import UsageRecord

        who = session.identity
        stmt = select(
            func.coalesce(func.sum(UsageRecord.prompt_tokens), 0),
            func.coalesce(func.sum(UsageRecord.completion_tokens), 0),
            func.coalesce(func.sum(UsageRecord.cached_tokens), 0),
        ).where(
            col(UsageRecord.platform) == who.platform,
            col(UsageRecord.tenant) == who.tenant,
            col(UsageRecord.user) == who.user,
            col(UsageRecord.day) == utc_day(self._now()),
        )
        async with self._db.session() as s:
            row = (await s.exec(stmt)).one()
        return Usage(int(row[0]), int(row[1]), int(row[2]))
