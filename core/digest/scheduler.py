"""The digest scheduler of `threadline worker` and `threadline run`: APScheduler 3.11.

SQL is the one source of truth: jobs are rebuilt from the subscriptions at start and whenever
their signature (count, newest change) moves, checked every minute, so a `/digest` change made
by any process is noticed within a minute. Each subscription is one job with a trigger that
follows its `Schedule` (time zone and DST rules included); at each fire time the job calls
`DigestRunner.run_due`, which claims the period in SQL, so with several worker processes
every process fires and exactly one runs it. The minute pass calls `run_due` too: a period
whose fire time was missed (the process was busy or starting) is still caught up within the
grace period.
"""

from __future__ import annotations

import logging
from datetime import UTC, datetime, timedelta
from typing import Any

from apscheduler.schedulers.asyncio import AsyncIOScheduler
from apscheduler.triggers.base import BaseTrigger
from apscheduler.triggers.interval import IntervalTrigger

from core.digest.runner import DigestRunner, schedule_of
from core.digest.schedule import Schedule, ScheduleError

log = logging.getLogger(__name__)

SYNC_EVERY = 60.0


class ScheduleTrigger(BaseTrigger):  # type: ignore[misc]
    """An APScheduler trigger that fires at a `Schedule`'s times."""

    def __init__(self, schedule: Schedule) -> None:
        self.schedule = schedule

    def get_next_fire_time(
        self, previous_fire_time: datetime | None, now: datetime
    ) -> datetime | None:
        # Strictly after the previous fire time (APScheduler walks missed runs that way and
        # its misfire rules decide about them); the first one from now.
        tick = timedelta(microseconds=1)
        start = now if previous_fire_time is None else previous_fire_time + tick
        try:
            return self.schedule.next_after(start.astimezone(UTC) - tick)
        except ScheduleError:
            return None

    def __str__(self) -> str:
        return f"schedule[{self.schedule.cron} {self.schedule.tz}]"


class DigestScheduler:
    def __init__(self, runner: DigestRunner, every: float = SYNC_EVERY) -> None:
        self.runner = runner
        self._every = every
        self._scheduler: Any = None
        self._signature: object = None

    async def start(self) -> None:
        self._scheduler = AsyncIOScheduler(timezone=UTC)
        self._scheduler.start()
        await self.sync()
        self._scheduler.add_job(
            self._minute,
            IntervalTrigger(seconds=self._every, timezone=UTC),
            id="digest-sync",
            max_instances=1,
            coalesce=True,
        )
        await self._run_due()  # catch up what was missed while no worker ran

    def pause(self) -> None:
        """Fire no more jobs (a shutdown has begun); runs already started go on."""
        if self._scheduler is not None:
            self._scheduler.pause()

    async def stop(self) -> None:
        if self._scheduler is not None:
            self._scheduler.shutdown(wait=False)
            self._scheduler = None
        released = await self.runner.store.release(self.runner.owner)
        if released:
            log.info("released %d digest claim(s) for other workers", released)

    def job_ids(self) -> list[str]:
        if self._scheduler is None:
            return []
        return sorted(j.id for j in self._scheduler.get_jobs() if j.id.startswith("digest-#"))

    async def sync(self) -> bool:
        """Rebuild the jobs if any subscription changed; True if they were rebuilt."""
        signature = await self.runner.store.signature()
        if signature == self._signature:
            return False
        self._signature = signature
        subs = [s for s in await self.runner.store.all() if not s.paused]
        wanted = {f"digest-#{s.id}": s for s in subs}
        for job in self._scheduler.get_jobs():
            if job.id.startswith("digest-#") and job.id not in wanted:
                job.remove()
        for job_id, sub in wanted.items():
            try:
                trigger = ScheduleTrigger(schedule_of(sub))
            except ScheduleError as exc:
                log.warning("digest #%s not scheduled: %s", sub.id, exc)
                continue
            self._scheduler.add_job(
                self._run_due,
                trigger,
                id=job_id,
                replace_existing=True,
                max_instances=1,
                coalesce=True,
                misfire_grace_time=int(self.runner.grace.total_seconds()),
            )
        log.info("digest schedule: %d subscription(s)", len(wanted))
        return True

    async def _minute(self) -> None:
        try:
            await self.sync()
            await self._run_due()
        except Exception:  # the next minute tries again; a database blip must not stop it
            log.exception("digest scheduler pass failed")

    async def _run_due(self) -> None:
        outcomes = await self.runner.run_due()
        if outcomes:
            log.info("digests: %s", ", ".join(outcomes))
