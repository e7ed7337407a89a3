"""The `/threadline` command as discord.py's command tree registers it: the same definition
`translate.command_definitions` lays out (names, descriptions, options, contexts), plus
discord.py's explicit defaults."""

from __future__ import annotations

from typing import Any, cast

from adapters.discord.lib import discord
from adapters.discord.sync import command_tree
from adapters.discord.translate import command_definitions
from core.commands import Command, CommandContext
from core.request import Reply

DEFAULTS = {"nsfw": False, "dm_permission": True, "default_member_permissions": None}


async def handler(ctx: CommandContext, args: str) -> Reply:
    return Reply(args)


COMMANDS = [
    Command("ask", "/ask QUESTION", "Ask a question about the code", handler),
    Command("help", "/help", "List the commands", handler),
    Command("memory", "/memory [list|forget ID]", "What Threadline remembers " * 8, handler),
    Command("index", "/index [REPO]", "Index a repository", handler),
]


def without_defaults(value: Any) -> Any:
    """The payload without what Discord assumes anyway (empty option lists, the defaults)."""
    if isinstance(value, list):
        return [without_defaults(v) for v in value]
    if isinstance(value, dict):
        return {
            k: without_defaults(v)
            for k, v in value.items()
            if not (k == "options" and v == []) and DEFAULTS.get(k, ...) != v
        }
    return value


async def test_the_tree_registers_what_translate_defines() -> None:
    client = discord.Client(intents=discord.Intents.none())
    tree = command_tree(client, COMMANDS)
    registered = [c.to_dict(tree) for c in tree.get_commands()]
    assert without_defaults(registered) == command_definitions(COMMANDS)
    [threadline] = registered
    assert threadline["contexts"] == [0, 1] and threadline["integration_types"] == [0]
    options = {o["name"]: o for o in threadline["options"]}
    assert options["ask"]["options"][0]["required"] is True
    assert options["memory"]["options"][0]["required"] is False
    assert len(options["memory"]["description"]) == 100
    await client.close()


async def test_the_tree_leaves_every_interaction_to_the_adapter() -> None:
    client = discord.Client(intents=discord.Intents.none())
    tree = command_tree(client, COMMANDS)
    # Any process may receive a click or a command; the adapter claims each once.
    assert await tree.interaction_check(cast("discord.Interaction", object())) is False
    await client.close()
