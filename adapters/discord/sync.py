"""Registering the `/threadline` application command with Discord through discord.py's command
tree: one sub-command per command of the shared language, as `translate.command_definitions`
lays them out (that pure function stays the one source of names, descriptions and options),
globally, or per guild with DISCORD_GUILD_IDS (instant there, while global changes take a
while to show).

The tree only registers. Answering stays with the adapter's raw interaction handler: any
process may receive the interaction (shards, a worker taking over the gateway), and each is
claimed once in `core.events` before any work, which the tree's per-process dispatch cannot
do. So the tree dispatches nothing (`interaction_check` is False).
"""

from __future__ import annotations

import logging
from collections.abc import Iterable
from typing import TYPE_CHECKING, Any

from adapters.discord.lib import discord
from adapters.discord.payloads import ATTACHMENT
from adapters.discord.translate import COMMAND_NAME, OPTION_MAX_LENGTH, command_definitions

if TYPE_CHECKING:
    from adapters.discord.payloads import ApplicationCommand, CommandOption
    from core.commands import Command

log = logging.getLogger("threadline.discord")

app_commands = discord.app_commands
# Discord's guild (0) and bot-DM (1) contexts, for a guild-installed app (0).
CONTEXTS = {0: "guild", 1: "dm_channel"}
INSTALLS = {0: "guild"}


class RegisteringTree(app_commands.CommandTree[discord.Client]):
    """A command tree that registers commands and leaves every interaction to the adapter."""

    async def interaction_check(self, interaction: discord.Interaction, /) -> bool:
        return False


def command_tree(client: discord.Client, commands: Iterable[Command]) -> RegisteringTree:
    """`/threadline` for `commands`, as a tree attached to `client` (one per client)."""
    [definition] = command_definitions(commands)
    tree = RegisteringTree(client)
    tree.add_command(_group(definition))
    return tree


async def sync_commands(
    client: discord.Client, commands: Iterable[Command], guild_ids: tuple[int, ...]
) -> bool:
    """Overwrite the application's commands with `/threadline`; True when Discord took them.
    A failure is logged (mentions keep working without the command)."""
    if client.application_id is None:
        log.error("Discord: no application id after login; app commands were not synced")
        return False
    tree = command_tree(client, commands)
    try:
        if guild_ids:
            for guild_id in guild_ids:
                guild = discord.Object(guild_id)
                tree.copy_global_to(guild=guild)
                await tree.sync(guild=guild)
        else:
            await tree.sync()
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


def _group(definition: ApplicationCommand) -> app_commands.Group:
    contexts = definition.get("contexts") or []
    installs = definition.get("integration_types") or []
    group = app_commands.Group(
        name=definition["name"],
        description=definition["description"],
        allowed_contexts=app_commands.AppCommandContext(**{CONTEXTS[c]: True for c in contexts}),
        allowed_installs=app_commands.AppInstallationType(**{INSTALLS[i]: True for i in installs}),
    )
    for sub in definition.get("options") or []:
        group.add_command(_subcommand(sub))
    return group


def _subcommand(sub: CommandOption) -> app_commands.Command[Any, ..., None]:
    options = sub.get("options") or []
    texts = [o for o in options if o["type"] != ATTACHMENT]
    files = [o for o in options if o["type"] == ATTACHMENT]
    if not texts:
        callback: Any = _no_argument()
    else:
        [option] = texts
        callback = _one_argument(option.get("required", False), with_file=bool(files))
        callback = app_commands.rename(text=option["name"])(callback)
        callback = app_commands.describe(text=option["description"])(callback)
    if texts and files:
        [file] = files
        callback = app_commands.rename(file=file["name"])(callback)
        callback = app_commands.describe(file=file["description"])(callback)
    return app_commands.Command(name=sub["name"], description=sub["description"], callback=callback)


# A fresh function per sub-command: the tree keeps each one's parameter names on the function.
# They never run (see `RegisteringTree`); their signatures are what Discord is shown.


def _no_argument() -> Any:
    async def never_called(interaction: discord.Interaction) -> None:
        return None

    return never_called


def _one_argument(required: bool, *, with_file: bool = False) -> Any:
    if with_file:  # the text (required), then an optional file
        if not required:
            raise ValueError("a file option follows a required text option only")

        async def never_called_with_file(
            interaction: discord.Interaction,
            text: discord.app_commands.Range[str, None, OPTION_MAX_LENGTH],
            file: discord.Attachment | None = None,
        ) -> None:
            return None

        return never_called_with_file
    if required:

        async def never_called(
            interaction: discord.Interaction,
            text: discord.app_commands.Range[str, None, OPTION_MAX_LENGTH],
        ) -> None:
            return None

        return never_called

    async def never_called_optional(
        interaction: discord.Interaction,
        text: discord.app_commands.Range[str, None, OPTION_MAX_LENGTH] | None = None,
    ) -> None:
        return None

    return never_called_optional


__all__ = ["RegisteringTree", "command_tree", "sync_commands"]
