"""The console's digests: one tenant's subscriptions by channel, each with its next run in its
own time zone (the runner's cron code: `core.digest.schedule`) and its last runs, and the
tenant-scoped lookup the pause, resume and run-now actions go through.

A subscription of another tenant reads exactly like one that does not exist.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime, tzinfo
from typing import Any

from sqlalchemy import func
from sqlalchemy.orm import aliased
from sqlmodel import col, select

from core.digest.runner import is_manual, schedule_of
from core.digest.schedule import PRESETS, ScheduleError
from core.digest.store import DigestStore
from core.store.engine import Database
from core.store.models import DigestRun, DigestSubscription

RUNS_SHOWN = 5  # the last runs listed under each subscription
STATES = ("active", "paused")


@dataclass(frozen=True, slots=True)
class RunRow:
    scheduled_for: datetime  # in the subscription's zone
    state: str  # running | posted | empty | skipped | failed
    detail: str
    finished_at: datetime | None  # in the subscription's zone
    manual: bool  # started with "run now", not by the schedule


@dataclass(frozen=True, slots=True)
class DigestRow:
    id: int
    channel: str
    kind: str
    cron: str
    preset: str | None  # "daily", "hourly", ... when the cron is one of them
    tz: str
    options: tuple[str, ...]  # "repo api", "skips empty periods", "with audio"
    paused: bool
    created_by: str
    next_run: datetime | None  # in the subscription's zone; None when paused or unusable
    problem: str  # why it cannot run ("" when it can)
    runs: tuple[RunRow, ...]


@dataclass(frozen=True, slots=True)
class ChannelDigests:
    channel: str
    digests: tuple[DigestRow, ...]


class DigestBoard:
    def __init__(self, db: Database, clock: Callable[[], datetime]) -> None:
        self._db = db
        self._clock = clock
        self.store = DigestStore(db, clock)

    async def find(self, platform: str, tenant: str, sub_id: int) -> DigestSubscription | None:
        """The subscription `sub_id` if it belongs to this tenant; else None, as if unknown."""
        sub = await self.store.get(sub_id)
        if sub is None or (sub.platform, sub.tenant) != (platform, tenant):
            return None
        return sub

    async def channels(
        self, platform: str, tenant: str, *, channel: str | None = None, state: str | None = None
    ) -> tuple[ChannelDigests, ...]:
        """The tenant's subscriptions grouped by channel (in channel order), optionally only
        one channel's and only the active or the paused ones."""
        query = select(DigestSubscription).where(
            col(DigestSubscription.platform) == platform,
            col(DigestSubscription.tenant) == tenant,
        )
        if channel:
            query = query.where(col(DigestSubscription.channel) == channel)
        if state in STATES:
            query = query.where(col(DigestSubscription.paused) == (state == "paused"))
        query = query.order_by(col(DigestSubscription.channel), col(DigestSubscription.id))
        async with self._db.session() as s:
            subs = list((await s.exec(query)).all())
            runs = await self._recent_runs(s, [sub.id for sub in subs if sub.id is not None])
        now = self._clock()
        grouped: dict[str, list[DigestRow]] = {}
        for sub in subs:
            assert sub.id is not None
            grouped.setdefault(sub.channel, []).append(_row(sub, runs.get(sub.id, []), now))
        return tuple(ChannelDigests(name, tuple(rows)) for name, rows in grouped.items())

    async def channel_names(self, platform: str, tenant: str) -> tuple[str, ...]:
        """The tenant's channels that have a digest (the page's channel filter)."""
        query = (
            select(col(DigestSubscription.channel))
            .where(
                col(DigestSubscription.platform) == platform,
                col(DigestSubscription.tenant) == tenant,
            )
            .distinct()
            .order_by(col(DigestSubscription.channel))
        )
        async with self._db.session() as s:
            return tuple((await s.exec(query)).all())

    @staticmethod
    async def _recent_runs(s: Any, sub_ids: list[int]) -> dict[int, list[DigestRun]]:
        """The last RUNS_SHOWN runs of each subscription, in one query (a window per one)."""
        if not sub_ids:
            return {}
        rank = (
            func.row_number()
            .over(
                partition_by=col(DigestRun.subscription_id),
                order_by=(col(DigestRun.scheduled_for).desc(), col(DigestRun.id).desc()),
            )
            .label("rank")
        )
        ranked = (
            select(DigestRun, rank).where(col(DigestRun.subscription_id).in_(sub_ids)).subquery()
        )
        run = aliased(DigestRun, ranked)
        query = (
            select(run)
            .where(ranked.c.rank <= RUNS_SHOWN)
            .order_by(ranked.c.subscription_id, ranked.c.rank)
        )
        out: dict[int, list[DigestRun]] = {}
        for row in (await s.exec(query)).all():
            out.setdefault(row.subscription_id, []).append(row)
        return out


def _aware(value: datetime) -> datetime:
    # SQLite hands timestamps back without a zone; they were written in UTC.
    return value if value.tzinfo is not None else value.replace(tzinfo=UTC)


def _row(sub: DigestSubscription, runs: list[DigestRun], now: datetime) -> DigestRow:
    assert sub.id is not None
    next_run: datetime | None = None
    problem = ""
    zone: tzinfo = UTC
    try:
        schedule = schedule_of(sub)
        zone = schedule.zone
        if not sub.paused:
            next_run = schedule.next_after(now).astimezone(zone)
    except ScheduleError as exc:  # stored before today's checks, or a zone gone from the system
        problem = str(exc)[:200]
    options = []
    if sub.repo:
        options.append(f"repo {sub.repo}")
    if sub.skip_empty:
        options.append("skips empty periods")
    if sub.voice:
        options.append("with audio")
    return DigestRow(
        id=sub.id,
        channel=sub.channel,
        kind=sub.kind,
        cron=sub.cron,
        preset=next((name for name, cron in PRESETS.items() if cron == sub.cron), None),
        tz=sub.tz,
        options=tuple(options),
        paused=sub.paused,
        created_by=sub.created_by,
        next_run=next_run,
        problem=problem,
        runs=tuple(
            RunRow(
                scheduled_for=_aware(r.scheduled_for).astimezone(zone),
                state=r.state,
                detail=r.detail,
                finished_at=_aware(r.finished_at).astimezone(zone) if r.finished_at else None,
                manual=is_manual(_aware(r.scheduled_for)),
            )
            for r in runs
        ),
    )
