"""The outbox on both databases: idempotent enqueue, exclusive claims, leases, backoff and
giving up, and the drain loop. Platform deliveries are in test_outbox_delivery.py."""

from __future__ import annotations

import asyncio
import logging
import random
from collections.abc import Callable
from datetime import timedelta
from typing import Any

import pytest

from core.outbox import (
    BACKOFF_CAP,
    DeliveryError,
    Outbox,
    OutboxItem,
    OutboxMessage,
    backoff,
    drain,
    owner_id,
)
from core.platforms import Platforms
from core.request import Attachment
from tests.support.clocks import Clock, at_every_instant


def msg(key: str, *, platform: str = "slack", text: str = "hello", **more: Any) -> OutboxMessage:
    return OutboxMessage(platform=platform, tenant="T1", channel="C1", text=text, key=key, **more)


async def status(key: str, outbox: Outbox) -> tuple[str, int, str | None] | None:
    """(state, attempts, message ref or last error) of a row."""
    state = await outbox.state(key)
    if state is None:
        return None
    return state.state, state.attempts, state.message_ref or state.last_error


async def test_enqueueing_a_key_twice_stores_it_once(
    open_db: Callable[[], Any], clock: Clock
) -> None:
    outbox = Outbox(open_db(), clock)
    voice = Attachment("audio", "digest.ogg", b"\x00OggS\xff", "audio/ogg")
    first = msg("digest:1:2026-03-02T09:00", title="Daily digest", attachments=(voice,))
    assert await outbox.enqueue(first) is True
    assert await outbox.enqueue(first) is False
    assert await outbox.enqueue(msg("digest:1:2026-03-02T09:00", text="other")) is False
    assert await outbox.backlog() == 1
    assert await outbox.backlog("slack") == 1 and await outbox.backlog("discord") == 0

    (item,) = await outbox.claim("slack", "me")
    assert item.message == first  # attachments round-trip, bytes and all
    assert item.attempts == 0
    assert await outbox.claim("discord", "me") == []


def test_a_message_is_checked_when_made() -> None:
    with pytest.raises(ValueError, match="key"):
        msg("k" * 256)
    with pytest.raises(ValueError, match="platform"):
        msg("k", platform="IRC #1")  # not a platform name at all
    with pytest.raises(ValueError, match="text"):
        msg("k", text="  ")


async def test_only_registered_platforms_are_enqueued(
    open_db: Callable[[], Any], clock: Clock
) -> None:
    # Core lists no platforms: the outbox knows the ones registered with it.
    platforms = Platforms(["slack"])
    outbox = Outbox(open_db(), clock, platforms=platforms)
    with pytest.raises(ValueError, match="irc"):
        await outbox.enqueue(msg("k", platform="irc"))
    assert await outbox.backlog() == 0
    platforms.register("irc")
    assert await outbox.enqueue(msg("k", platform="irc")) is True


@at_every_instant
async def test_claims_are_exclusive_and_leases_expire(
    open_db: Callable[[], Any], clock: Clock
) -> None:
    db = open_db()
    a, b = Outbox(db, clock), Outbox(open_db(), clock)
    for i in range(3):
        await a.enqueue(msg(f"k{i}"))
        clock.advance(seconds=1)

    got = await a.claim("slack", "A", limit=2, lease=timedelta(minutes=2))
    assert [i.message.key for i in got] == ["k0", "k1"]  # oldest first
    clock.advance(minutes=1)
    assert [i.message.key for i in await b.claim("slack", "B")] == ["k2"]
    assert await b.claim("slack", "B") == []  # all leased

    clock.advance(minutes=1, seconds=1)  # A died: its leases run out (B's has not)
    taken = await b.claim("slack", "B")
    assert [i.message.key for i in taken] == ["k0", "k1"]
    assert [i.attempts for i in taken] == [1, 1]  # an earlier attempt may have posted

    # A comes back and reports a failure of an item it no longer holds: ignored.
    await a.failed(got[0], "late")
    assert await status("k0", a) == ("pending", 2, None)


async def test_two_concurrent_claimers_on_postgresql_get_disjoint_rows(
    pg_url: str, clock: Clock
) -> None:
    from core.store.engine import Database

    dbs = [Database(pg_url) for _ in range(4)]
    try:
        outbox = Outbox(dbs[0], clock)
        claimers = [Outbox(db, clock) for db in dbs]
        # Connected before the race: on a busy machine a claimer still connecting found the
        # rows all taken by the one that was not.
        assert await asyncio.gather(*(c.claim("slack", "warm-up") for c in claimers)) == [[]] * 4
        for i in range(60):
            await outbox.enqueue(msg(f"race-{i}"))

        async def claim_all(n: int) -> list[int]:
            got: list[int] = []
            while batch := await claimers[n].claim("slack", f"owner-{n}", limit=3):
                got.extend(i.id for i in batch)
            return got

        results = await asyncio.gather(*(claim_all(n) for n in range(4)))
        everything = [i for r in results for i in r]
        assert len(everything) == 60 and len(set(everything)) == 60  # each row exactly once
        assert sum(1 for r in results if r) >= 2  # they really ran side by side
    finally:
        for db in dbs:
            await db.dispose()


@at_every_instant
async def test_failures_back_off_exponentially_with_jitter_then_give_up(
    open_db: Callable[[], Any], caplog: pytest.LogCaptureFixture, clock: Clock
) -> None:
    outbox = Outbox(open_db(), clock, max_attempts=4, rng=random.Random(7))
    await outbox.enqueue(msg("flaky"))

    waits = []
    for attempt in range(1, 4):
        (item,) = await outbox.claim("slack", "me")
        assert item.attempts == attempt - 1
        await outbox.failed(item, "internal_error")
        state = await outbox.state("flaky")
        assert state is not None and state.state == "pending" and state.attempts == attempt
        wait = (state.next_attempt_at - clock()).total_seconds()
        base = 10 * 2 ** (attempt - 1)
        assert base <= wait <= base * 1.25  # 10 s doubling, plus jitter
        waits.append(wait)
        clock.advance(seconds=wait - 1)
        assert await outbox.claim("slack", "me") == []  # not due yet
        clock.advance(seconds=1)
    assert waits == sorted(waits)

    caplog.set_level(logging.ERROR, "threadline.outbox")
    (item,) = await outbox.claim("slack", "me")
    assert item.attempts == 3
    await outbox.failed(item, "internal_error")
    assert await status("flaky", outbox) == ("failed", 4, "internal_error")
    assert await outbox.backlog() == 0
    assert "gave up delivering flaky" in caplog.text
    clock.advance(days=1)
    assert await outbox.claim("slack", "me") == []


def test_backoff_grows_to_its_cap() -> None:
    rng = random.Random(1)
    assert timedelta(seconds=10) <= backoff(1, rng) <= timedelta(seconds=12.5)
    assert timedelta(seconds=20) <= backoff(2, rng) <= timedelta(seconds=25)
    assert backoff(12, rng) == BACKOFF_CAP
    assert backoff(500, rng) == BACKOFF_CAP


async def test_a_permanent_failure_gives_up_at_once(
    open_db: Callable[[], Any], clock: Clock
) -> None:
    outbox = Outbox(open_db(), clock)
    await outbox.enqueue(msg("gone"))
    (item,) = await outbox.claim("slack", "me")
    await outbox.failed(item, "channel_not_found", retry=False)
    assert await status("gone", outbox) == ("failed", 1, "channel_not_found")


@at_every_instant
async def test_release_hands_leases_back_and_delivered_is_final(
    open_db: Callable[[], Any],
    clock: Clock,
) -> None:
    outbox = Outbox(open_db(), clock)
    await outbox.enqueue(msg("a"))
    await outbox.enqueue(msg("b"))
    a, _ = await outbox.claim("slack", "me")
    await outbox.delivered(a, "1700000000.000100")
    await outbox.release("me")
    (again,) = await outbox.claim("slack", "other")  # no need to wait for the lease
    assert again.message.key == "b" and again.attempts == 1
    assert await status("a", outbox) == ("delivered", 1, "1700000000.000100")
    await outbox.release("other")
    assert await outbox.backlog() == 1

    clock.advance(days=31)
    assert await outbox.prune() == 1  # the delivered row; the pending one stays
    assert await outbox.state("a") is None
    assert await outbox.backlog() == 1


@at_every_instant
async def test_drain_delivers_in_order_retries_and_stops_cleanly(
    open_db: Callable[[], Any],
    clock: Clock,
) -> None:
    outbox = Outbox(open_db(), clock)
    for key in ("one", "two", "three"):
        await outbox.enqueue(msg(key, platform="console"))
    seen: list[str] = []
    refused = {"two"}
    progressed = asyncio.Event()

    async def deliver(item: OutboxItem) -> str:
        seen.append(item.message.key)
        progressed.set()
        if item.message.key in refused:
            refused.discard(item.message.key)
            raise RuntimeError("boom")  # an unexpected error: retried
        if item.message.key == "three":
            raise DeliveryError("channel_not_found", retry=False)
        return f"ref-{item.message.key}"

    async def until_seen(n: int) -> None:
        async with asyncio.timeout(10):
            while len(seen) < n:
                await progressed.wait()
                progressed.clear()

    stop = asyncio.Event()
    owner = owner_id()
    task = asyncio.create_task(drain(outbox, "console", owner, deliver, every=0.01, stop=stop))
    try:
        await until_seen(3)
        assert seen == ["one", "two", "three"]
        clock.advance(seconds=13)  # past the first backoff
        await until_seen(4)
    finally:
        stop.set()
        await task  # the item in hand is finished and recorded before the loop stops
    assert seen == ["one", "two", "three", "two"]
    assert await status("one", outbox) == ("delivered", 1, "ref-one")
    assert await status("two", outbox) == ("delivered", 2, "ref-two")
    assert await status("three", outbox) == ("failed", 1, "channel_not_found")


async def test_a_shutdown_mid_batch_hands_back_what_was_not_started(
    open_db: Callable[[], Any],
    clock: Clock,
) -> None:
    outbox = Outbox(open_db(), clock)
    for key in ("first", "second", "third"):
        await outbox.enqueue(msg(key))
    stop = asyncio.Event()
    seen: list[str] = []

    async def deliver(item: OutboxItem) -> str:
        seen.append(item.message.key)
        stop.set()  # SIGTERM arrives while the first one is being posted
        return "ok"

    await drain(outbox, "slack", "A", deliver, every=0.01, stop=stop)
    assert seen == ["first"]
    assert await status("first", outbox) == ("delivered", 1, "ok")
    assert await status("second", outbox) == ("pending", 0, None)  # not an attempt
    taken = await outbox.claim("slack", "B")
    assert [(i.message.key, i.attempts) for i in taken] == [("second", 0), ("third", 0)]


async def test_drain_wakes_up_when_this_process_enqueues(
    open_db: Callable[[], Any], clock: Clock
) -> None:
    outbox = Outbox(open_db(), clock)
    delivered = asyncio.Event()

    async def deliver(item: OutboxItem) -> str:
        delivered.set()
        return "ok"

    stop = asyncio.Event()
    task = asyncio.create_task(drain(outbox, "slack", "me", deliver, every=3600, stop=stop))
    try:
        await asyncio.sleep(0.2)  # the drainer is now in its (hour-long) wait
        await outbox.enqueue(msg("now"))
        async with asyncio.timeout(5):
            await delivered.wait()
    finally:
        stop.set()
        await task


async def test_a_delivery_cancelled_by_shutdown_is_released_for_another_process(
    open_db: Callable[[], Any],
    clock: Clock,
) -> None:
    outbox = Outbox(open_db(), clock)
    await outbox.enqueue(msg("slow"))
    started = asyncio.Event()

    async def hang(item: OutboxItem) -> str:
        started.set()
        await asyncio.sleep(3600)
        return "never"

    task = asyncio.create_task(drain(outbox, "slack", "A", hang, every=0.01))
    async with asyncio.timeout(5):
        await started.wait()
    task.cancel()
    await asyncio.gather(task, return_exceptions=True)
    (item,) = await outbox.claim("slack", "B")  # released: no lease to wait out
    assert item.attempts == 1  # and the next attempt knows to look before posting


async def test_a_given_up_message_can_be_listed_and_queued_again(
    open_db: Callable[[], Any],
    clock: Clock,
) -> None:
    outbox = Outbox(open_db(), clock)
    await outbox.enqueue(msg("gone"))
    clock.advance(seconds=1)
    await outbox.enqueue(msg("waiting", platform="discord"))
    (item,) = await outbox.claim("slack", "me")
    await outbox.failed(item, "channel_not_found", retry=False)
    assert await outbox.retry("waiting") is False  # only failed ones

    entries = await outbox.entries()
    assert [(e.key, e.state, e.attempts) for e in entries] == [
        ("gone", "failed", 1),
        ("waiting", "pending", 0),
    ]
    assert entries[0].last_error == "channel_not_found" and entries[
        0
    ].created_at == clock.now - timedelta(seconds=1)
    assert await outbox.retry("gone") is True
    (again,) = await outbox.claim("slack", "me")
    assert (again.message.key, again.attempts) == ("gone", 0)
