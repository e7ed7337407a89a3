"""Work that must not be cut halfway by a cancellation.

A process's stop cancels its tasks wherever they are. Most work may be cut, but some leaves
things worse cut than finished: a commit cut halfway has no known outcome, and a database
connection whose rollback is cut goes back to the pool for the pool to clean up (SQLAlchemy
logs that as an error, with a traceback). `to_the_end` lets such work finish first and then
lets the cancellation go on, within a bound, so that a database that stopped answering does
not hold up the stop.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable
from typing import TypeVar

T = TypeVar("T")

FINISH_WITHIN = 5.0  # seconds cancelled work may take to finish before it is cut after all


async def to_the_end(work: Awaitable[T], within: float = FINISH_WITHIN) -> T:
    """`work`'s result; when the calling task is cancelled meanwhile, `work` goes on for up to
    `within` seconds (then it is cancelled too) and the cancellation is raised after it."""
    task = asyncio.ensure_future(work)
    try:
        return await asyncio.shield(task)
    except asyncio.CancelledError:
        await asyncio.wait([task], timeout=within)
        task.cancel()
        raise


__all__ = ["FINISH_WITHIN", "to_the_end"]
