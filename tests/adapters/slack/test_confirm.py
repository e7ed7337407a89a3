"""Confirmation buttons on Slack, end to end: the real app and slack-bolt served by uvicorn, the
test MCP server's destructive tool proposed by the fake model, the question posted with Block
Kit buttons in the fake Slack, and signed `block_actions` clicks sent back over HTTP — to the
same web process, or to a second one sharing the database — or over Socket Mode.
"""

from __future__ import annotations

import asyncio
import copy
import sys
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import pytest
from sqlmodel import select

from adapters.slack.confirm import CANCEL, RUN
from bot.app import build_app, build_slack
from core.store.models import AuditEntry, McpConfirmation
from tests.adapters.slack.test_slack import fake_slack, serve_slack
from tests.conftest import POLICY_ALL
from tests.support.fakes.openai_server import FakeOpenAI
from tests.support.fakes.slack_api import FakeSlack
from tests.support.fakes.slack_events import ServedApp, block_actions, mention, new_ts
from tests.support.paths import FAKES_DIR

__all__ = ["fake_slack", "serve_slack"]  # fixtures shared with the Slack tests

SERVER = FAKES_DIR / "mcp_server.py"
POLICY = (
    POLICY_ALL
    + """
[[rules]]
name = "C1 may use the test server"
match = { channel = "C1" }
grant = ["mcp:t"]
"""
)
StartApp = Callable[..., ServedApp]


def _start(serve_slack: StartApp, *, mcp: bool = True, **settings: Any) -> ServedApp:
    settings.setdefault("mcp", {"t": {"command": sys.executable, "args": [str(SERVER)]}})

    def setup(app: Any) -> None:
        if mcp:
            app.mcp.start()

    served = serve_slack(policy=POLICY, settings=settings, setup=setup)
    if mcp:
        served.run(served.app.mcp.wait_ready("t"), timeout=60)
    return served


def _ask_to_delete(app: ServedApp, fake_slack: FakeSlack, fake_llm: FakeOpenAI) -> str:
    """A mention that makes the model propose `t.delete_item(3)`; returns the thread ts."""
    fake_llm.tool_calls(("t__delete_item", {"item_id": 3}))
    fake_llm.reply("Done as you decided.")
    root = new_ts()
    assert app.post_event(mention("please delete item 3", ts=root)).status == 200
    return root


def _question(fake_slack: FakeSlack, n: int = 1) -> dict[str, Any]:
    """The n-th posted message carrying our buttons, once there, as it was then (a person's
    client may still show it so after it was updated)."""

    def asked() -> list[dict[str, Any]]:
        return [m for m in fake_slack.posted("C1") if _buttons(m)]

    fake_slack.wait_for(lambda: len(asked()) >= n, 30, "the confirmation question")
    return copy.deepcopy(asked()[n - 1])


def _buttons(message: dict[str, Any]) -> list[str]:
    return [
        e["action_id"]
        for b in message.get("blocks") or []
        if b.get("type") == "actions"
        for e in b["elements"]
    ]


def _audit(app: ServedApp) -> list[str]:
    async def read() -> list[str]:
        async with app.app.db.session() as s:
            rows = (await s.exec(select(AuditEntry).order_by(AuditEntry.id))).all()  # type: ignore[arg-type]
        return [r.outcome for r in rows]

    return list(app.run(read()))


def _states(app: ServedApp) -> list[str]:
    async def read() -> list[str]:
        async with app.app.db.session() as s:
            return [r.state for r in (await s.exec(select(McpConfirmation))).all()]

    return list(app.run(read()))


def _ephemerals(fake_slack: FakeSlack) -> list[tuple[str, str]]:
    return [(c.args["user"], c.args["text"]) for c in fake_slack.calls("chat.postEphemeral")]


def test_confirmed_runs_the_tool_and_the_question_says_who_confirmed(
    serve_slack: StartApp, fake_slack: FakeSlack, fake_llm: FakeOpenAI
) -> None:
    app = _start(serve_slack)
    root = _ask_to_delete(app, fake_slack, fake_llm)
    asked = _question(fake_slack)
    assert asked["thread_ts"] == root
    assert _buttons(asked) == [RUN, CANCEL]
    assert "<@U1>" in asked["text"] and "`t.delete_item`" in asked["text"]
    assert '{"item_id": 3}' in asked["text"]

    resp = app.post_interaction(block_actions(asked, RUN, user="U1"))
    assert resp.status == 200 and resp.seconds < 3.0  # acknowledged at once
    app.idle()

    settled = fake_slack.message("C1", asked["ts"])
    assert _buttons(settled) == []  # nobody can click a settled question
    assert "<@U1> confirmed" in settled["text"]
    answer = [m for m in fake_slack.posted("C1") if m["text"] == "Done as you decided."]
    assert len(answer) == 1 and answer[0]["thread_ts"] == root
    result = fake_llm.requests[1]["messages"][-1]["content"]
    assert "deleted 3" in result  # the tool ran and its result reached the model
    assert _audit(app) == ["ok"]
    assert _states(app) == ["confirmed"]


def test_another_users_click_is_ignored_then_the_requester_declines_and_a_second_click_is_stale(
    serve_slack: StartApp, fake_slack: FakeSlack, fake_llm: FakeOpenAI
) -> None:
    app = _start(serve_slack)
    _ask_to_delete(app, fake_slack, fake_llm)
    asked = _question(fake_slack)

    assert app.post_interaction(block_actions(asked, RUN, user="U2")).status == 200
    fake_slack.wait_calls("chat.postEphemeral", 1)
    assert _ephemerals(fake_slack) == [("U2", "Only <@U1>, who asked, can confirm or cancel this.")]
    assert _buttons(fake_slack.message("C1", asked["ts"])) == [RUN, CANCEL]  # unchanged
    assert _states(app) == ["pending"]

    app.post_interaction(block_actions(asked, CANCEL, user="U1"))
    app.idle()
    settled = fake_slack.message("C1", asked["ts"])
    assert "<@U1> declined" in settled["text"] and _buttons(settled) == []
    assert "the user declined" in fake_llm.requests[1]["messages"][-1]["content"]

    # A second click on the (stale, still rendered somewhere) button changes nothing.
    app.post_interaction(block_actions(asked, RUN, user="U1"))
    fake_slack.wait_calls("chat.postEphemeral", 2)
    app.idle()
    assert _ephemerals(fake_slack)[-1][0] == "U1"
    assert "already settled" in _ephemerals(fake_slack)[-1][1]
    assert _states(app) == ["declined"]
    assert _audit(app) == ["confirm_ignored", "confirm_declined", "confirm_stale"]


def test_a_question_nobody_answers_expires_and_a_late_click_changes_nothing(
    serve_slack: StartApp, fake_slack: FakeSlack, fake_llm: FakeOpenAI
) -> None:
    app = _start(serve_slack, mcp_confirm_timeout=1.0)
    _ask_to_delete(app, fake_slack, fake_llm)
    asked = _question(fake_slack)
    app.idle()  # the request ends on its own: the question timed out
    expired = fake_slack.message("C1", asked["ts"])
    assert "Not confirmed in time" in expired["text"] and _buttons(expired) == []
    assert "did not confirm" in fake_llm.requests[1]["messages"][-1]["content"]

    app.post_interaction(block_actions(asked, RUN, user="U1"))
    fake_slack.wait_calls("chat.postEphemeral", 1)
    app.idle()
    assert _states(app) == ["expired"]
    assert _audit(app) == ["confirm_timeout", "confirm_stale"]


def test_forged_ids_and_clicks_from_another_workspace_open_nothing(
    serve_slack: StartApp, fake_slack: FakeSlack, fake_llm: FakeOpenAI
) -> None:
    app = _start(serve_slack)
    _ask_to_delete(app, fake_slack, fake_llm)
    asked = _question(fake_slack)
    app.post_interaction(block_actions(asked, RUN, user="U1", value="forged-id-0000000000000"))
    app.post_interaction(block_actions(asked, RUN, user="U1", team="T2"))  # same id, other team
    fake_slack.wait_calls("chat.postEphemeral", 2)
    assert all("unknown here" in text for _, text in _ephemerals(fake_slack))
    assert _states(app) == ["pending"]
    # A request signed with another secret never reaches the listener.
    forged = app.post_interaction(block_actions(asked, RUN, user="U1"), secret="not-the-secret")
    assert forged.status == 401
    app.post_interaction(block_actions(asked, RUN, user="U1"))
    app.idle()
    assert _states(app) == ["confirmed"]
    assert _audit(app) == ["ok"]


def test_the_click_may_reach_another_web_process(
    serve_slack: StartApp, fake_slack: FakeSlack, fake_llm: FakeOpenAI, database_url: str
) -> None:
    waiting = _start(serve_slack, database_url=database_url)
    other = _start(serve_slack, mcp=False, database_url=database_url)
    _ask_to_delete(waiting, fake_slack, fake_llm)
    asked = _question(fake_slack)

    other.post_interaction(block_actions(asked, RUN, user="U2"))  # ignored there too
    fake_slack.wait_calls("chat.postEphemeral", 1)
    other.post_interaction(block_actions(asked, RUN, user="U1"))
    other.idle()
    waiting.idle()  # the waiting process noticed the answer in the database and went on
    settled = fake_slack.message("C1", asked["ts"])
    assert "<@U1> confirmed" in settled["text"] and _buttons(settled) == []
    assert "deleted 3" in fake_llm.requests[1]["messages"][-1]["content"]
    assert len([m for m in fake_slack.posted("C1") if m["text"] == "Done as you decided."]) == 1
    assert _audit(waiting) == ["confirm_ignored", "ok"]


@pytest.mark.parametrize("action", [RUN, CANCEL])
def test_double_clicks_count_once(
    serve_slack: StartApp, fake_slack: FakeSlack, fake_llm: FakeOpenAI, action: str
) -> None:
    app = _start(serve_slack)
    _ask_to_delete(app, fake_slack, fake_llm)
    asked = _question(fake_slack)
    with ThreadPoolExecutor(4) as pool:
        statuses = list(
            pool.map(
                lambda _: app.post_interaction(block_actions(asked, action, user="U1")).status,
                range(4),
            )
        )
    assert statuses == [200] * 4
    app.idle()
    expected = "ok" if action == RUN else "confirm_declined"
    assert sorted(_audit(app)) == sorted([expected, *["confirm_stale"] * 3])
    assert fake_llm.requests[1]["messages"][-1]["content"].count("deleted 3") == (
        1 if action == RUN else 0
    )


async def test_buttons_work_over_socket_mode(
    make_settings: Callable[..., Any],
    write_policy: Callable[[str], Path],
    fake_slack: FakeSlack,
    fake_llm: FakeOpenAI,
) -> None:
    """`threadline run` with an app token: the click arrives as an `interactive` envelope."""
    settings = make_settings(
        policy_file=write_policy(POLICY),
        llm_base_url=fake_llm.url,
        llm_model="fake-model",
        llm_max_retries=0,
        slack_bot_token=fake_slack.bot_token,
        slack_app_token=fake_slack.app_token,
        slack_api_url=fake_slack.api_url,
        mcp={"t": {"command": sys.executable, "args": [str(SERVER)]}},
    )
    app = build_app(settings)
    await app.db.create_all()
    app.mcp.start()
    slack = build_slack(app, "socket")
    await slack.start()
    stop = asyncio.Event()
    serving = asyncio.create_task(slack.run_socket_mode(stop))
    try:
        async with asyncio.timeout(60):
            await app.mcp.wait_ready("t")
        fake_llm.tool_calls(("t__delete_item", {"item_id": 3}))
        fake_llm.reply("Done as you decided.")
        event = mention("please delete item 3", ts=new_ts())
        await asyncio.to_thread(fake_slack.send_envelope, "events_api", event, 20)
        asked = await asyncio.to_thread(_question, fake_slack)
        click = block_actions(asked, RUN, user="U1")
        envelope = await asyncio.to_thread(fake_slack.send_envelope, "interactive", click)
        await asyncio.to_thread(fake_slack.wait_ack, envelope)
        async with asyncio.timeout(60):
            await slack.idle()
        settled = fake_slack.message("C1", asked["ts"])
        assert "<@U1> confirmed" in settled["text"] and _buttons(settled) == []
        assert "deleted 3" in fake_llm.requests[1]["messages"][-1]["content"]
    finally:
        stop.set()
        await serving
        await slack.aclose()
        await app.aclose()
