"""Posting a rendered reply exactly once: parts in order, into the right thread, recorded.

Every posted part (and uploaded attachment) is recorded through `core.events` under a key
that names the message being answered, so a delivery that is retried after a transient
failure posts only the parts that are missing. Each `chat.postMessage` carries metadata with
that key and part number: when the response to a post is lost (the connection broke after
Slack may have posted it), the thread is read back before posting again.

A part Slack refuses as too long falls back to uploading the whole answer as a file; a
channel the bot is not in falls back to the slash command's `response_url`.
"""

from __future__ import annotations

import asyncio
import logging
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any

from slack_sdk.errors import SlackApiError

from adapters.slack.errors import error_code
from adapters.slack.feedback import feedback_blocks
from adapters.slack.sources import sources_blocks, sources_mrkdwn
from adapters.slack.translate import PLATFORM, render
from adapters.text import reply_markdown
from core import messages
from core.backoff import Backoff

if TYPE_CHECKING:
    import aiohttp
    from slack_sdk.web.async_client import AsyncWebClient

    from core.events import EventLedger
    from core.request import Attachment, Reply, Source

log = logging.getLogger("threadline.slack")

METADATA_EVENT = "threadline_reply_part"
ATTACHMENT_PART = 10_000  # attachments are recorded as parts 10000, 10001, ...
FILE_FALLBACK = "file:"  # message id prefix of parts delivered by the too-long fallback
TRANSIENT_ERRORS = frozenset(
    {"internal_error", "fatal_error", "service_unavailable", "request_timeout", "ratelimited"}
)
NOT_A_MEMBER = frozenset({"not_in_channel", "channel_not_found"})
SECTION_LIMIT = 3_000  # a section block's mrkdwn text


@dataclass(frozen=True, slots=True)
class Target:
    """Where a reply goes. `thread_ts` None means a new top-level message (slash commands),
    whose thread then takes the remaining parts and attachments."""

    tenant: str
    channel: str
    user: str
    delivery_key: str
    thread_ts: str | None = None
    ephemeral: bool = False
    header: str | None = None  # mrkdwn line put above the first part
    response_url: str | None = None


class DeliveryFailed(Exception):
    def __init__(self, code: str, *, transient: bool) -> None:
        super().__init__(code)
        self.code = code
        self.transient = transient


class _TooLong(Exception):
    pass


class Delivery:
    def __init__(
        self,
        client: AsyncWebClient,
        events: EventLedger,
        *,
        session: aiohttp.ClientSession | None = None,
        attempts: int = 3,
        backoff: float = 1.0,
    ) -> None:
        """`backoff`: the pause after the first transient failure, doubling (with jitter, the
        schedule every retry loop uses: `core.backoff`) up to ten times it."""
        self._client = client
        self._events = events
        self._session = session
        self._attempts = attempts
        self._backoff = Backoff(first=backoff, limit=backoff * 10)

    async def deliver(self, target: Target, reply: Reply) -> None:
        """Post the reply; retries transient failures, posting only what is missing."""
        for attempt in range(1, self._attempts + 1):
            try:
                await self._deliver_once(target, reply)
                return
            except DeliveryFailed as exc:
                if not exc.transient or attempt == self._attempts:
                    log.warning(
                        "could not deliver a reply in %s (%s, attempt %d)",
                        target.channel,
                        exc.code,
                        attempt,
                    )
                    raise
                await asyncio.sleep(self._backoff.delay(attempt))

    async def _deliver_once(self, target: Target, reply: Reply) -> None:
        # The sources go under the last part: a context block, or a line where blocks cannot;
        # then the 👍/👎 of an answer people may rate.
        parts = render(replace(reply, sources=()))
        if parts and target.header:
            parts[0] = f"{target.header}\n{parts[0]}"
        done = await self._events.posted(PLATFORM, target.delivery_key)
        thread_ts = target.thread_ts
        if thread_ts is None and 0 in done and not done[0].startswith(FILE_FALLBACK):
            thread_ts = done[0]  # a top-level answer posted by an earlier attempt
        for i, text in enumerate(parts):
            if i in done:
                continue
            last = i == len(parts) - 1
            footer = reply.sources if last else ()
            rated = reply.answer_id if last else None
            try:
                message_id = await self._post(target, thread_ts, i, text, footer, rated)
            except _TooLong:
                await self._answer_as_file(target, thread_ts, reply, range(i, len(parts)))
                break
            await self._events.record_post(PLATFORM, target.delivery_key, i, message_id)
            if thread_ts is None and not target.ephemeral and message_id:
                thread_ts = message_id
        if target.ephemeral:
            if reply.attachments:
                log.warning("attachments of a personal (ephemeral) reply were not uploaded")
            return
        await self._upload_missing(target, thread_ts, reply, done)

    async def deliver_attachments(self, target: Target, reply: Reply) -> None:
        """Upload only the reply's attachments into the thread (its text was streamed)."""
        if reply.attachments:
            done = await self._events.posted(PLATFORM, target.delivery_key)
            await self._upload_missing(target, target.thread_ts, reply, done)

    async def _upload_missing(
        self, target: Target, thread_ts: str | None, reply: Reply, done: dict[int, str]
    ) -> None:
        for j, attachment in enumerate(reply.attachments):
            if ATTACHMENT_PART + j in done:
                continue
            file_id = await self._upload(target, thread_ts, attachment)
            await self._events.record_post(
                PLATFORM, target.delivery_key, ATTACHMENT_PART + j, file_id
            )

    # -- one part ------------------------------------------------------------------------------

    async def _post(
        self,
        target: Target,
        thread_ts: str | None,
        part: int,
        text: str,
        sources: tuple[Source, ...] = (),
        answer_id: str | None = None,
    ) -> str:
        line = f"{text}\n\n{sources_mrkdwn(sources)}" if sources else text
        try:
            if target.ephemeral:
                return await self._post_ephemeral(target, thread_ts, line)
            return await self._post_message(target, thread_ts, part, text, sources, answer_id)
        except SlackApiError as exc:
            code = error_code(exc)
            if code == "msg_too_long" and not target.ephemeral:
                raise _TooLong from None
            if code in NOT_A_MEMBER and target.response_url:
                return await self._respond(target, line)
            transient = code in TRANSIENT_ERRORS or getattr(exc.response, "status_code", 0) >= 500
            raise DeliveryFailed(code, transient=transient) from None

    async def _post_message(
        self,
        target: Target,
        thread_ts: str | None,
        part: int,
        text: str,
        sources: tuple[Source, ...] = (),
        answer_id: str | None = None,
    ) -> str:
        import aiohttp

        metadata = {
            "event_type": METADATA_EVENT,
            "event_payload": {"delivery": target.delivery_key, "part": part},
        }
        args: dict[str, Any] = {
            "channel": target.channel,
            "text": text,
            "metadata": metadata,
            "unfurl_links": False,
            "unfurl_media": False,
        }
        if (sources or answer_id) and len(text) <= SECTION_LIMIT:
            # The part as a section, the sources and the 👍/👎 under it.
            section = {"type": "section", "text": {"type": "mrkdwn", "text": text}}
            args["blocks"] = [section, *sources_blocks(sources), *feedback_blocks(answer_id)]
        elif answer_id:
            # Too long for one section: sections cut at lines, the buttons under the last.
            sections = [
                {"type": "section", "text": {"type": "mrkdwn", "text": piece}}
                for piece in _sections(text)
            ]
            args["blocks"] = [*sections, *sources_blocks(sources), *feedback_blocks(answer_id)]
        elif sources:
            args["text"] = f"{text}\n\n{sources_mrkdwn(sources)}"
        if thread_ts:
            args["thread_ts"] = thread_ts
        try:
            resp = await self._client.chat_postMessage(**args)
        except (aiohttp.ClientError, TimeoutError) as exc:
            # The request went out; whether Slack posted it is unknown. Look before re-posting.
            log.warning("lost the response to chat.postMessage (%s)", type(exc).__name__)
            found = await self._find_posted(target, thread_ts, part)
            if found is not None:
                return found
            raise DeliveryFailed(type(exc).__name__, transient=True) from None
        return str(resp["ts"])

    async def _find_posted(self, target: Target, thread_ts: str | None, part: int) -> str | None:
        try:
            if thread_ts:
                resp = await self._client.conversations_replies(
                    channel=target.channel, ts=thread_ts, include_all_metadata=True, limit=200
                )
            else:
                resp = await self._client.conversations_history(
                    channel=target.channel, include_all_metadata=True, limit=50
                )
        except Exception as exc:
            log.warning("could not read the thread back: %s", type(exc).__name__)
            raise DeliveryFailed("lookup_failed", transient=True) from None
        for message in resp.get("messages") or []:
            meta = message.get("metadata") or {}
            payload = meta.get("event_payload") or {}
            if (
                meta.get("event_type") == METADATA_EVENT
                and payload.get("delivery") == target.delivery_key
                and int(payload.get("part", -1)) == part
            ):
                return str(message["ts"])
        return None

    async def _post_ephemeral(self, target: Target, thread_ts: str | None, text: str) -> str:
        args: dict[str, Any] = {"channel": target.channel, "user": target.user, "text": text}
        if thread_ts:
            args["thread_ts"] = thread_ts
        resp = await self._client.chat_postEphemeral(**args)
        return str(resp.get("message_ts") or "")

    async def _respond(self, target: Target, text: str) -> str:
        """The slash command's response_url works where the bot is not a channel member."""
        from slack_sdk.webhook.async_client import AsyncWebhookClient

        assert target.response_url is not None
        hook = AsyncWebhookClient(target.response_url, session=self._session)
        kind = "ephemeral" if target.ephemeral else "in_channel"
        resp = await hook.send(text=text, response_type=kind, replace_original=False)
        if resp.status_code != 200:
            raise DeliveryFailed(f"response_url_{resp.status_code}", transient=False)
        return "response_url"

    # -- files ---------------------------------------------------------------------------------

    async def _upload(
        self,
        target: Target,
        thread_ts: str | None,
        attachment: Attachment,
        comment: str | None = None,
    ) -> str:
        args: dict[str, Any] = {
            "channel": target.channel,
            "filename": attachment.filename,
            # Audio is titled from the question it answers; Slack shows the title above its
            # inline player.
            "title": attachment.title or attachment.filename,
            "content": attachment.data,
        }
        if comment:
            args["initial_comment"] = comment
        if thread_ts:
            args["thread_ts"] = thread_ts
        try:
            resp = await self._client.files_upload_v2(**args)
        except SlackApiError as exc:
            code = error_code(exc)
            raise DeliveryFailed(code, transient=code in TRANSIENT_ERRORS) from None
        file = resp.get("file") or {}
        return str(file.get("id", ""))

    async def _answer_as_file(
        self, target: Target, thread_ts: str | None, reply: Reply, parts: range
    ) -> None:
        from core.request import Attachment

        log.info("Slack refused a part as too long; uploading the answer as a file")
        doc = Attachment("file", "answer.md", reply_markdown(reply).encode(), "text/markdown")
        file_id = await self._upload(target, thread_ts, doc, messages.ANSWER_AS_FILE)
        for i in parts:
            await self._events.record_post(
                PLATFORM, target.delivery_key, i, f"{FILE_FALLBACK}{file_id}"
            )


def _sections(text: str) -> list[str]:
    """`text` in pieces that each fit a section block, cut at a line where there is one."""
    pieces: list[str] = []
    while len(text) > SECTION_LIMIT:
        cut = text.rfind("\n", 0, SECTION_LIMIT)
        cut = cut if cut > SECTION_LIMIT // 2 else SECTION_LIMIT
        pieces.append(text[:cut])
        text = text[cut:].lstrip("\n")
    return [*pieces, text] if text else pieces
