"""A chat adapter: outbox messages (digests, late replies) posted to an incoming webhook. The
worked example of docs/extending.md.

It implements `core.adapter.ChatAdapter` and nothing else: core never names a platform, so a
new one is a registered name (`core.platforms.Platforms`) plus an adapter, drained by the same
loop that serves Slack, Discord and the console (`bot.delivery.delivering`).
"""

from __future__ import annotations

import aiohttp

from core.outbox import DeliveryError, OutboxItem
from core.platforms import Platforms

PLATFORM = "webhook"


class WebhookAdapter:
    """POSTs each message as JSON to `url`; the receiver answers `{"id": ...}`."""

    platform = PLATFORM

    def __init__(self, url: str, *, timeout: float = 10.0) -> None:
        self._url = url
        self._timeout = aiohttp.ClientTimeout(total=timeout)
        self._session: aiohttp.ClientSession | None = None

    async def start(self) -> None:
        self._session = aiohttp.ClientSession(timeout=self._timeout)

    async def deliver_outbox(self, item: OutboxItem) -> str:
        if self._session is None:
            raise RuntimeError("WebhookAdapter.start() was not awaited")
        m = item.message
        # Delivery is at least once (item.attempts > 0: an earlier try may have posted), so the
        # key goes along and the receiver drops a repeat.
        payload = {"key": m.key, "channel": m.channel, "thread": m.thread, "title": m.title}
        async with self._session.post(self._url, json={**payload, "text": m.text}) as response:
            if 400 <= response.status < 500:  # retrying cannot help: the row fails at once
                raise DeliveryError(f"the webhook refused it ({response.status})", retry=False)
            response.raise_for_status()  # anything else raised is retried with backoff
            body = await response.json()
        return str(body["id"])

    async def idle(self) -> None:
        """It starts no answers of its own: the drain awaits each delivery."""

    async def stop(self, grace: float) -> int:
        if self._session is not None:
            await self._session.close()
        return 0  # no answers in flight to cut


def register(platforms: Platforms) -> None:
    """Make the platform known, so the outbox accepts messages for it."""
    platforms.register(PLATFORM)
