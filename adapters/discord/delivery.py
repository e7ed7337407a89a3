"""Posting rendered replies on Discord: in a channel or thread exactly once, or as an
interaction's deferred answer; a typing indicator while the agent works (answers streamed as
they are written go through `stream`, which posts with these helpers). Spoken answers
(OGG/Opus audio with a duration and waveform) go out as real voice messages, or as a plain
audio file where the channel refuses those."""

from __future__ import annotations

import asyncio
import base64
import io
import json
import logging
from collections.abc import AsyncIterator, Sequence
from contextlib import asynccontextmanager, suppress
from typing import TYPE_CHECKING, Any

from adapters.discord.lib import discord
from adapters.discord.translate import PLATFORM, Outgoing

if TYPE_CHECKING:
    from core.events import EventLedger
    from core.request import Attachment

log = logging.getLogger("threadline.discord")

# Threadline never pings: not @everyone, not roles, not the people named in an answer.
NO_PINGS = discord.AllowedMentions.none()
TYPING_LASTS = 10.0  # seconds Discord shows "is typing…" after one trigger
IS_VOICE_MESSAGE = 1 << 13  # message flag: shown as a voice message with a waveform
VOICE_MESSAGES_REFUSED = 50173  # "Cannot send voice messages in this channel"
VOICE_MESSAGE_FILENAME = "voice-message.ogg"  # what Discord's own clients name them


def as_file(item: Outgoing) -> discord.File | None:
    if item.file is None:
        return None
    return discord.File(io.BytesIO(item.file.data), filename=item.file.filename)


def is_voice(attachment: Attachment | None) -> bool:
    """Audio Discord can show as a voice message: OGG/Opus with its duration and waveform."""
    return (
        attachment is not None
        and attachment.kind == "audio"
        and attachment.mime_type == "audio/ogg"
        and bool(attachment.duration_secs)
        and bool(attachment.waveform)
    )


async def send_voice_message(
    channel: discord.abc.Messageable, attachment: Attachment
) -> discord.Message:
    """Post `attachment` as a voice message. discord.py 2.7 has no helper for it (its
    attachment payload has no duration or waveform), so the request is built here and sent
    through discord.py's own HTTP client: its route, rate limits and retries."""
    assert attachment.waveform is not None and attachment.duration_secs is not None
    target = await channel._get_channel()
    state = target._state
    payload = {
        "flags": IS_VOICE_MESSAGE,
        "allowed_mentions": NO_PINGS.to_dict(),
        "attachments": [
            {
                "id": "0",
                "filename": VOICE_MESSAGE_FILENAME,
                "duration_secs": round(attachment.duration_secs, 2),
                "waveform": base64.b64encode(attachment.waveform).decode("ascii"),
            }
        ],
    }
    file = discord.File(io.BytesIO(attachment.data), filename=VOICE_MESSAGE_FILENAME)
    form: list[dict[str, Any]] = [
        {"name": "payload_json", "value": json.dumps(payload)},
        {
            "name": "files[0]",
            "value": file.fp,
            "filename": file.filename,
            "content_type": attachment.mime_type,
        },
    ]
    route = discord.http.Route("POST", "/channels/{channel_id}/messages", channel_id=target.id)
    data = await state.http.request(route, form=form, files=[file])
    return state.create_message(channel=target, data=data)


async def send_audio(channel: discord.abc.Messageable, attachment: Attachment) -> discord.Message:
    """A voice message where the channel allows them, else the same audio as a plain file."""
    try:
        return await send_voice_message(channel, attachment)
    except discord.HTTPException as exc:
        if exc.code != VOICE_MESSAGES_REFUSED:
            raise
        where = getattr(channel, "id", "?")
        log.info("Discord: voice messages refused in %s; posting a plain audio file", where)
    file = discord.File(io.BytesIO(attachment.data), filename=attachment.filename)
    return await channel.send(file=file, allowed_mentions=NO_PINGS)


async def post(
    events: EventLedger,
    channel: discord.abc.Messageable,
    delivery_key: str,
    outgoing: Sequence[Outgoing],
    *,
    reference: discord.Message | None = None,
) -> None:
    """Post the parts in order, skipping those already recorded as posted for `delivery_key`
    (a retried delivery, another process); each posted part is recorded at once."""
    done = await events.posted(PLATFORM, delivery_key)
    for i, item in enumerate(outgoing):
        if i in done:
            continue
        message = await send(channel, item, reference=reference if i == 0 else None)
        await events.record_post(PLATFORM, delivery_key, i, str(message.id))


async def send(
    channel: discord.abc.Messageable,
    item: Outgoing,
    *,
    reference: discord.Message | None = None,
    view: discord.ui.View | None = None,
) -> discord.Message:
    """Post one part: its text (as a reply to `reference`, if given, with `view`'s buttons
    under it), its file, or its audio as a voice message."""
    file = as_file(item)
    if item.file is not None and is_voice(item.file):
        return await send_audio(channel, item.file)
    if file is not None:
        return await channel.send(file=file, allowed_mentions=NO_PINGS)
    if reference is not None and view is not None:
        return await channel.send(
            item.text,
            allowed_mentions=NO_PINGS,
            reference=reference,
            mention_author=False,
            view=view,
        )
    if reference is not None:
        return await channel.send(
            item.text, allowed_mentions=NO_PINGS, reference=reference, mention_author=False
        )
    if view is not None:
        return await channel.send(item.text, allowed_mentions=NO_PINGS, view=view)
    return await channel.send(item.text, allowed_mentions=NO_PINGS)


async def answer_interaction(
    interaction: discord.Interaction,
    outgoing: Sequence[Outgoing],
    *,
    deferred_privately: bool,
    private: bool,
) -> None:
    """Replace the deferred "thinking…" response with the answer, the rest as follow-ups.

    Discord fixed the answer's visibility when it was deferred; when the reply turns out the
    other way (a refusal to a public command, a public result of a private one), the deferred
    response is deleted and the answer sent as follow-ups with the right visibility."""
    first_replaces = private == deferred_privately
    if not first_replaces:
        await interaction.delete_original_response()
    for i, item in enumerate(outgoing):
        file = as_file(item)
        if i == 0 and first_replaces:
            if file is not None:
                await interaction.edit_original_response(
                    content=None, attachments=[file], allowed_mentions=NO_PINGS
                )
            else:
                await interaction.edit_original_response(
                    content=item.text, allowed_mentions=NO_PINGS
                )
        elif file is not None:
            await interaction.followup.send(
                file=file, ephemeral=private, allowed_mentions=NO_PINGS, wait=True
            )
        else:
            await interaction.followup.send(
                item.text, ephemeral=private, allowed_mentions=NO_PINGS, wait=True
            )


@asynccontextmanager
async def typing(channel: discord.abc.Messageable, every: float = 8.0) -> AsyncIterator[None]:
    """Show "Threadline is typing…" until the block ends (re-triggered every `every` seconds,
    before Discord's indicator lapses). A courtesy: a failure to trigger it is only logged."""
    if every >= TYPING_LASTS:
        raise ValueError(f"the typing indicator lasts {TYPING_LASTS} s; re-trigger it sooner")

    async def keep_typing() -> None:
        while True:
            try:
                await channel.typing()
            except (discord.HTTPException, OSError) as exc:
                log.debug("typing indicator failed: %s", type(exc).__name__)
            await asyncio.sleep(every)

    task = asyncio.create_task(keep_typing())
    try:
        yield
    finally:
        task.cancel()
        with suppress(asyncio.CancelledError):
            await task
