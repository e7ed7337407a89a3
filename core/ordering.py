"""One request at a time per thread, in arrival order; different threads run concurrently."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Hashable
from contextlib import asynccontextmanager


class KeyedLocks:
    def __init__(self) -> None:
        self._locks: dict[Hashable, tuple[asyncio.Lock, int]] = {}

    @asynccontextmanager
    async def hold(self, key: Hashable) -> AsyncIterator[None]:
        # asyncio.Lock wakes waiters first-in first-out, which gives arrival order.
        lock, users = self._locks.get(key, (asyncio.Lock(), 0))
        self._locks[key] = (lock, users + 1)
        try:
            async with lock:
                yield
        finally:
            lock, users = self._locks[key]
            if users == 1:
                del self._locks[key]  # no one else waits: do not keep a lock per thread forever
            else:
                self._locks[key] = (lock, users - 1)

    def __len__(self) -> int:
        return len(self._locks)

    def waiting(self) -> int:
        """Requests queued behind another request of their thread (the metrics' queue depth)."""
        return sum(users - 1 for _lock, users in self._locks.values())
