"""One Slack message of an answer (`adapters.slack.stream`), and where a message ends.

A `Page` is streamed natively (`chat.startStream` / `appendStream` / `stopStream` through
slack_sdk's `chat_stream` helper: text as `markdown_text`, tool steps as task updates), or
posted and edited (`chat.postMessage` / `chat.update` with a `markdown` block). A stream that
breaks midway (expired, refused, the connection lost) turns into edits of the same message, so
the message is completed, never posted twice. `fit` decides where a message that is full ends
and the next one starts: at a paragraph or code-fence boundary, a code block closed and
reopened.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal

from slack_sdk.errors import SlackApiError
from slack_sdk.models.messages.chunk import Chunk, MarkdownTextChunk

from adapters.slack.delivery import METADATA_EVENT, TRANSIENT_ERRORS
from adapters.slack.errors import error_code
from adapters.slack.mrkdwn import to_mrkdwn
from adapters.text import open_fence, reply_markdown, split_parts

if TYPE_CHECKING:
    from slack_sdk.web.async_chat_stream import AsyncChatStream
    from slack_sdk.web.async_client import AsyncWebClient

    from core.request import Reply

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

Record = Callable[[int, str], Awaitable[None]]  # part number, message ts


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


@dataclass(frozen=True, slots=True)
class StreamTarget:
    tenant: str
    channel: str
    thread_ts: str
    team_id: str  # the asking user's workspace (`recipient_team_id`)
    user_id: str  # the asking user (`recipient_user_id`)
    delivery_key: str


class Refused(Exception):
    """The workspace refuses this way of writing; `code` is Slack's error."""

    def __init__(self, code: str) -> None:
        super().__init__(code)
        self.code = code


def transient(exc: Exception) -> bool:
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


class Page:
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
        # Blocks under the text of the answer's last message (its sources), given at close.
        self.footer: list[dict[str, Any]] = []

    @property
    def metadata(self) -> dict[str, Any]:
        payload = {"delivery": self._target.delivery_key, "part": self.part}
        return {"event_type": METADATA_EVENT, "event_payload": payload}

    async def write(self, add: str, tasks: Sequence[Chunk], status: str = "") -> None:
        """Show `add` after the page's text (and the tool steps). Raises `Refused` when the
        page's first call is refused (nothing was shown; `add` is not kept)."""
        self.text += add
        if self.mode == "stream":
            await self._stream_call(add, tasks, stop=False)
        elif self.mode == "edit":
            await self._edit(status)

    async def close(
        self, add: str, tasks: Sequence[Chunk], footer: Sequence[dict[str, Any]] = ()
    ) -> None:
        """The page's last text: stop the stream, or the final edit (no status line).
        `footer`: blocks shown under the text (the answer's sources), with this last update."""
        self.text += add
        self.footer = list(footer)
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
                await stream.stop(chunks=chunks, metadata=self.metadata, blocks=self.footer or None)
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
            raise Refused(error_code(failed))
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
        shown = body + repr(self.footer)
        if not body.strip() or shown == self._edited:
            return
        blocks = markdown_blocks(body) + self.footer
        t = self._target
        try:
            if self.ts is None:
                resp = await self._client.chat_postMessage(
                    channel=t.channel,
                    thread_ts=t.thread_ts,
                    text=notification_text(body),
                    blocks=blocks,
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
                    blocks=blocks,
                )
        except Exception as exc:  # Slack's refusal, or a connection that broke
            code = error_code(exc)
            if self.ts is None and not isinstance(exc, SlackApiError):
                # The response to the post was lost: it may be in the thread all the same.
                self.ts = await self._find_posted()
                if self.ts is not None:
                    await self._record(self.part, self.ts)
                    self._edited = shown
                    self.shown = len(self.text)
                    return
            if self.ts is None:
                raise Refused(code) from None
            if transient(exc):
                return  # the next edit (or the final one) carries this text too
            log.warning("Slack refused editing an answer (%s); the rest is posted at the end", code)
            if code in EDITS_REFUSED:
                self._workspaces.no_edits.add(t.tenant)
            self.mode = "frozen"
            return
        self._edited = shown
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


def after_text(reply: Reply) -> str:
    """What a reply shows after its text: its notices (`reply_markdown`). Its sources are a
    block of their own under the last message (`adapters.slack.sources`)."""
    return reply_markdown(reply, sources=False)[len(reply.text.strip()) :]


def _text_chunk(text: str) -> list[Chunk]:
    return [MarkdownTextChunk(text=text)] if text else []


# -- splitting -----------------------------------------------------------------------------------

# Kept free at a message's end: a code block open there is closed after what was shown.
_FENCE_ROOM = 8


def hold(limit: int) -> int:
    """How close to a message's end text goes out by whole lines only."""
    return min(1_000, limit // 4)


def fit(written: str, add: str, limit: int) -> tuple[str, str | None]:
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
    # The best boundary lies in text already shown: this message ends at the end of the line
    # being written (cut mid-line, a code line would go on unindented in the next message), or
    # where it is when that line does not fit.
    done = ""
    newline = add.find("\n")
    if not written.endswith("\n") and 0 <= newline and len(written) + newline < limit - _FENCE_ROOM:
        done, add = add[: newline + 1], add[newline + 1 :]
        written += done
    fence = open_fence(written)
    if fence is None:
        return done, add
    opener, chars = fence
    close = ("" if written.endswith("\n") else "\n") + chars + "\n"
    return done + close, opener + "\n" + add
