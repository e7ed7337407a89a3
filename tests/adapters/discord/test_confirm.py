"""Confirmation buttons on Discord, end to end: the real discord.py client through the real
composition root, the test MCP server's destructive tool proposed by the fake model, the
question posted with buttons in the thread of the fake Discord, and clicks delivered as
INTERACTION_CREATE (MESSAGE_COMPONENT) — to the process that asked, or to another process that
took over the gateway session while the first one waits.
"""

from __future__ import annotations

import asyncio
import sys
from collections.abc import AsyncIterator, Awaitable, Callable
from pathlib import Path
from typing import Any

import pytest
from sqlmodel import select

from adapters.discord.client import DiscordAdapter, DiscordConfig
from adapters.discord.confirm import custom_id
from bot.app import build_app
from core.store.models import AuditEntry, McpConfirmation
from tests.adapters.discord.test_discord import FAST, RunningBot
from tests.conftest import POLICY_ALL
from tests.support.fakes.discord_server import FakeDiscord, InteractionState, Posted
from tests.support.fakes.openai_server import FakeOpenAI
from tests.support.paths import FAKES_DIR

SERVER = FAKES_DIR / "mcp_server.py"
StartBot = Callable[..., Awaitable[RunningBot]]


@pytest.fixture
async def fake() -> AsyncIterator[FakeDiscord]:
    # A roomy interaction window: what is checked here is who may answer, not speed (the
    # handler acknowledges a click before touching the database).
    server = await FakeDiscord(interaction_window=30.0).start()
    yield server
    await server.stop()


@pytest.fixture
async def start_bot(
    make_settings: Callable[..., Any],
    write_policy: Callable[[str], Path],
    fake: FakeDiscord,
    fake_llm: FakeOpenAI,
) -> AsyncIterator[StartBot]:
    started: list[RunningBot] = []
    policy = (
        POLICY_ALL
        + f"""
[[rules]]
name = "general may use the test server"
match = {{ channel = "{fake.general}" }}
grant = ["mcp:t"]
"""
    )

    async def start(*, mcp: bool = True, **overrides: Any) -> RunningBot:
        settings = make_settings(
            policy_file=write_policy(policy),
            llm_base_url=fake_llm.url,
            llm_model="fake-model",
            llm_max_retries=0,
            discord_token=fake.token,
            discord_api_url=fake.api_url,
            mcp={"t": {"command": sys.executable, "args": [str(SERVER)]}},
            **overrides,
        )
        app = build_app(settings)
        adapter = DiscordAdapter(
            app.core, DiscordConfig.from_settings(settings, **FAST), app.confirmations
        )
        stop = asyncio.Event()
        bot = RunningBot(app, adapter, stop, asyncio.create_task(adapter.run(stop)))
        started.append(bot)
        await app.db.create_all()
        async with asyncio.timeout(30):
            await adapter.wait_ready()
        if mcp:
            app.mcp.start()
            async with asyncio.timeout(60):
                await app.mcp.wait_ready("t")
        return bot

    yield start
    for bot in started:
        await bot.halt()
        await bot.app.aclose()


async def _ask_to_delete(fake: FakeDiscord, fake_llm: FakeOpenAI) -> str:
    """A mention that makes the model propose `t.delete_item(3)`; returns the thread id."""
    fake_llm.tool_calls(("t__delete_item", {"item_id": 3}))
    fake_llm.reply("Done as you decided.")
    message = await fake.post_message(
        fake.alice, fake.general, f"{fake.mention()} please delete item 3"
    )
    return message["id"]


async def _question(fake: FakeDiscord, thread: str) -> tuple[Posted, dict[str, str]]:
    """The question with buttons in `thread`, and its buttons' custom ids by label."""

    def asked() -> Posted | None:
        return next((p for p in fake.messages_in(thread) if p.components), None)

    posted = await fake.wait_for(asked, within=30)
    assert posted is not None
    ids = {b["label"]: b["custom_id"] for row in posted.components for b in row["components"]}
    return posted, ids


async def _audit(bot: RunningBot) -> list[str]:
    async with bot.app.db.session() as s:
        rows = (await s.exec(select(AuditEntry).order_by(AuditEntry.id))).all()  # type: ignore[arg-type]
    return [r.outcome for r in rows]


async def _states(bot: RunningBot) -> list[str]:
    async with bot.app.db.session() as s:
        return [r.state for r in (await s.exec(select(McpConfirmation))).all()]


def _private(state: InteractionState) -> list[str]:
    return [p.content for p in state.followups if p.ephemeral]


async def test_confirmed_runs_the_tool_and_the_question_says_who_confirmed(
    start_bot: StartBot, fake: FakeDiscord, fake_llm: FakeOpenAI
) -> None:
    bot = await start_bot()
    thread = await _ask_to_delete(fake, fake_llm)
    posted, ids = await _question(fake, thread)
    prompt_id = ids["Run"].rsplit(":", 1)[1]
    assert ids == {"Run": custom_id("run", prompt_id), "Cancel": custom_id("cancel", prompt_id)}
    assert f"<@{fake.alice['id']}>" in posted.content and "`t.delete_item`" in posted.content

    click = await fake.click(fake.alice, posted, ids["Run"])
    await bot.adapter.idle()
    assert click.callback_type == 6  # acknowledged first, then the message updated
    assert posted.components == []  # nobody can click a settled question
    assert f"<@{fake.alice['id']}> confirmed" in posted.content
    assert "Done as you decided." in [p.content for p in fake.messages_in(thread)]
    assert "deleted 3" in fake_llm.requests[1]["messages"][-1]["content"]
    assert await _audit(bot) == ["ok"]
    assert await _states(bot) == ["confirmed"]


async def test_another_users_click_is_refused_privately_and_the_requester_can_still_decline(
    start_bot: StartBot, fake: FakeDiscord, fake_llm: FakeOpenAI
) -> None:
    bot = await start_bot()
    bob = fake.add_member("bob")
    thread = await _ask_to_delete(fake, fake_llm)
    posted, ids = await _question(fake, thread)
    stale_view = list(posted.components)

    by_bob = await fake.click(bob, posted, ids["Run"])
    await fake.wait_for(lambda: _private(by_bob))
    assert _private(by_bob) == [
        f"Only <@{fake.alice['id']}>, who asked, can confirm or cancel this."
    ]
    assert posted.components and await _states(bot) == ["pending"]

    await fake.click(fake.alice, posted, ids["Cancel"])
    await bot.adapter.idle()
    assert f"<@{fake.alice['id']}> declined" in posted.content and posted.components == []
    assert "the user declined" in fake_llm.requests[1]["messages"][-1]["content"]

    # A second click from a client still showing the buttons changes nothing.
    posted.components = stale_view
    again = await fake.click(fake.alice, posted, ids["Run"])
    await fake.wait_for(lambda: again.original is not None and posted.components == [])
    await bot.adapter.idle()
    assert await _states(bot) == ["declined"]
    assert await _audit(bot) == ["confirm_ignored", "confirm_declined", "confirm_stale"]


async def test_a_question_nobody_answers_expires_and_its_buttons_go(
    start_bot: StartBot, fake: FakeDiscord, fake_llm: FakeOpenAI
) -> None:
    bot = await start_bot(mcp_confirm_timeout=1.0)
    thread = await _ask_to_delete(fake, fake_llm)
    posted, ids = await _question(fake, thread)
    await fake.wait_for(
        lambda: "Done as you decided." in [p.content for p in fake.messages_in(thread)]
    )
    await bot.adapter.idle()
    assert "Not confirmed in time" in posted.content and posted.components == []
    assert "did not confirm" in fake_llm.requests[1]["messages"][-1]["content"]
    assert await _audit(bot) == ["confirm_timeout"]

    # A client that still shows the buttons: the late click changes nothing.
    posted.components = [
        {
            "type": 1,
            "components": [{"type": 2, "style": 4, "label": "Run", "custom_id": ids["Run"]}],
        }
    ]
    late = await fake.click(fake.alice, posted, ids["Run"])
    await fake.wait_for(lambda: late.original is not None and posted.components == [])
    await bot.adapter.idle()
    assert "Not confirmed in time" in posted.content
    assert await _states(bot) == ["expired"]
    assert await _audit(bot) == ["confirm_timeout", "confirm_stale"]


async def test_an_unknown_button_id_opens_nothing(
    start_bot: StartBot, fake: FakeDiscord, fake_llm: FakeOpenAI
) -> None:
    bot = await start_bot()
    thread = await _ask_to_delete(fake, fake_llm)
    posted, ids = await _question(fake, thread)
    forged = custom_id("run", "forged-id-00000000000000")
    posted.components[0]["components"].append(
        {"type": 2, "style": 4, "label": "x", "custom_id": forged}
    )
    click = await fake.click(fake.alice, posted, forged)
    await fake.wait_for(lambda: _private(click))
    assert "unknown here" in _private(click)[0]
    assert await _states(bot) == ["pending"]
    await fake.click(fake.alice, posted, ids["Run"])
    await bot.adapter.idle()
    assert await _states(bot) == ["confirmed"]


async def test_the_click_may_reach_another_process(
    start_bot: StartBot, fake: FakeDiscord, fake_llm: FakeOpenAI, database_url: str
) -> None:
    waiting = await start_bot(database_url=database_url)
    thread = await _ask_to_delete(fake, fake_llm)
    posted, ids = await _question(fake, thread)
    # A second worker connects (a restart, a deploy): the gateway now delivers to it.
    other = await start_bot(mcp=False, database_url=database_url)
    taken: list[str] = []
    answer = other.app.confirmations.answer

    async def noted(*args: Any, **kwargs: Any) -> Any:
        taken.append(args[0])
        return await answer(*args, **kwargs)

    other.app.confirmations.answer = noted  # type: ignore[method-assign]
    click = await fake.click(fake.alice, posted, ids["Run"])
    await fake.wait_for(lambda: posted.components == [])
    assert click.callback_type == 6
    await fake.wait_for(
        lambda: "Done as you decided." in [p.content for p in fake.messages_in(thread)]
    )
    await waiting.adapter.idle()
    await other.adapter.idle()
    assert f"<@{fake.alice['id']}> confirmed" in posted.content
    assert "deleted 3" in fake_llm.requests[1]["messages"][-1]["content"]
    assert taken == [ids["Run"].rsplit(":", 1)[1]]  # the click was taken by the other one
    assert await _audit(waiting) == ["ok"]
