"""Helpers for outbox tests: an outbox that can be waited on, one
claim-and-deliver pass, and a simulated crash."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable

from core.outbox import DeliveryError, Outbox, OutboxItem, OutboxState
from tests.support.clocks import Clock

__all__ = ["Clock", "Crash", "WatchedOutbox", "crash_on_record", "deliver_due"]


class WatchedOutbox(Outbox):
    """An outbox whose outcomes (delivered, failed) can be awaited: no polling, no sleeps."""

    def __init__(self, *args: object, **kwargs: object) -> None:
        super().__init__(*args, **kwargs)  # type: ignore[arg-type]
        self.changed = asyncio.Condition()
        self.outcomes: list[tuple[str, str]] = []  # (key, "delivered" | "failed")

    async def delivered(self, item: OutboxItem, message_ref: str) -> None:
        await super().delivered(item, message_ref)
        await self._note(item, "delivered")

    async def failed(self, item: OutboxItem, error: str, *, retry: bool = True) -> None:
        await super().failed(item, error, retry=retry)
        await self._note(item, "failed")

    async def _note(self, item: OutboxItem, outcome: str) -> None:
        async with self.changed:
            self.outcomes.append((item.message.key, outcome))
            self.changed.notify_all()

    async def wait_outcomes(self, n: int, within: float = 15.0) -> list[tuple[str, str]]:
        async with asyncio.timeout(within), self.changed:
            await self.changed.wait_for(lambda: len(self.outcomes) >= n)
        return list(self.outcomes)

    async def status(self, key: str) -> OutboxState:
        state = await self.state(key)
        assert state is not None, f"no outbox row {key}"
        return state


async def deliver_due(
    outbox: Outbox, platform: str, deliver: Callable[[OutboxItem], Awaitable[str]], owner: str
) -> list[str]:
    """One pass of a drainer: claim what is due, deliver, record. Returns the outcomes."""
    outcomes = []
    for item in await outbox.claim(platform, owner):
        try:
            ref = await deliver(item)
        except DeliveryError as exc:
            await outbox.failed(item, exc.reason, retry=exc.retry)
            outcomes.append(f"failed: {exc.reason}")
        else:
            await outbox.delivered(item, ref)
            outcomes.append(f"delivered: {ref}")
    return outcomes


class Crash(BaseException):
    """The process dies here: nothing catches it, nothing after it runs."""


def crash_on_record(ledger: object, after: int) -> Callable[[], None]:
    """Make `ledger.record_post` succeed `after` times, then kill the delivery (the post it
    was to record went out). Returns a function that brings the process back."""
    original = ledger.record_post  # type: ignore[attr-defined]
    calls = 0

    async def record_post(*args: object, **kwargs: object) -> None:
        nonlocal calls
        calls += 1
        if calls > after:
            raise Crash
        await original(*args, **kwargs)

    ledger.record_post = record_post  # type: ignore[attr-defined]

    def restore() -> None:
        ledger.record_post = original  # type: ignore[attr-defined]

    return restore
