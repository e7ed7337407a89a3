"""A misbehaving model or provider, end to end: malformed tool calls, floods of calls, usage
that is missing or negative, hung calls. The real composition root, the real `openai` client
and the fake OpenAI-compatible server on 127.0.0.1."""

from __future__ import annotations

import json
import time
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from pydantic import Field
from sqlmodel import col, select

from core import messages
from core.memory.compaction import is_protocol_valid
from core.memory.history import HistoryStore
from core.memory.tokens import TokenCounter
from core.request import ConversationKey
from core.store.models import AuditEntry, QuotaUsage, ThreadMessage, UsageRecord
from core.tools.context import ToolContext
from core.tools.registry import Tool, ToolArgs, tool
from tests.conftest import POLICY_ALL, BotHarness
from tests.support.fakes.openai_server import CREATED, FakeOpenAI

MakeBot = Callable[..., BotHarness]


class NoteArgs(ToolArgs):
    text: str = Field(description="What to note.")


@pytest.fixture
def note_runs() -> list[str]:
    """The texts the `note` tool ran with, in order."""
    return []


@pytest.fixture
def note(note_runs: list[str]) -> Tool:
    @tool(name="note", permission="ask")
    async def note(ctx: ToolContext, args: NoteArgs) -> str:
        """Note the text."""
        note_runs.append(args.text)
        return f"noted {args.text}"

    return note


def llm(fake: FakeOpenAI, **more: Any) -> dict[str, Any]:
    return {"llm_base_url": fake.url, "llm_model": "fake-model", "llm_max_retries": 0, **more}


def completion(
    calls: list[dict[str, Any]] | None = None,
    *,
    text: str | None = None,
    usage: dict[str, Any] | None = None,
) -> dict[str, Any]:
    """A chat completion body exactly as given: tool calls in whatever shape the test wants."""
    message: dict[str, Any] = {"role": "assistant", "content": text}
    if calls is not None:
        message["tool_calls"] = calls
    body: dict[str, Any] = {
        "id": f"chatcmpl-{uuid.uuid4().hex[:8]}",
        "object": "chat.completion",
        "created": CREATED,
        "model": "fake-model",
        "choices": [{"index": 0, "message": message, "finish_reason": "tool_calls"}],
    }
    if usage is not None:
        body["usage"] = usage
    return body


def call(name: str, arguments: Any, call_id: Any = "omit") -> dict[str, Any]:
    out: dict[str, Any] = {"type": "function", "function": {"name": name, "arguments": arguments}}
    if call_id != "omit":
        out["id"] = call_id
    return out


def chat(request: dict[str, Any]) -> list[Any]:  # messages as sent, malformed ones too
    return [m for m in request["messages"] if m["role"] != "system"]


async def rows(bot: BotHarness, model: Any) -> list[Any]:
    async with bot.app.db.session() as s:
        return list((await s.exec(select(model).order_by(col(model.id)))).all())


# -- tool-call ids ---------------------------------------------------------------------------


async def test_missing_empty_and_repeated_call_ids_leave_a_valid_thread(
    make_bot: MakeBot, fake_llm: FakeOpenAI, note: Tool, note_runs: list[str]
) -> None:
    bot = make_bot(tools=(note,), **llm(fake_llm))
    fake_llm.raw(
        200,
        completion(
            [
                call("note", '{"text": "a"}'),  # no id at all
                call("note", '{"text": "b"}', ""),
                call("note", '{"text": "c"}', "same"),
                call("note", '{"text": "d"}', "same"),
            ]
        ),
    )
    fake_llm.reply("noted four")
    assert (await bot.send("note four things")).ok
    fake_llm.reply("second answer")
    assert (await bot.send("and now?")).ok

    assert note_runs == ["a", "b", "c", "d"]
    for request in fake_llm.requests[1:]:
        sent = chat(request)
        assert is_protocol_valid(sent), sent
        ids = [c["id"] for m in sent if m.get("tool_calls") for c in m["tool_calls"]]
        assert len(ids) == 4 and len(set(ids)) == 4 and all(ids)


async def test_a_thread_stored_with_broken_call_ids_is_repaired_on_load(
    make_bot: MakeBot, fake_llm: FakeOpenAI, note: Tool
) -> None:
    bot = make_bot(tools=(note,), **llm(fake_llm))
    conv = ConversationKey("console", "local", "console", "t1")
    broken: list[Any] = [  # as an earlier version stored an empty call id
        {"role": "user", "content": "first"},
        {
            "role": "assistant",
            "content": "",
            "tool_calls": [{"id": "", "type": "function", "function": {"name": "note"}}],
        },
        {"role": "tool", "tool_call_id": "", "content": "orphan result"},
        {"role": "assistant", "content": "first answer"},
    ]
    await HistoryStore(bot.app.db).append(conv, broken)
    fake_llm.reply("fine")
    reply = await bot.send("second", tenant="local", channel="console")
    assert reply.ok, reply.text
    sent = chat(fake_llm.requests[0])
    assert is_protocol_valid(sent)
    assert [m["content"] for m in sent] == ["first", "first answer", "second"]


# -- arguments as an object, over-long names -------------------------------------------------


async def test_arguments_sent_as_an_object_are_accepted_audited_and_stored(
    make_bot: MakeBot, fake_llm: FakeOpenAI, note: Tool, note_runs: list[str]
) -> None:
    bot = make_bot(tools=(note,), **llm(fake_llm))
    fake_llm.raw(200, completion([call("note", {"text": "obj"}, "c1")]))
    fake_llm.reply("done")
    reply = await bot.send("note it")
    assert reply.ok, reply.text
    assert note_runs == ["obj"]
    audit = await rows(bot, AuditEntry)
    assert [(a.tool, a.outcome) for a in audit] == [("note", "ok")]
    stored = [r for r in await rows(bot, ThreadMessage) if r.tool_calls]
    assert json.loads(json.loads(stored[0].tool_calls)[0]["function"]["arguments"]) == {
        "text": "obj"
    }


async def test_a_tool_name_thousands_of_characters_long_is_capped(
    make_bot: MakeBot, fake_llm: FakeOpenAI, note: Tool
) -> None:
    bot = make_bot(tools=(note,), **llm(fake_llm))
    fake_llm.raw(200, completion([call("x" * 3000, "{}", "c1")]))
    fake_llm.reply("done")
    reply = await bot.send("go")
    (record,) = reply.tool_calls
    assert len(record.name) <= 64
    assert record.error == "unknown_tool"
    assert all(len(a.tool) <= 64 for a in await rows(bot, AuditEntry))


# -- a flood of calls --------------------------------------------------------------------------


async def test_a_thousand_calls_in_one_response_are_not_stored_and_the_thread_stays_usable(
    make_bot: MakeBot, fake_llm: FakeOpenAI, note: Tool, note_runs: list[str]
) -> None:
    bot = make_bot(tools=(note,), **llm(fake_llm))
    flood = [
        call("note", json.dumps({"text": f"item {i} " + "z" * 20}), f"c{i}") for i in range(1000)
    ]
    fake_llm.raw(200, completion(flood))
    fake_llm.reply("summary of four")
    reply = await bot.send("note everything")
    assert reply.ok
    assert len(note_runs) == 4  # the test policy's tool budget
    assert messages.TOOL_BUDGET_NOTICE.format(n=4) in reply.notices

    stored = await rows(bot, ThreadMessage)
    assert sum(len(json.loads(r.tool_calls)) for r in stored if r.tool_calls) == 4
    audit = await rows(bot, AuditEntry)
    (refused,) = [a for a in audit if a.outcome == "budget_exhausted"]  # one line, not 996
    assert refused.tool == "(over budget)" and "996 call(s)" in refused.detail

    fake_llm.reply("next answer")
    assert (await bot.send("next question")).ok
    nxt = fake_llm.requests[-1]
    assert TokenCounter().count(nxt["messages"], nxt.get("tools")) < 32_768 // 4


# -- usage the provider misreports -----------------------------------------------------------


@pytest.mark.parametrize(
    "usage",
    [
        {"prompt_tokens": 0, "completion_tokens": 0, "total_tokens": 0},
        {"prompt_tokens": -100_000, "completion_tokens": -5, "total_tokens": -100_005},
        None,  # not reported at all
    ],
)
async def test_zero_negative_or_missing_usage_is_charged_the_local_estimate(
    make_bot: MakeBot,
    fake_llm: FakeOpenAI,
    write_policy: Callable[[str], Path],
    usage: dict[str, Any] | None,
) -> None:
    policy = POLICY_ALL.replace(
        "tokens_per_user_per_day = 100000", "tokens_per_user_per_day = 1500"
    )
    bot = make_bot(policy_file=write_policy(policy), **llm(fake_llm))
    answers = 0
    for _ in range(10):
        body = completion(text="An answer of some length. " * 5, usage=usage)
        body["choices"][0]["finish_reason"] = "stop"
        fake_llm.raw(200, body)
        if (await bot.send("a question that costs something")).ok:
            answers += 1
    assert answers < 10  # a 1,500-token budget runs out: answers are never free
    records = await rows(bot, UsageRecord)
    assert records and all(r.prompt_tokens > 0 and r.completion_tokens > 0 for r in records)
    quotas = await rows(bot, QuotaUsage)
    assert {q.used for q in quotas} == {sum(r.prompt_tokens + r.completion_tokens for r in records)}
    assert all(q.reserved == 0 for q in quotas)


# -- the per-request deadline ----------------------------------------------------------------


async def test_a_hung_model_call_ends_at_the_deadline_and_keeps_what_was_done(
    make_bot: MakeBot, fake_llm: FakeOpenAI, note: Tool, note_runs: list[str]
) -> None:
    # Four seconds: on a loaded machine the first model call and the tool must both finish
    # before the deadline, which then cuts the hung second call (and the next request must fit).
    bot = make_bot(tools=(note,), request_deadline=4.0, **llm(fake_llm, llm_timeout=30))
    fake_llm.tool_calls(("note", {"text": "kept"}))
    fake_llm.reply("too late", delay=15)
    started = time.monotonic()
    reply = await bot.send("note and answer")
    assert time.monotonic() - started < 10
    assert reply.ok is False
    assert reply.text == messages.request_deadline(4.0, 1)
    assert note_runs == ["kept"]
    assert all(q.reserved == 0 for q in await rows(bot, QuotaUsage))

    fake_llm.reply("continuing")
    assert (await bot.send("continue")).ok
    sent = chat(fake_llm.requests[-1])
    assert is_protocol_valid(sent)
    assert [m["content"] for m in sent if m["role"] == "tool"] == ["noted kept"]


async def test_a_hung_tool_ends_at_the_deadline_with_a_valid_thread(
    make_bot: MakeBot, fake_llm: FakeOpenAI, note: Tool
) -> None:
    import asyncio

    @tool(name="slow", permission="ask")
    async def slow(ctx: ToolContext, args: NoteArgs) -> str:
        """Takes forever."""
        await asyncio.sleep(30)
        return "never"

    # Six seconds: on a loaded machine the first model call and `note` must both finish before
    # the deadline cuts `slow` (at two, a CI run saw the first model call itself cut).
    bot = make_bot(tools=(note, slow), request_deadline=6.0, **llm(fake_llm))
    fake_llm.tool_calls(("note", {"text": "one"}), ("slow", {"text": "two"}))
    reply = await bot.send("do both")
    assert reply.ok is False and "ran out of time" in reply.text

    fake_llm.reply("ok")
    assert (await bot.send("again")).ok
    sent = chat(fake_llm.requests[-1])
    assert is_protocol_valid(sent)
    assert [m["content"] for m in sent if m["role"] == "tool"] == [
        "noted one",
        messages.NOT_RUN_DEADLINE,
    ]
