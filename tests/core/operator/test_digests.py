"""The console's digests (core.operator.digests) and "run now" (DigestRunner.run_now), on
SQLite and PostgreSQL: two processes running one digest now at once post it once, and the
scheduled period after it still runs; the board lists one tenant's subscriptions only, with
their last runs and next run in their own zone."""

from __future__ import annotations

import asyncio
import tempfile
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from sqlmodel import select

from core.code.repos import RepoStore
from core.digest.runner import DigestRunner, is_manual, manual_slot, standalone_runner
from core.digest.store import DigestStore
from core.operator.digests import RUNS_SHOWN, DigestBoard
from core.policy import Policy
from core.store.models import DigestSubscription, OutboxRow
from tests.support.clocks import Clock


def runner(db: Any, clock: Clock, owner: str) -> DigestRunner:
    return standalone_runner(
        db,
        policy=Policy.from_dict({"defaults": {"permissions": ["ask"]}}),
        repos=RepoStore(db, Path(tempfile.mkdtemp())),
        owner=owner,
        clock=clock,
    )


async def subscribe(db: Any, clock: Clock, **fields: Any) -> DigestSubscription:
    values: dict[str, Any] = {
        "platform": "slack",
        "tenant": "T1",
        "channel": "C1",
        "created_by": "U1",
        "kind": "activity",
        "cron": "0 * * * *",
        "tz": "UTC",
        **fields,
    }
    return await DigestStore(db, clock).add(DigestSubscription(**values))


async def test_run_now_posts_once_across_processes_and_leaves_the_schedule_alone(
    open_db: Callable[[], Any], clock: Clock
) -> None:
    db = open_db()
    await db.create_all()
    sub = await subscribe(db, clock)
    clock.now += timedelta(minutes=40)  # 10:10, past the 10:00 period
    first, second = runner(open_db(), clock, "p1"), runner(open_db(), clock, "p2")
    outcomes = await asyncio.gather(first.run_now(sub), second.run_now(sub), first.run_now(sub))
    assert sorted(outcomes) == ["posted", "taken", "taken"]
    # The period that was due runs as scheduled, on its own key.
    assert await second.run_due() == ["posted"]
    clock.now += timedelta(seconds=60)  # the next minute: a new run of its own
    assert await first.run_now(sub) == "posted"
    async with db.session() as s:
        keys = [r.key for r in (await s.exec(select(OutboxRow))).all()]
    assert sorted(keys) == [
        f"digest:{sub.id}:2026-12-03T10:00:00+00:00",
        f"digest:{sub.id}:2026-12-03T10:10:30+00:00",
        f"digest:{sub.id}:2026-12-03T10:11:30+00:00",
    ]


def test_a_manual_slot_is_inside_its_minute() -> None:
    at = datetime(2026, 12, 3, 10, 10, 59, 999, tzinfo=UTC)
    assert manual_slot(at) == datetime(2026, 12, 3, 10, 10, 30, tzinfo=UTC)
    assert is_manual(manual_slot(at)) and not is_manual(at.replace(second=0))


async def test_the_board_shows_one_tenant_with_last_runs_and_next_run_in_its_zone(
    open_db: Callable[[], Any], clock: Clock
) -> None:
    db = open_db()
    await db.create_all()
    berlin = await subscribe(db, clock, channel="ops", tz="Europe/Berlin", cron="0 12 * * *")
    hourly = await subscribe(db, clock, channel="dev", skip_empty=True, repo="api")
    paused = await subscribe(db, clock, channel="dev", paused=True)
    theirs = await subscribe(db, clock, tenant="T2")
    work = runner(db, clock, "p1")
    for _ in range(RUNS_SHOWN + 2):
        clock.now += timedelta(hours=1)
        await work.run_due()
    board = DigestBoard(db, clock)

    groups = await board.channels("slack", "T1")
    assert [(g.channel, [d.id for d in g.digests]) for g in groups] == [
        ("dev", [hourly.id, paused.id]),
        ("ops", [berlin.id]),
    ]
    dev, ops = groups
    runs = dev.digests[0].runs
    assert len(runs) == RUNS_SHOWN and runs[0].scheduled_for > runs[-1].scheduled_for
    assert {r.state for r in runs} == {"empty"}  # nothing happened: --skip-empty
    assert dev.digests[0].options == ("repo api", "skips empty periods")
    assert dev.digests[1].paused and dev.digests[1].next_run is None
    assert dev.digests[0].preset == "hourly"
    # 16:30 UTC now: Berlin's 12:00 ran today (11:00 UTC); the next is tomorrow, in its zone.
    nxt = ops.digests[0].next_run
    assert nxt is not None and (nxt.day, nxt.hour, nxt.tzname()) == (4, 12, "CET")
    [ran] = ops.digests[0].runs
    assert (ran.scheduled_for.hour, ran.scheduled_for.tzname(), ran.manual) == (12, "CET", False)

    assert [g.channel for g in await board.channels("slack", "T1", state="paused")] == ["dev"]
    assert [g.channel for g in await board.channels("slack", "T1", channel="ops")] == ["ops"]
    assert await board.channel_names("slack", "T1") == ("dev", "ops")
    assert await board.find("slack", "T1", theirs.id or 0) is None
    assert await board.find("slack", "T2", theirs.id or 0) is not None
    assert await board.find("slack", "T1", 10**30) is None
