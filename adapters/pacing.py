"""How fast an adapter may rewrite a message it is streaming an answer into.

Platforms rate-limit edits (Discord: a handful per few seconds per channel). An answer written at
50 tokens/s would edit its message 50 times a second if every word were sent at once; instead
the first words go out at once (people see the answer start) and later words are batched into
at most one edit per `edit_every` seconds. The platform's own 429 handling stays in place for
what pacing cannot foresee (other bots' traffic in the same channel).

The clock and the sleep are injectable so tests run without the wall clock and a benchmark can
count what was sent (`StreamCounts`).
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field

EDIT_EVERY = 1.0  # seconds between two edits of one streamed message
FIRST_FLUSH = 0.5  # seconds the first words gather more before they are posted (a phrase,
# not one word; a short answer from a fast model arrives whole, in one post without edits)


@dataclass
class StreamCounts:
    """What streamed answers sent, for a benchmark or a test (one per adapter, shared)."""

    posts: int = 0
    edits: int = 0
    refused_edits: int = 0  # edits the platform refused (message deleted, no permission)
    # Seconds from an answer's first words arriving to their being visible, one per answer.
    first_text: list[float] = field(default_factory=list)


@dataclass(frozen=True)
class Pacing:
    edit_every: float = EDIT_EVERY
    first_flush: float = FIRST_FLUSH
    clock: Callable[[], float] = time.monotonic
    sleep: Callable[[float], Awaitable[None]] = asyncio.sleep
    counts: StreamCounts | None = None

    def __post_init__(self) -> None:
        if self.edit_every < 0 or self.first_flush < 0:
            raise ValueError("pacing intervals cannot be negative")

    async def until(self, at: float) -> None:
        """Wait until the pacing clock reads `at` (at once if it is past)."""
        delay = at - self.clock()
        if delay > 0:
            await self.sleep(delay)


__all__ = ["EDIT_EVERY", "FIRST_FLUSH", "Pacing", "StreamCounts"]
