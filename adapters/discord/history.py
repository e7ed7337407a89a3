"""The earlier messages of a Discord thread, for a question asked inside it (`ThreadReader`).

Read through the REST API (`GET /channels/{thread}/messages`, 100 a page; the bot needs Read
Message History there) only when core asks, and only from that thread. The first read goes
back from the question (`before=`), at most `limit` messages; what was read is kept per thread
in this process, and a later question in the same thread reads only what came after the last
message seen (`after=`). Messages are returned oldest first, without the question itself and
anything after it; Threadline's own are marked `from_bot`. Edits and deletions of messages
already read are followed from the gateway (MESSAGE_UPDATE, MESSAGE_DELETE: the same process
gets a guild's events), and an archived or deleted thread is dropped; the cache is bounded
(`threads` threads, `limit` messages each).

A thread the bot may not read (no Read Message History, deleted) gives what was read before,
or nothing: the question is still answered.
"""

from __future__ import annotations

import asyncio
import logging
from collections import OrderedDict
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, cast

from adapters.discord.inbound import describe
from adapters.discord.lib import discord
from adapters.discord.translate import Names, message_text
from core.request import ThreadMessage

if TYPE_CHECKING:
    from adapters.discord.payloads import Message

log = logging.getLogger("threadline.discord")

PAGE = 100  # Discord's most messages per request
NO_PERMISSION = "; the bot needs Read Message History there"
# What people write (default, reply, slash-command and context-menu answers); the rest are
# system messages (joins, pins, renames, the thread's starter pointer).
CONVERSATION_TYPES = frozenset({0, 19, 20, 23})


def thread_message(raw: Message, me: int) -> ThreadMessage | None:
    """One REST message as core reads it; None for system messages and empty ones."""
    if raw.get("type", 0) not in CONVERSATION_TYPES:
        return None
    author = raw["author"]
    names = Names(
        users={int(u["id"]): _display_name(u) for u in raw.get("mentions") or []},
        roles={},
        channels={},
    )
    text = message_text(raw.get("content") or "", me, names)
    files = tuple(a["filename"] for a in raw.get("attachments") or [])
    if not text and not files:
        return None
    return ThreadMessage(
        author=_display_name(author),
        text=text,
        file_names=files,
        from_bot=int(author["id"]) == me,
        at=raw["id"],
    )


def _display_name(user: Mapping[str, Any]) -> str:
    return str(user.get("global_name") or user.get("username") or user.get("id"))


@dataclass
class _Thread:
    """What is known of one thread: `messages` (oldest first, at most `limit`) hold every
    message with an id below `until` (as far back as the limit reached); `seen` is the newest
    message id read (system messages included), where the next read starts."""

    messages: list[ThreadMessage] = field(default_factory=list)
    until: int | None = None  # None: nothing read yet
    seen: int | None = None
    lock: asyncio.Lock = field(default_factory=asyncio.Lock)


class ThreadHistory:
    """The process's cache of thread histories and the reads that fill it."""

    def __init__(
        self, http: discord.http.HTTPClient, *, limit: int = 1_000, threads: int = 256
    ) -> None:
        self.http = http
        self.limit = max(limit, 0)
        self.max_threads = threads
        self._threads: OrderedDict[int, _Thread] = OrderedDict()

    def reader(self, thread_id: int, message_id: int, me: int) -> DiscordThreadReader:
        return DiscordThreadReader(self, thread_id, message_id, me)

    def forget(self, thread_id: int) -> None:
        """An archived or deleted thread: what was read of it is dropped."""
        self._threads.pop(thread_id, None)

    def deleted(self, channel_id: int, message_ids: Iterable[int]) -> None:
        """Messages deleted on Discord are no longer given as context."""
        entry = self._threads.get(channel_id)
        if entry is not None:
            gone = {str(i) for i in message_ids}
            entry.messages = [m for m in entry.messages if m.at not in gone]

    def edited(self, channel_id: int, raw: Message, me: int) -> None:
        """A message edited on Discord (MESSAGE_UPDATE carries the whole message) is given as
        it reads now; one not read yet is left for the next read."""
        entry = self._threads.get(channel_id)
        if entry is None or "author" not in raw:
            return
        now = thread_message(raw, me)
        kept: list[ThreadMessage] = []
        for m in entry.messages:
            if m.at != raw["id"]:
                kept.append(m)
            elif now is not None:  # emptied by the edit: dropped
                kept.append(now)
        entry.messages = kept

    def _entry(self, thread_id: int) -> _Thread:
        entry = self._threads.get(thread_id)
        if entry is None:
            entry = self._threads[thread_id] = _Thread()
            while len(self._threads) > self.max_threads:
                self._threads.popitem(last=False)
        self._threads.move_to_end(thread_id)
        return entry

    async def before(self, thread_id: int, message_id: int, me: int) -> list[ThreadMessage]:
        """The messages of `thread_id` before `message_id`, oldest first."""
        if self.limit == 0:
            return []
        entry = self._entry(thread_id)
        async with entry.lock:
            try:
                if entry.until is None:
                    await self._read_back(entry, thread_id, message_id, me)
                elif entry.until < message_id:
                    await self._read_on(entry, thread_id, message_id, me)
            except discord.HTTPException as exc:
                hint = NO_PERMISSION if isinstance(exc, discord.Forbidden) else ""
                log.warning(
                    "Discord: cannot read the history of thread %s (%s)%s",
                    thread_id,
                    describe(exc),
                    hint,
                )
            earlier = [m for m in entry.messages if int(m.at) < message_id]
        return earlier[-self.limit :]

    async def _page(
        self, thread_id: int, limit: int, *, before: int | None = None, after: int | None = None
    ) -> list[Message]:
        """One `GET /channels/{thread}/messages` (newest first, as Discord returns them)."""
        page = await self.http.logs_from(thread_id, limit, before=before, after=after)
        return cast("list[Message]", page)

    async def _read_back(self, entry: _Thread, thread_id: int, message_id: int, me: int) -> None:
        """Pages back from `message_id` until the thread's start or `limit` messages. A read
        cut short (an error, core no longer waiting) keeps the newest pages it got."""
        raws: list[Message] = []
        before = message_id
        try:
            while len(raws) < self.limit:
                limit = min(PAGE, self.limit - len(raws))
                page = await self._page(thread_id, limit, before=before)
                raws += page
                if len(page) < limit:
                    break
                before = min(int(m["id"]) for m in page)
        except BaseException:
            if raws:
                self._keep_back(entry, raws, message_id, me)
            raise
        self._keep_back(entry, raws, message_id, me)

    def _keep_back(self, entry: _Thread, raws: list[Message], message_id: int, me: int) -> None:
        entry.messages = _converted(raws, me)[-self.limit :]
        entry.until = message_id
        entry.seen = max((int(m["id"]) for m in raws), default=None)

    async def _read_on(self, entry: _Thread, thread_id: int, message_id: int, me: int) -> None:
        """Pages forward from the last message seen; when more than `limit` came since, the
        thread is read back from `message_id` afresh (what lies between is past the limit).
        A read cut short keeps the pages it got (they follow on from what was known)."""
        raws: list[Message] = []
        after = entry.seen if entry.seen is not None else (entry.until or message_id) - 1
        try:
            while True:
                if len(raws) >= self.limit:
                    raws = []
                    await self._read_back(entry, thread_id, message_id, me)
                    return
                page = await self._page(thread_id, PAGE, after=after)
                raws += page
                if page:
                    after = max(int(m["id"]) for m in page)
                if len(page) < PAGE or after >= message_id:
                    break
        except BaseException:
            self._keep_on(entry, raws, me, None)
            raise
        self._keep_on(entry, raws, me, message_id)

    def _keep_on(
        self, entry: _Thread, raws: list[Message], me: int, message_id: int | None
    ) -> None:
        """Adds what a forward read got; `message_id` when it read up to there."""
        if raws:
            entry.seen = max(int(m["id"]) for m in raws)
            known = {m.at for m in entry.messages}
            new = [m for m in _converted(raws, me) if m.at not in known]
            # Kept: `limit` messages, and room for those from the question on (the question
            # itself, later ones), which are not earlier messages for it.
            entry.messages = (entry.messages + new)[-(self.limit + PAGE) :]
        if entry.seen is not None:
            entry.until = max(entry.until or 0, entry.seen + 1)
        if message_id is not None:
            entry.until = max(entry.until or 0, message_id)


def _converted(raws: Sequence[Message], me: int) -> list[ThreadMessage]:
    ordered = sorted(raws, key=lambda m: int(m["id"]))
    return [m for m in (thread_message(raw, me) for raw in ordered) if m is not None]


@dataclass(frozen=True, slots=True)
class DiscordThreadReader:
    """`core.request.ThreadReader` for one question: the thread's messages before it."""

    history: ThreadHistory = field(repr=False)
    thread_id: int
    message_id: int
    me: int

    async def earlier(self) -> Sequence[ThreadMessage]:
        return await self.history.before(self.thread_id, self.message_id, self.me)


__all__ = ["DiscordThreadReader", "ThreadHistory", "thread_message"]
