"""Streamed answers on Discord: the answer is written into a message that is edited as the
model writes it, instead of appearing all at once when it is done.

`StreamWriter.run(events)` reads `Core.stream`'s events and keeps the visible messages up to
date in the background; `finish(parts)` then makes them exactly what a non-streamed delivery
would have posted (`translate.render`), attachments after the text.

- The first words are posted at once (`Pacing.first_flush`); later words are batched into at
  most one edit per `Pacing.edit_every` (Discord rate-limits edits per channel; discord.py
  still handles a 429 we could not foresee). The final edit keeps that pace too.
- Before 2,000 characters the answer continues in a new message, at the boundary
  `split_markdown` would choose for the finished text (a code block open there is closed and
  reopened). A part is moved to its own message only once its end can no longer change, so
  the live split and the final one agree and settled messages are never edited again.
- Tool steps show as a status line at the end of the message being written ("_Searching code
  for `retry`…_"), or as the message itself before any text; the final text has none.
- A long command's progress (`Status` without any answer yet) is a note: in a channel a
  message of its own, removed when the answer is posted; for an app command the deferred
  response, which the answer then replaces. Notes keep their own pace (`note_every`).
- An edit Discord refuses (message deleted: 404; edits forbidden: 403) stops the live updates;
  `finish` then posts what is missing once: the whole part for a deleted message, the rest
  after what is visible for one that cannot be edited (nothing shown is repeated).
- A cancelled answer (shutdown) ends its visible message with `messages.ANSWER_CUT`.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import AsyncIterator, Callable, Sequence
from contextlib import AbstractAsyncContextManager, AsyncExitStack
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from adapters.background import last_word
from adapters.discord import feedback
from adapters.discord.lib import discord
from adapters.discord.live_text import live_split, status_line
from adapters.discord.surfaces import Ledger, Surface
from adapters.discord.translate import MESSAGE_LIMIT, Outgoing
from adapters.pacing import Pacing
from adapters.text import open_fence, split_markdown
from core import messages
from core.streaming import Finished, ReplyEvent, Status, TextDelta, ToolFinished, ToolStarted

if TYPE_CHECKING:
    pass

log = logging.getLogger("threadline.discord")


@dataclass
class _Shown:
    """A message the writer posted, as Discord shows it now."""

    handle: Any
    content: str  # all of it, status line included
    answer: str  # the answer's text in it (without a status line or an added fence closer)
    note: bool  # only a command's progress so far (never answer text or a tool step)
    written_at: float
    lost: str | None = None  # "gone" (deleted) / "refused" (edits forbidden): not edited again


@dataclass(frozen=True, slots=True)
class _View:
    content: str
    answer: str = ""
    note: bool = False


class StreamWriter:
    """One answer on Discord: `run` shows it while it is written, `finish` makes it final."""

    def __init__(
        self,
        surface: Surface,
        *,
        pacing: Pacing,
        note_every: float = 1.0,
        live: bool = True,
        typing: Callable[[], AbstractAsyncContextManager[None]] | None = None,
        ledger: Ledger | None = None,
        limit: int = MESSAGE_LIMIT,
    ) -> None:
        """`live=False` shows no words until `finish` (a personal answer that will go by DM,
        or streaming turned off), only a command's progress note; `typing` is shown until the
        first words are visible."""
        self._surface = surface
        self._pacing = pacing
        self._note_every = note_every
        self._words = live  # the answer's words and tool steps are shown as they come
        self._live = True  # updates go on (until one is refused: then `finish` does it all)
        self._typing = typing
        self._ledger = ledger
        self._limit = limit
        self._text = ""
        self._text_at: float | None = None  # when the first words arrived
        self._tools: dict[str, str] = {}  # tool steps running: call id -> label
        self._status: str | None = None  # the latest progress line of a command
        self._shown: list[_Shown] = []
        self._written_at = float("-inf")
        self._text_visible = False
        self._failure: discord.HTTPException | None = None  # a post Discord refused
        self._dirty = asyncio.Event()
        self._lock = asyncio.Lock()  # one write at a time; held while the flusher writes
        self._flusher: asyncio.Task[None] | None = None
        self._typing_stack = AsyncExitStack()

    @property
    def showed_answer(self) -> bool:
        """Whether anything but a progress note was shown (then it cannot be taken back)."""
        return any(not m.note for m in self._shown)

    # -- reading the events ----------------------------------------------------------------------

    async def run(self, events: AsyncIterator[ReplyEvent]) -> Finished:
        """Show the answer as its events arrive; returns the last event (`Finished`). Cancelled,
        it leaves the visible message ending with a note that the answer was cut."""
        if self._typing is not None:
            await self._typing_stack.enter_async_context(self._typing())
        self._flusher = asyncio.create_task(self._flush_loop())
        try:
            async for event in events:
                if isinstance(event, Finished):
                    await self._last_note()
                    return event
                self._take(event)
            raise RuntimeError("the answer's events ended without a Finished event")
        except asyncio.CancelledError:
            await last_word(self._cut)
            raise
        finally:
            await self._stop_flusher()
            await self._typing_stack.aclose()
            close = getattr(events, "aclose", None)
            if close is not None:
                await close()  # closing the stream cancels the work behind it

    def _take(self, event: ReplyEvent) -> None:
        if not self._words and not isinstance(event, Status):
            return  # kept for `finish`: the reply carries all of it
        if isinstance(event, TextDelta):
            if not event.text:
                return
            if self._text_at is None:
                self._text_at = self._pacing.clock()
            self._text += event.text
            self._status = None  # the answer itself says more than a progress line
        elif isinstance(event, ToolStarted):
            self._tools[event.call_id] = event.label
            self._status = None  # the step's own label replaces the generic progress line
        elif isinstance(event, ToolFinished):
            self._tools.pop(event.call_id, None)
        elif isinstance(event, Status):
            self._status = event.text
        self._dirty.set()

    # -- live updates --------------------------------------------------------------------------

    async def _flush_loop(self) -> None:
        while self._live:
            await self._dirty.wait()
            await self._pacing.until(self._due())
            await self._pacing.for_channel(self._surface.channel)
            async with self._lock:
                await self._write_safely()

    async def _last_note(self) -> None:
        """A command's last progress line, not yet shown when its answer is ready, is shown
        before the answer replaces it (as its progress note always was): a command reports few
        lines, each worth seeing. Lines of an answer's tool steps are not held up like this:
        they are written by the flusher, which coalesces a line with the step that follows."""
        if not self._live or self._text or self._tools or not self._dirty.is_set():
            return
        async with self._lock:
            if self._status and self._pacing.clock() >= self._due():
                await self._write_safely()

    async def _write_safely(self) -> None:
        self._dirty.clear()
        try:
            await self._write()
        except Exception:  # a failed update must not fail the answer; `finish` writes it all
            log.exception("Discord: a streamed update failed; showing the end only")
            self._live = False

    def _due(self) -> float:
        """When the next write may go out."""
        if not self._shown:
            if self._text_at is not None:
                return self._text_at + self._pacing.first_flush
            return self._written_at  # a status line before any words: at once
        every = self._note_every if self._shown[-1].note else self._pacing.edit_every
        return self._written_at + every

    def _views(self) -> list[_View]:
        """What each message should show now."""
        text = self._text.lstrip()
        line: str | None = None
        if self._tools:
            line = status_line(list(self._tools.values())[-1])
        elif self._status:
            line = self._status
        if not text:
            return [_View(line, note=not self._tools)] if line else []
        parts = live_split(text, self._limit)
        views = [_View(shown, answer) for shown, answer in parts[:-1]]
        last, answer = parts[-1] if parts else ("", "")
        content = last  # a code block still open is closed for display (by `split_parts`)
        if line and len(last) + 2 + len(line) <= self._limit:
            content = f"{last}\n\n{line}"
        views.append(_View(content, answer))
        return views

    async def _write(self) -> None:
        for i, view in enumerate(self._views()):
            if i < len(self._shown):
                shown = self._shown[i]
                if shown.lost is not None:
                    self._live = False
                    return
                if shown.content != view.content and not await self._edit_live(i, view):
                    return
            elif not await self._post_live(i, view):
                return
        if not self._text_visible and any(m.answer for m in self._shown):
            self._text_visible = True
            await self._typing_stack.aclose()  # "typing…" until the first words show
            counts = self._pacing.counts
            if counts is not None and self._text_at is not None:
                counts.first_text.append(self._pacing.clock() - self._text_at)

    async def _post_live(self, i: int, view: _View) -> bool:
        try:
            handle = await self._surface.post(Outgoing(text=view.content), first=i == 0)
        except discord.HTTPException as exc:
            if view.note:  # progress must never cost the answer
                log.warning("Discord: progress note refused (%s)", exc.status)
                self._status = None
                return False
            self._failure, self._live = exc, False
            return False
        now = self._pacing.clock()
        self._shown.append(_Shown(handle, view.content, view.answer, view.note, now))
        self._written_at = now
        self._count("posts")
        if not view.note and self._ledger is not None:
            await self._ledger.record(i, handle)
        return True

    async def _edit_live(self, i: int, view: _View) -> bool:
        shown = self._shown[i]
        if not await self._edit(shown, view.content):
            if shown.lost is not None:
                self._live = False
            return False
        shown.answer = view.answer
        if shown.note and not view.note:  # the note became the answer's message
            shown.note = False
            if self._ledger is not None:
                await self._ledger.record(i, shown.handle)
        return True

    async def _edit(self, shown: _Shown, content: str) -> bool:
        """Edit one message; False if Discord refused (then `shown.lost` says why, for a
        deleted message or forbidden edits) or failed."""
        try:
            await self._surface.edit(shown.handle, content)
        except (discord.NotFound, discord.Forbidden) as exc:
            shown.lost = "gone" if isinstance(exc, discord.NotFound) else "refused"
            self._count("refused_edits")
            log.warning(
                "Discord: edit refused (%s, %s); the rest is posted anew", exc.status, shown.lost
            )
            return False
        except discord.HTTPException as exc:
            log.warning("Discord: edit failed (HTTP %s); retried at the next update", exc.status)
            return False
        now = self._pacing.clock()
        shown.content, shown.written_at = content, now
        self._written_at = now
        self._count("edits")
        return True

    def _count(self, what: str) -> None:
        counts = self._pacing.counts
        if counts is not None:
            setattr(counts, what, getattr(counts, what) + 1)

    async def _stop_flusher(self) -> None:
        task, self._flusher = self._flusher, None
        if task is None:
            return
        async with self._lock:  # a write in flight completes first
            task.cancel()
        await asyncio.gather(task, return_exceptions=True)

    async def _cut(self) -> None:
        """The answer was cancelled: its last visible message ends with the cut note (or the
        note is posted, when nothing is visible or there is no room)."""
        await self._stop_flusher()
        note = messages.ANSWER_CUT
        last = self._shown[-1] if self._shown else None
        if last is not None and last.lost is None:
            fence = open_fence(last.answer)
            text = f"{last.answer}\n{fence[1]}" if fence else last.answer
            content = f"{text}\n\n{note}" if text.strip() else note
            if len(content) <= self._limit:
                await self._surface.edit(last.handle, content)
                await self._disarm()
                return
        await self._surface.post(Outgoing(text=note), first=not self._shown)
        await self._disarm()

    async def _disarm(self) -> None:
        if self._ledger is not None:
            await self._ledger.disarm()

    # -- the final state -----------------------------------------------------------------------

    async def finish(self, parts: Sequence[Outgoing], *, rated: str | None = None) -> None:
        """Make the visible messages exactly `parts` (edits of the streamed messages, new posts
        for the rest), each part recorded as posted; `rated`: the answer's id, whose 👍/👎
        go under its last text message. Raises what Discord refused when the answer could
        not be posted at all. Cancelled (shutdown while files upload), the last message says
        the answer was cut."""
        try:
            await self._finish(parts, rated)
        except asyncio.CancelledError:
            await last_word(self._cut)
            raise

    async def _finish(self, parts: Sequence[Outgoing], rated: str | None = None) -> None:
        await self._stop_flusher()
        texts = [i for i, item in enumerate(parts) if item.file is None]
        rated_part = texts[-1] if rated and texts else None
        await self._typing_stack.aclose()
        if self._failure is not None:
            raise self._failure
        shown = list(self._shown)
        if shown and shown[0].note and self._surface.notes_apart:
            await self._remove(shown[0])  # a command's progress note is not part of its answer
            shown = []
        done = await self._ledger.done() if self._ledger is not None else {}
        for i, item in enumerate(parts):
            message = shown[i] if i < len(shown) else None
            view = feedback.buttons(rated) if rated and i == rated_part else None
            if message is not None and message.lost is None and item.file is None:
                if await self._final_edit(message, item.text, view):
                    await self._record(i, message.handle)
                    continue
            if message is not None and message.lost == "refused" and item.file is None:
                await self._post_rest(i, message, item.text, view)
                continue
            if message is not None and message.lost is None:
                await self._remove(message)  # a text message where a file goes (rare)
            if message is None and i in done:
                continue  # posted by an earlier attempt
            handle = await self._surface.post(item, first=i == 0, view=view)
            self._count("posts")
            await self._record(i, handle)
        for extra in shown[len(parts) :]:
            if extra.lost is None:
                await self._remove(extra)
        await self._disarm()

    async def _final_edit(
        self, shown: _Shown, text: str, view: discord.ui.View | None = None
    ) -> bool:
        if shown.content == text and view is None:
            return True
        every = self._note_every if shown.note else self._pacing.edit_every
        await self._pacing.until(shown.written_at + every)
        await self._pacing.for_channel(self._surface.channel)
        try:
            await self._surface.edit(shown.handle, text, view)
        except (discord.NotFound, discord.Forbidden) as exc:
            shown.lost = "gone" if isinstance(exc, discord.NotFound) else "refused"
            self._count("refused_edits")
            log.warning("Discord: final edit refused (HTTP %s); posting it anew", exc.status)
            return False
        shown.content, shown.answer, shown.written_at = text, text, self._pacing.clock()
        self._count("edits")
        return True

    async def _post_rest(
        self, i: int, shown: _Shown, text: str, view: discord.ui.View | None = None
    ) -> None:
        """A message that can no longer be edited keeps what it shows; what the final part
        has after that is posted once (its code block reopened if it was cut inside one),
        `view`'s buttons under its last piece."""
        rest = text
        if shown.answer and text.startswith(shown.answer):
            rest = text[len(shown.answer) :]
            fence = open_fence(shown.answer)
            if fence is not None:
                rest = f"{fence[0]}\n{rest.lstrip(chr(10))}"
        first: Any = None
        pieces = [p for p in split_markdown(rest, self._limit) if p.strip()]
        for n, piece in enumerate(pieces):
            under = view if n == len(pieces) - 1 else None
            handle = await self._surface.post(
                Outgoing(text=piece.strip("\n")), first=False, view=under
            )
            self._count("posts")
            first = first or handle
        await self._record(i, first or shown.handle)

    async def _record(self, part: int, handle: Any) -> None:
        if self._ledger is not None:
            await self._ledger.record(part, handle)

    async def _remove(self, shown: _Shown) -> None:
        try:
            await self._surface.delete(shown.handle)
        except discord.HTTPException as exc:
            log.warning("Discord: could not remove a streamed message (HTTP %s)", exc.status)


__all__ = ["StreamWriter"]
