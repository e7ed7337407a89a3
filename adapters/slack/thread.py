"""The earlier messages of a Slack thread, for a message inside it (`core.request.ThreadReader`).

A thread is read with `conversations.replies` in the event's channel only (the bot token's
`channels:history` / `groups:history` / `im:history` / `mpim:history`), oldest first, paged
with its cursor. What was read stays in this process's cache per (tenant, channel, thread);
the next message in the same thread asks only for what is newer than the last message seen
(`oldest`). Bounded: at most `max_pages` pages per read and the newest `max_messages` kept per
thread, `max_threads` threads and `max_chars` characters of text cached (least recently used
threads dropped first). Edits and deletions Slack
reports (`message_changed`, `message_deleted` events, `observe`) are applied to what is cached.

Authors are shown by their display name (`users.info`, cached; the user id when it fails);
Threadline's own messages are marked `from_bot` (core has them in its history).
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections import OrderedDict
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, cast

from adapters.slack.errors import error_code
from adapters.slack.translate import from_slack_text, strip_mention
from core.request import ThreadMessage

if TYPE_CHECKING:
    from slack_sdk.web.async_client import AsyncWebClient

    from adapters.slack.filters import BotIdentity
    from adapters.slack.payloads import HistoryMessage, MessageEvent, SlackUser

log = logging.getLogger("threadline.slack")

PAGE_SIZE = 200  # conversations.replies' own suggested maximum
MAX_PAGES = 10  # per read: 2,000 messages at most
MAX_MESSAGES = 1_000  # kept per thread, the newest
MAX_THREADS = 256
MAX_CHARS = 8_000_000  # of message text cached in all, about 8-30 MB
MAX_TEXT = 4_000  # characters kept of one message (Slack allows 40,000)
NAME_TTL = 3600.0  # seconds a resolved display name is trusted
MAX_NAMES = 10_000
# users.info calls per read (authors past them are shown by their id), and at once: a thread of
# many authors must not spend the workspace's rate limit in one go.
MAX_LOOKUPS = 50
LOOKUPS_AT_ONCE = 8
# Messages that are not somebody saying something (joins, deletions, ...) are skipped.
_SAID = frozenset({"file_share", "thread_broadcast", "bot_message", "me_message"})

ThreadKey = tuple[str, str, str]  # tenant, channel, thread_ts


def ts_key(ts: str) -> tuple[int, int]:
    """A Slack timestamp (`1700000000.000100`) in its order."""
    seconds, _, micros = ts.partition(".")
    try:
        return int(seconds or 0), int(micros or 0)
    except ValueError:
        return 0, 0


@dataclass
class _Thread:
    messages: list[ThreadMessage] = field(default_factory=list)
    lock: asyncio.Lock = field(default_factory=asyncio.Lock)

    @property
    def chars(self) -> int:
        return sum(len(m.text) for m in self.messages)

    @property
    def last_ts(self) -> str | None:
        return self.messages[-1].at if self.messages else None


class ThreadCache:
    """Per process: the threads read so far and the display names resolved."""

    def __init__(
        self,
        client: AsyncWebClient,
        bot: BotIdentity,
        *,
        page_size: int = PAGE_SIZE,
        max_pages: int = MAX_PAGES,
        max_messages: int = MAX_MESSAGES,
        max_threads: int = MAX_THREADS,
        max_chars: int = MAX_CHARS,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self._client = client
        self._bot = bot
        self.page_size = page_size
        self.max_pages = max_pages
        self.max_messages = max_messages
        self.max_threads = max_threads
        self.max_chars = max_chars
        self._clock = clock
        self._threads: OrderedDict[ThreadKey, _Thread] = OrderedDict()
        self._names: dict[tuple[str, str], tuple[str, float]] = {}

    def observe(self, tenant: str, event: MessageEvent) -> None:
        """An edit or a deletion in a thread this process has read: the cache follows it."""
        subtype = event.get("subtype")
        if subtype == "message_changed" and "message" in event:
            changed = event["message"]
            thread = self._threads.get((tenant, event["channel"], changed.get("thread_ts", "")))
            if thread is not None:
                thread.messages = [
                    self._edited(m, changed) if m.at == changed["ts"] else m
                    for m in thread.messages
                    if m.at != changed["ts"] or _said(changed)
                ]
        elif subtype == "message_deleted" and "previous_message" in event:
            thread_ts = event["previous_message"].get("thread_ts", "")
            thread = self._threads.get((tenant, event["channel"], thread_ts))
            if thread is not None:
                gone = event.get("deleted_ts") or event["previous_message"]["ts"]
                thread.messages = [m for m in thread.messages if m.at != gone]

    def _edited(self, cached: ThreadMessage, changed: HistoryMessage) -> ThreadMessage:
        fresh = self._message(changed, {})
        return replace(fresh, author=cached.author, from_bot=cached.from_bot)

    def reader(self, tenant: str, channel: str, thread_ts: str, current_ts: str) -> SlackThread:
        return SlackThread(self, (tenant, channel, thread_ts), current_ts)

    async def read(self, key: ThreadKey, before: str) -> list[ThreadMessage]:
        """The thread's messages older than `before`, oldest first, fetching only what is
        newer than what this process has seen of it."""
        thread = self._threads.get(key)
        if thread is None:
            thread = self._threads[key] = _Thread()
            while len(self._threads) > self.max_threads:
                self._threads.popitem(last=False)
        self._threads.move_to_end(key)
        async with thread.lock:  # two mentions at once in one thread: one read
            newer = await self._fetch(key, thread.last_ts)
            if newer:
                seen = {m.at for m in thread.messages}
                fresh = [m for m in newer if m.at not in seen]
                merged = sorted([*thread.messages, *fresh], key=lambda m: ts_key(m.at))
                thread.messages = merged[-self.max_messages :]
                self._shrink(key)
            limit = ts_key(before)
            return [m for m in thread.messages if ts_key(m.at) < limit]

    def _shrink(self, keep: ThreadKey) -> None:
        """Least recently used threads dropped until the text cached fits `max_chars` (the
        thread just read stays, whatever its size)."""
        total = sum(t.chars for t in self._threads.values())
        for key in list(self._threads):
            if total <= self.max_chars:
                break
            if key != keep:
                total -= self._threads.pop(key).chars

    async def _fetch(self, key: ThreadKey, oldest: str | None) -> list[ThreadMessage]:
        tenant, channel, thread_ts = key
        raw: list[HistoryMessage] = []
        cursor: str | None = None
        for _ in range(self.max_pages):
            page = await self._client.conversations_replies(
                channel=channel, ts=thread_ts, limit=self.page_size, oldest=oldest, cursor=cursor
            )
            raw += page.get("messages") or []
            cursor = (page.get("response_metadata") or {}).get("next_cursor") or None
            if not page.get("has_more") or not cursor:
                break
        else:
            log.info("Slack: thread %s is long; the rest of it is read next time", thread_ts)
        said = [m for m in raw if m.get("ts") and _said(m)]
        if oldest is not None:  # Slack may repeat the parent whatever `oldest` says
            said = [m for m in said if ts_key(m["ts"]) > ts_key(oldest)]
        said = said[-self.max_messages :]
        names = await self._names_of(tenant, {m["user"] for m in said if "user" in m})
        return [self._message(m, names) for m in said]

    def _message(self, m: HistoryMessage, names: dict[str, str]) -> ThreadMessage:
        bot = self._bot
        ours = bool(bot.bot_id and m.get("bot_id") == bot.bot_id) or m.get("user") == bot.user_id
        if "user" in m:
            author = names.get(m["user"], m["user"])
        else:  # another app's message
            author = m.get("username") or str((m.get("bot_profile") or {}).get("name") or "an app")
        text = from_slack_text(strip_mention(m.get("text", ""), bot.user_id)).strip()
        files = tuple(
            f.get("name") or f.get("title") or "file"
            for f in m.get("files") or []
            if f.get("mode") != "tombstone"
        )
        return ThreadMessage(
            author=author, text=text[:MAX_TEXT], file_names=files, from_bot=ours, at=m["ts"]
        )

    async def _names_of(self, tenant: str, users: set[str]) -> dict[str, str]:
        now = self._clock()
        known: dict[str, str] = {}
        for user in users:
            hit = self._names.get((tenant, user))
            if hit is not None and now - hit[1] < NAME_TTL:
                known[user] = hit[0]
        missing = sorted(users - known.keys())[:MAX_LOOKUPS]
        if len(self._names) + len(missing) > MAX_NAMES:
            self._names.clear()
        gate = asyncio.Semaphore(LOOKUPS_AT_ONCE)

        async def lookup(user: str) -> str:
            async with gate:
                return await self._lookup(user)

        found = await asyncio.gather(*(lookup(u) for u in missing))
        for user, name in zip(missing, found, strict=True):
            self._names[(tenant, user)] = (name, now)
            known[user] = name
        return known

    async def _lookup(self, user: str) -> str:
        """The name people see for `user`; the id itself when Slack will not say."""
        from slack_sdk.errors import SlackApiError

        if user == self._bot.user_id:
            return "Threadline"
        try:
            found = await self._client.users_info(user=user)
        except SlackApiError as exc:
            log.info("Slack: users.info failed for a thread author (%s)", error_code(exc))
            return user
        info = cast("SlackUser", found.get("user") or {})
        profile = info.get("profile") or {}
        return (
            profile.get("display_name")
            or profile.get("real_name")
            or info.get("real_name")
            or info.get("name")
            or user
        )


@dataclass(frozen=True, slots=True)
class SlackThread:
    """A `core.request.ThreadReader` for one message inside a thread."""

    cache: ThreadCache = field(repr=False)
    key: ThreadKey
    current_ts: str

    async def earlier(self) -> Sequence[ThreadMessage]:
        return await self.cache.read(self.key, self.current_ts)


def _said(m: HistoryMessage) -> bool:
    subtype = m.get("subtype")
    return subtype is None or subtype in _SAID
