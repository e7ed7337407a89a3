"""Registering the `/threadline` application command with Discord: one sub-command per command
of the shared language (`translate.command_definitions`), globally, or per guild with
DISCORD_GUILD_IDS (instant there, while global changes take a while to show)."""

from __future__ import annotations

import logging
from collections.abc import Iterable
from typing import TYPE_CHECKING, Any, cast

from adapters.discord.lib import discord
from adapters.discord.translate import COMMAND_NAME, command_definitions

if TYPE_CHECKING:
    from core.commands import Command

log = logging.getLogger("threadline.discord")


async def sync_commands(
    client: discord.Client, commands: Iterable[Command], guild_ids: tuple[int, ...]
) -> bool:
    """Overwrite the application's commands with `/threadline`; True when Discord took them.
    A failure is logged (mentions keep working without the command)."""
    app_id = client.application_id
    if app_id is None:
        log.error("Discord: no application id after login; app commands were not synced")
        return False
    payload = cast("list[Any]", command_definitions(commands))
    try:
        if guild_ids:
            for guild_id in guild_ids:
                await client.http.bulk_upsert_guild_commands(app_id, guild_id, payload)
        else:
            await client.http.bulk_upsert_global_commands(app_id, payload)
    except discord.HTTPException as exc:
        log.error(
            "Discord: syncing the /%s command failed (HTTP %s, code %s): %s",
            COMMAND_NAME,
            exc.status,
            exc.code,
            exc.text,
        )
        return False
    scope = f"guilds {list(guild_ids)}" if guild_ids else "globally"
    log.info("Discord: /%s command synced %s", COMMAND_NAME, scope)
    return True


__all__ = ["sync_commands"]
