"""A progress line in the thread while a request is worked on, edited at most once a second.

Core reports status lines ("running `grep_code`...") through its `Progress` callback and must
never wait on Slack for that: `update` only records the text and schedules a flush. The line
is posted once work has taken `delay` seconds (quick answers get no progress noise), then
edited with the latest text no more than once per `interval`; `finish` removes it.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING

from adapters.slack.mrkdwn import to_mrkdwn

if TYPE_CHECKING:
    from slack_sdk.web.async_client import AsyncWebClient

    from adapters.slack.config import SlackConfig

log = logging.getLogger("threadline.slack")

Post = Callable[[str], Awaitable[str]]  # text -> message id
Edit = Callable[[str, str], Awaitable[None]]  # message id, text
Delete = Callable[[str], Awaitable[None]]  # message id


class ProgressLine:
    def __init__(
        self,
        post: Post,
        edit: Edit,
        delete: Delete,
        *,
        delay: float = 3.0,
        interval: float = 1.0,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self._post, self._edit, self._delete = post, edit, delete
        self._delay, self._interval, self._clock = delay, interval, clock
        self._started = clock()
        self._latest: str | None = None
        self._shown: str | None = None
        self._message: str | None = None
        self._last_write = 0.0
        self._flush: asyncio.Task[None] | None = None
        self._lock = asyncio.Lock()
        self._done = False
        self.writes = 0  # posts + edits, for tests and metrics

    async def update(self, text: str) -> None:
        """The `core.Progress` callback: record, schedule, return at once."""
        if self._done:
            return
        self._latest = text
        if self._flush is None or self._flush.done():
            self._flush = asyncio.create_task(self._flush_later(self._next_write_at()))

    def _next_write_at(self) -> float:
        if self._message is None:
            return self._started + self._delay
        return self._last_write + self._interval

    async def _flush_later(self, at: float) -> None:
        wait = at - self._clock()
        if wait > 0:
            await asyncio.sleep(wait)
        async with self._lock:
            if self._done or self._latest is None or self._latest == self._shown:
                return
            text = self._latest
            try:
                if self._message is None:
                    self._message = await self._post(text)
                else:
                    await self._edit(self._message, text)
            except Exception as exc:  # a courtesy: never fails the request
                log.warning("progress line update failed: %s", type(exc).__name__)
                return
            self._shown, self._last_write = text, self._clock()
            self.writes += 1
        if self._latest != self._shown and not self._done:  # newer text arrived meanwhile
            self._flush = asyncio.create_task(self._flush_later(self._next_write_at()))

    async def finish(self) -> None:
        """Stop updating and remove the line if it was posted."""
        self._done = True
        flush = self._flush
        if flush is not None and not flush.done():
            if self._lock.locked():
                await asyncio.wait([flush])  # a write is in flight: let it land, then delete it
            else:
                flush.cancel()  # still waiting for its turn: nothing was written
        async with self._lock:
            message, self._message = self._message, None
        if message is not None:
            try:
                await self._delete(message)
            except Exception as exc:
                log.warning("removing the progress line failed: %s", type(exc).__name__)


def progress_line(
    client: AsyncWebClient, channel: str, thread: str | None, config: SlackConfig
) -> ProgressLine:
    """A progress line in `thread` (None: the channel), written as mrkdwn through `client`."""

    async def post(text: str) -> str:
        resp = await client.chat_postMessage(
            channel=channel, thread_ts=thread, text=to_mrkdwn(text)
        )
        return str(resp["ts"])

    async def edit(ts: str, text: str) -> None:
        await client.chat_update(channel=channel, ts=ts, text=to_mrkdwn(text))

    async def delete(ts: str) -> None:
        await client.chat_delete(channel=channel, ts=ts)

    return ProgressLine(
        post, edit, delete, delay=config.progress_after, interval=config.progress_interval
    )
