"""What this process has connected: each chat platform it serves, with a function saying its
state now ("ok" or why not). The adapters' starters in bot/ register them; the heartbeat
(`bot.upkeep`) writes them to the process board the console's overview reads."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Callable


def connected() -> str:
    return "ok"


class Presence:
    def __init__(self) -> None:
        self._states: dict[str, Callable[[], str]] = {}
        self._changed = asyncio.Event()

    def track(self, platform: str, state: Callable[[], str] = connected) -> None:
        self._states[platform] = state
        self.poke()

    def drop(self, platform: str) -> None:
        self._states.pop(platform, None)
        self.poke()

    def poke(self) -> None:
        """A state changed (connected, lost): the heartbeat writes it now, not at its next beat."""
        self._changed.set()

    async def changed(self, within: float) -> None:
        """Returns when something changed, or after `within` seconds."""
        # asyncio.timeout, not wait_for: 3.11's wait_for could miss a cancellation that came
        # with the event being set, and a stopping process then waited on it forever.
        with contextlib.suppress(TimeoutError):
            async with asyncio.timeout(within):
                await self._changed.wait()
        self._changed.clear()

    def states(self) -> dict[str, str]:
        found: dict[str, str] = {}
        for platform, state in self._states.items():
            try:
                found[platform] = state()
            except Exception as exc:  # a state read must never stop the heartbeat
                found[platform] = f"unknown ({type(exc).__name__})"
        return found
