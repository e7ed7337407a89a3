"""One retry schedule: exponential backoff with jitter, for every loop that retries.

Used by the outbox (a failed delivery waits 10 s, 20 s, 40 s ... up to 30 min), MCP reconnects
(1 s doubling to 60 s), Slack's re-delivery of a reply after a transient failure, and start-up
waiting for a schema another process is migrating. Jitter keeps processes that failed together
from retrying in step.
"""

from __future__ import annotations

import random
from dataclasses import dataclass

MAX_DOUBLINGS = 30  # past this every schedule sits at its limit; 2.0**1024 would overflow


@dataclass(frozen=True, slots=True)
class Backoff:
    """`first` seconds after the first failure, doubling up to `limit`, times a random factor
    drawn from `jitter`. With `strict`, the jitter never takes a pause past `limit` (the
    outbox's cap is a promise to operators); without, it may exceed it by the factor."""

    first: float = 1.0
    limit: float = 60.0
    jitter: tuple[float, float] = (0.8, 1.2)
    strict: bool = False

    def delay(self, failures: int, rng: random.Random | None = None) -> float:
        """Seconds to wait after the `failures`-th failure in a row."""
        raw = self.first * 2.0 ** max(0, min(failures - 1, MAX_DOUBLINGS))
        factor = (rng or random).uniform(*self.jitter)
        if self.strict:
            return min(self.limit, raw * factor)
        return min(self.limit, raw) * factor


__all__ = ["Backoff"]
