"""The process board: heartbeats of long-running processes and each chat platform's state."""

from __future__ import annotations

from collections.abc import Callable
from datetime import timedelta

from core.operator.processes import ProcessBoard, ProcessInfo, platform_readiness
from core.store.engine import Database
from tests.support.clocks import Clock


def info(pid: int, clock: Clock, **platforms: str) -> ProcessInfo:
    return ProcessInfo(
        id=f"host-{pid}-x",
        command="worker" if "discord" in platforms else "serve",
        host="host",
        pid=pid,
        started_at=clock.now,
        platforms=platforms,
    )


async def test_live_processes_their_platforms_and_the_ones_that_stopped(
    open_db: Callable[[], Database], clock: Clock
) -> None:
    db = open_db()
    await db.create_all()
    board = ProcessBoard(db, clock)
    web = info(1, clock, slack="ok")
    worker = info(2, clock, discord="connecting to the gateway")
    await board.beat(web)
    await board.beat(worker)
    clock.now += timedelta(seconds=5)
    await board.beat(info(2, clock, discord="ok"))  # the same process, now connected
    live = await board.live()
    assert [(p.pid, dict(p.platforms)) for p in live] == [
        (1, {"slack": "ok"}),
        (2, {"discord": "ok"}),
    ]
    assert live[1].seen_at == clock.now and live[1].started_at == clock.now - timedelta(seconds=5)

    # A process that stopped cleanly is gone; one that died stops counting after a minute.
    await board.gone(worker.id)
    clock.now += timedelta(seconds=61)
    assert await board.live() == []
    # ... and its row is deleted a day later by whoever beats next.
    clock.now += timedelta(days=1)
    await board.beat(info(3, clock))
    assert [p.pid for p in await board.live()] == [3]
    async with db.session() as s:
        from sqlalchemy import text

        count = (
            await (await s.connection()).execute(text("SELECT count(*) FROM process_beats"))
        ).scalar()
    assert count == 1


def test_platform_readiness_over_processes() -> None:
    from datetime import UTC, datetime

    at = datetime(2026, 1, 1, tzinfo=UTC)

    def proc(pid: int, **platforms: str) -> ProcessInfo:
        return ProcessInfo(str(pid), "serve", "h", pid, at, at, platforms)

    configured = {"slack": True, "discord": True}
    assert platform_readiness([], configured) == {
        "discord": "not connected by any running process",
        "slack": "not connected by any running process",
    }
    both = [
        proc(1, slack="ok"),
        proc(2, discord="connecting to the gateway"),
        proc(3, discord="ok"),
    ]
    assert platform_readiness(both, configured) == {"discord": "ok", "slack": "ok"}
    # Not configured here, but a process reports it: shown; configured nowhere: not shown.
    assert platform_readiness([proc(1, discord="gateway closed")], {"slack": False}) == {
        "discord": "gateway closed"
    }
