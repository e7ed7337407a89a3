"""Work an adapter starts after acknowledging an event, tracked so shutdown can finish it.

Platforms want a fast ack (Slack: 3 s, Discord: 3 s for interactions); the answer is produced
in a task. The set keeps strong references (asyncio only keeps weak ones), failures are
logged instead of vanishing, and `drain` lets in-flight answers finish before the process
exits.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable, Coroutine
from typing import Any

log = logging.getLogger(__name__)

# A note posted as an answer is cut must fit before the shutdown backstop (3 s after the bound).
LAST_WORD_TIMEOUT = 1.5


async def last_word(post: Callable[[], Awaitable[object]]) -> None:
    """Post a short note from a task that is being cancelled (shutdown cut its answer), so the
    person who asked is not left waiting for an answer that will never come. Bounded and
    best-effort: a note that cannot go out in time is logged, never retried."""
    try:
        await asyncio.wait_for(post(), LAST_WORD_TIMEOUT)
    except Exception as exc:  # includes TimeoutError
        log.warning("could not post the note about a cut answer (%s)", type(exc).__name__)


class BackgroundWork:
    def __init__(self, label: str) -> None:
        self._label = label
        self._tasks: set[asyncio.Task[None]] = set()

    def __len__(self) -> int:
        return len(self._tasks)

    def spawn(self, work: Coroutine[Any, Any, None]) -> None:
        task = asyncio.create_task(work)
        self._tasks.add(task)
        task.add_done_callback(self._done)

    def _done(self, task: asyncio.Task[None]) -> None:
        self._tasks.discard(task)
        if not task.cancelled() and task.exception() is not None:
            exc = task.exception()
            log.error("%s work failed: %s", self._label, type(exc).__name__, exc_info=exc)

    async def idle(self) -> None:
        """Wait until all work, including work started meanwhile, has finished."""
        while self._tasks:
            await asyncio.wait(list(self._tasks))

    async def drain(self, grace: float) -> int:
        """Let work in flight finish for up to `grace` seconds, then cancel the rest; returns
        how many were cancelled."""
        if not self._tasks:
            return 0
        log.info("waiting for %d %s answers in flight", len(self._tasks), self._label)
        _, pending = await asyncio.wait(list(self._tasks), timeout=grace)
        for task in pending:
            task.cancel()
        if pending:
            log.warning("%s: %d answer(s) still in flight cancelled", self._label, len(pending))
            await asyncio.wait(pending)
        return len(pending)
