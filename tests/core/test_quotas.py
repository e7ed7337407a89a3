"""Persistent daily quotas on the real databases (SQLite and PostgreSQL, via `database_url`).

Every test builds `core.store.engine.Database` on the URL and a `QuotaLedger` with a controlled
clock, so "a restart" is a new engine on the same database and "tomorrow" is a moved clock.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from datetime import UTC, datetime, timedelta, timezone

import pytest

from core.quotas import (
    BudgetExhausted,
    Metric,
    QuotaKey,
    QuotaLedger,
    QuotaLimit,
    QuotaState,
    Reservation,
)
from core.store.engine import Database
from tests.support.clocks import Clock, at_every_instant, next_utc_midnight


def user_limit(
    limit: int,
    user: str = "alice",
    *,
    tenant: str = "T1",
    platform: str = "slack",
    metric: Metric = "tokens",
) -> QuotaLimit:
    return QuotaLimit(QuotaKey(platform, tenant, "user", user, metric), limit, "your daily budget")


def channel_limit(
    limit: int,
    channel: str = "C1",
    *,
    tenant: str = "T1",
    platform: str = "slack",
    metric: Metric = "tokens",
) -> QuotaLimit:
    return QuotaLimit(
        QuotaKey(platform, tenant, "channel", channel, metric), limit, "this channel's budget"
    )


@pytest.fixture
def ledger(open_db: Callable[[], Database], clock: Clock) -> QuotaLedger:
    return QuotaLedger(open_db(), clock)


def by_key(states: list[QuotaState]) -> dict[QuotaKey, tuple[int, int]]:
    return {st.limit.key: (st.used, st.reserved) for st in states}


# -- reserve / settle / release -------------------------------------------------------------------


@at_every_instant
async def test_reserve_then_settle_records_real_usage_and_frees_the_reservation(
    ledger: QuotaLedger, clock: Clock
) -> None:
    limits = [user_limit(1000), channel_limit(5000)]

    reservation = await ledger.reserve(limits, 300, minimum=10)

    assert reservation.amount == 300
    assert reservation.day == clock.now.date().isoformat()
    during = await ledger.snapshot(limits)
    assert [(st.used, st.reserved) for st in during] == [(0, 300), (0, 300)]
    assert [st.remaining for st in during] == [700, 4700]

    crossed = await ledger.settle(reservation, 120)

    assert crossed == []
    after = await ledger.snapshot(limits)
    assert [(st.used, st.reserved) for st in after] == [(120, 0), (120, 0)]
    assert [st.remaining for st in after] == [880, 4880]

    # Settling twice must not charge twice nor free someone else's reservation.
    other = await ledger.reserve(limits, 50, minimum=1)
    assert await ledger.settle(reservation, 120) == []
    again = await ledger.snapshot(limits)
    assert [(st.used, st.reserved) for st in again] == [(120, 50), (120, 50)]
    await ledger.settle(other, 50)
    assert [st.used for st in await ledger.snapshot(limits)] == [170, 170]


async def test_usage_above_the_reservation_is_recorded_honestly(ledger: QuotaLedger) -> None:
    limits = [user_limit(100)]
    reservation = await ledger.reserve(limits, 60, minimum=10)

    await ledger.settle(reservation, 130)  # the provider reported more than we reserved

    (state,) = await ledger.snapshot(limits)
    assert (state.used, state.reserved, state.remaining) == (130, 0, 0)
    with pytest.raises(BudgetExhausted):
        await ledger.reserve(limits, 10, minimum=1)


async def test_release_frees_the_reservation_without_charging(ledger: QuotaLedger) -> None:
    limits = [user_limit(1000), channel_limit(1000)]
    reservation = await ledger.reserve(limits, 1000, minimum=1)
    assert reservation.amount == 1000
    with pytest.raises(BudgetExhausted):
        await ledger.reserve(limits, 1, minimum=1)  # all of it is held

    await ledger.release(reservation)

    states = await ledger.snapshot(limits)
    assert [(st.used, st.reserved) for st in states] == [(0, 0), (0, 0)]
    assert (await ledger.reserve(limits, 1000, minimum=1000)).amount == 1000


# -- exhaustion -----------------------------------------------------------------------------------


@at_every_instant
@pytest.mark.parametrize("tight", ["user", "channel"])
async def test_no_fit_raises_budget_exhausted_naming_the_tightest_limit(
    ledger: QuotaLedger, clock: Clock, tight: str
) -> None:
    user = user_limit(100 if tight == "user" else 10_000)
    channel = channel_limit(100 if tight == "channel" else 10_000)
    limits = [user, channel]
    await ledger.charge(limits, 95)

    with pytest.raises(BudgetExhausted) as caught:
        await ledger.reserve(limits, 50, minimum=10)

    exc = caught.value
    assert exc.state.limit == (user if tight == "user" else channel)
    assert str(exc) == exc.state.limit.label
    assert (exc.state.used, exc.state.reserved, exc.state.remaining) == (95, 0, 5)
    assert exc.resets_at == next_utc_midnight(clock.now)
    assert exc.resets_at.utcoffset() == timedelta(0)
    # A refused reservation holds nothing, on either limit.
    assert [st.reserved for st in await ledger.snapshot(limits)] == [0, 0]


async def test_resets_at_is_next_midnight_utc_even_for_a_non_utc_clock(
    open_db: Callable[[], Database],
) -> None:
    # 23:30 in New York (UTC-5) is already 04:30 on the next UTC day.
    local = datetime(2024, 5, 1, 23, 30, tzinfo=timezone(timedelta(hours=-5)))
    ledger = QuotaLedger(open_db(), Clock(local))
    limits = [user_limit(10)]

    reservation = await ledger.reserve(limits, 10, minimum=10)
    assert reservation.day == "2024-05-02"
    with pytest.raises(BudgetExhausted) as caught:
        await ledger.reserve(limits, 1, minimum=1)
    assert caught.value.resets_at == datetime(2024, 5, 3, tzinfo=UTC)
    assert ledger.resets_at() == datetime(2024, 5, 3, tzinfo=UTC)


async def test_a_zero_budget_allows_nothing(ledger: QuotaLedger) -> None:
    with pytest.raises(BudgetExhausted) as caught:
        await ledger.reserve([user_limit(0)], 10, minimum=0)
    assert caught.value.state.remaining == 0


async def test_partial_fit_returns_a_smaller_amount(ledger: QuotaLedger) -> None:
    limits = [user_limit(100), channel_limit(1000)]
    await ledger.charge(limits, 70)

    reservation = await ledger.reserve(limits, 50, minimum=10)

    assert reservation.amount == 30
    states = await ledger.snapshot(limits)
    assert [(st.used, st.reserved) for st in states] == [(70, 30), (70, 30)]
    with pytest.raises(BudgetExhausted):
        await ledger.reserve(limits, 50, minimum=1)
    # ...and when less than the minimum is left, nothing is reserved at all.
    await ledger.release(reservation)
    with pytest.raises(BudgetExhausted):
        await ledger.reserve(limits, 50, minimum=31)
    assert [st.reserved for st in await ledger.snapshot(limits)] == [0, 0]


# -- persistence ----------------------------------------------------------------------------------


async def test_quotas_survive_a_restart(database_url: str, clock: Clock) -> None:
    """Required by the issue: a new engine on the same database sees the same counters."""
    limits = [user_limit(1000), channel_limit(2000)]
    first = Database(database_url)
    try:
        ledger = QuotaLedger(first, clock)
        crossed = await ledger.charge(limits, 850)  # also crosses 80% of the user budget
        assert [st.limit for st in crossed] == [limits[0]]
        held = await ledger.reserve(limits, 100, minimum=1)
    finally:
        await first.dispose()

    second = Database(database_url)  # "the process restarted"
    try:
        ledger = QuotaLedger(second, clock)
        states = await ledger.snapshot(limits)
        assert [(st.used, st.reserved) for st in states] == [(850, 100), (850, 100)]

        with pytest.raises(BudgetExhausted) as caught:
            await ledger.reserve(limits, 100, minimum=60)
        assert caught.value.state.limit == limits[0]
        assert (await ledger.reserve(limits, 100, minimum=1)).amount == 50

        # A reservation taken before the restart can still be settled after it, and the
        # 80% notice that was already given is not given again.
        assert await ledger.settle(held, 90) == []
        states = await ledger.snapshot(limits)
        assert [(st.used, st.reserved) for st in states] == [(940, 50), (940, 50)]
    finally:
        await second.dispose()


# -- the 80% notice -------------------------------------------------------------------------------


async def test_80_percent_crossing_is_reported_exactly_once_across_ledgers(
    open_db: Callable[[], Database], clock: Clock
) -> None:
    a = QuotaLedger(open_db(), clock)
    b = QuotaLedger(open_db(), clock)  # another process: its own engine on the same database
    limits = [user_limit(100), channel_limit(1000)]

    assert await a.charge(limits, 50) == []
    assert await b.charge(limits, 29) == []  # 79%: not yet
    crossed = await a.charge(limits, 1)  # 80% of the user budget
    assert [(st.limit, st.used) for st in crossed] == [(limits[0], 80)]
    assert await b.charge(limits, 5) == []
    assert await a.charge(limits, 5) == []

    # The channel budget has its own notice, also given once.
    assert await b.charge([limits[1]], 709) == []  # 799 of 1000
    first = await a.charge([limits[1]], 1)
    assert [(st.limit, st.used) for st in first] == [(limits[1], 800)]
    assert await a.charge([limits[1]], 10) == []


async def test_the_notice_comes_at_80_percent_not_before(ledger: QuotaLedger) -> None:
    limits = [user_limit(7)]
    assert await ledger.charge(limits, 5) == []  # 71%
    crossed = await ledger.charge(limits, 1)  # 86%
    assert [st.used for st in crossed] == [6]


async def test_a_released_reservation_does_not_use_up_the_notice(ledger: QuotaLedger) -> None:
    limits = [user_limit(1)]
    await ledger.release(await ledger.reserve(limits, 1, minimum=1))  # nothing spent

    crossed = await ledger.charge(limits, 1)

    assert [st.used for st in crossed] == [1]


async def test_simultaneous_crossings_report_once(
    open_db: Callable[[], Database], clock: Clock
) -> None:
    ledgers = [QuotaLedger(open_db(), clock), QuotaLedger(open_db(), clock)]
    limits = [user_limit(100)]
    held: list[tuple[QuotaLedger, Reservation]] = []
    for i in range(6):
        ledger = ledgers[i % 2]
        held.append((ledger, await ledger.reserve(limits, 15, minimum=15)))

    results = await asyncio.gather(*(lg.settle(r, 15) for lg, r in held))

    assert sum(len(r) for r in results) == 1
    (state,) = await ledgers[0].snapshot(limits)
    assert (state.used, state.reserved) == (90, 0)


# -- days -----------------------------------------------------------------------------------------


async def test_a_new_utc_day_starts_from_zero(ledger: QuotaLedger, clock: Clock) -> None:
    clock.now = datetime(2024, 5, 1, 23, 59, 59, tzinfo=UTC)
    limits = [user_limit(100), channel_limit(100)]
    assert len(await ledger.charge(limits, 100)) == 2
    with pytest.raises(BudgetExhausted) as caught:
        await ledger.reserve(limits, 1, minimum=1)
    assert caught.value.resets_at == datetime(2024, 5, 2, tzinfo=UTC)
    late = await ledger.reserve([user_limit(1000, "bob")], 10, minimum=1)

    clock.advance(timedelta(seconds=1))  # 00:00:00 UTC

    assert [(st.used, st.reserved) for st in await ledger.snapshot(limits)] == [(0, 0), (0, 0)]
    assert (await ledger.reserve(limits, 100, minimum=100)).amount == 100
    # Yesterday's reservation settles on yesterday's counter, not today's.
    await ledger.settle(late, 7)
    assert [(st.used, st.reserved) for st in await ledger.snapshot([user_limit(1000, "bob")])] == [
        (0, 0)
    ]
    clock.now = datetime(2024, 5, 1, 23, 0, tzinfo=UTC)
    assert [(st.used, st.reserved) for st in await ledger.snapshot([user_limit(1000, "bob")])] == [
        (7, 0)
    ]
    assert [(st.used, st.reserved) for st in await ledger.snapshot(limits)] == [(100, 0), (100, 0)]


@at_every_instant
async def test_the_80_percent_notice_comes_again_on_a_new_day(
    ledger: QuotaLedger, clock: Clock
) -> None:
    limits = [user_limit(10)]
    assert len(await ledger.charge(limits, 9)) == 1
    clock.advance(timedelta(days=1))
    assert len(await ledger.charge(limits, 9)) == 1


# -- concurrency ----------------------------------------------------------------------------------


async def test_concurrent_reservations_from_two_engines_never_exceed_the_limit(
    open_db: Callable[[], Database], clock: Clock
) -> None:
    # Both engines start on a database they have never touched, as two processes would.
    ledgers = [QuotaLedger(open_db(), clock), QuotaLedger(open_db(), clock)]
    limits = [user_limit(1000), channel_limit(100_000)]

    results = await asyncio.gather(
        *(ledgers[i % 2].reserve(limits, 70, minimum=1) for i in range(40)),
        return_exceptions=True,
    )

    granted = [r for r in results if isinstance(r, Reservation)]
    refused = [r for r in results if not isinstance(r, Reservation)]
    assert all(isinstance(r, BudgetExhausted) for r in refused), refused
    total = sum(r.amount for r in granted)
    assert total <= 1000
    # Demand (2,800) exceeds the budget, so all of it is handed out: nobody is told the
    # budget is used up while some of it is still free.
    assert total == 1000
    states = await ledgers[0].snapshot(limits)
    assert [(st.used, st.reserved) for st in states] == [(0, 1000), (0, 1000)]

    # Settling concurrently from both engines adds up exactly too.
    await asyncio.gather(*(ledgers[i % 2].settle(r, 10) for i, r in enumerate(granted)))
    states = await ledgers[1].snapshot(limits)
    assert [(st.used, st.reserved) for st in states] == [(10 * len(granted), 0)] * 2


async def test_first_use_by_many_sessions_on_two_engines_creates_the_tables_once(
    open_db: Callable[[], Database], clock: Clock
) -> None:
    """Two processes starting at once on an empty database must not trip over each other's
    CREATE TABLE (and neither must concurrent first requests inside one process)."""
    dbs = [open_db(), open_db()]

    await asyncio.gather(*(dbs[i % 2].create_all() for i in range(10)))

    ledgers = [QuotaLedger(db, clock) for db in dbs]
    await ledgers[0].charge([user_limit(10)], 3)
    assert [st.used for st in await ledgers[1].snapshot([user_limit(10)])] == [3]


# -- isolation ------------------------------------------------------------------------------------


async def test_tenants_users_channels_and_metrics_do_not_share_counters(
    ledger: QuotaLedger,
) -> None:
    spent = [user_limit(100, "alice", tenant="T1"), channel_limit(100, "C1", tenant="T1")]
    await ledger.charge(spent, 100)

    untouched = [
        user_limit(100, "alice", tenant="T2"),  # same user id in another workspace
        user_limit(100, "bob", tenant="T1"),
        channel_limit(100, "C1", tenant="T2"),
        channel_limit(100, "C2", tenant="T1"),
        user_limit(100, "alice", tenant="T1", platform="discord"),
        user_limit(100, "alice", tenant="T1", metric="tts_chars"),
        # a user and a channel that happen to share an id are different counters
        QuotaLimit(QuotaKey("slack", "T1", "channel", "alice", "tokens"), 100, "channel"),
    ]
    for lim in untouched:
        assert (await ledger.reserve([lim], 100, minimum=100)).amount == 100, lim.key

    assert by_key(await ledger.snapshot(spent)) == {lim.key: (100, 0) for lim in spent}
    assert by_key(await ledger.snapshot(untouched)) == {lim.key: (0, 100) for lim in untouched}
    with pytest.raises(BudgetExhausted):
        await ledger.reserve([spent[0]], 1, minimum=1)


# -- reservations left behind by a dead process ---------------------------------------------------


@at_every_instant
async def test_a_reservation_of_a_killed_process_expires_and_is_given_back(
    open_db: Callable[[], Database], clock: Clock
) -> None:
    limits = [user_limit(1000), channel_limit(1000)]
    dead = QuotaLedger(open_db(), clock)
    # The process reserves for a request with a 2-minute deadline, then dies: never settles.
    await dead.reserve(limits, 800, minimum=10, expires_at=clock.now + timedelta(minutes=3))

    restarted = QuotaLedger(open_db(), clock)  # a new process on the same database
    with pytest.raises(BudgetExhausted):
        await restarted.reserve(limits, 500, minimum=500)  # still held before the deadline
    assert by_key(await restarted.snapshot(limits))[limits[0].key] == (0, 800)

    clock.advance(timedelta(minutes=4))
    assert [st.reserved for st in await restarted.snapshot(limits)] == [0, 0]
    held = await restarted.reserve(limits, 1000, minimum=1000)
    assert held.amount == 1000


@at_every_instant
async def test_settling_after_the_reservation_expired_does_not_give_it_back_twice(
    ledger: QuotaLedger, clock: Clock
) -> None:
    limits = [user_limit(1000)]
    slow = await ledger.reserve(
        limits, 300, minimum=10, expires_at=clock.now + timedelta(minutes=1)
    )
    clock.advance(timedelta(minutes=2))
    other = await ledger.reserve(limits, 200, minimum=10)  # sweeps the expired 300 back
    await ledger.settle(slow, 250)  # the slow call finished after all: its usage still counts
    # ...on its own day's counter: at a day's last second the slow call was yesterday's.
    same_day = slow.day == other.day
    slow_today = 250 if same_day else 0
    assert by_key(await ledger.snapshot(limits))[limits[0].key] == (slow_today, 200)
    await ledger.settle(other, 100)
    assert by_key(await ledger.snapshot(limits))[limits[0].key] == (slow_today + 100, 0)
    clock.advance(minutes=-2)
    assert by_key(await ledger.snapshot(limits))[limits[0].key] == (350 if same_day else 250, 0)


async def test_budget_exhausted_says_what_the_request_needed(ledger: QuotaLedger) -> None:
    limits = [user_limit(2500)]
    await ledger.charge(limits, 2046)
    with pytest.raises(BudgetExhausted) as caught:
        await ledger.reserve(limits, 900, minimum=600)
    assert caught.value.needed == 600
    assert caught.value.state.remaining == 454
