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
from collections import deque
from collections.abc import Awaitable, Callable, Hashable
from dataclasses import dataclass, field

EDIT_EVERY = 1.0  # seconds between two edits of one streamed message
# Edits to one channel: Discord allows about 5 in 5 s; one fewer leaves room for an edit that
# arrives later than it was planned (network, a retried request).
CHANNEL_WRITES, CHANNEL_PER = 4, 5.0
PRUNE_AT = 1_024  # channels remembered before the quiet ones are forgotten
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


class ChannelBudget:
    """Edits to one channel, shared by every answer written there: at most `writes` in any
    `per` seconds. One answer alone stays at its own pace; several answers in one busy channel
    share the channel's budget (each then edits less often: more words per edit), so together
    they stay under the platform's limit instead of running into 429s."""

    def __init__(self, writes: int = CHANNEL_WRITES, per: float = CHANNEL_PER) -> None:
        if writes < 1 or per <= 0:
            raise ValueError("a channel budget needs at least one write per positive interval")
        self.writes = writes
        self.per = per
        self._slots: dict[Hashable, deque[float]] = {}  # channel -> times of writes reserved

    @classmethod
    def per_second(cls, rate: float) -> ChannelBudget:
        """Writes evenly spaced: one every `1 / rate` seconds, no bursts."""
        return cls(writes=1, per=1.0 / rate)

    def reserve(self, channel: Hashable, now: float) -> float:
        """Reserve the next write to `channel`: returns when it may go out (`now` or later)."""
        if len(self._slots) > PRUNE_AT:  # forget channels (threads) quiet for a window
            quiet = [
                c for c, times in self._slots.items() if not times or times[-1] <= now - self.per
            ]
            for key in quiet:
                del self._slots[key]
        slots = self._slots.setdefault(channel, deque())
        while slots and slots[0] <= now - self.per:
            slots.popleft()
        at = now if len(slots) < self.writes else max(now, slots[-self.writes] + self.per)
        slots.append(at)
        return at


@dataclass(frozen=True)
class Pacing:
    edit_every: float = EDIT_EVERY
    first_flush: float = FIRST_FLUSH
    clock: Callable[[], float] = time.monotonic
    sleep: Callable[[float], Awaitable[None]] = asyncio.sleep
    counts: StreamCounts | None = None
    # Shared by the answers of one adapter (None: each answer only keeps its own pace).
    channel_budget: ChannelBudget | None = field(default_factory=ChannelBudget)

    def __post_init__(self) -> None:
        if self.edit_every < 0 or self.first_flush < 0:
            raise ValueError("pacing intervals cannot be negative")

    async def for_channel(self, channel: str | None) -> None:
        """Wait for a write to `channel` within the channel's budget (none: at once)."""
        if self.channel_budget is not None and channel is not None:
            await self.until(self.channel_budget.reserve(channel, self.clock()))

    async def until(self, at: float) -> None:
        """Wait until the pacing clock reads `at` (at once if it is past)."""
        delay = at - self.clock()
        if delay > 0:
            await self.sleep(delay)


__all__ = ["EDIT_EVERY", "FIRST_FLUSH", "ChannelBudget", "Pacing", "StreamCounts"]
