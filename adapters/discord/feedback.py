"""👍/👎 under Threadline's answers on Discord: two buttons on the last text message of every
answer core gave an `answer_id`, and the clicks turned into `core.Rating`s.

The buttons' `custom_id` carries only `tl:fb:up:<answer id>` or `tl:fb:down:<answer id>`; who
rated and where is what the gateway session verified for the interaction (the member or user,
the guild, the channel — a thread's parent, as for the question), and core refuses an id that
is not an answer given in that channel. Clicks are handled from the raw interaction, not by a
`discord.ui.View` kept in memory, so any process (or shard) that receives one answers it: the
rating is stored in the database. A 👎 is stored at once and answered with a small form (a
modal, one optional line) asking why; its submission stores the reason.
"""

from __future__ import annotations

import logging
import re
from dataclasses import replace
from typing import TYPE_CHECKING, Any

from adapters.discord.inbound import origin_of
from adapters.discord.lib import discord
from adapters.discord.translate import PLATFORM, to_request
from core.feedback.store import REASON_CHARS
from core.request import Rating

if TYPE_CHECKING:
    from core.request import Reply
    from core.service import Core

log = logging.getLogger("threadline.discord")

PREFIX = "tl:fb"
REASON_INPUT = "reason"
_BUTTON = re.compile(rf"^{PREFIX}:(up|down):(.*)$", re.DOTALL)
_FORM = re.compile(rf"^{PREFIX}:why:(.*)$", re.DOTALL)
_ID_CHARS = 64  # more than an answer id ever has: a longer value is cut, and core refuses it


def custom_id(rating: str, answer_id: str) -> str:
    return f"{PREFIX}:{rating}:{answer_id}"


def buttons(answer_id: str) -> discord.ui.View:
    """The 👍/👎 buttons for an answer, as a view that is never kept in memory: clicks are
    taken from the raw interaction, in whatever process receives them."""
    view = discord.ui.View(timeout=None)
    for rating, emoji in (("up", "👍"), ("down", "👎")):
        view.add_item(
            discord.ui.Button(
                emoji=emoji,
                style=discord.ButtonStyle.secondary,
                custom_id=custom_id(rating, answer_id),
            )
        )
    view.stop()  # sent with the message, never stored for dispatch
    return view


def reason_form(answer_id: str) -> discord.ui.Modal:
    """What a 👎 opens: one optional line saying why (a modal, never kept in memory)."""
    form = discord.ui.Modal(title="What went wrong?", custom_id=f"{PREFIX}:why:{answer_id}")
    form.add_item(
        discord.ui.TextInput(
            label="Why was this answer not helpful?",
            custom_id=REASON_INPUT,
            style=discord.TextStyle.short,
            required=False,
            max_length=REASON_CHARS,
            placeholder="Optional: wrong file, outdated, …",
        )
    )
    form.stop()
    return form


def is_feedback(interaction: discord.Interaction) -> bool:
    """A click on our 👍/👎, or our form sent back."""
    kinds = (discord.InteractionType.component, discord.InteractionType.modal_submit)
    if interaction.type not in kinds:
        return False
    data: Any = interaction.data or {}
    return str(data.get("custom_id", "")).startswith(f"{PREFIX}:")


def submitted_reason(components: Any) -> str | None:
    """The form's text input, from a MODAL_SUBMIT's components (action rows, or labels)."""
    for component in components if isinstance(components, list) else []:
        if not isinstance(component, dict):
            continue
        if component.get("type") == 1:
            found = submitted_reason(component.get("components"))
        elif component.get("type") == 18:
            found = submitted_reason([component.get("component")])
        elif component.get("custom_id") == REASON_INPUT:
            value = component.get("value")
            found = value if isinstance(value, str) else None
        else:
            continue
        if found is not None:
            return found
    return None


def message_link(guild_id: int | None, channel_id: int | None, message_id: int) -> str | None:
    if channel_id is None:
        return None
    return f"https://discord.com/channels/{guild_id or '@me'}/{channel_id}/{message_id}"


class DiscordFeedback:
    """Answers 👍/👎 clicks and the 👎 form, from any process."""

    def __init__(self, core: Core) -> None:
        self._core = core

    async def handle(self, interaction: discord.Interaction) -> None:
        data: Any = interaction.data or {}
        wanted = str(data.get("custom_id", ""))
        try:
            if interaction.type is discord.InteractionType.modal_submit:
                form = _FORM.match(wanted)
                answer_id = form[1] if form else ""
                reason = submitted_reason(data.get("components"))
                reply = await self._rate(interaction, answer_id, "down", reason)
                await interaction.response.send_message(reply.text, ephemeral=True)
                return
            click = _BUTTON.match(wanted)
            value, answer_id = (click[1], click[2]) if click else ("", "")
            reply = await self._rate(interaction, answer_id, value)
            if reply.ok and value == "down":
                # The 👎 counts already; the form only adds a reason (closing it loses nothing).
                await interaction.response.send_modal(reason_form(answer_id))
            else:
                await interaction.response.send_message(reply.text, ephemeral=True)
        except (discord.HTTPException, discord.InteractionResponded) as exc:
            log.warning("Discord: could not answer rating %s (%s)", interaction.id, exc)

    async def _rate(
        self,
        interaction: discord.Interaction,
        answer_id: str,
        value: str,
        reason: str | None = None,
    ) -> Reply:
        origin = origin_of(
            interaction.user,
            interaction.guild,
            interaction.channel,
            channel_id=interaction.channel_id or interaction.user.id,
        )
        # The guild as the interaction names it, even when it is not in this process's cache.
        origin = replace(origin, guild_id=interaction.guild_id)
        # Where and who exactly as for a question asked there (a thread's parent channel).
        asked = to_request(origin, "")
        message = interaction.message
        link = (
            message_link(interaction.guild_id, interaction.channel_id, message.id)
            if message
            else None
        )
        return await self._core.rate(
            Rating(
                PLATFORM,
                asked.tenant,
                asked.channel,
                asked.user,
                answer_id[:_ID_CHARS],
                value,
                reason=reason,
                link=link,
                roles=asked.roles,
            )
        )
