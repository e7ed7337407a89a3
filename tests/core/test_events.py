"""Exactly-once bookkeeping: event claims and delivered reply parts, on both databases."""

from __future__ import annotations

import asyncio

from core.events import EventLedger
from core.store.engine import Database


async def test_an_event_is_claimed_once_per_tenant(database_url: str) -> None:
    db = Database(database_url)
    try:
        ledger = EventLedger(db)
        assert await ledger.claim("slack", "T1", "Ev1") is True
        assert await ledger.claim("slack", "T1", "Ev1") is False  # a retry
        assert await ledger.claim("slack", "T2", "Ev1") is True  # another tenant's id space
        assert await ledger.claim("discord", "T1", "Ev1") is True
    finally:
        await db.dispose()


async def test_concurrent_claims_from_two_processes_have_one_winner(database_url: str) -> None:
    # Two engines stand in for two web processes receiving the same delivery.
    first, second = Database(database_url), Database(database_url)
    try:
        await first.create_all()
        ledgers = [EventLedger(first), EventLedger(second)]
        results = await asyncio.gather(
            *(ledgers[i % 2].claim("slack", "T1", "Ev-race") for i in range(10))
        )
        assert results.count(True) == 1
    finally:
        await first.dispose()
        await second.dispose()


async def test_posted_parts_survive_a_restart(database_url: str) -> None:
    db = Database(database_url)
    ledger = EventLedger(db)
    await ledger.record_post("slack", "req-1", 0, "1700000000.000100")
    await ledger.record_post("slack", "req-1", 0, "duplicate ignored")
    await ledger.record_post("slack", "req-1", 2, "1700000000.000300")
    await db.dispose()

    again = Database(database_url)
    try:
        posted = await EventLedger(again).posted("slack", "req-1")
        assert posted == {0: "1700000000.000100", 2: "1700000000.000300"}
        assert await EventLedger(again).posted("slack", "req-2") == {}
    finally:
        await again.dispose()


async def test_an_unmarked_thread_is_no_longer_marked(database_url: str) -> None:
    db = Database(database_url)
    try:
        ledger = EventLedger(db)
        await ledger.mark_thread("discord", "G1", "C1", "T1")
        await ledger.mark_thread("discord", "G1", "C1", "T2")
        assert await ledger.unmark_thread("discord", "G1", "C1", "T1") is True
        assert await ledger.unmark_thread("discord", "G1", "C1", "T1") is False  # already gone
        assert not await ledger.thread_marked("discord", "G1", "C1", "T1")
        assert await ledger.thread_marked("discord", "G1", "C1", "T2")  # others stay
        await ledger.mark_thread("discord", "G1", "C1", "T1")  # it can be marked again
        assert await ledger.thread_marked("discord", "G1", "C1", "T1")
    finally:
        await db.dispose()
