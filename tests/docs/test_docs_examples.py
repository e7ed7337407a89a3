"""The worked examples of docs/extending.md run against the real registries: the page includes
these files, so what it shows is what runs here."""

from __future__ import annotations

import asyncio
import importlib.util
import json
import sys
from collections.abc import AsyncIterator, Callable
from pathlib import Path
from types import ModuleType

import pytest
from aiohttp import web
from sqlmodel import col, select

from bot.app import build_app
from bot.delivery import delivering
from bot.platforms import builtin_platforms
from config.settings import Settings
from core.adapter import ChatAdapter
from core.outbox import Outbox, OutboxItem, OutboxMessage
from core.platforms import Platforms
from core.policy import Policy
from core.request import Request
from core.session import ToolSession, open_session
from core.store.engine import Database
from core.store.models import AuditEntry
from core.tools.audit import AuditLog
from core.tools.context import ToolContext
from core.tools.dispatcher import Dispatcher, ProposedCall
from core.tools.registry import ToolRegistry
from tests.conftest import BotHarness
from tests.support.clocks import Clock
from tests.support.fakes.openai_server import FakeOpenAI
from tests.support.paths import ROOT_DIR

EXAMPLES = ROOT_DIR / "docs" / "examples"


def load(name: str) -> ModuleType:
    """docs/examples is not a package: each example is loaded by path, as a plugin file would be."""
    spec = importlib.util.spec_from_file_location(f"docs_examples_{name}", EXAMPLES / f"{name}.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # pydantic resolves the argument model's annotations here
    spec.loader.exec_module(module)
    return module


def session(*permissions: str) -> ToolSession:
    request = Request(
        platform="console",
        tenant="T1",
        channel="C1",
        thread="t1",
        user="alice",
        roles=(),
        text="who is on call for payments?",
    )
    return open_session(request, Policy.from_dict({"defaults": {"permissions": list(permissions)}}))


@pytest.fixture
async def db(tmp_path: Path) -> AsyncIterator[Database]:
    database = Database(f"sqlite:///{tmp_path / 'threadline.db'}")
    yield database
    await database.dispose()


async def test_the_tool_example_runs_through_the_dispatcher(db: Database) -> None:
    example = load("oncall_tool")
    tool = example.who_is_on_call
    schema = tool.schema()["function"]
    assert schema["name"] == "who_is_on_call"
    assert schema["description"].startswith("Who is on call this week for a team.")
    assert schema["parameters"]["required"] == ["team"]

    dispatcher = Dispatcher(ToolRegistry([tool]), AuditLog(db))
    ctx = ToolContext(session=session("ask"), db=db)

    def call(args: dict[str, object]) -> ProposedCall:
        return ProposedCall("c1", "who_is_on_call", json.dumps(args))

    found = await dispatcher.dispatch(ctx, call({"team": "payments"}))
    assert (found.ok, found.content) == (True, "alice is on call for payments this week.")
    unknown = await dispatcher.dispatch(ctx, call({"team": "mobile"}))
    assert (unknown.ok, unknown.code) == (False, "tool_error")
    assert "known teams: payments, search" in unknown.content
    smuggled = await dispatcher.dispatch(ctx, call({"team": "payments", "user": "root"}))
    assert (smuggled.ok, smuggled.code) == (False, "invalid_args")

    no_ask = ToolContext(session=session(), db=db)
    denied = await dispatcher.dispatch(no_ask, call({"team": "payments"}))
    assert (denied.ok, denied.code, denied.permission) == (False, "permission_denied", "ask")

    async with db.session() as s:
        rows = (await s.exec(select(AuditEntry).order_by(col(AuditEntry.id)))).all()
    assert [(r.tool, r.outcome) for r in rows] == [
        ("who_is_on_call", "ok"),
        ("who_is_on_call", "tool_error"),
        ("who_is_on_call", "invalid_args"),
        ("who_is_on_call", "permission_denied"),
    ]
    assert all(r.args_sha256 and "payments" not in r.detail for r in rows)


async def test_the_command_example_runs_in_the_bot(
    make_settings: Callable[..., Settings], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.syspath_prepend(str(EXAMPLES))  # the feature imports its siblings by name
    feature = load("oncall_feature").oncall_feature()
    app = build_app(make_settings(), extra_features=[feature])
    bot = BotHarness(app)
    try:
        reply = await bot.send("/oncall payments")
        assert (reply.ok, reply.text) == (True, "**alice** is on call for payments this week.")
        reply = await bot.send("/oncall Search --next-week")
        assert reply.text == "**dave** is on call for Search next week."

        missing = await bot.send("/oncall")
        assert not missing.ok
        assert missing.text == (
            "Name a team: `/oncall payments`.\n\nUsage: `/oncall TEAM [--next-week]`"
        )
        unknown = await bot.send("/oncall mobile")
        assert (unknown.ok, unknown.text) == (
            False,
            "There is no rota for `mobile`; teams: payments, search.",
        )
        listed = await bot.send("/help")
        assert "- `/oncall TEAM [--next-week]` — who is on call for a team" in listed.text
        assert [f.name for f in app.features][-1] == "oncall"
    finally:
        await app.aclose()


async def test_the_features_tool_is_offered_and_called_by_the_model(
    make_settings: Callable[..., Settings], fake_llm: FakeOpenAI, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.syspath_prepend(str(EXAMPLES))
    feature = load("oncall_feature").oncall_feature()
    settings = make_settings(llm_base_url=fake_llm.url, llm_model="fake-model", llm_max_retries=0)
    app = build_app(settings, extra_features=[feature])
    bot = BotHarness(app)
    try:
        fake_llm.tool_calls(("who_is_on_call", {"team": "search"}))
        fake_llm.reply("Page bob.")
        reply = await bot.send("whom do I page for search?")
        assert reply.text == "Page bob."
        assert [(c.name, c.ok) for c in reply.tool_calls] == [("who_is_on_call", True)]
        offered = {t["function"]["name"] for t in fake_llm.requests[0]["tools"]}
        assert "who_is_on_call" in offered
        results = [m for m in fake_llm.requests[1]["messages"] if m["role"] == "tool"]
        assert results[0]["content"] == "bob is on call for search this week."
    finally:
        await app.aclose()


class Outcomes(Outbox):
    """The outbox, telling the test when a delivery is recorded: waits without polling."""

    def __init__(self, db: Database, clock: Clock, platforms: Platforms) -> None:
        super().__init__(db, clock, platforms=platforms)
        self.recorded: asyncio.Queue[tuple[str, str]] = asyncio.Queue()

    async def delivered(self, item: OutboxItem, message_ref: str) -> None:
        await super().delivered(item, message_ref)
        self.recorded.put_nowait((item.message.key, "delivered"))

    async def failed(self, item: OutboxItem, error: str, *, retry: bool = True) -> None:
        await super().failed(item, error, retry=retry)
        self.recorded.put_nowait((item.message.key, "failed"))


@pytest.fixture
async def webhook() -> AsyncIterator[tuple[str, list[dict[str, object]]]]:
    """A stand-in for the receiving end, on 127.0.0.1: it keeps what it is sent."""
    received: list[dict[str, object]] = []

    async def receive(request: web.Request) -> web.Response:
        body = await request.json()
        if body["channel"] == "gone":
            return web.json_response({"error": "no such channel"}, status=404)
        received.append(body)
        return web.json_response({"id": f"m{len(received)}"})

    app = web.Application()
    app.router.add_post("/hook", receive)
    runner = web.AppRunner(app)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    port = runner.addresses[0][1]
    yield f"http://127.0.0.1:{port}/hook", received
    await runner.cleanup()


async def test_the_adapter_example_is_registered_and_drained(
    db: Database, clock: Clock, webhook: tuple[str, list[dict[str, object]]]
) -> None:
    example = load("webhook_adapter")
    url, received = webhook
    adapter = example.WebhookAdapter(url)
    assert isinstance(adapter, ChatAdapter)
    platforms = builtin_platforms()
    outbox = Outcomes(db, clock, platforms)

    def digest(key: str, channel: str) -> OutboxMessage:
        return OutboxMessage("webhook", "acme", channel, "3 questions answered.", key, title="Ops")

    with pytest.raises(ValueError, match="webhook"):
        await outbox.enqueue(digest("digest:0", "ops"))  # not registered: refused
    example.register(platforms)  # no line of core changes
    await outbox.enqueue(digest("digest:1", "ops"))
    await outbox.enqueue(digest("digest:2", "gone"))

    await adapter.start()
    try:
        async with delivering(outbox, adapter, every=0.02):
            outcomes = {await outbox.recorded.get(), await outbox.recorded.get()}
    finally:
        assert await adapter.stop(grace=1.0) == 0

    assert outcomes == {("digest:1", "delivered"), ("digest:2", "failed")}
    assert received == [
        {
            "key": "digest:1",
            "channel": "ops",
            "thread": None,
            "title": "Ops",
            "text": "3 questions answered.",
        }
    ]
    sent = await outbox.state("digest:1")
    assert sent is not None and (sent.state, sent.message_ref) == ("delivered", "m1")
    refused = await outbox.state("digest:2")
    assert refused is not None and refused.state == "failed"
    assert refused.last_error == "the webhook refused it (404)"
