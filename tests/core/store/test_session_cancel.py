"""`Database.session` under cancellation: a process's stop cancels its tasks wherever they
are, often in the middle of a heartbeat or an outbox write. The transaction must still end one
way or the other, the connection must go back to the pool cleanly, and nothing may be logged as
an error (a cut rollback made SQLAlchemy's pool log "Exception during reset" with a traceback
on every such stop, which the CI's shutdown tests caught)."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable
from datetime import UTC, datetime

import pytest
from sqlalchemy.pool import QueuePool

from core.operator.processes import ProcessBoard, ProcessInfo
from core.store.engine import Database

PINNED = datetime(2026, 12, 4, 12, 0, tzinfo=UTC)


async def test_a_session_cancelled_anywhere_ends_its_transaction_and_logs_nothing(
    open_db: Callable[[], Database], caplog: pytest.LogCaptureFixture
) -> None:
    db = open_db()
    await db.create_all()
    board = ProcessBoard(db, lambda: PINNED)
    pool = db.engine.pool
    assert isinstance(pool, QueuePool)
    caplog.set_level(logging.WARNING)
    written: list[str] = []
    # Cancelled after 0..59 turns of the loop and after growing pauses: somewhere in the begin,
    # the statements, the commit or the return of the connection.
    for step in range(60):
        me = ProcessInfo(id=f"p{step}", command="run", host="h", pid=step, started_at=PINNED)
        task = asyncio.create_task(board.beat(me))
        for _ in range(step):
            await asyncio.sleep(0)
        await asyncio.sleep(step * 0.0002)
        task.cancel()
        done = await asyncio.gather(task, return_exceptions=True)
        if done[0] is None:
            written.append(me.id)
        assert pool.checkedout() == 0, step

    # Each beat either committed or left nothing; a beat that finished before the cancel is
    # there, and the database still takes writes.
    live = {p.id for p in await board.live()}
    assert set(written) <= live
    await board.beat(ProcessInfo(id="after", command="run", host="h", pid=1, started_at=PINNED))
    assert "after" in {p.id for p in await board.live()}
    assert [r.getMessage() for r in caplog.records if r.levelno >= logging.WARNING] == []
