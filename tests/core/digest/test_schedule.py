"""Digest schedules (core/digest/schedule.py): presets, crontab weekdays, time zones, DST."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from zoneinfo import ZoneInfo

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from core.digest.schedule import ScheduleError, parse_schedule
from tests.support.clocks import Clock, at_every_instant


def runs(spec: str, tz: str, start: datetime, n: int) -> list[str]:
    schedule = parse_schedule(spec, tz)
    out, at = [], start
    for _ in range(n):
        at = schedule.next_after(at)
        out.append(at.astimezone(ZoneInfo(tz)).strftime("%a %m-%d %H:%M%z"))
    return out


def test_presets_and_crontab_weekdays() -> None:
    friday_noon = datetime(2026, 3, 27, 11, tzinfo=UTC)
    assert runs("weekdays", "UTC", friday_noon, 3) == [
        "Mon 03-30 09:00+0000",
        "Tue 03-31 09:00+0000",
        "Wed 04-01 09:00+0000",
    ]
    # crontab counts Sunday as 0 (and 7); APScheduler's own numbering would shift these.
    assert runs("0 9 * * 0,6", "UTC", friday_noon, 2) == [
        "Sat 03-28 09:00+0000",
        "Sun 03-29 09:00+0000",
    ]
    assert runs("0 9 * * 7", "UTC", friday_noon, 1) == ["Sun 03-29 09:00+0000"]
    assert runs("0 9 * * sat-sun", "UTC", friday_noon, 1) == ["Sat 03-28 09:00+0000"]
    assert runs("weekly", "UTC", friday_noon, 1) == ["Mon 03-30 09:00+0000"]
    assert runs("daily", "UTC", friday_noon, 1) == ["Sat 03-28 09:00+0000"]


def test_time_zone_is_the_wall_clock() -> None:
    assert runs("daily", "America/New_York", datetime(2026, 6, 1, tzinfo=UTC), 1) == [
        "Mon 06-01 09:00-0400"
    ]


def test_spring_forward_neither_skips_nor_doubles() -> None:
    # 02:30 does not exist in Berlin on 29 March 2026: that day's run is at 03:30 CEST.
    assert runs("30 2 * * *", "Europe/Berlin", datetime(2026, 3, 27, 12, tzinfo=UTC), 3) == [
        "Sat 03-28 02:30+0100",
        "Sun 03-29 03:30+0200",
        "Mon 03-30 02:30+0200",
    ]
    half_hours = runs("*/30 * * * *", "Europe/Berlin", datetime(2026, 3, 29, 0, 10, tzinfo=UTC), 4)
    assert half_hours == [
        "Sun 03-29 01:30+0100",
        "Sun 03-29 03:00+0200",
        "Sun 03-29 03:30+0200",
        "Sun 03-29 04:00+0200",
    ]


def test_fall_back_runs_once() -> None:
    # 02:30 happens twice in Berlin on 25 October 2026: one run, at the first.
    assert runs("30 2 * * *", "Europe/Berlin", datetime(2026, 10, 23, 12, tzinfo=UTC), 3) == [
        "Sat 10-24 02:30+0200",
        "Sun 10-25 02:30+0200",
        "Mon 10-26 02:30+0100",
    ]
    day = parse_schedule("daily", "Europe/Berlin")
    start = datetime(2026, 10, 24, 12, tzinfo=UTC)
    at, seen = start, []
    while at < start + timedelta(days=3):
        at = day.next_after(at)
        seen.append(at)
    assert len(seen) == len(set(seen)) and seen == sorted(seen)


def test_latest_and_previous() -> None:
    s = parse_schedule("daily", "Europe/Berlin")
    now = datetime(2026, 12, 1, 10, tzinfo=UTC)
    latest = s.latest_at_or_before(now)
    assert latest == datetime(2026, 12, 1, 8, tzinfo=UTC)
    assert s.latest_at_or_before(latest) == latest
    assert s.previous_before(latest) == datetime(2026, 11, 30, 8, tzinfo=UTC)
    monthly = parse_schedule("0 9 1 * *", "UTC")
    assert monthly.latest_at_or_before(now) == datetime(2026, 12, 1, 9, tzinfo=UTC)
    assert monthly.previous_before(datetime(2026, 12, 1, 9, tzinfo=UTC)) == datetime(
        2026, 11, 1, 9, tzinfo=UTC
    )


AROUND = [
    ("hourly", "Europe/Berlin"),
    ("*/30 * * * *", "Europe/Berlin"),
    ("30 2 * * *", "Europe/Berlin"),
    ("daily", "America/New_York"),
    ("daily", "UTC"),
    ("weekly", "UTC"),
]


@at_every_instant
def test_around_each_instant_the_last_and_next_runs_agree(clock: Clock) -> None:
    """For every moment of the day around the instant, the run before it and the run after it
    are neighbours: what a period ends with is what the next one starts from."""
    for spec, tz in AROUND:
        schedule = parse_schedule(spec, tz)
        probe = clock.now - timedelta(hours=26)
        while probe < clock.now + timedelta(hours=26):
            latest, nxt = schedule.latest_at_or_before(probe), schedule.next_after(probe)
            assert latest is not None and latest <= probe < nxt, (spec, tz, probe)
            assert schedule.next_after(latest) == nxt, (spec, tz, probe)
            assert schedule.previous_before(nxt) == latest, (spec, tz, probe)
            probe += timedelta(minutes=23)


@pytest.mark.parametrize(
    ("spec", "tz", "message"),
    [
        ("0 9 * *", "UTC", "5 cron fields"),
        ("every day", "UTC", "a preset"),
        ("0 25 * * *", "UTC", "bad cron expression"),
        ("0 9 * * 8", "UTC", "bad day of week"),
        ("0 9 * * 5-1", "UTC", "runs backwards"),
        ("0 9 1 * 1", "UTC", "not both"),
        ("daily", "Mars/Olympus", "unknown time zone"),
        ("0 9 * * *; rm -rf /", "UTC", "bad cron expression"),
    ],
)
def test_bad_schedules_say_why(spec: str, tz: str, message: str) -> None:
    with pytest.raises(ScheduleError, match=message):
        parse_schedule(spec, tz)


@at_every_instant
def test_too_frequent_is_refused(clock: Clock) -> None:
    for tz in ("UTC", "Europe/Berlin"):
        with pytest.raises(ScheduleError, match="every 5 minutes"):
            parse_schedule("* * * * *", tz).check_interval(clock.now)
        parse_schedule("*/5 * * * *", tz).check_interval(clock.now)


@settings(max_examples=150, deadline=None)
@given(
    minute=st.integers(0, 59),
    hour=st.integers(0, 23),
    zone_name=st.sampled_from(["Europe/Berlin", "America/New_York", "Australia/Lord_Howe", "UTC"]),
    offset=st.integers(0, 2 * 365 * 24 * 60),
)
def test_runs_are_ordered_and_consistent(
    minute: int, hour: int, zone_name: str, offset: int
) -> None:
    schedule = parse_schedule(f"{minute} {hour} * * *", zone_name)
    instant = datetime(2026, 1, 1, tzinfo=UTC) + timedelta(minutes=offset)
    nxt = schedule.next_after(instant)
    assert instant < nxt <= instant + timedelta(days=1, hours=1)
    assert schedule.latest_at_or_before(nxt) == nxt
    previous = schedule.previous_before(nxt)
    assert previous is not None and previous <= instant
    assert schedule.next_after(previous) == nxt  # nothing between two consecutive runs
    local = nxt.astimezone(ZoneInfo(zone_name))
    # On the wall clock: the asked time, or the time the clock jumped to in a gap.
    assert (local.hour, local.minute) == (hour, minute) or local.dst() != (
        local - timedelta(hours=3)
    ).dst()
