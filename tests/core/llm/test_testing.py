"""The in-process scripted model (`core.llm.testing.ScriptedModel`) through the real composition
root: the same agent, dispatcher, quotas and history as with a provider, with no HTTP server."""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable

import pytest

from bot.app import App, build_app
from config.settings import Settings
from core.chat import text_of
from core.llm.client import LLMError
from core.llm.testing import ModelRequest, ScriptedModel
from tests.conftest import BotHarness


@pytest.fixture
async def scripted_bot(
    make_settings: Callable[..., Settings],
) -> AsyncIterator[Callable[..., tuple[BotHarness, ScriptedModel]]]:
    made: list[App] = []

    def make(model: ScriptedModel | None = None) -> tuple[BotHarness, ScriptedModel]:
        model = model or ScriptedModel()
        app = build_app(make_settings(), model=model)
        made.append(app)
        return BotHarness(app), model

    yield make
    for app in made:
        await app.aclose()


async def test_a_scripted_tool_call_runs_through_the_real_dispatcher(
    scripted_bot: Callable[..., tuple[BotHarness, ScriptedModel]],
) -> None:
    bot, model = scripted_bot()
    model.tool_calls(("current_time", {}))
    model.reply("It is morning.")
    reply = await bot.send("what time is it now?")
    assert reply.ok and reply.text == "It is morning."
    assert [(c.name, c.ok) for c in reply.tool_calls] == [("current_time", True)]
    first, second = model.requests
    assert "current_time" in first.tool_names
    assert [m["role"] for m in second.messages[-2:]] == ["assistant", "tool"]
    assert reply.usage.prompt_tokens > 0  # charged as the model reported
    assert model.pending == 0


async def test_a_responder_answers_from_the_request_and_failures_are_scripted(
    scripted_bot: Callable[..., tuple[BotHarness, ScriptedModel]],
) -> None:
    def echo(request: ModelRequest) -> str | None:
        question = text_of(request.messages[-1])
        return f"you said: {question}" if "echo" in question else None

    bot, model = scripted_bot(ScriptedModel(responder=echo))
    assert (await bot.send("echo this")).text == "you said: echo this"
    model.fail("rate_limited")
    failed = await bot.send("and now?", thread="t2")
    assert not failed.ok and "rate" in failed.text.lower()


async def test_an_unscripted_call_fails_loudly() -> None:
    model = ScriptedModel()
    with pytest.raises(AssertionError, match="no answer scripted"):
        await model.complete([{"role": "user", "content": "hi"}])
    model.fail("timeout")
    with pytest.raises(LLMError):
        await model.complete([{"role": "user", "content": "hi"}])
