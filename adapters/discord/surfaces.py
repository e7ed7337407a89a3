"""Where a streamed Discord answer is written (a channel, thread or DM, or an app command's
deferred response and follow-ups), and the record of its parts (`core.events`, and the note
armed in case this process dies while the answer is unfinished)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Protocol

from adapters.discord import delivery
from adapters.discord.lib import discord
from adapters.discord.translate import PLATFORM, Outgoing

if TYPE_CHECKING:
    from core.events import EventLedger
    from core.outbox.cut import CutNotes, Where


class Surface(Protocol):
    """Where an answer is written: a channel, thread or DM, or an app command's response."""

    notes_apart: bool  # a command's progress note is a message of its own, removed at the end
    channel: str | None  # whose edit budget edits count against (None: their own limits)

    # `view`: components under the message (the 👍/👎 of an answer's last text message).
    async def post(
        self, item: Outgoing, *, first: bool, view: discord.ui.View | None = None
    ) -> Any: ...
    async def edit(self, handle: Any, text: str, view: discord.ui.View | None = None) -> None: ...
    async def delete(self, handle: Any) -> None: ...


class ChannelSurface:
    notes_apart = True

    def __init__(
        self, channel: discord.abc.Messageable, *, reference: discord.Message | None = None
    ) -> None:
        self.messageable = channel
        self.channel = str(getattr(channel, "id", "")) or None
        self.reference = reference  # the answer's first message replies to it

    async def post(
        self, item: Outgoing, *, first: bool, view: discord.ui.View | None = None
    ) -> Any:
        reference = self.reference if first else None
        return await delivery.send(self.messageable, item, reference=reference, view=view)

    async def edit(self, handle: Any, text: str, view: discord.ui.View | None = None) -> None:
        await handle.edit(content=text, allowed_mentions=delivery.NO_PINGS, **_with(view))

    async def delete(self, handle: Any) -> None:
        await handle.delete()


class InteractionSurface:
    """The deferred response is the first message (edited, never posted); further messages
    are follow-ups with the visibility Discord fixed when the command was deferred."""

    notes_apart = False
    # An interaction's messages are edited through its own webhook, with limits of its own.
    channel: str | None = None

    def __init__(self, interaction: discord.Interaction, *, private: bool) -> None:
        self.interaction = interaction
        self.private = private
        self._original_used = False

    async def post(
        self, item: Outgoing, *, first: bool, view: discord.ui.View | None = None
    ) -> Any:
        file = delivery.as_file(item)
        if not self._original_used:
            self._original_used = True
            if file is not None:
                return await self.interaction.edit_original_response(
                    content=None, attachments=[file], allowed_mentions=delivery.NO_PINGS
                )
            return await self.interaction.edit_original_response(
                content=item.text, allowed_mentions=delivery.NO_PINGS, **_with(view)
            )
        followup = self.interaction.followup
        if file is not None:
            return await followup.send(
                file=file, ephemeral=self.private, allowed_mentions=delivery.NO_PINGS, wait=True
            )
        return await followup.send(
            item.text,
            ephemeral=self.private,
            allowed_mentions=delivery.NO_PINGS,
            wait=True,
            **_with(view),
        )

    async def edit(self, handle: Any, text: str, view: discord.ui.View | None = None) -> None:
        await handle.edit(content=text, allowed_mentions=delivery.NO_PINGS, **_with(view))

    async def delete(self, handle: Any) -> None:
        await handle.delete()


class Ledger:
    """The answer's parts as recorded in `core.events`: a part recorded as posted is never
    posted again (a resumed gateway, a second process). While the answer is visible but
    unfinished, a note is armed in the outbox in case this process dies (`core.outbox.cut`)."""

    def __init__(
        self,
        events: EventLedger,
        key: str,
        *,
        cut_notes: CutNotes | None = None,
        where: Where | None = None,
    ) -> None:
        self.events = events
        self.key = key
        self._notes = cut_notes if where is not None else None
        self._where = where
        self._armed = False

    async def done(self) -> dict[int, str]:
        return await self.events.posted(PLATFORM, self.key)

    async def record(self, part: int, handle: Any) -> None:
        await self.events.record_post(PLATFORM, self.key, part, str(handle.id))
        if self._notes is not None and self._where is not None and not self._armed:
            self._armed = True
            await self._notes.arm(self._where)

    async def disarm(self) -> None:
        """The answer is finished, or its own note that it was cut went out."""
        if self._notes is not None and self._where is not None and self._armed:
            self._armed = False
            await self._notes.disarm(self._where)


def _with(view: discord.ui.View | None) -> dict[str, Any]:
    """`view=` only when there is one: an edit that names no view keeps the components."""
    return {"view": view} if view is not None else {}
