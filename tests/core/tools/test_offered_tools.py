"""Only the tools offered in a request run: a model (or text injected into a tool result)
naming a tool it was not shown is refused before anything runs. Through the whole bot, the
real `openai` client and the fake OpenAI-compatible server."""

from __future__ import annotations

import json
from collections.abc import Callable

from sqlmodel import select

from core.policy import Policy
from core.request import Request
from core.session import open_session
from core.store.engine import Database
from core.store.models import AuditEntry
from core.tools.audit import AuditLog
from core.tools.context import ToolContext
from core.tools.dispatcher import Dispatcher, ProposedCall
from core.tools.registry import ToolRegistry
from core.tts.tool import voice_tools
from tests.conftest import BotHarness
from tests.support.fakes.openai_server import FakeOpenAI


def offered(request: dict[str, object]) -> set[str]:
    tools = request.get("tools") or []
    assert isinstance(tools, list)
    return {t["function"]["name"] for t in tools}


async def test_speak_is_refused_when_it_was_not_offered(
    make_bot: Callable[..., BotHarness], fake_llm: FakeOpenAI
) -> None:
    bot = make_bot(
        llm_base_url=fake_llm.url,
        llm_model="fake-model",
        llm_max_retries=0,
        tts_base_url=fake_llm.url,
    )
    # An injected call: the user did not ask for audio, so `speak` was not offered.
    fake_llm.tool_calls(("speak", {}))
    fake_llm.reply("All green.")
    reply = await bot.send("what is the status?")
    assert reply.ok
    assert "speak" not in offered(fake_llm.requests[0])
    assert [(c.name, c.ok, c.error) for c in reply.tool_calls] == [("speak", False, "not_offered")]
    assert not reply.attachments
    assert fake_llm.speech_requests == []  # no voice budget spent
    tool_result = [m for m in fake_llm.requests[1]["messages"] if m["role"] == "tool"]
    assert "not offered" in tool_result[0]["content"]
    async with bot.app.db.session() as s:
        rows = (await s.exec(select(AuditEntry))).all()
    assert [(r.tool, r.outcome) for r in rows] == [("speak", "not_offered")]


def voice_context(db: Database, text: str) -> tuple[Dispatcher, ToolContext]:
    """A dispatcher holding the `speak` tool, and a console session allowed to use it."""
    request = Request(
        platform="console",
        tenant="T1",
        channel="C1",
        thread="t1",
        user="alice",
        roles=(),
        text=text,
    )
    session = open_session(request, Policy.from_dict({"defaults": {"permissions": ["tts"]}}))
    return Dispatcher(ToolRegistry(voice_tools()), AuditLog(db)), ToolContext(session, db)


async def test_a_direct_dispatch_checks_the_tools_availability(
    open_db: Callable[[], Database],
) -> None:
    dispatcher, ctx = voice_context(open_db(), "what is the status?")
    session = ctx.session
    outcome = await dispatcher.dispatch(ctx, ProposedCall("c1", "speak", json.dumps({})))
    assert (outcome.ok, outcome.code) == (False, "not_offered")
    assert not session.effects.speak
    # Offered in this request: it runs.
    outcome = await dispatcher.dispatch(
        ctx, ProposedCall("c2", "speak", "{}"), offered=frozenset({"speak"})
    )
    assert outcome.ok and session.effects.speak


async def test_deeply_nested_arguments_are_invalid_not_a_crash(
    open_db: Callable[[], Database],
) -> None:
    dispatcher, ctx = voice_context(open_db(), "read it aloud")
    nested = '{"a": ' + "[" * 1990 + "]" * 1990 + "}"  # within the 4,000-character limit
    outcome = await dispatcher.dispatch(
        ctx, ProposedCall("c1", "speak", nested), offered=frozenset({"speak"})
    )
    assert (outcome.ok, outcome.code) == (False, "invalid_args")
    assert "nested too deeply" in outcome.content
