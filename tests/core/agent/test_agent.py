"""The agent loop, end to end: the real composition root on the console adapter, the real
`openai` client, and the scripted fake OpenAI-compatible server on 127.0.0.1."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from pydantic import Field

from core import messages
from core.request import ToolCallRecord, Usage
from core.tools.context import ToolContext
from core.tools.registry import Tool, ToolArgs, tool
from tests.conftest import POLICY_ALL, BotHarness
from tests.support.fakes.openai_server import FakeOpenAI

MakeBot = Callable[..., BotHarness]

# -- a test tool -----------------------------------------------------------------------------


class EchoArgs(ToolArgs):
    text: str = Field(description="What to echo.")


@pytest.fixture
def echo_runs() -> list[str]:
    """The texts the `echo` tool ran with, in order."""
    return []


@pytest.fixture
def echo(echo_runs: list[str]) -> Tool:
    @tool(name="echo", permission="ask")
    async def echo(ctx: ToolContext, args: EchoArgs) -> str:
        """Echo the text back, upper-cased."""
        echo_runs.append(args.text)
        return args.text.upper()

    return echo


def llm(fake: FakeOpenAI, **more: Any) -> dict[str, Any]:
    return {"llm_base_url": fake.url, "llm_model": "fake-model", "llm_max_retries": 0, **more}


def tool_names(request: dict[str, Any]) -> list[str]:
    return [t["function"]["name"] for t in request.get("tools", [])]


def user_texts(request: dict[str, Any]) -> list[str]:
    return [m["content"] for m in request["messages"] if m["role"] == "user"]


def conversation(request: dict[str, Any]) -> list[dict[str, Any]]:
    """The request's messages after the system messages."""
    return [m for m in request["messages"] if m["role"] != "system"]


# -- answers and tool calls ------------------------------------------------------------------


async def test_plain_answer(bot: BotHarness, fake_llm: FakeOpenAI) -> None:
    fake_llm.reply("Paris is the capital of France.", prompt_tokens=120, completion_tokens=9)
    reply = await bot.send("What is the capital of France?")
    assert reply.ok
    assert reply.text == "Paris is the capital of France."
    assert reply.tool_calls == ()
    assert reply.notices == ()
    assert reply.usage == Usage(120, 9, 0)
    assert len(fake_llm.requests) == 1
    sent = fake_llm.requests[0]
    assert sent["model"] == "fake-model"
    # Stable content first: the system rules lead, the new message comes last.
    assert sent["messages"][0]["role"] == "system"
    assert sent["messages"][0]["content"].startswith("You are Threadline")
    assert sent["messages"][-1] == {"role": "user", "content": "What is the capital of France?"}
    assert "current_time" in tool_names(sent)


async def test_one_tool_call_then_answer(
    make_bot: MakeBot, fake_llm: FakeOpenAI, echo: Tool, echo_runs: list[str]
) -> None:
    bot = make_bot(tools=(echo,), **llm(fake_llm))
    fake_llm.tool_calls(("echo", {"text": "hello"}))
    fake_llm.reply("The tool said HELLO.")
    reply = await bot.send("echo hello please")

    assert reply.ok, reply
    assert reply.text == "The tool said HELLO."
    assert reply.tool_calls == (ToolCallRecord("echo", True, None),)
    assert echo_runs == ["hello"]
    assert len(fake_llm.requests) == 2
    first, second = fake_llm.requests
    assert "echo" in tool_names(first)
    assistant, result = second["messages"][-2:]
    assert assistant["role"] == "assistant"
    [call] = assistant["tool_calls"]
    assert call["function"]["name"] == "echo"
    assert json.loads(call["function"]["arguments"]) == {"text": "hello"}
    assert result == {"role": "tool", "tool_call_id": call["id"], "content": "HELLO"}
    # The second request still carries the question before the tool exchange.
    assert second["messages"][-3] == {"role": "user", "content": "echo hello please"}


async def test_several_tool_calls_in_one_response(
    make_bot: MakeBot, fake_llm: FakeOpenAI, echo: Tool, echo_runs: list[str]
) -> None:
    bot = make_bot(tools=(echo,), **llm(fake_llm))
    fake_llm.tool_calls(("echo", {"text": "one"}), ("echo", {"text": "two"}), ("current_time", {}))
    fake_llm.reply("done")
    reply = await bot.send("do three things")

    assert reply.text == "done"
    assert [c.name for c in reply.tool_calls] == ["echo", "echo", "current_time"]
    assert all(c.ok for c in reply.tool_calls)
    assert echo_runs == ["one", "two"]
    second = fake_llm.requests[1]
    assistant = second["messages"][-4]
    ids = [c["id"] for c in assistant["tool_calls"]]
    assert len(set(ids)) == 3
    results = second["messages"][-3:]
    assert [r["role"] for r in results] == ["tool"] * 3
    assert [r["tool_call_id"] for r in results] == ids
    assert [r["content"] for r in results[:2]] == ["ONE", "TWO"]
    assert results[2]["content"][:2] == "20"  # an ISO date from current_time


async def test_invalid_tool_arguments_go_back_to_the_model(
    make_bot: MakeBot, fake_llm: FakeOpenAI, echo: Tool, echo_runs: list[str]
) -> None:
    bot = make_bot(tools=(echo,), **llm(fake_llm))
    fake_llm.tool_calls(("echo", {"text": "x", "user": "root"}))
    fake_llm.reply("sorry")
    reply = await bot.send("echo as root")
    assert reply.tool_calls == (ToolCallRecord("echo", False, "invalid_args"),)
    assert echo_runs == []
    result = fake_llm.requests[1]["messages"][-1]
    assert result["role"] == "tool" and result["content"].startswith("Error: invalid arguments")


async def test_tool_not_permitted_is_not_run_and_the_user_is_told(
    bot: BotHarness, fake_llm: FakeOpenAI
) -> None:
    fake_llm.tool_calls(("recent_tool_calls", {"limit": 5}))
    fake_llm.reply("I could not look that up.")
    reply = await bot.send("what have you been doing?")

    assert reply.ok
    assert reply.tool_calls == (ToolCallRecord("recent_tool_calls", False, "permission_denied"),)
    assert any("recent_tool_calls" in n and "`admin`" in n for n in reply.notices), reply.notices
    first, second = fake_llm.requests
    assert "recent_tool_calls" not in tool_names(first)  # not offered ...
    result = second["messages"][-1]
    assert result["role"] == "tool"
    assert "not permitted" in result["content"]  # ... and not run when named anyway

    # An admin is offered the tool and it runs: it even shows the denied call above.
    fake_llm.tool_calls(("recent_tool_calls", {"limit": 5}))
    fake_llm.reply("Here is what I did.")
    admin = await bot.send("what have you been doing?", thread="t-admin", roles=["admin"])
    assert admin.ok
    assert admin.tool_calls == (ToolCallRecord("recent_tool_calls", True, None),)
    assert admin.notices == ()
    third, fourth = fake_llm.requests[2:]
    assert "recent_tool_calls" in tool_names(third)
    log_text = fourth["messages"][-1]["content"]
    assert "recent_tool_calls by alice in console: permission_denied" in log_text


async def test_tool_budget_notice(
    make_bot: MakeBot, fake_llm: FakeOpenAI, echo: Tool, echo_runs: list[str]
) -> None:
    bot = make_bot(tools=(echo,), **llm(fake_llm))  # the test policy allows 4 calls
    fake_llm.tool_calls(*[("echo", {"text": str(i)}) for i in range(5)])
    fake_llm.reply("partial answer")
    reply = await bot.send("five lookups")
    assert echo_runs == ["0", "1", "2", "3"]
    # The fifth call is neither run nor kept as a call: a one-line note tells the model.
    assert [c.error for c in reply.tool_calls] == [None] * 4
    assert messages.TOOL_BUDGET_NOTICE.format(n=4) in reply.notices
    second = fake_llm.requests[1]
    assert "tools" not in second  # nothing left to spend: no tools on offer
    calls = [m for m in second["messages"] if m.get("tool_calls")]
    assert [len(m["tool_calls"]) for m in calls] == [4]
    assert second["messages"][-1]["content"].endswith(
        messages.TOOL_CALLS_DROPPED.format(extra=1, n=4)
    )


# -- the iteration limit ---------------------------------------------------------------------


async def test_iterations_limit_ends_with_a_request_without_tools(
    bot: BotHarness, fake_llm: FakeOpenAI
) -> None:
    for _ in range(6):  # a model that never stops calling tools
        fake_llm.tool_calls(("current_time", {}))
    reply = await bot.send("loop forever")

    assert len(fake_llm.requests) == 4  # iterations_per_request in the test policy
    assert fake_llm.pending == 2
    assert all("tools" in r for r in fake_llm.requests[:3])
    assert "tools" not in fake_llm.requests[-1]
    # The tool calls proposed on the last step are not run.
    assert [c.name for c in reply.tool_calls] == ["current_time"] * 3
    assert reply.text == messages.MODEL_STEP_LIMIT.format(n=4)
    assert reply.ok is False  # no answer: the request failed (non-zero exit in the console)


async def test_last_step_answer_is_the_reply(bot: BotHarness, fake_llm: FakeOpenAI) -> None:
    for _ in range(3):
        fake_llm.tool_calls(("current_time", {}))
    fake_llm.reply("Final answer from the last step.")
    reply = await bot.send("loop a bit")
    assert len(fake_llm.requests) == 4
    assert "tools" not in fake_llm.requests[-1]
    assert reply.text == "Final answer from the last step."


# -- model errors ----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("status", "reason"),
    [
        (500, "the language model provider had an error"),
        (401, "the language model provider refused our credentials"),
    ],
)
async def test_model_errors_give_a_short_friendly_reply(
    bot: BotHarness, fake_llm: FakeOpenAI, status: int, reason: str
) -> None:
    fake_llm.error(status, "Incorrect API key provided: sk-live-LEAKME; trace at line 42")
    reply = await bot.send("hello?")
    assert reply.ok is False
    assert reason in reply.text
    assert len(reply.text) < 200
    for leak in ("Traceback", "sk-live-LEAKME", "line 42", "HTTP", str(status)):
        assert leak not in reply.text
    assert len(fake_llm.requests) == 1  # llm_max_retries=0 in the `bot` fixture


async def test_429_then_success(make_bot: MakeBot, fake_llm: FakeOpenAI) -> None:
    bot = make_bot(**llm(fake_llm, llm_max_retries=2))
    fake_llm.error(429, "slow down", headers={"retry-after-ms": "10"})
    fake_llm.reply("Answer after a retry.")
    reply = await bot.send("hi")
    assert reply.ok, reply
    assert reply.text == "Answer after a retry."
    assert len(fake_llm.requests) == 2
    assert fake_llm.requests[0]["messages"] == fake_llm.requests[1]["messages"]


async def test_429_without_retries_left_is_reported(bot: BotHarness, fake_llm: FakeOpenAI) -> None:
    fake_llm.error(429, "slow down", headers={"retry-after-ms": "10"})
    reply = await bot.send("hi")
    assert reply.ok is False
    assert "rate-limiting" in reply.text


async def test_model_timeout(make_bot: MakeBot, fake_llm: FakeOpenAI) -> None:
    bot = make_bot(**llm(fake_llm, llm_timeout=0.2))
    fake_llm.reply("too late", delay=0.6)
    reply = await bot.send("hi")
    assert reply.ok is False
    assert "did not answer in time" in reply.text


async def test_unreachable_model(make_bot: MakeBot, fake_llm: FakeOpenAI) -> None:
    url = fake_llm.url
    fake_llm.stop()  # nothing listens on that port any more
    bot = make_bot(llm_base_url=url, llm_model="fake-model", llm_max_retries=0)
    reply = await bot.send("hi")
    assert reply.ok is False
    assert "cannot be reached" in reply.text
    assert "Traceback" not in reply.text


async def test_failed_model_call_releases_the_token_reservation(
    bot: BotHarness, fake_llm: FakeOpenAI
) -> None:
    fake_llm.error(500)
    await bot.send("hi")
    budget = await bot.send("/budget")
    assert "your daily token budget: 0 of 100,000 tokens" in budget.text


COMPLETION_WITHOUT_MESSAGE = {
    "id": "x",
    "object": "chat.completion",
    "created": 0,
    "model": "m",
    "choices": [{"index": 0, "finish_reason": "stop"}],
}


@pytest.mark.parametrize(
    ("body", "content_type"),
    [
        ("this is not JSON", "application/json"),
        ("<html><body>Open WebUI</body></html>", "text/html"),  # base URL of a web page
        (
            {"id": "x", "object": "chat.completion", "created": 0, "model": "m", "choices": []},
            "application/json",
        ),
        (COMPLETION_WITHOUT_MESSAGE, "application/json"),
    ],
    ids=["not-json", "html-page", "no-choices", "no-message"],
)
async def test_malformed_model_response_is_a_model_failure(
    bot: BotHarness, fake_llm: FakeOpenAI, body: dict[str, Any] | str, content_type: str
) -> None:
    fake_llm.raw(200, body, content_type=content_type)
    reply = await bot.send("hi")
    assert reply.ok is False
    # The provider misbehaved: not "something went wrong on my side".
    assert reply.text == messages.llm_failure("invalid_response")
    assert reply.text != messages.INTERNAL_ERROR
    budget = await bot.send("/budget")
    assert "your daily token budget: 0 of 100,000 tokens" in budget.text  # reservation released


async def test_empty_answer_is_not_reported_as_the_step_limit(
    bot: BotHarness, fake_llm: FakeOpenAI
) -> None:
    fake_llm.reply("")
    reply = await bot.send("hi")
    assert len(fake_llm.requests) == 1
    assert reply.ok is False
    assert "model steps" not in reply.text
    assert reply.text == messages.llm_failure("invalid_response")


# -- usage accounting ------------------------------------------------------------------------


@pytest.mark.parametrize(
    "usage",
    [
        {"prompt_tokens_details": {"cached_tokens": 40}},  # OpenAI
        {"prompt_cache_hit_tokens": 40, "prompt_cache_miss_tokens": 60},  # DeepSeek
        {"input_cache_hit_tokens": 40},  # others
    ],
    ids=["openai", "deepseek", "input_cache_hit"],
)
async def test_cached_tokens_reach_the_reply_and_budget(
    bot: BotHarness, fake_llm: FakeOpenAI, usage: dict[str, Any]
) -> None:
    fake_llm.reply("cached!", usage={"prompt_tokens": 100, "completion_tokens": 7, **usage})
    reply = await bot.send("hi")
    assert reply.usage == Usage(prompt_tokens=100, completion_tokens=7, cached_tokens=40)

    budget = await bot.send("/budget")
    assert budget.ok
    assert "100 prompt tokens (40 served from the provider's cache), 7 completion tokens" in (
        budget.text
    )
    assert "your daily token budget: 107 of 100,000 tokens" in budget.text


async def test_usage_sums_over_model_calls(
    make_bot: MakeBot, fake_llm: FakeOpenAI, echo: Tool
) -> None:
    bot = make_bot(tools=(echo,), **llm(fake_llm))
    fake_llm.tool_calls(
        ("echo", {"text": "a"}),
        usage={"prompt_tokens": 50, "completion_tokens": 5, "prompt_cache_hit_tokens": 10},
    )
    fake_llm.reply(
        "b",
        usage={
            "prompt_tokens": 70,
            "completion_tokens": 3,
            "prompt_tokens_details": {"cached_tokens": 50},
        },
    )
    reply = await bot.send("x")
    assert reply.usage == Usage(120, 8, 60)


async def test_unreported_usage_is_charged_as_the_estimate(
    bot: BotHarness, fake_llm: FakeOpenAI
) -> None:
    fake_llm.reply("no usage in this response", usage={"omit": True})
    reply = await bot.send("hi")
    assert reply.ok
    assert reply.usage.prompt_tokens > 100  # the system prompt alone is several hundred tokens
    budget = await bot.send("/budget")
    spent = reply.usage.total_tokens
    assert f"your daily token budget: {spent:,} of 100,000 tokens" in budget.text


# -- message limits and modes ----------------------------------------------------------------


async def test_message_over_the_limit_is_refused_without_a_model_request(
    bot: BotHarness, fake_llm: FakeOpenAI
) -> None:
    reply = await bot.send("a" * 20_001)
    assert reply.ok is False
    assert "20,001" in reply.text and "20,000" in reply.text
    assert fake_llm.requests == []

    fake_llm.reply("fine")
    at_limit = await bot.send("a" * 20_000)
    assert at_limit.ok and at_limit.text == "fine"
    assert len(fake_llm.requests) == 1


@pytest.mark.parametrize("text", ["", "   ", "\n\t \n"])
async def test_empty_message_gets_the_help_text(
    bot: BotHarness, fake_llm: FakeOpenAI, text: str
) -> None:
    reply = await bot.send(text)
    assert reply.text.startswith(messages.EMPTY_MESSAGE_HINT)
    for command in ("/help", "/ask", "/budget"):
        assert command in reply.text
    assert fake_llm.requests == []


async def test_no_model_configured(make_bot: MakeBot) -> None:
    bot = make_bot()
    assert bot.app.model is None
    reply = await bot.send("What does the deploy script do?")
    assert reply.ok is False
    assert reply.text == messages.NO_MODEL
    assert "No language model is configured" in reply.text

    ask = await bot.send("/ask What does the deploy script do?")
    assert (ask.ok, ask.text) == (False, messages.NO_MODEL)

    help_reply = await bot.send("/help")
    assert help_reply.ok
    assert "/budget" in help_reply.text
    assert "No language model is configured" in help_reply.text
    assert "best matching code" in help_reply.text  # the test policy grants code.read

    budget = await bot.send("/budget")
    assert budget.ok and "your daily token budget" in budget.text


# -- thread history and ordering -------------------------------------------------------------


async def test_thread_continues_across_a_new_app_on_the_same_data_dir(
    make_bot: MakeBot, fake_llm: FakeOpenAI, tmp_path: Path, echo: Tool
) -> None:
    first_app = make_bot(tools=(echo,), data_dir=tmp_path / "shared", **llm(fake_llm))
    fake_llm.tool_calls(("echo", {"text": "bob"}))
    fake_llm.reply("Nice to meet you, Bob.")
    await first_app.send("My name is Bob.", thread="persist")
    first_exchange = [
        *conversation(fake_llm.requests[1]),
        {"role": "assistant", "content": "Nice to meet you, Bob."},
    ]
    await first_app.app.aclose()

    second_app = make_bot(tools=(echo,), data_dir=tmp_path / "shared", **llm(fake_llm))
    fake_llm.reply("Your name is Bob.")
    reply = await second_app.send("What is my name?", thread="persist")
    assert reply.text == "Your name is Bob."
    sent = fake_llm.requests[2]
    # The whole first exchange, tool call and result included, then the new question.
    assert conversation(sent) == [*first_exchange, {"role": "user", "content": "What is my name?"}]
    assert first_exchange[1]["tool_calls"][0]["id"] == first_exchange[2]["tool_call_id"]

    # Another thread in the same channel starts empty.
    await second_app.send("Who am I?", thread="other")
    assert user_texts(fake_llm.requests[3]) == ["Who am I?"]


async def test_same_thread_in_order_other_threads_concurrently(
    bot: BotHarness, fake_llm: FakeOpenAI
) -> None:
    # Requests take scripted answers in the order they reach the server; the first one to
    # arrive is held for a while, long enough for any concurrent request to arrive too.
    fake_llm.reply("slow answer", delay=0.5)
    fake_llm.reply("fast answer")
    fake_llm.reply("third answer")

    a, b, c = await asyncio.gather(
        bot.send("A: first in t1", thread="t1"),
        bot.send("B: second in t1", thread="t1"),
        bot.send("C: only in t2", thread="t2"),
    )

    received = [user_texts(r)[-1] for r in fake_llm.requests]
    assert len(received) == 3
    # B waited for A to finish; C did not wait for A (otherwise B could not be last).
    assert received[2] == "B: second in t1", received
    assert set(received[:2]) == {"A: first in t1", "C: only in t2"}
    # B's request carries A's whole exchange: A's history was saved before B started.
    b_request = fake_llm.requests[2]
    assert conversation(b_request) == [
        {"role": "user", "content": "A: first in t1"},
        {"role": "assistant", "content": a.text},
        {"role": "user", "content": "B: second in t1"},
    ]
    assert b.text == "third answer"
    assert {a.text, c.text} == {"slow answer", "fast answer"}
    # C's thread never sees t1's messages.
    c_request = next(r for r in fake_llm.requests if user_texts(r)[-1].startswith("C:"))
    assert user_texts(c_request) == ["C: only in t2"]


async def test_many_requests_in_one_thread_keep_arrival_order(
    bot: BotHarness, fake_llm: FakeOpenAI
) -> None:
    for i in range(5):
        fake_llm.reply(f"answer {i}", delay=0.05 if i == 0 else 0.0)
    replies = await asyncio.gather(*(bot.send(f"q{i}", thread="busy") for i in range(5)))
    assert [r.text for r in replies] == [f"answer {i}" for i in range(5)]
    assert [user_texts(r) for r in fake_llm.requests] == [
        [f"q{j}" for j in range(i + 1)] for i in range(5)
    ]


# -- daily token budgets ---------------------------------------------------------------------


def budget_policy(tokens_per_user: int) -> str:
    return POLICY_ALL.replace(
        "tokens_per_user_per_day = 100000", f"tokens_per_user_per_day = {tokens_per_user}"
    )


async def test_exhausted_token_budget_names_the_budget_and_reset_time(
    make_bot: MakeBot, fake_llm: FakeOpenAI, write_policy: Callable[[str], Path]
) -> None:
    bot = make_bot(policy_file=write_policy(budget_policy(2_000)), **llm(fake_llm))
    fake_llm.reply("A long answer.", prompt_tokens=1_900, completion_tokens=50)
    first = await bot.send("first question")
    assert first.ok

    fake_llm.reply("never sent")
    reply = await bot.send("second question")
    assert reply.ok is False
    assert "your daily token budget has not enough left for this request" in reply.text
    assert "of 2,000 are left" in reply.text
    assert "resets at 00:00 UTC" in reply.text
    assert len(fake_llm.requests) == 1  # no model request for the refused question
    assert fake_llm.pending == 1


async def test_budget_exhausted_in_the_middle_of_a_request(
    make_bot: MakeBot,
    fake_llm: FakeOpenAI,
    write_policy: Callable[[str], Path],
    echo: Tool,
    echo_runs: list[str],
) -> None:
    bot = make_bot(tools=(echo,), policy_file=write_policy(budget_policy(2_000)), **llm(fake_llm))
    fake_llm.tool_calls(
        ("echo", {"text": "x"}), usage={"prompt_tokens": 1_950, "completion_tokens": 10}
    )
    fake_llm.reply("never sent")
    reply = await bot.send("look something up")
    assert reply.ok is False
    assert "it needs about" in reply.text and "40 of 2,000 are left" in reply.text
    assert reply.tool_calls == (ToolCallRecord("echo", True, None),)
    assert echo_runs == ["x"]
    assert len(fake_llm.requests) == 1
    assert [n for n in reply.notices if n.startswith("Heads-up")] == [
        "Heads-up: 98% of your daily token budget is used (1,960 of 2,000)."
    ]


async def test_tiny_budget_refuses_before_any_model_request(
    make_bot: MakeBot, fake_llm: FakeOpenAI, write_policy: Callable[[str], Path]
) -> None:
    bot = make_bot(policy_file=write_policy(budget_policy(10)), **llm(fake_llm))
    reply = await bot.send("hello")
    assert reply.ok is False
    assert "your daily token budget" in reply.text and "resets at" in reply.text
    assert fake_llm.requests == []


async def test_80_percent_notice_appears_exactly_once(
    make_bot: MakeBot, fake_llm: FakeOpenAI, write_policy: Callable[[str], Path], echo: Tool
) -> None:
    bot = make_bot(tools=(echo,), policy_file=write_policy(budget_policy(10_000)), **llm(fake_llm))

    def warnings(notices: tuple[str, ...]) -> list[str]:
        return [n for n in notices if n.startswith("Heads-up")]

    fake_llm.reply("one", prompt_tokens=1_000, completion_tokens=10)
    assert warnings((await bot.send("q1")).notices) == []

    # Crosses 80% on the first of two model calls in one request.
    fake_llm.tool_calls(
        ("echo", {"text": "x"}), usage={"prompt_tokens": 7_000, "completion_tokens": 10}
    )
    fake_llm.reply("two", prompt_tokens=100, completion_tokens=10)
    second = await bot.send("q2")
    assert warnings(second.notices) == [
        "Heads-up: 80% of your daily token budget is used (8,020 of 10,000)."
    ]

    fake_llm.reply("three", prompt_tokens=100, completion_tokens=10)
    assert warnings((await bot.send("q3")).notices) == []
    fake_llm.reply("four", prompt_tokens=100, completion_tokens=10)
    assert warnings((await bot.send("q4", thread="elsewhere")).notices) == []


async def test_80_percent_notice_survives_a_restart(
    make_bot: MakeBot, fake_llm: FakeOpenAI, write_policy: Callable[[str], Path], tmp_path: Path
) -> None:
    policy = write_policy(budget_policy(10_000))
    first = make_bot(policy_file=policy, data_dir=tmp_path / "d", **llm(fake_llm))
    fake_llm.reply("one", prompt_tokens=8_500, completion_tokens=10)
    assert len((await first.send("q1")).notices) == 1
    await first.app.aclose()

    second = make_bot(policy_file=policy, data_dir=tmp_path / "d", **llm(fake_llm))
    fake_llm.reply("two", prompt_tokens=100, completion_tokens=10)
    assert (await second.send("q2")).notices == ()


async def test_a_failure_notice_is_not_stored_as_the_models_words(
    bot: BotHarness, fake_llm: FakeOpenAI
) -> None:
    fake_llm.error(500, "boom")
    failed = await bot.send("first question", thread="fail")
    assert failed.ok is False

    fake_llm.reply("Second answer.")
    await bot.send("second question", thread="fail")
    # The question is kept for context, but the apology was ours, not the model's.
    assert conversation(fake_llm.requests[1]) == [
        {"role": "user", "content": "first question"},
        {"role": "user", "content": "second question"},
    ]


async def test_progress_lines_are_sent_while_tools_run(
    make_bot: MakeBot, fake_llm: FakeOpenAI, echo: Tool
) -> None:
    from adapters.console.translate import ConsoleIdentity, to_request

    bot = make_bot(tools=(echo,), **llm(fake_llm))
    fake_llm.tool_calls(("echo", {"text": "a"}), ("echo", {"text": "b"}))
    fake_llm.reply("done")
    lines: list[str] = []

    async def progress(text: str) -> None:
        lines.append(text)

    async def broken_progress(text: str) -> None:
        raise RuntimeError("the platform refused the edit")

    reply = await bot.core.handle(to_request("go", ConsoleIdentity(thread="p")), progress)
    assert reply.ok
    assert len(lines) == 2 and all("`echo`" in line for line in lines)

    # A failing progress callback never fails the request.
    fake_llm.tool_calls(("echo", {"text": "c"}))
    fake_llm.reply("still done")
    reply = await bot.core.handle(to_request("again", ConsoleIdentity(thread="p")), broken_progress)
    assert (reply.ok, reply.text) == (True, "still done")


async def test_the_max_tokens_parameter_name_is_configurable(
    make_bot: MakeBot, fake_llm: FakeOpenAI
) -> None:
    default = make_bot(**llm(fake_llm))
    fake_llm.reply("one")
    await default.send("hi", thread="mt1")
    assert "max_tokens" in fake_llm.requests[-1]
    assert "max_completion_tokens" not in fake_llm.requests[-1]

    reasoning = make_bot(**llm(fake_llm, llm_max_tokens_param="max_completion_tokens"))
    fake_llm.reply("two")
    await reasoning.send("hi", thread="mt2")
    assert fake_llm.requests[-1]["max_completion_tokens"] > 0
    assert "max_tokens" not in fake_llm.requests[-1]
