"""Delivering outbox messages (digests, late replies) on Discord, through discord.py's own HTTP
client (its routes, rate-limit buckets and retries).

Layout (`outbox_parts`, pure): a message with a `thread` goes into that thread (a Discord
thread is a channel of its own); otherwise into the channel. A `title` is the first line of
the first message, in bold. A titled text that does not fit one short message instead posts
the title alone in the channel and opens a thread on it, named after the title, for the text
and the files.

Exactly once, as far as Discord allows:

1. every posted part is recorded in `core.events`, and a later attempt posts only what is not
   recorded;
2. every part is sent with a `nonce` derived from the outbox key and the part number, with
   `enforce_nonce`: when an attempt died between posting and recording, the next one sends
   the same nonce and Discord hands back the message it already made instead of a second one.
   Discord keeps nonces only for a few minutes; a takeover after a crash comes once the lease
   has expired (2 minutes by default), inside that window. Later than that, or for a process
   that stopped for longer, the record of step 1 is all there is: Discord offers no way to
   find a message by anything Threadline could have attached to it.
"""

from __future__ import annotations

import hashlib
import io
import logging
from dataclasses import dataclass
from typing import TYPE_CHECKING

from adapters.discord.delivery import NO_PINGS
from adapters.discord.lib import discord
from adapters.discord.translate import PLATFORM, THREAD_NAME_LIMIT, Outgoing, render
from core.outbox import DeliveryError
from core.request import Reply

if TYPE_CHECKING:
    from core.events import EventLedger
    from core.outbox import OutboxItem, OutboxMessage

log = logging.getLogger("threadline.discord")

INLINE_LIMIT = 1_000  # characters of a titled text posted in the channel itself
NONCE_CHARS = 25  # Discord's limit for a string nonce
THREAD_ALREADY_EXISTS = 160004


@dataclass(frozen=True, slots=True)
class Plan:
    """What to post: `parts` in order; with `thread_name`, part 0 goes in the channel and a
    thread opened on it (named so) takes the rest."""

    parts: list[Outgoing]
    thread_name: str | None = None


def outbox_parts(message: OutboxMessage, *, upload_limit: int) -> Plan:
    body = message.text.strip("\n") if message.text.strip() else ""
    title = message.title.strip() if message.title else ""
    heading = f"**{title}**" if title else ""
    if title and body and message.thread is None and len(body) > INLINE_LIMIT:
        rest = render(Reply(body, attachments=message.attachments), upload_limit=upload_limit)
        return Plan([Outgoing(text=heading), *rest], thread_name=title[:THREAD_NAME_LIMIT])
    first = f"{heading}\n{body}" if heading and body else (heading or body)
    parts = render(Reply(first, attachments=message.attachments), upload_limit=upload_limit)
    return Plan(parts)


def delivery_key(key: str) -> str:
    return "outbox:" + hashlib.sha256(key.encode()).hexdigest()


def nonce(key: str, part: int) -> str:
    """The same for every attempt at the same part, different for every other part."""
    return hashlib.sha256(f"{key}\x00{part}".encode()).hexdigest()[:NONCE_CHARS]


async def deliver(
    client: discord.Client, events: EventLedger, item: OutboxItem, *, upload_limit: int
) -> str:
    """Post what is missing of the item; returns the id of its first message. Raises
    `DeliveryError` (retry or not) when Discord refuses."""
    message = item.message
    plan = outbox_parts(message, upload_limit=upload_limit)
    key = delivery_key(message.key)
    done = await events.posted(PLATFORM, key)
    channel_id = _snowflake(message.thread or message.channel)
    thread_id: int | None = None
    for i, part in enumerate(plan.parts):
        if i in done:
            continue
        target = channel_id
        if plan.thread_name is not None and i > 0:
            if thread_id is None:
                thread_id = await _open_thread(client, channel_id, int(done[0]), plan.thread_name)
            target = thread_id
        posted = await _send(client, target, part, nonce(message.key, i))
        await events.record_post(PLATFORM, key, i, str(posted))
        done[i] = str(posted)
    return done.get(0, "")


async def _open_thread(client: discord.Client, channel_id: int, message_id: int, name: str) -> int:
    """The thread on `message_id` (opened by this attempt or an earlier one); the channel
    itself when the bot may not open threads there."""
    try:
        await client.http.start_thread_with_message(
            channel_id, message_id, name=name, auto_archive_duration=1440
        )
    except discord.HTTPException as exc:
        if exc.code == THREAD_ALREADY_EXISTS:
            return message_id  # a thread started on a message has the message's id
        if isinstance(exc, discord.Forbidden):
            log.warning(
                "Discord: cannot open a thread in channel %s (the bot needs Create Public "
                "Threads there); posting the rest in the channel",
                channel_id,
            )
            return channel_id
        raise _failure(exc, "opening the thread") from None
    except (OSError, TimeoutError) as exc:
        raise DeliveryError(f"opening the thread: {type(exc).__name__}") from None
    return message_id


async def _send(client: discord.Client, channel_id: int, part: Outgoing, once: str) -> int:
    channel = client.get_partial_messageable(channel_id)
    try:
        if part.file is not None:
            file = discord.File(io.BytesIO(part.file.data), filename=part.file.filename)
            sent = await channel.send(file=file, nonce=once, allowed_mentions=NO_PINGS)
        else:
            sent = await channel.send(part.text, nonce=once, allowed_mentions=NO_PINGS)
    except discord.HTTPException as exc:
        raise _failure(exc, "sending") from None
    except (OSError, TimeoutError) as exc:
        # Discord may have made it: the retry sends the same nonce and gets that message back.
        raise DeliveryError(f"sending: {type(exc).__name__}") from None
    return sent.id


def _failure(exc: discord.HTTPException, what: str) -> DeliveryError:
    """Server errors and rate limits are retried; a missing permission, an unknown channel or
    an invalid message cannot get better."""
    transient = exc.status >= 500 or exc.status == 429
    return DeliveryError(f"{what}: HTTP {exc.status}, code {exc.code}", retry=transient)


def _snowflake(value: str) -> int:
    try:
        return int(value)
    except ValueError:
        raise DeliveryError(f"not a Discord channel id: {value!r}", retry=False) from None
