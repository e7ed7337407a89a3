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

A message holds at most `Pacing.message_limit` characters (Slack's markdown limit); a longer
answer continues in a new message of the same thread, cut at a paragraph or code-fence
boundary with the code block closed and reopened.

Until the first words, Slack's "is thinking…" status shows under the thread
(`assistant.threads.setStatus`). Calls are paced per answer (`Pacing`) and per channel, for
all answers written there at once (`ChannelBudget`).
"""

from __future__ import annotations

import asyncio
import logging
import re
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal

from slack_sdk.errors import SlackApiError
from slack_sdk.models.messages.chunk import Chunk, MarkdownTextChunk, TaskUpdateChunk

from adapters.background import last_word
from adapters.slack.delivery import METADATA_EVENT, TRANSIENT_ERRORS
from adapters.slack.mrkdwn import to_mrkdwn
from adapters.text import reply_markdown, split_parts
from core import messages
from core.streaming import Finished, Status, TextDelta, ToolFinished, ToolStarted

if TYPE_CHECKING:
    from slack_sdk.web.async_chat_stream import AsyncChatStream
    from slack_sdk.web.async_client import AsyncWebClient

    from core.request import Reply
    from core.streaming import ReplyEvent

log = logging.getLogger("threadline.slack")

# Slack's error codes that mean "this workspace (app, token) does not do this", not "try
# later": the workspace is then written to the next way down, and remembered.
REFUSED = frozenset(
    {
        "method_not_supported",
        "method_not_supported_for_channel_type",
        "missing_scope",
        "not_allowed_token_type",
        "feature_not_enabled",
        "unknown_method",
        "not_authorized",
        "team_not_allowed",
        "access_denied",
    }
)
EDITS_REFUSED = REFUSED | {"cant_update_message", "edit_window_closed"}
MESSAGE_LIMIT = 12_000  # a markdown block, and a streamed message's markdown_text
NOTIFICATION_LIMIT = 3_000  # the mrkdwn `text` fallback beside a markdown block
THINKING = "is thinking…"
LOADING_MESSAGES = ("Reading the thread…", "Looking things up…", "Writing the answer…")

Record = Callable[[int, str], Awaitable[None]]  # part number, message ts
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


@dataclass(slots=True)
class Workspaces:
    """What each workspace (tenant) refused, remembered for the life of the adapter."""

    no_stream: set[str] = field(default_factory=set)
    no_edits: set[str] = field(default_factory=set)
    no_status: set[str] = field(default_factory=set)

    def mode(self, tenant: str, *, native: bool) -> Literal["stream", "edit", "post"]:
        if native and tenant not in self.no_stream:
            return "stream"
        return "edit" if tenant not in self.no_edits else "post"


Call = Literal["start", "append", "stop"]  # or the fallback's post, edit, last edit


class ChannelBudget:
    """Slack calls into one channel, shared by every answer being written there: at most
    `rate` calls of one kind a second all together (Slack limits each method per channel),
    handed out as time slots. Each answer paces itself too; the budget keeps many answers at
    once in one busy channel under Slack's rate limits, at the cost of spacing their updates
    further apart. Kinds apart, a new answer's first words do not queue behind the others'
    appends, nor an answer's end behind them (None: no shared limit)."""

    def __init__(self, rate: float | None = 10.0) -> None:
        self.rate = rate
        self._next: dict[tuple[str, str, Call], float] = {}

    def slot(self, channel: tuple[str, str, Call], at: float) -> float:
        """The time, not before `at`, at which one more call into `channel` may go out."""
        if not self.rate:
            return at
        if len(self._next) > 10_000:  # forget channels whose calls are long past
            self._next = {k: t for k, t in self._next.items() if t > at}
        slot = max(at, self._next.get(channel, at))
        self._next[channel] = slot + 1.0 / self.rate
        return slot


@dataclass(frozen=True, slots=True)
class StreamTarget:
    tenant: str
    channel: str
    thread_ts: str
    team_id: str  # the asking user's workspace (`recipient_team_id`)
    user_id: str  # the asking user (`recipient_user_id`)
    delivery_key: str


@dataclass(frozen=True, slots=True)
class Written:
    """What `AnswerStream.write` did: `final` is core's last event. `shown` False: nothing
    was written, the caller posts the reply as before. Otherwise `rest` is the text that
    could not be shown (edits refused), which the caller posts once after the messages."""

    final: Finished
    shown: bool
    rest: str = ""


class _Refused(Exception):
    """The workspace refuses this way of writing; `code` is Slack's error."""

    def __init__(self, code: str) -> None:
        super().__init__(code)
        self.code = code


def error_code(exc: Exception) -> str:
    response = getattr(exc, "response", None)
    try:
        return str(response.get("error") or "unknown_error") if response else type(exc).__name__
    except Exception:
        return "unknown_error"


def _transient(exc: Exception) -> bool:
    if not isinstance(exc, SlackApiError):
        return True  # the connection, not Slack's answer
    response = getattr(exc, "response", None)
    status = getattr(response, "status_code", 0) or 0
    return error_code(exc) in TRANSIENT_ERRORS or status >= 500


def notification_text(markdown: str) -> str:
    """The mrkdwn `text` Slack shows in notifications beside a markdown block: the start of
    the message, cut at a line."""
    if len(markdown) > NOTIFICATION_LIMIT:
        cut = markdown.rfind("\n", 0, NOTIFICATION_LIMIT - 100)
        markdown = markdown[: cut if cut > 0 else NOTIFICATION_LIMIT - 100] + "\n…"
    return to_mrkdwn(markdown)


def markdown_blocks(markdown: str) -> list[dict[str, Any]]:
    return [{"type": "markdown", "text": markdown}]


# -- one message ---------------------------------------------------------------------------------


class _Page:
    """One Slack message of the answer: streamed natively, or posted and edited.

    `text` is everything meant for this message; `shown` how much of it Slack confirmed. A
    native page whose stream breaks turns into an edited one (same message, `chat.update`);
    an edited page whose edits are refused is `frozen`: what it does not show is the caller's
    to post."""

    def __init__(
        self,
        client: AsyncWebClient,
        target: StreamTarget,
        part: int,
        *,
        native: bool,
        record: Record,
        workspaces: Workspaces,
    ) -> None:
        self._client, self._target, self.part = client, target, part
        self.mode: Literal["stream", "edit", "frozen"] = "stream" if native else "edit"
        self._record, self._workspaces = record, workspaces
        self._stream: AsyncChatStream | None = None
        self.ts: str | None = None
        self.text = ""
        self.shown = 0
        self._edited = ""  # what the last successful post/edit showed (text + status line)

    @property
    def metadata(self) -> dict[str, Any]:
        payload = {"delivery": self._target.delivery_key, "part": self.part}
        return {"event_type": METADATA_EVENT, "event_payload": payload}

    async def write(self, add: str, tasks: Sequence[Chunk], status: str = "") -> None:
        """Show `add` after the page's text (and the tool steps). Raises `_Refused` when the
        page's first call is refused (nothing was shown; `add` is not kept)."""
        self.text += add
        if self.mode == "stream":
            await self._stream_call(add, tasks, stop=False)
        elif self.mode == "edit":
            await self._edit(status)

    async def close(self, add: str, tasks: Sequence[Chunk]) -> None:
        """The page's last text: stop the stream, or the final edit (no status line)."""
        self.text += add
        if self.mode == "stream":
            await self._stream_call(add, tasks, stop=True)
        elif self.mode == "edit":
            await self._edit("")

    async def _stream_call(self, add: str, tasks: Sequence[Chunk], *, stop: bool) -> None:
        chunks = [*_text_chunk(add), *tasks]
        if not chunks and not stop:
            return
        if self._stream is None:
            t = self._target
            self._stream = await self._client.chat_stream(
                channel=t.channel,
                thread_ts=t.thread_ts,
                recipient_team_id=t.team_id,
                recipient_user_id=t.user_id,
                task_display_mode="timeline",
            )
        stream, started = self._stream, self._stream.ts is not None
        failed: Exception | None = None
        try:
            if stop:  # (a stream never started is started and stopped by the helper)
                await stream.stop(chunks=chunks, metadata=self.metadata)
            else:
                await stream.append(chunks=chunks)  # chunks given: sent now, not buffered
        except Exception as exc:  # refused, expired, or the connection broke: see below
            failed = exc
        if not started and stream.ts is not None:
            self.ts = str(stream.ts)
            await self._record(self.part, self.ts)
        if failed is None:
            self.shown = len(self.text)
        elif stream.ts is None:  # refused before anything was shown
            self._stream = None
            self.text = self.text[: len(self.text) - len(add)]
            raise _Refused(error_code(failed))
        else:
            self._broke("chat.stopStream" if stop else "chat.appendStream", failed)
            await self._edit("")

    def _broke(self, method: str, exc: Exception) -> None:
        # Expired (`message_not_in_streaming_state`) or failed midway: the message exists, so
        # it is completed by editing it to the full text, never by posting the text again.
        log.info(
            "Slack %s failed (%s); completing the message by editing it", method, error_code(exc)
        )
        self.mode = "edit"
        self._edited = ""  # the next edit goes out even if the text did not change

    async def _edit(self, status: str) -> None:
        body = "\n\n".join(part for part in (self.text, f"_{status}_" if status else "") if part)
        if not body.strip() or body == self._edited:
            return
        t = self._target
        try:
            if self.ts is None:
                resp = await self._client.chat_postMessage(
                    channel=t.channel,
                    thread_ts=t.thread_ts,
                    text=notification_text(body),
                    blocks=markdown_blocks(body),
                    metadata=self.metadata,
                    unfurl_links=False,
                    unfurl_media=False,
                )
                self.ts = str(resp["ts"])
                await self._record(self.part, self.ts)
            else:
                await self._client.chat_update(
                    channel=t.channel,
                    ts=self.ts,
                    text=notification_text(body),
                    blocks=markdown_blocks(body),
                )
        except Exception as exc:  # Slack's refusal, or a connection that broke
            code = error_code(exc)
            if self.ts is None and not isinstance(exc, SlackApiError):
                # The response to the post was lost: it may be in the thread all the same.
                self.ts = await self._find_posted()
                if self.ts is not None:
                    await self._record(self.part, self.ts)
                    self._edited = body
                    self.shown = len(self.text)
                    return
            if self.ts is None:
                raise _Refused(code) from None
            if _transient(exc):
                return  # the next edit (or the final one) carries this text too
            log.warning("Slack refused editing an answer (%s); the rest is posted at the end", code)
            if code in EDITS_REFUSED:
                self._workspaces.no_edits.add(t.tenant)
            self.mode = "frozen"
            return
        self._edited = body
        self.shown = len(self.text)

    async def _find_posted(self) -> str | None:
        """This page's message, if the thread has it (found by its metadata)."""
        t = self._target
        try:
            resp = await self._client.conversations_replies(
                channel=t.channel, ts=t.thread_ts, include_all_metadata=True, limit=200
            )
        except Exception as exc:
            log.warning("could not read the thread back: %s", type(exc).__name__)
            return None
        for message in resp.get("messages") or []:
            meta = message.get("metadata") or {}
            if (
                meta.get("event_type") == METADATA_EVENT
                and meta.get("event_payload") == (self.metadata["event_payload"])
            ):
                return str(message["ts"])
        return None


def _after_text(reply: Reply) -> str:
    """What a reply shows after its text: its notices and sources (`reply_markdown`)."""
    return reply_markdown(reply)[len(reply.text.strip()) :]


def _text_chunk(text: str) -> list[Chunk]:
    return [MarkdownTextChunk(text=text)] if text else []


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
        self._budget = budget or ChannelBudget(None)
        self._mode = workspaces.mode(target.tenant, native=native)
        self._assistant_status = assistant_status and target.tenant not in workspaces.no_status
        self._status_line = status_line  # `Status` lines where nothing else can show them
        self._pages: list[_Page] = []
        self._pending = ""
        self._tasks: dict[str, TaskUpdateChunk] = {}  # task updates not sent yet, by call id
        self._active: dict[str, str] = {}  # tool steps running: call id -> label
        self._last_call: float | None = None
        self._flusher: asyncio.Task[None] | None = None
        self._lock = asyncio.Lock()
        self._closed = False
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
            self._pending += event.text
        elif isinstance(event, ToolStarted):
            self._active[event.call_id] = event.label
            self._tasks[event.call_id] = TaskUpdateChunk(
                id=event.call_id, title=event.label, status="in_progress"
            )
        elif isinstance(event, ToolFinished):
            self._active.pop(event.call_id, None)
            self._tasks[event.call_id] = TaskUpdateChunk(
                id=event.call_id, title=event.label, status="complete" if event.ok else "error"
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
        await self._until(self._budget.slot(self._channel(call), at))
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
        if not final and len(self._pages[-1].text) + len(add) > limit - _hold(limit):
            # Near a message's end only whole lines go out, so the next message can start at
            # a line (the unfinished one waits for its newline).
            end = add.rfind("\n") + 1
            if len(add) - end < _hold(limit):
                add, self._pending = add[:end], add[end:] + self._pending
                if not add and not tasks:
                    return False
        while True:
            page = self._pages[-1]
            if page.mode == "frozen":
                page.text += add  # not shown: the caller posts it once at the end
                return True
            keep, rest = _fit(page.text, add, limit)
            if rest is None:
                await self._send(page, keep, tasks, status, final=final)
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
        self, page: _Page, add: str, tasks: list[TaskUpdateChunk], status: str, *, final: bool
    ) -> None:
        self.calls += 1
        try:
            if final:
                await page.close(add, tasks)
            else:
                await page.write(add, tasks, status)
        except _Refused as refused:
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
            await self._send(self._pages[-1], add, [], status, final=final)

    def _page(self, part: int, *, native: bool) -> _Page:
        return _Page(
            self._client,
            self._target,
            part,
            native=native,
            record=self._record,
            workspaces=self._workspaces,
        )

    def _channel(self, call: Call) -> tuple[str, str, Call]:
        return (self._target.tenant, self._target.channel, call)

    def _status_text(self) -> str:
        labels = list(self._active.values())
        return f"{labels[-1]}…" if labels else ""

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
        await self._until(self._budget.slot(self._channel("stop"), at))
        async with self._lock:
            self._closed = True
            self._pending += final.remainder + _after_text(final.reply)
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
                    self._pending += f"\n\n_{messages.ANSWER_CUT}_"
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
            if _transient(exc):
                return
            log.info("assistant.threads.setStatus refused in %s (%s)", t.tenant, error_code(exc))
            self._workspaces.no_status.add(t.tenant)
            self._assistant_status = False
        except Exception as exc:  # a courtesy: never fails the answer
            log.debug("assistant.threads.setStatus failed: %s", type(exc).__name__)


# -- splitting -----------------------------------------------------------------------------------

_FENCE = re.compile(r"^ {0,3}(?P<fence>`{3,}|~{3,})(?P<info>[^\n]*)$")
# Kept free at a message's end: a code block open there is closed after what was shown.
_FENCE_ROOM = 8


def _hold(limit: int) -> int:
    """How close to a message's end text goes out by whole lines only."""
    return min(1_000, limit // 4)


def _fit(written: str, add: str, limit: int) -> tuple[str, str | None]:
    """What of `add` still goes into the message that holds `written`, and what opens the
    next one (None: everything fits). Cut at the best boundary `split_parts` finds; a code
    block open at the cut is closed here and reopened there."""
    if len(written) + len(add) <= limit - _FENCE_ROOM:
        return add, None
    whole = written + add
    parts = split_parts(whole, limit - _FENCE_ROOM)
    first = parts[0]
    if len(first.original) >= len(written):
        nxt = parts[1] if len(parts) > 1 else None
        rest = whole[len(first.original) :]
        return first.original[len(written) :] + first.tail, (nxt.head if nxt else "") + rest
    # The best boundary lies in text already shown: this message ends where it is.
    opener = _open_fence(written)
    if opener is None:
        return "", add
    chars = _FENCE.match(opener)["fence"]  # type: ignore[index]
    close = ("" if written.endswith("\n") else "\n") + chars + "\n"
    return close, opener + "\n" + add


def _open_fence(text: str) -> str | None:
    """The opening line of the code block still open at the end of `text`, if any."""
    opener: str | None = None
    chars = ""
    for line in text.split("\n"):
        m = _FENCE.match(line)
        if m is None:
            continue
        if opener is None:
            if not (m["fence"][0] == "`" and "`" in m["info"]):
                opener, chars = line.lstrip(" "), m["fence"]
        elif m["fence"][0] == chars[0] and len(m["fence"]) >= len(chars) and not m["info"].strip():
            opener = None
    return opener
