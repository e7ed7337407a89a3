"""Confirmation buttons on Discord: the question posted where the conversation is, with "Run" /
"Cancel" buttons, and the component interaction (a click) turned into an answer for core's gate.

The buttons' `custom_id` carries only the confirmation id; who clicked is the interaction's
user as the gateway session delivered it. Clicks are handled from the raw interaction, not by
a `discord.ui.View` kept in memory: the process (or shard) that receives the click need not be
the one that posted the question, nor still be the same process after a restart. The answer
goes through the database (core/mcp/confirm_store.py).
"""

from __future__ import annotations

import logging
import re
from dataclasses import replace
from typing import TYPE_CHECKING, Any

from adapters.discord.lib import discord
from core.mcp.confirm import (
    FULL_ARGUMENTS,
    NO_DETAILS,
    UNKNOWN_CONFIRMATION,
    ConfirmationPrompt,
    only_requester,
    outcome,
    question,
)
from core.mcp.confirm_store import UNANSWERED

if TYPE_CHECKING:
    from core.mcp.confirm import ConfirmationGate
    from core.mcp.confirm_store import Confirmation

log = logging.getLogger("threadline.discord")

PREFIX = "threadline-confirm"
_CUSTOM_ID = re.compile(rf"^{PREFIX}:(run|cancel):([A-Za-z0-9_-]{{1,64}})$")
_ARGUMENTS_ID = re.compile(rf"^{PREFIX}:args:([A-Za-z0-9_-]{{1,64}})$")
_MESSAGE_CHARS = 2_000  # Discord's limit on a message's content


def mention(user: str) -> str:
    return f"<@{user}>"


def custom_id(answer: str, confirmation_id: str) -> str:
    return f"{PREFIX}:{answer}:{confirmation_id}"


def parse_custom_id(value: str) -> tuple[bool, str] | None:
    """(approve, confirmation id) for one of our buttons; None for anything else."""
    found = _CUSTOM_ID.match(value)
    return (found[1] == "run", found[2]) if found else None


def is_confirmation_click(interaction: discord.Interaction) -> bool:
    if interaction.type is not discord.InteractionType.component:
        return False
    data: Any = interaction.data or {}
    return str(data.get("custom_id", "")).startswith(f"{PREFIX}:")


def shown(prompt: ConfirmationPrompt) -> ConfirmationPrompt:
    """The prompt with its arguments safe from Discord's markdown: a `||spoiler||`, a header or
    a masked link in an argument must not hide or dress up what is being confirmed."""
    return replace(prompt, arguments=discord.utils.escape_markdown(prompt.arguments))


def full_arguments(details: str) -> str:
    head, tail = f"**{FULL_ARGUMENTS}**\n```json\n", "\n```"
    body = details.replace("```", "`\u200b`\u200b`")  # would end the code block early
    room = _MESSAGE_CHARS - len(head) - len(tail) - 60
    if len(body) > room:
        body = body[:room] + f"\n… (cut: {len(body) - room:,} more characters)"
    return head + body + tail


def buttons(prompt: ConfirmationPrompt) -> discord.ui.View:
    view = discord.ui.View(timeout=None)
    view.add_item(
        discord.ui.Button(
            label="Run", style=discord.ButtonStyle.danger, custom_id=custom_id("run", prompt.id)
        )
    )
    view.add_item(
        discord.ui.Button(
            label="Cancel",
            style=discord.ButtonStyle.secondary,
            custom_id=custom_id("cancel", prompt.id),
        )
    )
    if prompt.abridged and prompt.details:
        view.add_item(
            discord.ui.Button(
                label=FULL_ARGUMENTS,
                style=discord.ButtonStyle.secondary,
                custom_id=custom_id("args", prompt.id),
            )
        )
    return view


def _tenant(interaction: discord.Interaction) -> str:
    # As `translate.Origin.tenant`: the guild, or a DM tenant of the user's own.
    guild = interaction.guild_id
    return str(guild) if guild is not None else f"dm-{interaction.user.id}"


class DiscordConfirmer:
    """Posts questions and retires expired ones; `click` takes the answers."""

    def __init__(self, client: discord.Client, gate: ConfirmationGate) -> None:
        self._client = client
        self._gate = gate
        self._posted: dict[str, discord.Message] = {}

    async def ask(self, prompt: ConfirmationPrompt) -> None:
        # Inside a thread or a DM the conversation is the channel; a guild slash command's
        # conversation is no channel, so the question goes to the channel it was run in.
        where = int(prompt.thread) if prompt.thread.isdigit() else int(prompt.channel)
        channel = self._client.get_channel(where) or await self._client.fetch_channel(where)
        if not isinstance(channel, discord.abc.Messageable):
            raise TypeError(f"channel {where} cannot take messages")
        view = buttons(prompt)
        message = await channel.send(
            question(shown(prompt), mention),
            view=view,
            # The requester is pinged (it is their question); nobody else is.
            allowed_mentions=discord.AllowedMentions(
                everyone=False, roles=False, users=[discord.Object(int(prompt.user))]
            )
            if prompt.user.isdigit()
            else discord.AllowedMentions.none(),
        )
        view.stop()  # clicks are taken from the raw interaction, in whatever process
        self._posted[prompt.id] = message

    async def closed(self, prompt: ConfirmationPrompt, final: Confirmation) -> None:
        message = self._posted.pop(prompt.id, None)
        if message is None or final.state not in UNANSWERED:
            return  # an answered one was updated by the process that took the click
        await message.edit(
            content=outcome(_escaped(final), mention),
            view=None,
            allowed_mentions=discord.AllowedMentions.none(),
        )

    async def click(self, interaction: discord.Interaction) -> None:
        """One click on our buttons. Acknowledged first (Discord allows 3 s; the answer goes
        through the database), then the message or a private note is updated."""
        data: Any = interaction.data or {}
        wanted = _ARGUMENTS_ID.match(str(data.get("custom_id", "")))
        if wanted is not None:
            await self._show_arguments(interaction, wanted[1])
            return
        try:
            await interaction.response.defer()  # a component's deferral: the message updates
        except (discord.HTTPException, discord.InteractionResponded) as exc:
            log.warning("Discord: could not acknowledge click %s (%s)", interaction.id, exc)
            return
        parsed = parse_custom_id(str(data.get("custom_id", "")))
        quiet = discord.AllowedMentions.none()
        try:
            if parsed is None:
                await interaction.followup.send(UNKNOWN_CONFIRMATION, ephemeral=True)
                return
            approve, confirmation_id = parsed
            answered = await self._gate.answer(
                confirmation_id,
                str(interaction.user.id),
                approve,
                platform="discord",
                tenant=_tenant(interaction),
            )
            c = answered.confirmation
            if answered.status in ("counted", "stale") and c is not None:
                # The message itself becomes the outcome: its buttons are gone for everyone.
                await interaction.edit_original_response(
                    content=outcome(_escaped(c), mention), view=None, allowed_mentions=quiet
                )
            elif answered.status == "ignored" and c is not None:
                text = only_requester(c, mention)
                await interaction.followup.send(text, ephemeral=True, allowed_mentions=quiet)
            else:
                await interaction.followup.send(UNKNOWN_CONFIRMATION, ephemeral=True)
        except discord.HTTPException as exc:
            log.warning("Discord: could not show the outcome of click %s (%s)", interaction.id, exc)

    async def _show_arguments(self, interaction: discord.Interaction, confirmation_id: str) -> None:
        """Anyone who sees the question may read the full arguments, privately; only the
        requester's Run or Cancel counts. Read from the database: the click may reach a
        process other than the one that asked."""
        try:
            await interaction.response.defer(ephemeral=True, thinking=True)
        except (discord.HTTPException, discord.InteractionResponded) as exc:
            log.warning("Discord: could not acknowledge click %s (%s)", interaction.id, exc)
            return
        c = await self._gate.store.get(confirmation_id)
        if c is None or c.platform != "discord" or c.tenant != _tenant(interaction):
            text = UNKNOWN_CONFIRMATION
        elif not c.details:
            text = NO_DETAILS
        else:
            text = full_arguments(c.details)
        try:
            await interaction.edit_original_response(
                content=text, allowed_mentions=discord.AllowedMentions.none()
            )
        except discord.HTTPException as exc:
            log.warning("Discord: could not show the arguments of %s (%s)", interaction.id, exc)


def _escaped(c: Confirmation) -> Confirmation:
    return replace(c, arguments=discord.utils.escape_markdown(c.arguments))
