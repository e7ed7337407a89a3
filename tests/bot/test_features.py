"""The app is a list of features (`core.feature.Feature`): a team's own feature — a tool, a
command and something to close — joins through `build_app(extra_features=...)` with no edit
to core, and every feature's closers run once, last composed first."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from bot.app import build_app
from config.settings import Settings
from core.commands import CommandArgs, CommandContext, declared, word
from core.feature import Feature, PromptParts, prompt_of
from core.request import Reply
from core.session import ToolSession
from core.tools.context import ToolContext
from core.tools.registry import ToolArgs, tool
from tests.conftest import BotHarness
from tests.support.fakes.openai_server import FakeOpenAI


class PingArgs(ToolArgs):
    pass


@tool(permission="ask")
async def team_ping(ctx: ToolContext, args: PingArgs) -> str:
    """Say pong (a team's own tool)."""
    return "pong"


class EchoArgs(CommandArgs):
    text: str = word("TEXT")


async def echo(ctx: CommandContext, args: EchoArgs) -> Reply:
    return Reply(f"echo: {args.text}")


async def test_a_teams_feature_adds_a_tool_a_command_and_its_lifetime(
    make_settings: Callable[..., Settings], fake_llm: FakeOpenAI
) -> None:
    closed: list[str] = []

    async def close() -> None:
        closed.append("team")

    team = Feature(
        "team",
        tools=(team_ping,),
        commands=(declared("echo", "say it back", EchoArgs, echo, permission="ask"),),
        close=(close,),
    )
    settings = make_settings(llm_base_url=fake_llm.url, llm_model="fake-model", llm_max_retries=0)
    app = build_app(settings, extra_features=[team])
    bot = BotHarness(app)
    try:
        assert (await bot.send("/echo hello")).text == "echo: hello"
        assert "/echo" in (await bot.send("/help")).text
        fake_llm.tool_calls(("team_ping", {}))
        fake_llm.reply("It said pong.")
        reply = await bot.send("ping the team")
        assert [(c.name, c.ok) for c in reply.tool_calls] == [("team_ping", True)]
        assert [f.name for f in app.features][-1] == "team"
    finally:
        await app.aclose()
    assert closed == ["team"]


def test_a_prompt_part_has_one_owner() -> None:
    def listing(session: ToolSession) -> str:
        return "resources"

    one = Feature("a", prompt=PromptParts(resources=listing))
    assert prompt_of([one, Feature("b")]).resources is listing
    with pytest.raises(ValueError, match="two features: a and c"):
        prompt_of([one, Feature("c", prompt=PromptParts(resources=listing))])
