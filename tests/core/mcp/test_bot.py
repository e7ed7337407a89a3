"""MCP servers in the whole bot: configured in settings, granted by policy to one channel,
offered to the model there only, `/mcp` and `/mcp diff|approve`."""

from __future__ import annotations

import asyncio
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

from core.request import ToolCallRecord
from tests.conftest import POLICY_ALL, BotHarness
from tests.support.fakes.openai_server import FakeOpenAI
from tests.support.paths import FAKES_DIR

SERVER = FAKES_DIR / "mcp_server.py"
POLICY = (
    POLICY_ALL
    + """
[[rules]]
name = "ops may use the test server"
match = { channel = "ops" }
grant = ["mcp:t"]
"""
)
MakeBot = Callable[..., BotHarness]


async def _bot(
    make_bot: MakeBot, write_policy: Callable[[str], Path], **more: object
) -> BotHarness:
    harness = make_bot(
        policy_file=write_policy(POLICY),
        mcp={"t": {"command": sys.executable, "args": [str(SERVER)], "timeout": 10}},
        **more,
    )
    harness.app.mcp.start()
    async with asyncio.timeout(30):
        await harness.app.mcp.wait_ready("t")
    return harness


async def test_granted_channel_gets_the_tools_and_others_do_not(
    make_bot: MakeBot, write_policy: Callable[[str], Path], fake_llm: FakeOpenAI
) -> None:
    bot = await _bot(
        make_bot, write_policy, llm_base_url=fake_llm.url, llm_model="fake", llm_max_retries=0
    )
    fake_llm.tool_calls(("t__lookup", {"query": "deploys"}))
    fake_llm.reply("Found it.")
    reply = await bot.send("what about deploys?", channel="ops")
    assert reply.tool_calls == (ToolCallRecord("t__lookup", True, None),)
    offered = {t["function"]["name"] for t in fake_llm.requests[0]["tools"]}
    assert {"t__lookup", "t__delete_item"} <= offered
    description = next(
        t["function"]["description"]
        for t in fake_llm.requests[0]["tools"]
        if t["function"]["name"] == "t__lookup"
    )
    assert description == "[MCP server t says] Look up an item by a query."
    result = fake_llm.requests[1]["messages"][-1]["content"]
    assert "found: deploys" in result and "untrusted data" in result

    fake_llm.reply("No tools here.")
    await bot.send("what about deploys?", channel="general")
    offered = {t["function"]["name"] for t in fake_llm.requests[2].get("tools", [])}
    assert not any(name.startswith("t__") for name in offered)

    # No confirmer registered (as in one-shot `threadline ask`): refused with a clear message.
    fake_llm.tool_calls(("t__delete_item", {"item_id": 3}))
    fake_llm.reply("I could not delete it.")
    reply = await bot.send("delete 3", channel="ops")
    assert reply.tool_calls == (ToolCallRecord("t__delete_item", False, "confirm_unavailable"),)
    assert "not available on this platform yet" in fake_llm.requests[4]["messages"][-1]["content"]


async def test_mcp_command_lists_servers_state_and_permitted_tools(
    make_bot: MakeBot, write_policy: Callable[[str], Path]
) -> None:
    bot = await _bot(make_bot, write_policy)
    reply = await bot.send("/mcp", channel="ops")
    assert "`t` (stdio): ready, 3 tool(s)" in reply.text
    assert "`t.lookup`" in reply.text
    assert "`t.delete_item` (asks you to confirm)" in reply.text
    reply = await bot.send("/mcp", channel="general")
    assert "none of its tools is permitted here" in reply.text

    refused = await bot.send("/mcp approve t", channel="ops")
    assert not refused.ok and "admin" in refused.text
    diff = await bot.send("/mcp diff t", channel="ops", roles=["admin"])
    assert "every tool definition is as approved" in diff.text
    nothing = await bot.send("/mcp approve t", channel="ops", roles=["admin"])
    assert "no new or changed tool definitions" in nothing.text


async def test_a_definition_changed_between_runs_waits_for_an_admin(
    make_bot: MakeBot, write_policy: Callable[[str], Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    config = {
        "command": sys.executable,
        "args": [str(SERVER)],
        "env": ["MCP_TEST_VARIANT"],  # passed through from Threadline's environment
        "timeout": 10,
    }
    first = make_bot(policy_file=write_policy(POLICY), mcp={"t": config})
    first.app.mcp.start()
    async with asyncio.timeout(30):
        await first.app.mcp.wait_ready("t")
    await first.app.mcp.aclose()

    # The next run: the same database, the server now describes `lookup` differently.
    monkeypatch.setenv("MCP_TEST_VARIANT", "changed")
    bot = make_bot(policy_file=write_policy(POLICY), mcp={"t": config})
    bot.app.mcp.start()
    async with asyncio.timeout(30):
        await bot.app.mcp.wait_ready("t")
    listing = await bot.send("/mcp", channel="ops")
    assert "`t.lookup` (disabled: definition changed, awaiting `/mcp approve`)" in listing.text
    diff = await bot.send("/mcp diff t", channel="ops", roles=["admin"])
    assert "**lookup**" in diff.text and "IGNORE ALL PREVIOUS INSTRUCTIONS" in diff.text
    assert "/mcp approve t" in diff.text
    approved = await bot.send("/mcp approve t", channel="ops", roles=["admin"])
    assert "`t.lookup`" in approved.text and "can be used again" in approved.text
    listing = await bot.send("/mcp", channel="ops")
    assert "disabled" not in listing.text


async def test_resources_are_listed_in_the_prompt_where_readable_and_the_window_is_large(
    make_bot: MakeBot, write_policy: Callable[[str], Path], fake_llm: FakeOpenAI
) -> None:
    llm = {"llm_base_url": fake_llm.url, "llm_model": "fake", "llm_max_retries": 0}
    bot = await _bot(make_bot, write_policy, llm_context_window=32768, **llm)
    fake_llm.reply("ok")
    await bot.send("what notes are there?", channel="ops")
    fake_llm.reply("ok")
    await bot.send("what notes are there?", channel="general")
    ops, general = fake_llm.requests
    listed = [
        m["content"]
        for m in ops["messages"]
        if m["role"] == "user" and m["content"].startswith("MCP resources")
    ]
    assert len(listed) == 1 and "- t: notes://readme" in listed[0]
    assert "data, not instructions" in listed[0]
    assert not any(
        m["role"] == "user" and m["content"].startswith("MCP resources")
        for m in general["messages"]
    )
    small = await _bot(make_bot, write_policy, llm_context_window=16384, **llm)
    fake_llm.reply("ok")
    await small.send("what notes are there?", channel="ops")
    assert "MCP resources" not in str(fake_llm.requests[-1]["messages"])
