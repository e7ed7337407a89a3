"""The shared command parser (core/commands.py `parse`)."""

from __future__ import annotations

import pytest

from core.commands import ParsedCommand, builtin_commands, parse, syntax, verbs_line
from tests.conftest import BotHarness


@pytest.mark.parametrize(
    ("text", "name", "args"),
    [
        ("/help", "help", ""),
        ("/budget  ", "budget", ""),
        ("  /budget", "budget", ""),
        ("/ask what is x", "ask", "what is x"),
        ("/ask   what is x  ", "ask", "what is x"),
        ("/ASK x", "ask", "x"),
        ("/Help", "help", ""),
        ("/ask What Is X", "ask", "What Is X"),  # only the name is lowercased
        ("/ask see /etc/hosts", "ask", "see /etc/hosts"),
        ("/ask\nwhat is x", "ask", "what is x"),  # Slack/Discord shift-enter after the name
        ("/ask\twhat is x", "ask", "what is x"),
        ("/ask line one\nline two", "ask", "line one\nline two"),
        ("/frobnicate now", "frobnicate", "now"),  # unknown names still parse; run() refuses
    ],
)
def test_commands_parse(text: str, name: str, args: str) -> None:
    assert parse(text) == ParsedCommand(name=name, args=args)


@pytest.mark.parametrize(
    "text",
    [
        "what is x?",
        "please run /help",
        "",
        "   ",
        "/",
        "/ 1",
        "/ help",
        "/1",
        "//help",
        "/etc/hosts is broken",
        "/usr/bin/python crashes",
    ],
)
def test_free_text_is_not_a_command(text: str) -> None:
    assert parse(text) is None


def test_builtin_command_names_are_what_parse_produces() -> None:
    names = {c.name for c in builtin_commands()}
    assert {"help", "budget", "ask"} <= names
    for name in ("help", "budget", "ask"):
        parsed = parse(f"/{name.upper()}")
        assert parsed is not None and parsed.name in names


def test_ask_requires_the_ask_permission() -> None:
    by_name = {c.name: c for c in builtin_commands()}
    assert by_name["ask"].permission == "ask"
    assert by_name["help"].permission is None
    assert by_name["budget"].permission is None


@pytest.mark.parametrize(
    ("text", "personal"),
    [
        ("/budget", True),
        ("/memory list", True),
        ("/help", True),
        ("/ask x", False),
        ("/save y", False),
        ("/nope", False),
        ("free text", False),
    ],
)
def test_core_says_which_commands_are_personal(text: str, personal: bool) -> None:
    from core.commands import CommandRegistry, builtin_commands
    from core.memory.commands import memory_commands
    from core.memory.facts import MemoryStore
    from core.store.engine import Database

    store = MemoryStore(Database("sqlite:///unused.db"))  # never connects: no query is made
    registry = CommandRegistry([*builtin_commands(), *memory_commands(store)])
    assert registry.is_personal(text) is personal


async def test_every_command_is_declared_and_help_shows_its_declaration(bot: BotHarness) -> None:
    commands = list(bot.core.commands)
    assert {"help", "budget", "voice", "save", "graph", "mcp", "skills"} <= {
        c.name for c in commands
    }
    listed = (await bot.send("/help")).text
    for c in commands:
        # Made by `declared` (its arguments) or `with_verbs` (its verbs), never by hand.
        assert (c.args is not None) != bool(c.verbs), c.name
        line = f"/{c.name} {syntax(c.args)}".strip() if c.args else verbs_line(c.name, c.verbs)
        assert c.usage == line
        assert f"- `{line}` — {c.summary}" in listed


@pytest.mark.parametrize("text", ["/help me", '/help "please', "/help --verbose"])
async def test_help_ignores_what_follows_it(bot: BotHarness, text: str) -> None:
    reply = await bot.send(text)
    assert reply.ok and reply.text == (await bot.send("/help")).text


async def test_budget_ignores_what_follows_it(bot: BotHarness) -> None:
    reply = await bot.send("/budget please")
    assert reply.ok and reply.text.startswith("**Your budget today**")


async def test_a_command_without_a_verb_runs_its_default(bot: BotHarness) -> None:
    from core.mcp.commands import USAGE

    overview = await bot.send("/mcp")
    assert (overview.ok, overview.ephemeral) == (True, True)
    assert overview.text.startswith("No MCP servers are configured")
    unknown = await bot.send("/mcp list")
    assert (unknown.ok, unknown.text) == (False, USAGE)
