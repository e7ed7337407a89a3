"""When digests run: friendly presets or a 5-field cron expression, in an IANA time zone.

Fire times are computed on the wall clock of the subscription's zone (APScheduler's
`CronTrigger`, fed a zone-less clock so it cannot trip over offsets) and then placed in the
zone with `zoneinfo`: a wall time that does not exist (the spring-forward gap) runs at the
same instant the clock jumps to, a wall time that exists twice (fall-back) runs at its first
occurrence only. So a daylight-saving change neither skips nor doubles a run.

Cron follows the usual crontab meaning: minute, hour, day of month, month, day of week with
0 or 7 = Sunday (APScheduler 3 counts Monday as 0 in `from_crontab`, which would shift every
weekday schedule by a day; the day-of-week field is translated to names here). Restricting
both the day of month and the day of week is refused: crontab ORs them, APScheduler ANDs them.
"""

from __future__ import annotations

import functools
import itertools
import re
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError, available_timezones

from apscheduler.triggers.cron import CronTrigger

PRESETS: dict[str, str] = {
    "hourly": "0 * * * *",
    "daily": "0 9 * * *",
    "weekdays": "0 9 * * 1-5",
    "weekly": "0 9 * * 1",
}
_DAYS = ["sun", "mon", "tue", "wed", "thu", "fri", "sat"]
_DAY_NUMBER = {name: i for i, name in enumerate(_DAYS)}
_MIN_INTERVAL = timedelta(minutes=5)  # a digest every minute is a mistake, not a digest
_NEAR = timedelta(hours=3)  # more than any daylight-saving shift
# Windows searched backwards for the last run, shortest first (cheap for frequent schedules).
_SPANS = tuple(timedelta(minutes=m) for m in (10, 70, 180, 2 * 1440, 35 * 1440, 370 * 1440))


class ScheduleError(ValueError):
    """A schedule or time zone that cannot be used; the message says why."""


def _unknown_zone(name: str) -> ScheduleError:
    return ScheduleError(
        f"unknown time zone {name.strip()[:64]!r}: use an IANA name such as Europe/Berlin, "
        "America/New_York or UTC"
    )


def zone(name: str) -> ZoneInfo:
    """The zone a stored subscription names (checked by `iana_zone` when it was given)."""
    try:
        return ZoneInfo(name.strip())
    except (ZoneInfoNotFoundError, ValueError):
        raise _unknown_zone(name) from None


# Files of the zone database that are not zones people live in: `localtime` is this machine's
# own zone, `Factory` a placeholder, `posixrules` a template for POSIX TZ strings.
_NOT_ZONES = frozenset({"localtime", "Factory", "posixrules"})


@functools.cache
def _iana_names() -> frozenset[str]:
    return frozenset(
        name
        for name in available_timezones()
        if name not in _NOT_ZONES
        and ".." not in name
        and not name.startswith(("/", "posix/", "right/"))
    )


def iana_zone(name: str) -> ZoneInfo:
    """A zone a person gives (`--tz`, `/digest timezone`): only a real IANA name, exactly as
    the zone database spells it; never a file path, nor this machine's `localtime`."""
    if name.strip() not in _iana_names():
        raise _unknown_zone(name)
    return zone(name)


def _dow_part(part: str) -> set[int]:
    step = 1
    if "/" in part:
        part, _, step_text = part.partition("/")
        if not step_text.isdigit() or int(step_text) < 1:
            raise ScheduleError(f"bad step in day of week: {step_text!r}")
        step = int(step_text)
    if part == "*":
        lo, hi = 0, 6
    elif "-" in part:
        a, _, b = part.partition("-")
        lo, hi = _day(a), _day(b)
        if hi == 0 and lo > 0:  # "fri-sun": Sunday closes the week
            hi = 7
        if lo > hi:
            raise ScheduleError(f"day-of-week range {part!r} runs backwards")
    else:
        lo = hi = _day(part)
    return {d % 7 for d in range(lo, hi + 1, step)}


def _day(text: str) -> int:
    text = text.strip().lower()
    if text.isdigit() and 0 <= int(text) <= 7:
        return int(text)  # 7 is Sunday too; ranges may end with it
    if text[:3] in _DAY_NUMBER and len(text) >= 3:
        return _DAY_NUMBER[text[:3]]
    raise ScheduleError(f"bad day of week {text!r} (0-7 or sun..sat)")


def _dow_names(field: str) -> str:
    if field == "*":
        return "*"
    days: set[int] = set()
    for part in field.split(","):
        days |= _dow_part(part.strip().lower())
    return ",".join(_DAYS[d] for d in sorted(days))


@dataclass(frozen=True, slots=True)
class Schedule:
    """A cron expression in a time zone."""

    cron: str
    tz: str

    def __post_init__(self) -> None:
        self._trigger  # noqa: B018 (validates)

    @property
    def zone(self) -> ZoneInfo:
        return zone(self.tz)

    @property
    def _trigger(self) -> CronTrigger:
        return _trigger(self.cron)

    def _wall_next(self, trigger: CronTrigger, wall: datetime) -> datetime | None:
        nxt: datetime | None = trigger.get_next_fire_time(None, wall)
        return nxt

    def _place(self, wall: datetime) -> datetime:
        """A wall-clock time (UTC-tagged) -> the instant it runs at, in UTC."""
        local = wall.replace(tzinfo=self.zone, fold=0)
        return local.astimezone(UTC)

    def next_after(self, instant: datetime) -> datetime:
        """The first run strictly after `instant` (UTC)."""
        trigger = self._trigger
        tz = self.zone
        wall = instant.astimezone(tz).replace(tzinfo=UTC)
        # Near an offset change, start a few hours of wall clock early: after a gap, the wall
        # time of an instant is later than the wall time of a run it must still find.
        if (instant - _NEAR).astimezone(tz).utcoffset() != (instant + _NEAR).astimezone(
            tz
        ).utcoffset():
            wall -= _NEAR
        for _ in range(100_000):
            nxt = self._wall_next(trigger, wall)
            if nxt is None:
                break
            at = self._place(nxt)
            if at > instant:
                return at
            wall = nxt + timedelta(seconds=1)
        raise ScheduleError(f"the schedule {self.cron!r} never runs")

    def latest_at_or_before(self, instant: datetime) -> datetime | None:
        """The last run at or before `instant`, or None if there is none within a year."""
        for span in _SPANS:
            found = None
            at = self.next_after(instant - span)
            while at <= instant:
                found = at
                at = self.next_after(at)
            if found is not None:
                return found
        return None

    def previous_before(self, run: datetime) -> datetime | None:
        return self.latest_at_or_before(run - timedelta(microseconds=1))

    def check_interval(self, now: datetime) -> None:
        """Refuses a schedule with any two runs less than 5 minutes apart, over its whole
        period (see `_tightest`), and one that never runs after `now`."""
        self.next_after(now)
        tightest = _tightest(self.cron)
        if tightest is not None and tightest[0] < _MIN_INTERVAL:
            gap, a, b = tightest
            minutes = int(gap.total_seconds() // 60)
            raise ScheduleError(
                "a digest may run at most every 5 minutes; this schedule runs "
                f"{minutes} minute{'s' if minutes != 1 else ''} apart ({a} and {b})"
            )


@functools.lru_cache(maxsize=256)
def _trigger(cron: str) -> CronTrigger:
    """The wall-clock trigger of a cron expression (built once per expression)."""
    fields = cron.split()
    if len(fields) != 5:
        raise ScheduleError(
            f"a schedule is a preset ({', '.join(PRESETS)}) or 5 cron fields "
            f"(minute hour day month weekday), not {cron[:64]!r}"
        )
    minute, hour, day, month, dow = fields
    if day != "*" and dow != "*":
        raise ScheduleError(
            "restrict the day of month or the day of week, not both (use two digests)"
        )
    try:
        return CronTrigger(
            minute=minute,
            hour=hour,
            day=day,
            month=month,
            day_of_week=_dow_names(dow),
            timezone=UTC,  # the wall clock, as if it had no offsets (see the module doc)
        )
    except ValueError as exc:
        raise ScheduleError(f"bad cron expression {cron!r}: {exc}") from None


def _fires(trigger: CronTrigger, start: datetime, end: datetime, limit: int) -> list[datetime]:
    """The trigger's fire times in [start, end), at most `limit` + 1 of them."""
    out: list[datetime] = []
    at: datetime | None = trigger.get_next_fire_time(None, start)
    while at is not None and at < end and len(out) <= limit:
        out.append(at)
        at = trigger.get_next_fire_time(None, at + timedelta(minutes=1))
    return out


@functools.lru_cache(maxsize=256)
def _tightest(cron: str) -> tuple[timedelta, str, str] | None:
    """The smallest gap between two consecutive runs of `cron` anywhere in its period, with the
    wall times it falls between; None when it runs at most once a day on days that never
    follow each other.

    Every firing day runs at the same wall times (cron's minutes x hours), so the gaps are
    those of one day, plus the one from a day's last run to the next firing day's first; that
    one only matters when two consecutive days fire, which the day fields decide. Cost is
    bounded: at most 289 runs of one day are expanded (more than 288 a day cannot be 5 minutes
    apart; the day's gaps already show it), and firing days are walked only when that day-to-day
    gap would be too short, until two consecutive ones show, over 4 years (1,461 days) at most.
    Gaps are on the wall clock: a
    daylight-saving jump can bring the runs on either side of it closer once, by the shift.
    """
    minute, hour, day, month, dow = cron.split()
    origin = datetime(2000, 1, 1, tzinfo=UTC)  # 2000 and 2004 are leap years
    times = _fires(
        CronTrigger(minute=minute, hour=hour, timezone=UTC),
        origin,
        origin + timedelta(days=1),
        limit=int(timedelta(days=1) / _MIN_INTERVAL),
    )
    if not times:
        return None
    best: tuple[timedelta, str, str] | None = None
    for a, b in itertools.pairwise(times):
        if best is None or b - a < best[0]:
            best = (b - a, f"{a:%H:%M}", f"{b:%H:%M}")
    overnight = times[0] + timedelta(days=1) - times[-1]
    if (best is None or overnight < best[0]) and overnight < _MIN_INTERVAL:
        if _consecutive_days(day, month, dow, origin):
            best = (overnight, f"{times[-1]:%H:%M}", f"{times[0]:%H:%M}")
    return best


def _consecutive_days(day: str, month: str, dow: str, origin: datetime) -> bool:
    """Whether two consecutive days both match the day fields, within 4 years from `origin`
    (a leap year): the day of month and the day of week are never both restricted, so month
    lengths decide for the one and any month's days of the week for the other."""
    trigger = CronTrigger(day=day, month=month, day_of_week=_dow_names(dow), timezone=UTC)
    end = origin.replace(year=origin.year + 4)
    previous: datetime | None = None
    at: datetime | None = trigger.get_next_fire_time(None, origin)
    while at is not None and at < end:
        if previous is not None and at - previous == timedelta(days=1):
            return True
        previous, at = at, trigger.get_next_fire_time(None, at + timedelta(minutes=1))
    return False


def parse_schedule(text: str, tz: str) -> Schedule:
    """`daily`, `weekdays`, `weekly`, `hourly` or a 5-field cron -> Schedule (validated)."""
    spec = " ".join(text.strip().strip("\"'").split())
    cron = PRESETS.get(spec.lower(), spec)
    iana_zone(tz)
    if not re.fullmatch(r"[0-9A-Za-z*/,\- ]+", cron):
        raise ScheduleError(f"bad cron expression {spec[:64]!r}")
    return Schedule(cron, tz.strip())
