"""Streamed model calls through the real `openai` client against the fake server: text handed
on as it is written, tool calls assembled from their pieces, usage from the stream, and the
ways providers fail at streaming (refusing it, breaking midway, answering a page)."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import pytest

from adapters.console.translate import ConsoleIdentity, to_request
from core.chat import calls_of
from core.llm.client import LLMError, OpenAICompatibleModel
from core.llm.providers import ProviderSpec
from core.streaming import Finished
from tests.conftest import BotHarness
from tests.support.fakes.openai_server import FakeOpenAI


def llm(fake: FakeOpenAI) -> dict[str, Any]:
    return {"llm_base_url": fake.url, "llm_model": "fake-model", "llm_max_retries": 0}


def model_for(fake: FakeOpenAI, **spec: object) -> OpenAICompatibleModel:
    return OpenAICompatibleModel(
        ProviderSpec(name="fake", model="m", base_url=fake.url, max_retries=0, **spec)  # type: ignore[arg-type]
    )


class Pieces:
    def __init__(self) -> None:
        self.pieces: list[str] = []

    async def __call__(self, piece: str) -> None:
        self.pieces.append(piece)


async def test_text_arrives_in_pieces_with_usage_from_the_stream(fake_llm: FakeOpenAI) -> None:
    fake_llm.reply("The retry lives in src/app.py.", prompt_tokens=120, completion_tokens=9)
    model, sink = model_for(fake_llm), Pieces()
    done = await model.complete([{"role": "user", "content": "where?"}], on_text=sink)
    assert len(sink.pieces) > 3 and "".join(sink.pieces) == done.text
    assert done.text == "The retry lives in src/app.py."
    assert done.usage is not None and (done.usage.prompt_tokens, done.usage.completion_tokens) == (
        120,
        9,
    )
    body = fake_llm.requests[-1]
    assert body["stream"] is True and body["stream_options"] == {"include_usage": True}
    assert fake_llm.stream_requests == 1
    await model.aclose()


async def test_tool_calls_are_assembled_from_their_pieces(fake_llm: FakeOpenAI) -> None:
    fake_llm.tool_calls(
        ("grep_code", {"pattern": "def retry", "context_lines": 2}),
        ("read_file", {"repo": "app", "path": "src/app.py"}),
    )
    model, sink = model_for(fake_llm), Pieces()
    done = await model.complete([{"role": "user", "content": "x"}], on_text=sink)
    assert sink.pieces == [] and done.text == ""
    assert [c.name for c in done.tool_calls] == ["grep_code", "read_file"]
    assert json.loads(done.tool_calls[0].arguments) == {"pattern": "def retry", "context_lines": 2}
    assert json.loads(done.tool_calls[1].arguments) == {"repo": "app", "path": "src/app.py"}
    assert len({c.id for c in done.tool_calls}) == 2
    assert done.finish_reason == "tool_calls"
    assert [c["function"]["name"] for c in calls_of(done.assistant_message)] == [
        "grep_code",
        "read_file",
    ]
    await model.aclose()


async def test_a_stream_without_usage_reports_none(fake_llm: FakeOpenAI) -> None:
    fake_llm.reply("hi", usage={"omit": True})
    model = model_for(fake_llm)
    done = await model.complete([{"role": "user", "content": "x"}], on_text=Pieces())
    assert done.text == "hi" and done.usage is None  # the metered model charges its estimate
    await model.aclose()


async def test_a_server_that_cannot_stream_is_asked_without_it_from_then_on(
    fake_llm: FakeOpenAI,
) -> None:
    fake_llm.refuse_stream = True
    fake_llm.reply("first")
    fake_llm.reply("second")
    model, sink = model_for(fake_llm), Pieces()
    assert (await model.complete([{"role": "user", "content": "x"}], on_text=sink)).text == "first"
    assert sink.pieces == ["first"]  # handed on whole
    assert (await model.complete([{"role": "user", "content": "y"}], on_text=sink)).text == "second"
    streamed = [bool(r.get("stream")) for r in fake_llm.requests]
    assert streamed == [True, False, False]
    await model.aclose()


async def test_stream_off_per_provider_sends_no_stream(fake_llm: FakeOpenAI) -> None:
    fake_llm.reply("whole")
    model, sink = model_for(fake_llm, stream=False), Pieces()
    assert (await model.complete([{"role": "user", "content": "x"}], on_text=sink)).text == "whole"
    assert "stream" not in fake_llm.requests[-1] and sink.pieces == ["whole"]
    await model.aclose()


async def test_a_stream_that_breaks_midway_is_a_model_failure(fake_llm: FakeOpenAI) -> None:
    fake_llm.break_stream_after = 3
    fake_llm.reply("a long answer that will not arrive whole")
    model, sink = model_for(fake_llm), Pieces()
    with pytest.raises(LLMError) as failed:
        await model.complete([{"role": "user", "content": "x"}], on_text=sink)
    assert failed.value.kind in ("unreachable", "invalid_response")
    assert "".join(sink.pieces) == "a long a"  # what came before the break was handed on
    await model.aclose()


async def test_a_page_instead_of_a_stream_is_an_invalid_response(fake_llm: FakeOpenAI) -> None:
    fake_llm.raw(200, "<html>proxy login</html>", content_type="text/html")
    model = model_for(fake_llm)
    with pytest.raises(LLMError) as failed:
        await model.complete([{"role": "user", "content": "x"}], on_text=Pieces())
    assert failed.value.kind == "invalid_response"
    await model.aclose()


async def test_a_streamed_answer_is_paid_for_once_with_the_estimate_when_unreported(
    fake_llm: FakeOpenAI, make_bot: Callable[..., BotHarness]
) -> None:
    bot = make_bot(**llm(fake_llm))
    fake_llm.tool_calls(("current_time", {}), usage={"omit": True})
    fake_llm.reply("It is morning, as the clock says.", usage={"omit": True})
    request = to_request("what time is it?", ConsoleIdentity(user="alice", thread="s1"))
    events = [e async for e in bot.core.stream(request)]
    last = events[-1]
    assert isinstance(last, Finished) and last.reply.ok
    assert last.reply.text == last.streamed == "It is morning, as the clock says."
    assert last.reply.usage.prompt_tokens > 0 and last.reply.usage.completion_tokens > 0
    assert [bool(r.get("stream")) for r in fake_llm.requests] == [True, True]


@pytest.mark.parametrize(
    ("events", "kind"),
    [
        ("data: {not json\n\n", "invalid_response"),
        ('data: {"error": {"message": "overloaded"}}\n\n', "server"),
        ("data: [1, 2]\n\n", "server"),
        (": only a comment\n\n", "invalid_response"),
    ],
)
async def test_a_misbehaving_stream_is_a_model_failure(
    fake_llm: FakeOpenAI, events: str, kind: str
) -> None:
    fake_llm.raw(200, events, content_type="text/event-stream")
    model = model_for(fake_llm)
    with pytest.raises(LLMError) as failed:
        await model.complete([{"role": "user", "content": "x"}], on_text=Pieces())
    assert failed.value.kind == kind
    await model.aclose()
