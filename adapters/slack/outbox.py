"""Delivering outbox messages (digests, late replies) on Slack, exactly once.

Layout (`outbox_parts`, pure): a message with a `thread` goes into that thread; otherwise its
first part is a new top-level message and the rest goes into that message's thread. A `title`
is the first line of the first part, in bold; a titled text longer than `INLINE_LIMIT` leaves
the top-level message with the title alone and goes, whole, into its thread.

Exactly once, in three layers:

1. every posted part (and uploaded file) is recorded in `core.events` under a key derived from
   the outbox key, and a later attempt posts only what is not recorded;
2. every `chat.postMessage` carries message metadata (`threadline_outbox`, with the key and
   the part number). A part posted by an attempt that died before recording it (a crash, a
   lost response) is found again: when the outbox says an earlier attempt exists
   (`item.attempts > 0`), the channel's history since the message was enqueued
   (`conversations.history`) and the thread (`conversations.replies`) are read back first;
3. `chat.postMessage` is never repeated by the HTTP client after a lost response
   (`adapters.slack.web.NOT_REPEATABLE`).

What cannot be made exactly once: an uploaded file carries no metadata, so a file whose upload
succeeded but was not recorded (the process died in between) is uploaded again; and an app
without the `*:history` scopes cannot read back, so a retry then posts what is not recorded.
"""

from __future__ import annotations

import hashlib
import logging
from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING, Any

from slack_sdk.errors import SlackApiError

from adapters.slack.delivery import ATTACHMENT_PART, TRANSIENT_ERRORS
from adapters.slack.errors import error_code
from adapters.slack.mrkdwn import to_mrkdwn
from adapters.slack.translate import MESSAGE_LIMIT, PLATFORM
from adapters.text import split_markdown
from core.outbox import DeliveryError

if TYPE_CHECKING:
    from slack_sdk.web.async_client import AsyncWebClient

    from core.events import EventLedger
    from core.outbox import OutboxItem, OutboxMessage
    from core.request import Attachment

log = logging.getLogger("threadline.slack")

METADATA_EVENT = "threadline_outbox"
INLINE_LIMIT = 1_000  # characters of a titled text shown in the top-level message itself
LOOKUP_PAGES = 5  # pages of 200 messages read back at most, per conversation
LOOKUP_MARGIN = timedelta(minutes=10)  # clocks of this host and Slack may disagree


def outbox_parts(message: OutboxMessage, *, limit: int = MESSAGE_LIMIT) -> list[str]:
    """The mrkdwn messages to post, in order (see the module docstring)."""
    body = to_mrkdwn(message.text).strip("\n") if message.text.strip() else ""
    title = to_mrkdwn(f"**{message.title.strip()}**") if message.title else ""
    if title and body and message.thread is None and len(body) > INLINE_LIMIT:
        return [title, *_split(body, limit)]
    first = f"{title}\n{body}" if title and body else (title or body)
    return _split(first, limit) if first else []


def _split(text: str, limit: int) -> list[str]:
    return [p.strip("\n") for p in split_markdown(text, limit) if p.strip()]


def delivery_key(key: str) -> str:
    """The `core.events` delivery key of an outbox key (fixed length, whatever the key)."""
    return "outbox:" + hashlib.sha256(key.encode()).hexdigest()


class OutboxDelivery:
    def __init__(self, client: AsyncWebClient, events: EventLedger) -> None:
        self._client = client
        self._events = events

    async def deliver(self, item: OutboxItem) -> str:
        """Post what is missing of the item; returns the ts of its first message (or the id
        of its first file). Raises `DeliveryError` (retry or not) when Slack refuses."""
        message = item.message
        parts = outbox_parts(message)
        key = delivery_key(message.key)
        done = await self._events.posted(PLATFORM, key)
        missing = [i for i in range(len(parts)) if i not in done]
        if item.attempts > 0 and missing:
            await self._look_back(item, parts, done)
        thread = message.thread or done.get(0)
        for i, text in enumerate(parts):
            if i in done:
                continue
            into = message.thread if message.thread else (thread if i > 0 else None)
            ts = await self._post(message, into, i, text)
            await self._events.record_post(PLATFORM, key, i, ts)
            done[i] = ts
            if i == 0 and not message.thread:
                thread = ts
        for j, attachment in enumerate(message.attachments):
            if ATTACHMENT_PART + j in done:
                continue
            file_id = await self._upload(message, thread, attachment)
            await self._events.record_post(PLATFORM, key, ATTACHMENT_PART + j, file_id)
            done[ATTACHMENT_PART + j] = file_id
        return done.get(0) or done.get(ATTACHMENT_PART, "")

    # -- finding what an earlier attempt posted ------------------------------------------------

    async def _look_back(self, item: OutboxItem, parts: list[str], done: dict[int, str]) -> None:
        """Record the parts an earlier attempt posted without recording them (`done` is
        updated in place)."""
        message = item.message
        key = delivery_key(message.key)
        known = len(done)
        since = (item.enqueued_at or datetime.now(UTC)) - LOOKUP_MARGIN
        oldest = f"{since.timestamp():.6f}"
        if message.thread is None and 0 not in done:
            found = await self._find(message, None, oldest)
            if 0 in found:
                await self._events.record_post(PLATFORM, key, 0, found[0])
                done[0] = found[0]
        thread = message.thread or done.get(0)
        first = 0 if message.thread else 1
        if thread and any(i not in done for i in range(first, len(parts))):
            for i, ts in (await self._find(message, thread, oldest)).items():
                if i >= first and i < len(parts) and i not in done:
                    await self._events.record_post(PLATFORM, key, i, ts)
                    done[i] = ts
        if len(done) > known:
            log.info(
                "Slack: outbox %s: %d part(s) posted by an earlier attempt found; not posted again",
                message.key,
                len(done) - known,
            )

    async def _find(
        self, message: OutboxMessage, thread: str | None, oldest: str
    ) -> dict[int, str]:
        """Part number -> ts of this message's parts in the channel (top level) or a thread."""
        found: dict[int, str] = {}
        cursor: str | None = None
        for _ in range(LOOKUP_PAGES):
            args: dict[str, Any] = {
                "channel": message.channel,
                "include_all_metadata": True,
                "limit": 200,
                "oldest": oldest,
            }
            if cursor:
                args["cursor"] = cursor
            try:
                if thread:
                    resp = await self._client.conversations_replies(ts=thread, **args)
                else:
                    resp = await self._client.conversations_history(**args)
            except SlackApiError as exc:
                if error_code(exc) == "missing_scope":
                    # Without the *:history scopes nothing can be read back: posting again
                    # may duplicate a part, never posting would lose the message.
                    log.warning(
                        "Slack: cannot read %s back to check for an earlier post of %s "
                        "(missing_scope: add channels:history / groups:history); posting",
                        message.channel,
                        message.key,
                    )
                    return found
                raise _failure(exc, "reading back") from None
            except (OSError, TimeoutError) as exc:
                # Never post blind: without the read-back a retry could post twice.
                raise DeliveryError(f"reading back: {type(exc).__name__}") from None
            for m in resp.get("messages") or []:
                meta = m.get("metadata") or {}
                payload = meta.get("event_payload") or {}
                if meta.get("event_type") == METADATA_EVENT and payload.get("key") == message.key:
                    found.setdefault(int(payload.get("part", -1)), str(m["ts"]))
            cursor = (resp.get("response_metadata") or {}).get("next_cursor") or None
            if not cursor or not resp.get("has_more", True):
                break
        return found

    # -- posting -------------------------------------------------------------------------------

    async def _post(self, message: OutboxMessage, thread: str | None, part: int, text: str) -> str:
        import aiohttp

        args: dict[str, Any] = {
            "channel": message.channel,
            "text": text,
            "metadata": {
                "event_type": METADATA_EVENT,
                "event_payload": {"key": message.key, "part": part},
            },
            "unfurl_links": False,
            "unfurl_media": False,
        }
        if thread:
            args["thread_ts"] = thread
        try:
            resp = await self._client.chat_postMessage(**args)
        except SlackApiError as exc:
            raise _failure(exc, "chat.postMessage") from None
        except (aiohttp.ClientError, TimeoutError) as exc:
            # Slack may have posted it: the retry reads the channel back before posting.
            raise DeliveryError(f"chat.postMessage: response lost ({type(exc).__name__})") from None
        return str(resp["ts"])

    async def _upload(
        self, message: OutboxMessage, thread: str | None, attachment: Attachment
    ) -> str:
        import aiohttp

        args: dict[str, Any] = {
            "channel": message.channel,
            "filename": attachment.filename,
            "title": attachment.filename,
            "content": attachment.data,
        }
        if thread:
            args["thread_ts"] = thread
        try:
            resp = await self._client.files_upload_v2(**args)
        except SlackApiError as exc:
            raise _failure(exc, "files.upload") from None
        except (aiohttp.ClientError, TimeoutError) as exc:
            raise DeliveryError(f"files.upload: {type(exc).__name__}") from None
        file = resp.get("file") or {}
        return str(file.get("id", ""))


def _failure(exc: SlackApiError, what: str) -> DeliveryError:
    """Slack's refusal as a `DeliveryError`: transient codes and 5xx are retried; the rest
    (channel_not_found, not_in_channel, is_archived, invalid_auth...) cannot get better."""
    code = error_code(exc)
    status = getattr(exc.response, "status_code", 0) or 0
    transient = code in TRANSIENT_ERRORS or status >= 500 or status == 429
    return DeliveryError(f"{what}: {code}", retry=transient)
