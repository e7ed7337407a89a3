"""Writing an answer into a Slack thread while core produces it.

`AnswerStream.write(events)` takes core's reply events (`core.streaming`) and shows them:

- natively, with Slack's streaming methods (`chat.startStream` / `appendStream` /
  `stopStream` through slack_sdk's `chat_stream` helper): the text as `markdown_text`, tool
  steps as task updates in a timeline;
- or, where a workspace refuses those methods, as a message that is posted and then edited
  (`chat.update`) at most once per `Pacing.edit_interval`.

What each workspace refused is learnt once and remembered (`Workspaces`), so later answers
there go straight to what works. A message that stops accepting stream calls midway (the
stream expired) is completed by editing that same message to the full text: nothing shown is
posted twice and nothing is lost. Whatever could not be shown at all (edits refused too) is
handed back to the caller, which posts it once with `adapters.slack.delivery`.

Each message is an `adapters.slack.stream_message.Page`. A message holds at most
`Pacing.message_limit` characters (Slack's markdown limit); a longer answer continues in a new
message of the same thread, cut at a paragraph or code-fence boundary with the code block
closed and reopened.

Until the first words, Slack's "is thinking…" status shows under the thread
(`assistant.threads.setStatus`). Calls are paced per answer (`Pacing`) and per channel, for
all answers written there at once (`ChannelBudget`).
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal

from slack_sdk.errors import SlackApiError
from slack_sdk.models.messages.chunk import TaskUpdateChunk

from adapters.background import last_word
from adapters.pacing import ChannelBudget
from adapters.slack.errors import error_code
from adapters.slack.feedback import feedback_blocks
from adapters.slack.mrkdwn import defuse
from adapters.slack.sources import sources_blocks
from adapters.slack.stream_message import (
    MESSAGE_LIMIT,
    REFUSED,
    Page,
    Record,
    Refused,
    StreamTarget,
    Workspaces,
    after_text,
    fit,
    hold,
    transient,
)
from core import messages
from core.streaming import Finished, Status, TextDelta, ToolFinished, ToolStarted

if TYPE_CHECKING:
    from slack_sdk.web.async_client import AsyncWebClient

    from core.streaming import ReplyEvent

log = logging.getLogger("threadline.slack")

THINKING = "is thinking…"
LOADING_MESSAGES = ("Reading the thread…", "Looking things up…", "Writing the answer…")

StatusLine = Callable[[str], Awaitable[None]]


@dataclass(frozen=True, slots=True)
class Pacing:
    """How often Slack is called. Injectable for tests and the benchmark.

    The first words go out at once; after that, stream calls are at most one per `interval`
    (appends batched: the helper's own 256-character buffer alone would hold a slow model's
    text for a second or more), edits of the fallback message at most one per
    `edit_interval`."""

    interval: float = 0.25
    edit_interval: float = 1.0
    message_limit: int = MESSAGE_LIMIT
    clock: Callable[[], float] = time.monotonic
    sleep: Callable[[float], Awaitable[None]] = asyncio.sleep


Call = Literal["start", "append", "stop"]  # or the fallback's post, edit, last edit


@dataclass(frozen=True, slots=True)
class Written:
    """What `AnswerStream.write` did: `final` is core's last event. `shown` False: nothing
    was written, the caller posts the reply as before. Otherwise `rest` is the text that
    could not be shown (edits refused), which the caller posts once after the messages."""

    final: Finished
    shown: bool
    rest: str = ""


# -- the answer ----------------------------------------------------------------------------------


class AnswerStream:
    """Writes one answer into its thread as core's events arrive (see the module docstring)."""

    def __init__(
        self,
        client: AsyncWebClient,
        target: StreamTarget,
        workspaces: Workspaces,
        *,
        record: Record,
        native: bool = True,
        assistant_status: bool = True,
        pacing: Pacing = Pacing(),
        budget: ChannelBudget | None = None,
        status_line: StatusLine | None = None,
    ) -> None:
        self._client, self._target, self._workspaces = client, target, workspaces
        self._record, self._pacing = record, pacing
        self._budget = budget  # None: no limit shared with other answers
        self._mode = workspaces.mode(target.tenant, native=native)
        self._assistant_status = assistant_status and target.tenant not in workspaces.no_status
        self._status_line = status_line  # `Status` lines where nothing else can show them
        self._pages: list[Page] = []
        self._pending = ""
        # A `<` that ended a delta waits for the next one: what follows it decides whether it
        # would open a Slack control sequence (`defuse`).
        self._carry = ""
        self._tasks: dict[str, TaskUpdateChunk] = {}  # task updates not sent yet, by call id
        self._active: dict[str, str] = {}  # tool steps running: call id -> label
        self._last_call: float | None = None
        self._flusher: asyncio.Task[None] | None = None
        self._lock = asyncio.Lock()
        self._closed = False
        # Under the last message: the sources, and 👍/👎 for an answer people may rate.
        self._footer: list[dict[str, Any]] = []
        self.cut_noted = False  # the note about a cut answer went out (see `_cut`)
        self.calls = 0  # Slack calls made for the text and steps (tests, benchmark)

    @property
    def mode(self) -> str:
        return self._mode

    async def write(self, events: AsyncIterator[ReplyEvent]) -> Written:
        """Consume `events` up to their `Finished`. On cancellation (shutdown cut the answer)
        the message ends with `messages.ANSWER_CUT`, then the cancellation goes on."""
        await self._set_status(THINKING, LOADING_MESSAGES)
        final: Finished | None = None
        try:
            async for event in events:
                if isinstance(event, Finished):
                    final = event
                    break
                await self._take(event)
        except asyncio.CancelledError:
            await self._cut()
            raise
        if final is None:  # core always ends with Finished; an iterator that did not is a bug
            raise RuntimeError("the reply stream ended without Finished")
        return await self._finish(final)

    async def _take(self, event: ReplyEvent) -> None:
        if self._mode == "post":
            if isinstance(event, Status) and self._status_line is not None:
                await self._status_line(event.text)
            return
        if isinstance(event, TextDelta):
            text = self._carry + event.text
            self._carry = "<" if text.endswith("<") else ""
            self._pending += defuse(text[: len(text) - len(self._carry)])
        elif isinstance(event, ToolStarted):
            self._active[event.call_id] = event.label
            self._tasks[event.call_id] = TaskUpdateChunk(
                id=event.call_id, title=defuse(event.label), status="in_progress"
            )
        elif isinstance(event, ToolFinished):
            self._active.pop(event.call_id, None)
            self._tasks[event.call_id] = TaskUpdateChunk(
                id=event.call_id,
                title=defuse(event.label),
                status="complete" if event.ok else "error",
            )
        elif isinstance(event, Status):
            # A long command's progress: under the thread while nothing is shown (Slack's
            # status, else the caller's progress line); in the edited message's status line;
            # the stream's task timeline has no place for it.
            if not self._pages and self._assistant_status:
                await self._set_status(event.text)
                return
            if self._mode != "edit":
                if not self._pages and self._status_line is not None:
                    await self._status_line(event.text)
                return
            self._active["status"] = event.text
        self._schedule()

    # -- pacing ----------------------------------------------------------------------------------

    def _interval(self) -> float:
        page = self._pages[-1] if self._pages else None
        editing = self._mode == "edit" or (page is not None and page.mode != "stream")
        return self._pacing.edit_interval if editing else self._pacing.interval

    def _schedule(self) -> None:
        if self._flusher is None or self._flusher.done():
            self._flusher = asyncio.create_task(self._flush_later())

    async def _flush_later(self) -> None:
        # The first words go out at once (if the channel's budget allows), later ones paced.
        if self._last_call is None:
            call: Call = "start"
            at = self._pacing.clock()
        else:
            call, at = "append", self._last_call + self._interval()
        await self._until(self._slot(call, at))
        async with self._lock:
            if self._closed:
                return
            sent = await self._flush(final=False)
        # (Nothing sent: an unfinished line is held back; the next words schedule a flush.)
        if sent and (self._pending or self._tasks) and not self._closed:
            self._flusher = asyncio.create_task(self._flush_later())

    async def _until(self, at: float) -> None:
        wait = at - self._pacing.clock()
        if wait > 0:
            await self._pacing.sleep(wait)

    async def _stop_flusher(self) -> None:
        # A flusher that lands its call may start the next one: stop that one too.
        while (flusher := self._flusher) is not None and not flusher.done():
            if self._lock.locked():
                await asyncio.wait([flusher])  # a call is in flight: let it land
            else:
                flusher.cancel()  # still waiting for its turn
                await asyncio.wait([flusher])

    # -- writing ---------------------------------------------------------------------------------

    async def _flush(self, *, final: bool) -> bool:
        """Send the pending text and steps (the lock is held); False if nothing was sent."""
        add, self._pending = self._pending, ""
        tasks, self._tasks = list(self._tasks.values()), {}
        if not add and not tasks and not final:
            return False
        status = self._status_text()
        self._last_call = self._pacing.clock()
        if not self._pages:
            self._pages.append(self._page(0, native=self._mode == "stream"))
        limit = self._pacing.message_limit
        if not final and len(self._pages[-1].text) + len(add) > limit - hold(limit):
            # Near a message's end only whole lines go out, so the next message can start at
            # a line (the unfinished one waits for its newline).
            end = add.rfind("\n") + 1
            if len(add) - end < hold(limit):
                add, self._pending = add[:end], add[end:] + self._pending
                if not add and not tasks:
                    return False
        while True:
            page = self._pages[-1]
            if page.mode == "frozen":
                page.text += add  # not shown: the caller posts it once at the end
                return True
            keep, rest = fit(page.text, add, limit)
            if rest is None:
                footer = self._footer if final else []
                await self._send(page, keep, tasks, status, final=final, footer=footer)
                return True
            # The message is full: close it and go on in the next one.
            await self._send(page, keep, tasks, "", final=True)
            tasks, add = [], rest
            page = self._pages[-1]
            if page.mode == "frozen":
                page.text += add
                return True
            self._pages.append(self._page(page.part + 1, native=self._mode == "stream"))

    async def _send(
        self,
        page: Page,
        add: str,
        tasks: list[TaskUpdateChunk],
        status: str,
        *,
        final: bool,
        footer: list[dict[str, Any]] | None = None,
    ) -> None:
        self.calls += 1
        try:
            if final:
                await page.close(add, tasks, footer or [])
            else:
                await page.write(add, tasks, status)
        except Refused as refused:
            if page.mode != "stream":
                # Not even a plain post went through: the text stays unshown on the page, and
                # the caller posts it once at the end.
                log.warning("Slack refused posting an answer's first words (%s)", refused.code)
                page.mode = "frozen"
                return
            if refused.code in REFUSED:
                log.info(
                    "Slack streaming refused in %s (%s): editing a message instead",
                    self._target.tenant,
                    refused.code,
                )
                self._workspaces.no_stream.add(self._target.tenant)
            # This answer (and, if refused, the workspace's next ones) is posted and edited.
            self._mode = "edit"
            self._pages[-1] = self._page(page.part, native=False)
            await self._send(self._pages[-1], add, [], status, final=final, footer=footer)

    def _page(self, part: int, *, native: bool) -> Page:
        return Page(
            self._client,
            self._target,
            part,
            native=native,
            record=self._record,
            workspaces=self._workspaces,
        )

    def _slot(self, call: Call, at: float) -> float:
        """When this call may go out: kinds apart, so a new answer's first words do not queue
        behind the others' appends, nor an answer's end behind them."""
        if self._budget is None:
            return at
        return self._budget.reserve((self._target.tenant, self._target.channel, call), at)

    def _status_text(self) -> str:
        labels = list(self._active.values())
        return f"{defuse(labels[-1])}…" if labels else ""

    async def _finish(self, final: Finished) -> Written:
        """Write the pending text and the reply's remainder and close the pages."""
        await self._stop_flusher()
        if not (self._pages or self._pending or self._tasks):
            if final.reply.ephemeral or self._mode == "post":
                # Personal replies and workspaces that take no edits: the caller posts the
                # reply as before. A personal reply does not clear the status as a message in
                # the thread does.
                self._closed = True
                if final.reply.ephemeral:
                    await self._set_status("")
                return Written(final, shown=False)
            # Nothing streamed (a command's answer, a refusal): the whole reply is posted once,
            # as Markdown like every answer; a refused post is left to the caller.
            self._mode = "edit"
            self._pages.append(self._page(0, native=False))
        at = self._pacing.clock()
        page = self._pages[-1] if self._pages else None
        if page is not None and page.mode == "edit" and self._last_call is not None:
            # Edits keep their pace to the last one (Slack rate-limits chat.update); a
            # stream's stop goes out at once, so the answer ends when the model does.
            at = max(at, self._last_call + self._pacing.edit_interval)
        await self._until(self._slot("stop", at))
        async with self._lock:
            self._closed = True
            rest = self._carry + final.remainder + after_text(final.reply)
            reply = final.reply
            self._footer = sources_blocks(reply.sources) + feedback_blocks(reply.answer_id)
            self._carry = ""
            self._pending += defuse(rest)
            self._active.clear()
            await self._flush(final=True)
            return Written(final, self._shown(), self._unshown())

    def _shown(self) -> bool:
        return any(p.ts is not None for p in self._pages)

    def _unshown(self) -> str:
        return "".join(p.text[p.shown :] for p in self._pages) + self._pending

    async def _cut(self) -> None:
        """Shutdown cut the answer: the visible message ends with the note, never mid-sentence
        without one; nothing shown yet gets the note as a message of its own."""

        async def note() -> None:
            await self._stop_flusher()
            async with self._lock:
                self._closed = True
                self._active.clear()
                if self._pages or self._pending:
                    words = any(p.text.strip() for p in self._pages) or self._pending.strip()
                    # After words, the note is their last line; alone, it is the message.
                    self._pending += (
                        f"\n\n_{messages.ANSWER_CUT}_" if words else messages.ANSWER_CUT
                    )
                    await self._flush(final=True)
                    if self._shown() and not self._unshown():
                        self.cut_noted = True
                        return
                await self._client.chat_postMessage(
                    channel=self._target.channel,
                    thread_ts=self._target.thread_ts,
                    text=messages.ANSWER_CUT,
                )
                self.cut_noted = True

        await last_word(note)

    async def _set_status(self, status: str, loading: Sequence[str] = ()) -> None:
        """Slack's "is thinking…" under the thread until the first words; a workspace (or a
        thread kind) that refuses it is not asked again."""
        if not self._assistant_status:
            return
        t = self._target
        try:
            await self._client.assistant_threads_setStatus(
                channel_id=t.channel,
                thread_ts=t.thread_ts,
                status=status,
                loading_messages=list(loading) or None,
            )
        except SlackApiError as exc:
            if transient(exc):
                return
            log.info("assistant.threads.setStatus refused in %s (%s)", t.tenant, error_code(exc))
            self._workspaces.no_status.add(t.tenant)
            self._assistant_status = False
        except Exception as exc:  # a courtesy: never fails the answer
            log.debug("assistant.threads.setStatus failed: %s", type(exc).__name__)
