"""Token usage: parsing what providers report, and recording it per model call."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from core.request import Usage
from core.session import ToolSession
from core.store.engine import Database

# Providers report cached prompt tokens under different names: OpenAI-style nested details,
# DeepSeek's prompt_cache_hit_tokens, and input_cache_hit_tokens from others.
_CACHED_FLAT_KEYS = ("prompt_cache_hit_tokens", "input_cache_hit_tokens")


def parse_usage(raw: Mapping[str, Any] | None) -> Usage | None:
    if not raw:
        return None
    candidates = [raw.get(key) for key in _CACHED_FLAT_KEYS]
    details = raw.get("prompt_tokens_details")
    if isinstance(details, Mapping):
        candidates.append(details.get("cached_tokens"))
    # Some providers send both spellings with one of them zero: take what was reported.
    cached = max((c for c in candidates if isinstance(c, int)), default=0)
    return Usage(
        prompt_tokens=int(raw.get("prompt_tokens") or 0),
        completion_tokens=int(raw.get("completion_tokens") or 0),
        cached_tokens=int(cached),
    )


class UsageRecorder:
    def __init__(self, db: Database) -> None:
        self._db = db

    async def record(self, session: ToolSession, provider: str, model: str, usage: Usage) -> None:
        from core.quotas import utc_day
        from core.store.models import UsageRecord, utcnow

        now = utcnow()
        who = session.identity
        async with self._db.session() as s:
            s.add(
                UsageRecord(
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
            )

    async def today(self, session: ToolSession) -> Usage:
        """The user's usage today in this tenant (for /budget)."""
        from sqlmodel import col, func, select

        from core.quotas import utc_day
        from core.store.models import UsageRecord, utcnow

        who = session.identity
        stmt = select(
            func.coalesce(func.sum(UsageRecord.prompt_tokens), 0),
            func.coalesce(func.sum(UsageRecord.completion_tokens), 0),
            func.coalesce(func.sum(UsageRecord.cached_tokens), 0),
        ).where(
            col(UsageRecord.platform) == who.platform,
            col(UsageRecord.tenant) == who.tenant,
            col(UsageRecord.user) == who.user,
            col(UsageRecord.day) == utc_day(utcnow()),
        )
        async with self._db.session() as s:
            row = (await s.exec(stmt)).one()
        return Usage(int(row[0]), int(row[1]), int(row[2]))
