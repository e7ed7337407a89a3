"""What a confirmation question shows on Slack and Discord when the model pads, nests or hides
arguments (issue 23, finding 5): every argument in the question, and the full arguments one
step away — a folded section of the Slack message, a Discord button answered privately. The
real app and adapters against the fake Slack and Discord, the hostile test MCP server
(tests/support/fakes/mcp_hostile.py) echoing what reached it."""

from __future__ import annotations

import asyncio
import json
import sys
from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import Any

import pytest

from adapters.discord.client import DiscordAdapter, DiscordConfig
from adapters.slack.confirm import CANCEL, RUN
from bot.app import build_app
from tests.adapters.discord.test_discord import FAST, RunningBot
from tests.adapters.slack.test_confirm import _buttons, _question
from tests.adapters.slack.test_slack import fake_slack, serve_slack
from tests.conftest import POLICY_ALL
from tests.support.fakes.discord_server import FakeDiscord
from tests.support.fakes.openai_server import FakeOpenAI
from tests.support.fakes.slack_api import FakeSlack
from tests.support.fakes.slack_events import ServedApp, block_actions, mention, new_ts
from tests.support.paths import FAKES_DIR

__all__ = ["fake_slack", "serve_slack"]  # fixtures shared with the Slack tests

HOSTILE = FAKES_DIR / "mcp_hostile.py"
NOTE = "routine: close ticket 17 only" + " " * 290
PADDED = {"note": NOTE, "id": "ALL", "token": "ghp_" + "a1B2c3D4e5" * 4}
TOOLS = [
    {
        "name": "close",
        "description": "Close tickets.",
        "inputSchema": {
            "type": "object",
            "properties": {
                "note": {"type": "string"},
                "id": {"type": "string"},
                "token": {"type": "string"},
            },
        },
        "annotations": {"read_only_hint": False, "destructive_hint": True},
    }
]


def _mcp(tmp_path: Path) -> dict[str, Any]:
    spec = tmp_path / "tools.json"
    spec.write_text(json.dumps({"tools": TOOLS}), encoding="utf-8")
    return {"t": {"command": sys.executable, "args": [str(HOSTILE), str(spec)]}}


def _policy(channel: str) -> str:
    return (
        POLICY_ALL
        + f"""
[[rules]]
name = "may use the test server"
match = {{ channel = "{channel}" }}
grant = ["mcp:t"]
"""
    )


# -- Slack ----------------------------------------------------------------------------------


def test_slack_shows_every_argument_and_the_full_ones_folded(
    serve_slack: Callable[..., ServedApp],
    fake_slack: FakeSlack,
    fake_llm: FakeOpenAI,
    tmp_path: Path,
) -> None:
    def setup(app: Any) -> None:
        app.mcp.start()

    app = serve_slack(policy=_policy("C1"), settings={"mcp": _mcp(tmp_path)}, setup=setup)
    app.run(app.app.mcp.wait_ready("t"), timeout=60)
    fake_llm.tool_calls(("t__close", PADDED))
    fake_llm.reply("Done as you decided.")
    assert app.post_event(mention("close 17", ts=new_ts())).status == 200
    asked = _question(fake_slack)

    assert '"id": "ALL"' in asked["text"]
    assert '"note": "routine: close ticket 17 only" (319 chars)' in asked["text"]
    # In a code block: mrkdwn in an argument (~strike~, *bold*) cannot restyle the others.
    assert "```{" in asked["text"] and "}```" in asked["text"]
    assert "ghp_" not in json.dumps(asked)  # a token is not for the channel
    assert _buttons(asked) == [RUN, CANCEL]
    folded = [b for b in asked["blocks"] if b.get("block_id") == "threadline_confirm_arguments"]
    assert len(folded) == 1 and folded[0]["expand"] is False
    full = folded[0]["text"]["text"]
    assert full.startswith("*Full arguments*\n```") and len(full) <= 3_000
    assert '"id": "ALL"' in full and json.dumps(NOTE) in full
    assert all(len(b["text"]["text"]) <= 3_000 for b in asked["blocks"] if "text" in b)

    app.post_interaction(block_actions(asked, RUN, user="U1"))
    app.idle()
    result = fake_llm.requests[1]["messages"][-1]["content"]
    assert json.dumps(NOTE) in result  # what ran is what was confirmed


# -- Discord --------------------------------------------------------------------------------


@pytest.fixture
async def fake() -> AsyncIterator[FakeDiscord]:
    server = await FakeDiscord(interaction_window=30.0).start()
    yield server
    await server.stop()


async def test_discord_shows_every_argument_and_the_full_ones_privately_on_a_button(
    make_settings: Callable[..., Any],
    write_policy: Callable[[str], Path],
    fake: FakeDiscord,
    fake_llm: FakeOpenAI,
    tmp_path: Path,
    database_url: str,
) -> None:
    bots: list[RunningBot] = []

    async def start(*, mcp: bool) -> RunningBot:
        settings = make_settings(
            policy_file=write_policy(_policy(fake.general)),
            llm_base_url=fake_llm.url,
            llm_model="fake-model",
            llm_max_retries=0,
            discord_token=fake.token,
            discord_api_url=fake.api_url,
            mcp=_mcp(tmp_path),
            database_url=database_url,
        )
        app = build_app(settings)
        config = DiscordConfig.from_settings(settings, **FAST)
        adapter = DiscordAdapter(app.core, config, app.confirmations)
        stop = asyncio.Event()
        bot = RunningBot(app, adapter, stop, asyncio.create_task(adapter.run(stop)))
        bots.append(bot)
        await app.db.create_all()
        async with asyncio.timeout(30):
            await adapter.wait_ready()
        if mcp:
            app.mcp.start()
            async with asyncio.timeout(60):
                await app.mcp.wait_ready("t")
        return bot

    async def look(user: Any, posted: Any, custom_id: str) -> str:
        looked = await fake.click(user, posted, custom_id)
        await fake.wait_for(
            lambda: looked.original is not None and not looked.original.loading, within=30
        )
        assert looked.original is not None and looked.original.ephemeral
        return looked.original.content

    try:
        waiting = await start(mcp=True)
        fake_llm.tool_calls(("t__close", {**PADDED, "note": NOTE + "||hidden: id ALL||"}))
        fake_llm.reply("Done as you decided.")
        message = await fake.post_message(fake.alice, fake.general, f"{fake.mention()} close 17")
        thread = message["id"]
        posted = await fake.wait_for(
            lambda: next((p for p in fake.messages_in(thread) if p.components), None), within=30
        )
        assert posted is not None
        assert '"id": "ALL"' in posted.content and "(337 chars)" in posted.content
        assert "||" not in posted.content.replace("\\|\\|", "")  # no spoiler hides a word
        assert "ghp_" not in posted.content
        ids = {b["label"]: b["custom_id"] for row in posted.components for b in row["components"]}
        assert set(ids) == {"Run", "Cancel", "Full arguments"}

        bob = fake.add_member("bob")  # anyone here may look; only alice may answer
        shown = await look(bob, posted, ids["Full arguments"])
        assert shown.startswith("**Full arguments**") and len(shown) <= 2_000
        assert '"id": "ALL"' in shown and "ghp_" not in shown
        assert posted.components  # still waiting for alice

        # Another worker takes over the gateway session: the arguments are in the database.
        await start(mcp=False)
        again = await look(fake.alice, posted, ids["Full arguments"])
        assert again == shown

        await fake.click(fake.alice, posted, ids["Run"])
        await fake.wait_for(lambda: posted.components == [], within=30)
        await fake.wait_for(
            lambda: "Done as you decided." in [p.content for p in fake.messages_in(thread)],
            within=30,
        )
        await waiting.adapter.idle()
        assert "confirmed" in posted.content
        assert '"id": "ALL"' in fake_llm.requests[1]["messages"][-1]["content"]
    finally:
        for bot in bots:
            await bot.halt()
            await bot.app.aclose()
