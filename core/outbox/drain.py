"""Draining the outbox: the loop the process that owns a platform's connection runs, with
the adapter's delivery function (see `core.outbox` for the protocol)."""

from __future__ import annotations

import asyncio
import logging
import os
import secrets
import socket
from datetime import datetime, timedelta

from core.outbox.store import DEFAULT_LEASE, Outbox
from core.outbox.types import Deliver, DeliveryError, OutboxItem

log = logging.getLogger("threadline.outbox")

PRUNE_EVERY = timedelta(hours=1)


def owner_id() -> str:
    """This process as a lease owner: host, pid and a random part (pids are reused)."""
    return f"{socket.gethostname()[:80]}:{os.getpid()}:{secrets.token_hex(4)}"


async def drain(
    outbox: Outbox,
    platform: str,
    owner: str,
    deliver: Deliver,
    *,
    every: float = 2.0,
    stop: asyncio.Event | None = None,
    limit: int = 10,
    lease: timedelta = DEFAULT_LEASE,
) -> None:
    """Deliver `platform`'s due messages until `stop` is set (or the task is cancelled):
    claim, deliver one by one in order, record; poll every `every` seconds (at once when this
    process enqueued something). A delivery that takes longer than half the lease is abandoned
    and retried, and no delivery of a batch starts later than half the lease after its claim
    (the rest is handed back), so none runs on while another drainer takes the row over.
    Leases are released on the way out."""
    stop = stop or asyncio.Event()
    nudge = outbox.nudge_event(platform)
    budget = lease.total_seconds() / 2
    pruned_at: datetime | None = None
    try:
        while not stop.is_set():
            nudge.clear()
            try:
                items = await outbox.claim(platform, owner, limit=limit, lease=lease)
            except Exception:
                log.exception("outbox: claiming %s messages failed", platform)
                items = []
            loop = asyncio.get_running_loop()
            claimed_at = loop.time()
            for n, item in enumerate(items):
                if stop.is_set() or loop.time() - claimed_at > budget:
                    await _hand_back(outbox, items[n:])
                    break
                await _deliver_one(outbox, item, deliver, budget)
            if pruned_at is None or outbox.now() - pruned_at >= PRUNE_EVERY:
                pruned_at = outbox.now()
                try:
                    await outbox.prune()
                except Exception:
                    log.exception("outbox: pruning finished rows failed")
            if len(items) == limit:
                continue  # more may be due
            await _wait_any(stop, nudge, every)
    finally:
        try:
            await asyncio.shield(outbox.release(owner))
        except Exception:
            log.exception("outbox: releasing the leases of %s failed", owner)


async def _deliver_one(outbox: Outbox, item: OutboxItem, deliver: Deliver, budget: float) -> None:
    try:
        async with asyncio.timeout(budget):
            ref = await deliver(item)
    except DeliveryError as exc:
        await _record_failure(outbox, item, exc.reason, retry=exc.retry)
    except TimeoutError:
        await _record_failure(outbox, item, f"no answer within {budget:g} s", retry=True)
    except Exception as exc:
        log.exception("outbox: delivering %s failed unexpectedly", item.message.key)
        await _record_failure(outbox, item, f"{type(exc).__name__}: {exc}", retry=True)
    else:
        try:
            await outbox.delivered(item, ref)
        except Exception:
            # Posted but not recorded: the lease expires, the next attempt finds the post.
            log.exception("outbox: recording the delivery of %s failed", item.message.key)


async def _hand_back(outbox: Outbox, items: list[OutboxItem]) -> None:
    for item in items:
        try:
            await asyncio.shield(outbox.unclaim(item))
        except Exception:
            log.exception("outbox: handing back %s failed", item.message.key)


async def _record_failure(outbox: Outbox, item: OutboxItem, error: str, *, retry: bool) -> None:
    try:
        await outbox.failed(item, error, retry=retry)
    except Exception:
        log.exception("outbox: recording the failure of %s failed", item.message.key)


async def _wait_any(stop: asyncio.Event, nudge: asyncio.Event, every: float) -> None:
    waits = [asyncio.ensure_future(stop.wait()), asyncio.ensure_future(nudge.wait())]
    try:
        await asyncio.wait(waits, timeout=every, return_when=asyncio.FIRST_COMPLETED)
    finally:
        for w in waits:
            w.cancel()
        await asyncio.gather(*waits, return_exceptions=True)


__all__ = ["PRUNE_EVERY", "drain", "owner_id"]
