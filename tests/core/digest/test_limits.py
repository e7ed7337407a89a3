"""What a digest schedule may be: at most one run every 5 minutes over the whole period, and
only real IANA zones (issue 23, second round)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from core.digest.schedule import ScheduleError, parse_schedule

NOW = datetime(2026, 3, 2, 10, 0, tzinfo=UTC)


@pytest.mark.parametrize(
    ("cron", "where"),
    [
        # Five runs in five minutes, though the next two runs after most instants are far apart.
        ("26,34,35,36,37,38 * * * *", "1 minute apart (00:34 and 00:35)"),
        ("0,58 * * * *", "2 minutes apart (00:58 and 01:00)"),  # from one hour into the next
        ("0,58 0,23 * * *", "2 minutes apart (23:58 and 00:00)"),  # into the next day
        ("0,58 0,23 * * sat,sun", "2 minutes apart (23:58 and 00:00)"),  # Saturday -> Sunday
        ("0,58 0,23 1,31 * *", "2 minutes apart (23:58 and 00:00)"),  # the 31st -> the 1st
        ("0,58 0,23 28,29 2 *", "2 minutes apart (23:58 and 00:00)"),  # only in leap years
        ("0,58 0,23 1,30 * *", "2 minutes apart (23:58 and 00:00)"),  # April 30 -> May 1
        ("0-59/4 9 * * *", "4 minutes apart (09:00 and 09:04)"),
        ("* * * * *", "1 minute apart"),
    ],
)
def test_every_gap_of_the_period_is_checked(cron: str, where: str) -> None:
    schedule = parse_schedule(f'"{cron}"', "UTC")
    for at in (NOW, NOW + timedelta(minutes=36), NOW.replace(hour=23, minute=59)):
        with pytest.raises(ScheduleError, match="at most every 5 minutes") as caught:
            schedule.check_interval(at)
        assert where in str(caught.value)


@pytest.mark.parametrize(
    "cron",
    [
        "*/5 * * * *",
        "0,55 * * * *",
        "0,30 9-17 * * 1-5",
        "0,58 0,23 * * 1,3,5",  # Monday 23:58, then Wednesday 00:00
        "0,58 0,23 28 2 *",  # February 28 -> March 1 or 29: neither runs
        "0,58 0,23 1,31 2,4 *",  # months without a 31st
        "55 23 * * *",
        "0 9 * * *",
    ],
)
def test_schedules_five_minutes_apart_everywhere_are_accepted(cron: str) -> None:
    parse_schedule(f'"{cron}"', "UTC").check_interval(NOW)


@pytest.mark.parametrize(
    "name",
    ["localtime", "Factory", "posixrules", "../UTC", "Europe/../UTC", "/etc/localtime", "UTC/"],
)
def test_only_real_iana_zones_are_accepted(name: str) -> None:
    with pytest.raises(ScheduleError, match="unknown time zone"):
        parse_schedule("daily", name)


@pytest.mark.parametrize("name", ["UTC", "Europe/Berlin", "America/Argentina/Buenos_Aires"])
def test_iana_zones_are_accepted(name: str) -> None:
    assert parse_schedule("daily", name).tz == name
