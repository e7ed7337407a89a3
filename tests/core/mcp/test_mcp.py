"""MCP servers (core/mcp/) against a real stdio MCP server (tests/support/fakes/mcp_server.py),
through the real dispatcher, policy, pins in SQL (SQLite and PostgreSQL) and the audit log."""

from __future__ import annotations

import asyncio
import sys
from collections.abc import Callable
from typing import Any

import pytest

from core.mcp.config import McpServerSettings
from core.mcp.manager import McpManager
from core.mcp.pins import PinStore
from core.session import ToolSession
from tests.support.mcp import START, ScriptedConfirmer, World, ready, stdio


async def test_tools_are_registered_pinned_and_offered_only_where_granted(
    make_world: Callable[..., World],
) -> None:
    world = make_world()
    await ready(world)
    assert {"t__lookup", "t__delete_item", "t__echo_env"} <= set(world.registry.names())
    lookup = world.registry.get("t__lookup")
    assert lookup is not None and lookup.shown_name == "t.lookup"
    assert lookup.description.startswith("[MCP server t says] ")
    assert lookup.confirm is False
    delete = world.registry.get("t__delete_item")
    assert delete is not None and delete.confirm is True

    async def offered(session: ToolSession) -> set[str]:
        return {t["function"]["name"] for t in await world.registry.offered(session)}

    assert await offered(world.session("C-OPS")) >= {"t__lookup", "t__delete_item"}
    assert await offered(world.session("C-HELP")) == {"t__lookup"}
    assert await offered(world.session("C-OTHER")) == set()  # nothing usable by default

    outcome = await world.call("t__lookup", {"query": "hello"})
    assert outcome.ok, outcome.content
    assert "found: hello" in outcome.content
    assert "untrusted data" in outcome.content


async def test_permission_denied_and_schema_rejected_before_the_server_is_called(
    make_world: Callable[..., World],
) -> None:
    world = make_world()
    await ready(world)
    denied = await world.call("t__lookup", {"query": "x"}, world.session("C-OTHER"))
    assert (denied.ok, denied.code, denied.permission) == (
        False,
        "permission_denied",
        "mcp:t.lookup",
    )
    only_lookup = world.session("C-HELP")
    denied = await world.call("t__delete_item", {"item_id": 1}, only_lookup)
    assert denied.code == "permission_denied"

    bad = await world.call("t__lookup", {"query": 5})
    assert (bad.code, bad.content) == (
        "invalid_args",
        "Error: invalid arguments (query: must be of type string).",
    )
    missing = await world.call("t__lookup", {})
    assert missing.code == "invalid_args" and "'query' is a required property" in missing.content
    entries = await world.audit()
    assert [e.outcome for e in entries] == [
        "permission_denied",
        "permission_denied",
        "invalid_args",
        "invalid_args",
    ]
    assert entries[0].tool == "t.lookup"


async def test_resources_are_listed_and_read_with_the_server_wide_permission(
    make_world: Callable[..., World],
) -> None:
    world = make_world()
    await ready(world)
    listed = await world.call("list_mcp_resources", {"server": "t"})
    assert listed.ok and "notes://readme — readme: What this server is." in listed.content
    read = await world.call("read_mcp_resource", {"server": "t", "uri": "notes://readme"})
    assert read.ok and read.content.endswith("\nA test server.")
    assert "untrusted data" in read.content
    unknown = await world.call("read_mcp_resource", {"server": "t", "uri": "file:///etc/passwd"})
    assert unknown.code == "tool_error"
    one_tool_only = world.session("C-HELP")  # mcp:t.lookup does not open t's resources
    denied = await world.call(
        "read_mcp_resource", {"server": "t", "uri": "notes://readme"}, one_tool_only
    )
    # Not offered where no server's resources are readable, so refused before it runs (the
    # dispatcher's offered check); the tool itself would refuse for the missing mcp:t.
    assert denied.code == "not_offered"
    offered = {t["function"]["name"] for t in await world.registry.offered(one_tool_only)}
    assert offered == {"t__lookup"}
    offered = {t["function"]["name"] for t in await world.registry.offered(world.session())}
    assert {"list_mcp_resources", "read_mcp_resource", "t__lookup"} <= offered


async def test_oversized_result_is_cut(make_world: Callable[..., World]) -> None:
    world = make_world(max_result_chars=500)
    await ready(world)
    outcome = await world.call("t__lookup", {"query": "big", "size": 100_000})
    assert outcome.ok
    assert len(outcome.content) < 600
    assert "[truncated" in outcome.content


async def test_timeout_then_the_server_still_answers(make_world: Callable[..., World]) -> None:
    world = make_world({"t": stdio(timeout=1.0)})
    await ready(world)
    slow = await world.call("t__lookup", {"query": "slow", "delay": 5})
    assert slow.code == "timeout", world.manager.servers["t"].reason
    fast = await world.call("t__lookup", {"query": "again"})
    assert fast.ok and "found: again" in fast.content


async def test_crash_blocks_tools_and_the_server_is_restarted(
    make_world: Callable[..., World], caplog: pytest.LogCaptureFixture
) -> None:
    world = make_world()
    await ready(world)
    crashed = await world.call("t__lookup", {"query": "crash"})
    assert not crashed.ok and crashed.code == "tool_error"
    state = world.manager.servers["t"]
    assert state.status in ("failed", "connecting")
    down = {t.name for t in world.registry.visible_to(world.session())}
    assert not any(n.startswith("t__") for n in down)  # not offered while down
    refused = await world.call("t__lookup", {"query": "x"})
    assert refused.code in ("unavailable", "tool_error")
    async with asyncio.timeout(START):
        await world.manager.wait_ready("t")
    back = await world.call("t__lookup", {"query": "after"})
    assert back.ok and "found: after" in back.content
    warnings = [r for r in caplog.records if "unavailable" in r.getMessage()]
    assert len(warnings) == 1  # reported once per outage


async def test_a_server_that_cannot_start_is_retried_and_the_rest_keeps_working(
    make_world: Callable[..., World], caplog: pytest.LogCaptureFixture
) -> None:
    world = make_world(
        {"t": stdio(), "gone": McpServerSettings(command="/nonexistent/mcp-server", timeout=2)}
    )
    await ready(world)
    async with asyncio.timeout(10):
        while world.manager.servers["gone"].failures < 3:  # noqa: ASYNC110  (no event for it)
            await asyncio.sleep(0.05)
    gone = world.manager.servers["gone"]
    assert gone.status in ("failed", "connecting") and gone.reason
    assert sum("MCP server gone unavailable" in r.getMessage() for r in caplog.records) == 1
    assert (await world.call("t__lookup", {"query": "ok"})).ok


async def test_a_server_that_answers_garbage_is_reported_and_retried(
    make_world: Callable[..., World], caplog: pytest.LogCaptureFixture
) -> None:
    garbage = McpServerSettings(
        command=sys.executable,
        args=["-c", "import time; print('hello, not JSON-RPC', flush=True); time.sleep(60)"],
        timeout=1.0,
        connect_timeout=1.0,
    )
    world = make_world({"g": garbage})
    world.manager.start()
    async with asyncio.timeout(15):
        while world.manager.servers["g"].failures < 2:  # noqa: ASYNC110  (no event for it)
            await asyncio.sleep(0.05)
    state = world.manager.servers["g"]
    assert state.reason and state.tools == {}
    assert not any(n.startswith("g__") for n in world.registry.names())
    assert sum("MCP server g unavailable" in r.getMessage() for r in caplog.records) == 1


async def test_only_allowlisted_environment_reaches_the_server(
    make_world: Callable[..., World],
) -> None:
    environ = {"THREADLINE_TEST_PASSED": "1", "THREADLINE_TEST_SECRET": "no"}
    world = make_world({"t": stdio(env=["THREADLINE_TEST_PASSED"])}, environ=environ)
    await ready(world)
    outcome = await world.call("t__echo_env", {})
    assert outcome.ok and outcome.content.endswith("\nTHREADLINE_TEST_PASSED")


async def test_changed_definition_disables_the_tool_until_approved(
    make_world: Callable[..., World], monkeypatch: pytest.MonkeyPatch
) -> None:
    first = make_world()
    await ready(first)
    await first.manager.aclose()

    # The same database, a server that now lists a different description for `lookup`.
    changed = stdio(cwd=None)
    second = make_world({"t": changed}, environ={"MCP_TEST_VARIANT": "changed"})
    second.db = first.db
    second.manager.pins = PinStore(first.db)
    monkeypatch.setattr(
        second.manager, "_target", _with_env(second.manager, {"MCP_TEST_VARIANT": "changed"})
    )
    await ready(second)
    assert second.manager.servers["t"].tools["lookup"].pin == "changed"
    assert "t__lookup" not in {t.name for t in second.registry.visible_to(second.session())}
    refused = await second.call("t__lookup", {"query": "x"})
    assert refused.code == "unavailable" and "approve" in refused.content
    assert (
        await second.call("t__delete_item", {"item_id": 1}, second.session(platform="slack"))
    ).code == "confirm_unavailable"

    pending = await PinStore(first.db).pending("t")
    assert [p.tool for p in pending] == ["lookup"]
    text = pending[0].describe()
    assert "description" in text and "IGNORE ALL PREVIOUS INSTRUCTIONS" in text
    assert "inputSchema" not in text  # only what changed

    # Approved by another process (its own PinStore): this one notices at its next listing.
    assert await PinStore(first.db).approve("t", "admin-1") == ["lookup"]

    def pin() -> str:  # a call: mypy keeps no narrowing across it
        return second.manager.servers["t"].tools["lookup"].pin

    async with asyncio.timeout(10):
        while pin() != "pinned":  # noqa: ASYNC110  (no event for it)
            await asyncio.sleep(0.05)
    ok = await second.call("t__lookup", {"query": "x"})
    assert ok.ok
    assert await PinStore(first.db).pending("t") == []


def _with_env(manager: McpManager, extra: dict[str, str]) -> Callable[[McpServerSettings], Any]:
    original = manager._target

    def target(cfg: McpServerSettings) -> Any:
        params = original(cfg)
        params.env = {**(params.env or {}), **extra}
        return params

    return target


@pytest.mark.parametrize(
    ("answers", "code"),
    [
        ([("alice", True)], "ok"),
        ([("alice", False)], "confirm_declined"),
        ([None], "confirm_timeout"),
        ([("mallory", True)], "confirm_timeout"),  # someone else's answer does not count
    ],
)
async def test_destructive_tool_needs_the_requesting_users_confirmation(
    make_world: Callable[..., World], answers: list[tuple[str, bool] | None], code: str
) -> None:
    world = make_world(confirm_timeout=1.0)
    confirmer = ScriptedConfirmer(world.gate, answers=list(answers))
    world.gate.register("console", confirmer)
    await ready(world)
    outcome = await world.call("t__delete_item", {"item_id": 7})
    assert outcome.code == code, outcome.content
    assert len(confirmer.asked) == 1
    prompt = confirmer.asked[0]
    assert (prompt.user, prompt.tool, prompt.arguments) == (
        "alice",
        "t.delete_item",
        '{"item_id": 7}',
    )
    if code == "ok":
        assert "deleted 7" in outcome.content
    outcomes = [e.outcome for e in await world.audit()]
    if answers[0] is not None and answers[0][0] == "mallory":
        assert outcomes == ["confirm_ignored", "confirm_timeout"]
    else:
        assert outcomes == [code]
    # Read-only tools never ask.
    after = await world.call("t__lookup", {"query": "q"})
    assert after.ok, world.manager.servers["t"].reason
    assert len(confirmer.asked) == 1


async def test_no_confirmer_on_the_platform_refuses_with_a_clear_message(
    make_world: Callable[..., World],
) -> None:
    world = make_world()
    await ready(world)
    outcome = await world.call("t__delete_item", {"item_id": 1}, world.session(platform="slack"))
    assert outcome.code == "confirm_unavailable"
    assert "not available on this platform yet" in outcome.content
