"""Answering on Discord: a message, a 🔊 reaction or a `/threadline` command becomes a
`core.Request`, core answers, and the answer is written where it was asked as core streams it
(`stream`: one message edited as the words come, continued past 2,000 characters).

- a mention in a channel opens a thread on that message (named from the question) and the
  answer goes inside; mentioned inside a thread, it answers there; in a thread it opened, the
  conversation continues without a mention until the thread is archived; DMs work too;
- `/threadline <command>` is deferred at once (Discord allows 3 s) and answered in the
  deferred response (and follow-ups), privately for personal results;
- "typing…" until the first words; a thread it opened is never left empty (a failure to post
  the answer is reported inside it).

Exactly once: every message and interaction is claimed in `core.events` before any work, so a
gateway resume that replays events, or a second process, never answers twice; the parts of an
answer are recorded as they are posted.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import replace
from typing import TYPE_CHECKING, Any

from adapters.discord import delivery
from adapters.discord.config import DiscordConfig
from adapters.discord.files import message_files, resolved_files
from adapters.discord.history import ThreadHistory
from adapters.discord.inbound import describe, mentions_me, names_of, origin_of
from adapters.discord.lib import discord
from adapters.discord.stream import StreamWriter
from adapters.discord.surfaces import ChannelSurface, InteractionSurface, Ledger
from adapters.discord.translate import (
    PLATFORM,
    Origin,
    Outgoing,
    command_attachment_ids,
    command_text,
    is_private,
    message_text,
    read_aloud_text,
    render,
    thread_name,
    to_request,
)
from core import messages

if TYPE_CHECKING:
    from adapters.discord.payloads import CommandData
    from core.outbox.cut import Where
    from core.request import IncomingFile, ThreadReader
    from core.service import Core

log = logging.getLogger("threadline.discord")

THREAD_ALREADY_EXISTS = 160004  # Discord error code: this message already has a thread


class Answerer:
    """The work behind each event, started by the adapter as background work."""

    def __init__(self, core: Core, config: Callable[[], DiscordConfig]) -> None:
        """`config` reads the adapter's settings when they are needed (they may be re-tuned
        while it runs)."""
        self.core = core
        self._config = config
        self._history: ThreadHistory | None = None  # threads' earlier messages, read once

    @property
    def config(self) -> DiscordConfig:
        return self._config()

    async def message(
        self, client: discord.Client, me: discord.ClientUser, message: discord.Message
    ) -> None:
        channel: Any = message.channel
        if message.guild is not None and isinstance(channel, discord.PartialMessageable):
            channel = await self._resolve(client, channel.id)  # a thread not in the cache
            if channel is None:
                return
        mentioned = mentions_me(message, me)
        events = self.core.events
        origin = origin_of(message.author, message.guild, channel)
        text = message_text(message.content, me.id, names_of(message))
        files = message_files(message, self.config.file_origins)
        if isinstance(channel, discord.Thread):
            if not mentioned and not await events.thread_marked(
                PLATFORM, origin.tenant, origin.channel, str(channel.id)
            ):
                return  # chatter in a thread Threadline is not part of
            if await self._claim(origin.tenant, f"message:{message.id}"):
                earlier = self.history(client).reader(channel.id, message.id, me.id)
                await self._answer_in(
                    channel, origin, text, message, str(channel.id), files=files, earlier=earlier
                )
            return
        if message.guild is None:  # a DM: the DM channel is one conversation
            if await self._claim(origin.tenant, f"message:{message.id}"):
                await self._answer_in(channel, origin, text, message, str(channel.id), files=files)
            return
        if mentioned and await self._claim(origin.tenant, f"message:{message.id}"):
            await self._open_thread_and_answer(client, message, origin, text, files)

    def history(self, client: discord.Client) -> ThreadHistory:
        """The earlier messages of threads, read through `client`'s REST session."""
        if self._history is None:
            self._history = ThreadHistory(client.http, limit=self.config.history_limit)
        return self._history

    async def read_aloud(
        self,
        client: discord.Client,
        me: discord.ClientUser,
        payload: discord.RawReactionActionEvent,
    ) -> None:
        """🔊 on one of Threadline's messages: that message read aloud where it is."""
        channel = await self._resolve(client, payload.channel_id)
        if channel is None:
            return
        guild = client.get_guild(payload.guild_id) if payload.guild_id else None
        author: discord.User | discord.Member | None = payload.member
        try:
            if author is None:
                author = client.get_user(payload.user_id) or await client.fetch_user(
                    payload.user_id
                )
            message = await channel.fetch_message(payload.message_id)
        except discord.HTTPException as exc:
            log.info("Discord: cannot read the reacted message (%s)", describe(exc))
            return
        if not message.content.strip():
            return  # a file or a voice message: nothing written to read
        origin = origin_of(author, guild, channel)
        tenant = origin.tenant
        key = f"reaction:{payload.message_id}:{payload.user_id}"
        if not await self._claim(tenant, key):
            return
        text = read_aloud_text(message.content, me.id, names_of(message))
        await self._answer_in(
            channel, origin, text, message, str(channel.id), key=f"{tenant}:{key}"
        )

    async def _open_thread_and_answer(
        self,
        client: discord.Client,
        message: discord.Message,
        origin: Origin,
        text: str,
        files: tuple[IncomingFile, ...] = (),
    ) -> None:
        thread: discord.Thread | None = None
        try:
            thread = await message.create_thread(name=thread_name(text))
        except discord.HTTPException as exc:
            if exc.code == THREAD_ALREADY_EXISTS:  # opened by an earlier attempt
                found = await self._resolve(client, message.id)
                thread = found if isinstance(found, discord.Thread) else None
            if thread is None:
                log.warning(
                    "Discord: cannot open a thread in channel %s (HTTP %s, code %s; the bot "
                    "needs Create Public Threads there); answering in the channel",
                    message.channel.id,
                    exc.status,
                    exc.code,
                )
                await self._answer_in(
                    message.channel,
                    origin,
                    text,
                    message,
                    str(message.id),
                    reply_to=message,
                    files=files,
                )
                return
        try:
            await self.core.events.mark_thread(
                PLATFORM, origin.tenant, origin.channel, str(thread.id)
            )
        except Exception:  # follow-ups will need a mention; the answer still goes out
            log.exception("Discord: could not remember thread %s", thread.id)
        inside = replace(origin, channel_id=thread.id, parent_id=message.channel.id)
        await self._answer_in(thread, inside, text, message, str(thread.id), files=files)

    async def _answer_in(
        self,
        channel: discord.abc.Messageable,
        origin: Origin,
        text: str,
        message: discord.Message,
        conversation: str,
        *,
        reply_to: discord.Message | None = None,
        key: str | None = None,
        files: tuple[IncomingFile, ...] = (),
        earlier: ThreadReader | None = None,
    ) -> None:
        """Answer in `channel` (a thread, a DM, or a channel without threads). Whatever fails,
        something is posted: the answer, or a short error line. `key` names the delivery
        (default: the message answered); `files` and `earlier` go to core with the text."""
        request = to_request(origin, text, thread=conversation, files=files, earlier=earlier)
        key = key or f"{origin.tenant}:message:{message.id}"
        # A personal result asked for in public goes by DM: nothing of it is shown here.
        personal = message.guild is not None and self.core.commands.is_personal(text)
        writer = StreamWriter(
            ChannelSurface(channel, reference=reply_to),
            pacing=self.config.pacing,
            note_every=self.config.progress_every,
            live=self.config.stream and not personal,
            typing=lambda: delivery.typing(channel, self.config.typing_every),
            ledger=Ledger(
                self.core.events,
                key,
                cut_notes=self.core.cut_notes,
                where=_where(origin, channel, key),
            ),
        )
        try:
            reply = (await writer.run(self.core.stream(request))).reply
            parts = render(reply, upload_limit=self.upload_limit(message.guild))
            if reply.ephemeral and message.guild is not None:
                note = await self._answer_privately(message.author, key, parts)
                parts = [Outgoing(text=note)]
                reply = replace(reply, answer_id=None)
            await writer.finish(parts, rated=reply.answer_id)
        except Exception as exc:
            refused = isinstance(exc, discord.HTTPException)
            log.error(
                "Discord: answering message %s in %s failed (%s)",
                message.id,
                getattr(channel, "id", "?"),
                describe(exc),
                exc_info=not refused,
            )
            note = messages.DISCORD_POST_FAILED if refused else messages.INTERNAL_ERROR
            try:
                await channel.send(note, allowed_mentions=delivery.NO_PINGS)
            except (discord.HTTPException, OSError) as again:
                log.error("Discord: could not post the error note either (%s)", again)

    async def _answer_privately(
        self, author: discord.User | discord.Member, key: str, parts: list[Outgoing]
    ) -> str:
        """A personal result asked for in public (e.g. `@Threadline /memory list`): Discord has
        no private messages in a channel, so the answer goes by DM; returns what the thread is
        told."""
        try:
            dm = await author.create_dm()
            await delivery.post(self.core.events, dm, f"{key}:dm", parts)
        except discord.Forbidden:  # the member does not accept DMs from this server
            return messages.DISCORD_CANNOT_DM
        return messages.DISCORD_SENT_PRIVATELY

    def upload_limit(self, guild: discord.Guild | None) -> int:
        """The configured limit, never above what the guild's boost level allows."""
        if guild is None:
            return self.config.upload_limit
        return min(self.config.upload_limit, guild.filesize_limit)

    async def command(self, interaction: discord.Interaction, data: CommandData) -> None:
        text = command_text(data)
        # Discord fixes a deferred answer's visibility when it is deferred; core knows which
        # commands are personal.
        privately = self.core.commands.is_personal(text)
        try:  # first, inside Discord's 3 s: everything else may take longer
            await interaction.response.defer(ephemeral=privately, thinking=True)
        except (discord.HTTPException, discord.InteractionResponded) as exc:
            log.warning("Discord: could not defer interaction %s (%s)", interaction.id, exc)
            return
        origin = origin_of(
            interaction.user,
            interaction.guild,
            interaction.channel,
            channel_id=interaction.channel_id or interaction.user.id,
        )
        conversation = f"cmd-{interaction.id}" if origin.guild_id else str(origin.channel_id)
        attached = (data.get("resolved") or {}).get("attachments") or {}
        files = resolved_files(command_attachment_ids(data), attached, self.config.file_origins)
        earlier = None
        me = interaction.client.user
        if isinstance(interaction.channel, discord.Thread) and me is not None:
            # Used inside a thread: the thread's messages before the command are its context.
            history = self.history(interaction.client)
            earlier = history.reader(interaction.channel.id, interaction.id, me.id)
        request = to_request(origin, text, thread=conversation, files=files, earlier=earlier)
        try:
            if not await self._claim(origin.tenant, f"interaction:{interaction.id}"):
                return
            writer = StreamWriter(
                InteractionSurface(interaction, private=privately),
                pacing=self.config.pacing,
                note_every=self.config.progress_every,
                live=self.config.stream,
            )
            reply = (await writer.run(self.core.stream(request))).reply
            limit = min(self.upload_limit(interaction.guild), interaction.filesize_limit)
            parts = render(reply, upload_limit=limit)
            private = is_private(reply)
            if private != privately and not writer.showed_answer:
                # Nothing of the answer is visible yet, so it can still go out with the
                # visibility it needs (a refusal to a public command is private).
                await delivery.answer_interaction(
                    interaction, parts, deferred_privately=privately, private=private
                )
            else:  # what was streamed stays where it was shown
                await writer.finish(parts, rated=reply.answer_id)
        except Exception as exc:
            log.error(
                "Discord: answering interaction %s failed (%s)",
                interaction.id,
                type(exc).__name__,
                exc_info=not isinstance(exc, discord.HTTPException),
            )
            try:
                await interaction.followup.send(messages.DISCORD_POST_FAILED, ephemeral=True)
            except (discord.HTTPException, OSError) as again:
                log.error("Discord: could not post the error note either (%s)", again)

    async def _claim(self, tenant: str, key: str) -> bool:
        won = await self.core.events.claim(PLATFORM, tenant, key)
        if not won:
            log.info("Discord %s already taken; not answering twice", key)
        return won

    async def forget_thread(self, tenant: str, channel: str, thread: str) -> None:
        if self._history is not None:
            self._history.forget(int(thread))
        if await self.core.events.unmark_thread(PLATFORM, tenant, channel, thread):
            log.info("Discord: thread %s closed; follow-ups there need a mention again", thread)

    async def _resolve(self, client: discord.Client, channel_id: int) -> Any:
        """A channel or thread by id, from the cache or the API (None if not visible)."""
        found = client.get_channel(channel_id)
        if found is not None:
            return found
        try:
            return await client.fetch_channel(channel_id)
        except discord.HTTPException as exc:
            log.info("Discord: channel %s is not visible (HTTP %s)", channel_id, exc.status)
            return None


def _where(origin: Origin, channel: discord.abc.Messageable, key: str) -> Where:
    """Where the outbox would post a note into this answer's conversation: the thread (a
    channel of its own on Discord) or the channel or DM."""
    from core.outbox.cut import Where

    where = str(getattr(channel, "id", origin.channel_id))
    thread = where if isinstance(channel, discord.Thread) else None
    return Where(PLATFORM, origin.tenant, origin.channel if thread else where, thread, key)


__all__ = ["Answerer"]
