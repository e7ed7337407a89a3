"""The instants tests run at, and the settable clock every component is given.

No test reads the wall clock: a test that worked only at some hours (a digest period starting
at 09:00 UTC and a commit made "two hours ago") is a test that fails on someone's morning.
Tests get the `clock` fixture (tests/conftest.py), pinned at `PINNED`; a test whose outcome
could depend on the instant (period boundaries, day and year rollover, daylight-saving changes)
is marked `@at_every_instant` and runs once at each of `INSTANTS`.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

# Europe/Berlin changes offset at 01:00 UTC on the last Sunday of March and of October.
INSTANTS: dict[str, datetime] = {
    # Half an hour into a daily 09:00 period: "two hours ago" is the previous period.
    "0930utc": datetime(2026, 12, 3, 9, 30, tzinfo=UTC),
    # The last second of a day, a month and a year: one second later everything rolls over.
    "year-end": datetime(2026, 12, 31, 23, 59, 59, tzinfo=UTC),
    # 03:30 CEST, half an hour after Berlin's clocks jumped from 02:00 to 03:00.
    "berlin-spring-forward": datetime(2026, 3, 29, 1, 30, tzinfo=UTC),
    # 02:30 CEST, the first of Berlin's two 02:30s; the clocks go back from 03:00 in 30 minutes.
    "berlin-fall-back": datetime(2026, 10, 25, 0, 30, tzinfo=UTC),
}
PINNED = INSTANTS["0930utc"]

# `@at_every_instant` on a test that takes the `clock` fixture: one run per instant.
at_every_instant = pytest.mark.parametrize(
    "clock", list(INSTANTS.values()), ids=list(INSTANTS), indirect=True
)


class Clock:
    """What every component sees as now: a callable returning `now`, which the test sets or
    moves with `advance`."""

    def __init__(self, now: datetime = PINNED) -> None:
        self.now = now

    def __call__(self) -> datetime:
        return self.now

    @property
    def at(self) -> datetime:  # the outbox tests' name for it
        return self.now

    @at.setter
    def at(self, value: datetime) -> None:
        self.now = value

    def advance(self, delta: timedelta | None = None, **parts: float) -> None:
        self.now += (delta or timedelta()) + timedelta(**parts)

    def timestamp(self) -> float:
        """`now` as seconds since the epoch, for fakes that stamp what they store."""
        return self.now.timestamp()


def next_utc_midnight(instant: datetime) -> datetime:
    day = instant.astimezone(UTC).date() + timedelta(days=1)
    return datetime(day.year, day.month, day.day, tzinfo=UTC)
