"""Outbox delivery in the long-running processes: the process that owns a platform's
connection drains that platform's outbox messages (`core.outbox.drain`) through its
`ChatAdapter` while it serves — Slack in `serve` and in `run` (HTTP or Socket Mode), Discord
in `worker` and `run` (once the gateway is ready), the console in `run` without chat tokens,
and any platform a plugin registers the same way. Each process is a lease owner of its own
(`host:pid:random`); any number of them may drain the same platform."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager, suppress

from core.adapter import ChatAdapter
from core.outbox import Outbox, drain, owner_id

log = logging.getLogger(__name__)

DRAIN_EVERY = 2.0  # seconds between polls of the outbox (at once for this process's own)
STOP_GRACE = 20.0  # seconds the delivery in hand may take to finish on shutdown


@asynccontextmanager
async def delivering(
    outbox: Outbox,
    adapter: ChatAdapter,
    *,
    ready: Callable[[], Awaitable[None]] | None = None,
    stop: asyncio.Event | None = None,
    every: float = DRAIN_EVERY,
    grace: Callable[[], float] = lambda: STOP_GRACE,
    cut: Callable[[str], None] | None = None,
) -> AsyncIterator[None]:
    """Drain the outbox of `adapter`'s platform through it while the block runs: after
    `ready()` returned (if given), until the block ends or `stop` is set. On the way out the
    delivery in hand may finish (up to `grace()` seconds: what is left of the shutdown bound),
    then the leases are released for other processes (a cut delivery is retried by its
    ledger, without posting a part twice); `cut` is told when that happens."""
    platform = adapter.platform
    if outbox.platforms is not None and not outbox.platforms.known(platform):
        raise ValueError(f"platform {platform!r} is not registered: nothing is queued for it")
    done = asyncio.Event()
    owner = owner_id()

    async def run() -> None:
        if ready is not None and not await _first(ready(), done):
            return  # stopped before the platform was ready
        log.info("delivering %s outbox messages (as %s)", platform, owner)
        await drain(outbox, platform, owner, adapter.deliver_outbox, every=every, stop=done)

    async def forward() -> None:
        assert stop is not None
        await stop.wait()
        done.set()

    task = asyncio.create_task(run(), name=f"outbox-{platform}")
    watcher = asyncio.create_task(forward()) if stop is not None else None
    try:
        yield
    finally:
        done.set()
        if watcher is not None:
            watcher.cancel()
        try:
            await asyncio.wait_for(task, grace())  # cancels it (leases released) on timeout
        except TimeoutError:
            log.warning("the %s outbox delivery in hand was cut at the shutdown bound", platform)
            if cut is not None:
                cut(f"a {platform} outbox delivery")
        except asyncio.CancelledError:
            pass
        except Exception:
            log.exception("the %s outbox delivery stopped with an error", platform)
        if watcher is not None:
            with suppress(asyncio.CancelledError):
                await watcher


async def _first(ready: Awaitable[None], done: asyncio.Event) -> bool:
    """Wait for `ready` unless `done` comes first; True if ready."""
    waiting = asyncio.ensure_future(ready)
    stopping = asyncio.ensure_future(done.wait())
    try:
        await asyncio.wait({waiting, stopping}, return_when=asyncio.FIRST_COMPLETED)
    finally:
        for pending in (waiting, stopping):
            pending.cancel()
        await asyncio.gather(waiting, stopping, return_exceptions=True)
    return waiting.done() and not waiting.cancelled() and waiting.exception() is None
