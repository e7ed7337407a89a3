"""Thread compaction end to end: the real composition root, the real `openai` client and the
scripted fake OpenAI-compatible server on 127.0.0.1.

The fake counts a prompt as a quarter of the characters of its messages and tool schemas (as
JSON) and reports that as
`prompt_tokens`. These tests take that as the provider's truth: a request fits the window when
that count plus the request's `max_tokens` is at most the window.

Summarization requests are told apart from the agent's own by their system message; a
`Summarizer` installed as the fake's responder answers them, so the script only holds the
answers to the user's requests, in order.
"""

from __future__ import annotations

import itertools
import json
import logging
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from pydantic import Field
from sqlmodel import col, select

from core.memory.compaction import TOOL_RESULT_REMOVED, is_protocol_valid
from core.memory.history import SUMMARY_ACK, SUMMARY_PREFIX
from core.memory.tokens import DEFAULT_CHARS_PER_TOKEN
from core.store.models import ThreadMessage, ThreadSummary
from core.tools.context import ToolContext
from core.tools.registry import ToolArgs, tool
from tests.conftest import POLICY_ALL, BotHarness
from tests.support.fakes.openai_server import FakeOpenAI, Scripted, answer, failure

MakeBot = Callable[..., BotHarness]
Request = dict[str, Any]
Message = dict[str, Any]

SUMMARIZE_MARK = "You compress a chat-ops conversation"
MERGE_MARK = "Merge these partial summaries"

# Long conversations spend far more tokens than the shared test policy allows in a day.
POLICY_ROOMY = POLICY_ALL.replace(
    "tokens_per_user_per_day = 100000", "tokens_per_user_per_day = 1000000000"
).replace("tokens_per_channel_per_day = 1000000", "tokens_per_channel_per_day = 1000000000")
assert POLICY_ROOMY.count("1000000000") == 2

# A small window for the notes below, with room to spare for the last 3 of them: they fit
# even by the count of a freshly started process, whose counter is not calibrated yet (and
# over-counts, on purpose).
NOTES_WINDOW = {"llm_context_window": 4096, "llm_max_output_tokens": 256}


def llm(fake: FakeOpenAI, **more: Any) -> dict[str, Any]:
    return {"llm_base_url": fake.url, "llm_model": "fake-model", "llm_max_retries": 0, **more}


def is_summary_request(request: Request) -> bool:
    first = request["messages"][0]
    return first["role"] == "system" and (
        SUMMARIZE_MARK in first["content"] or MERGE_MARK in first["content"]
    )


def agent_requests(fake: FakeOpenAI) -> list[Request]:
    return [r for r in fake.requests if not is_summary_request(r)]


def conversation(request: Request) -> list[Message]:
    """The request's messages after the system messages."""
    return [m for m in request["messages"] if m["role"] != "system"]


def provider_tokens(request: Request) -> int:
    """The prompt size as the fake (the provider) counts it."""
    tools = request.get("tools")
    return (len(json.dumps(request["messages"])) + (len(json.dumps(tools)) if tools else 0)) // 4


def user(text: str) -> Message:
    return {"role": "user", "content": text}


def assistant(text: str) -> Message:
    return {"role": "assistant", "content": text}


def summary_pair(text: str) -> list[Message]:
    return [user(SUMMARY_PREFIX + text), assistant(SUMMARY_ACK)]


class Summarizer:
    """The model's side of summarization: answers each summarization request with a numbered
    summary (or an HTTP 500), and leaves every other request to the fake's script."""

    def __init__(self, *, fail: bool = False) -> None:
        self.fail = fail
        self.seen: list[Request] = []

    @staticmethod
    def text(n: int) -> str:
        return f"SUMMARY-{n}: the user shared long deployment notes, all acknowledged."

    def __call__(self, request: Request) -> Scripted | None:
        if not is_summary_request(request):
            return None
        self.seen.append(request)
        if self.fail:
            return failure(500, "summarizer down")
        return answer(self.text(len(self.seen)))


def note(i: int) -> str:
    """A long user message (about 1,000 characters), recognizable by its number."""
    return f"note {i}: " + " ".join(f"w{i}x{j}" for j in range(150))


async def send_notes_until_summarized(
    bot: BotHarness, fake: FakeOpenAI, summarizer: Summarizer, max_turns: int = 30
) -> int:
    """Send note 0, 1, ... (the model answers "noted i") until a turn triggers a
    summarization request; returns that turn's number."""
    for i in range(max_turns):
        fake.reply(f"noted {i}")
        reply = await bot.send(note(i))
        assert reply.ok, reply
        assert reply.text == f"noted {i}"
        assert fake.pending == 0
        if summarizer.seen:
            return i
    raise AssertionError(f"no summarization within {max_turns} turns")


def turns(first: int, last: int) -> list[Message]:
    """The stored exchange of notes first..last (inclusive), answered "noted i"."""
    out: list[Message] = []
    for i in range(first, last + 1):
        out += [user(note(i)), assistant(f"noted {i}")]
    return out


async def stored(bot: BotHarness) -> tuple[list[ThreadMessage], list[ThreadSummary]]:
    async with bot.app.db.session() as s:
        messages = (await s.exec(select(ThreadMessage).order_by(col(ThreadMessage.id)))).all()
        summaries = (await s.exec(select(ThreadSummary).order_by(col(ThreadSummary.id)))).all()
    return list(messages), list(summaries)


# -- a tool with large results -----------------------------------------------------------------


class LogArgs(ToolArgs):
    service: str = Field(description="The service whose logs to fetch.")
    lines: int = Field(60, ge=1, le=2000, description="How many lines.")


@tool(name="fetch_logs", permission="ask")
async def fetch_logs(ctx: ToolContext, args: LogArgs) -> str:
    """Fetch the most recent log lines of a service."""
    return "\n".join(
        f'2024-05-01T12:{i % 60:02d}:00Z {args.service} level=INFO msg="request {i} handled" '
        f"latency_ms={(i * 37) % 500}"
        for i in range(args.lines)
    )


# -- the summary: requested once, sent, persisted ----------------------------------------------


async def test_old_turns_are_summarized_once_and_the_summary_persists(
    make_bot: MakeBot, fake_llm: FakeOpenAI
) -> None:
    bot = make_bot(**llm(fake_llm, **NOTES_WINDOW))
    summarizer = Summarizer()
    fake_llm.responder = summarizer
    k = await send_notes_until_summarized(bot, fake_llm, summarizer)
    # The last 3 user turns are kept, so a summary needs at least 4 of them.
    assert k >= 3
    summary = Summarizer.text(len(summarizer.seen))  # the last answer is the summary

    # The part before the third-last user message is more than one summarization call may
    # carry: it is summarized in slices, in order, and the partial summaries merged.
    *slices, merge = summarizer.seen
    assert len(slices) >= 2
    assert all(SUMMARIZE_MARK in r["messages"][0]["content"] for r in slices)
    assert MERGE_MARK in merge["messages"][0]["content"]
    partials = [Summarizer.text(n) for n in range(1, len(slices) + 1)]
    assert merge["messages"][1]["content"] == "\n".join(partials)
    transcript = "\n".join(r["messages"][1]["content"] for r in slices)
    old = [f"User: {note(i)}\nAssistant: noted {i}" for i in range(k - 2)]
    assert transcript == "\n".join(old)
    for r in summarizer.seen:
        assert [m["role"] for m in r["messages"]] == ["system", "user"]
        assert "tools" not in r
        assert provider_tokens(r) + r["max_tokens"] <= 4096

    # The request that answers turn k: summary, acknowledgement, the last 3 turns verbatim.
    requests = agent_requests(fake_llm)
    assert len(requests) == k + 1
    assert fake_llm.requests[-2] is merge  # the summary was made for this very request
    assert conversation(requests[-1]) == [
        *summary_pair(summary),
        *turns(k - 2, k - 1),
        user(note(k)),
    ]
    # Before turn k nothing was compacted: the whole thread was sent.
    assert conversation(requests[-2]) == [*turns(0, k - 2), user(note(k - 1))]

    # The next turn starts from the stored summary: no second summarization.
    calls = len(summarizer.seen)
    fake_llm.reply("sure")
    reply = await bot.send("short follow-up")
    assert reply.ok and reply.text == "sure"
    assert len(summarizer.seen) == calls
    expected = [*summary_pair(summary), *turns(k - 2, k), user("short follow-up")]
    assert conversation(fake_llm.requests[-1]) == expected

    messages, summaries = await stored(bot)
    assert [s.summary for s in summaries] == [summary]
    # It covers everything up to the answer to note k-3, the last message before the cut.
    covered = next(m for m in messages if m.content == f"noted {k - 3}")
    assert summaries[0].covers_through == covered.id

    # A new process on the same data directory continues from the summary as well.
    again = make_bot(**llm(fake_llm, **NOTES_WINDOW))
    fake_llm.reply("still here")
    reply = await again.send("after the restart")
    assert reply.ok and reply.text == "still here"
    assert len(summarizer.seen) == calls
    assert conversation(fake_llm.requests[-1]) == [
        *expected,
        assistant("sure"),
        user("after the restart"),
    ]


async def test_a_failed_summary_drops_the_old_turns_and_the_request_is_answered(
    make_bot: MakeBot, fake_llm: FakeOpenAI, caplog: pytest.LogCaptureFixture
) -> None:
    bot = make_bot(tools=(fetch_logs,), **llm(fake_llm, **NOTES_WINDOW))
    summarizer = Summarizer(fail=True)
    fake_llm.responder = summarizer
    # The thread opens with a tool exchange, which will be in the part that gets dropped.
    fake_llm.tool_calls(("fetch_logs", {"service": "api", "lines": 3}))
    fake_llm.reply("api is fine")
    assert (await bot.send("how is api?")).text == "api is fine"
    assert [m["role"] for m in conversation(fake_llm.requests[-1])] == ["user", "assistant", "tool"]
    caplog.set_level(logging.WARNING, logger="core.memory.compaction")

    k = await send_notes_until_summarized(bot, fake_llm, summarizer)
    assert k >= 2  # with the opening question, at least 4 user turns
    assert len(summarizer.seen) == 1
    # The summary call failed, yet turn k was answered from the last 3 user turns alone.
    sent = fake_llm.requests[-1]
    assert not is_summary_request(sent)
    assert is_protocol_valid(sent["messages"])
    assert conversation(sent) == [*turns(k - 2, k - 1), user(note(k))]
    assert provider_tokens(sent) + sent["max_tokens"] <= 4096
    warnings = [r for r in caplog.records if r.name == "core.memory.compaction"]
    assert any(
        r.levelno == logging.WARNING and "dropping them instead" in r.getMessage() for r in warnings
    ), caplog.text
    # Nothing was summarized, so nothing claims to be a summary.
    _, summaries = await stored(bot)
    assert summaries == []
    assert not any(str(m.get("content", "")).startswith(SUMMARY_PREFIX) for m in sent["messages"])


# -- the "Done means" conversation -------------------------------------------------------------


async def test_a_200_turn_conversation_with_large_tool_results_stays_in_the_window(
    make_bot: MakeBot, fake_llm: FakeOpenAI, write_policy: Callable[[str], Path]
) -> None:
    # A window in which the answer's reservation is a large share: the prompt must leave
    # room for it.
    window, max_output = 8192, 1024
    bot = make_bot(
        tools=(fetch_logs,),
        policy_file=write_policy(POLICY_ROOMY),
        tool_max_result_chars=200_000,  # leave the cutting of big results to the agent
        **llm(fake_llm, llm_context_window=window, llm_max_output_tokens=max_output),
    )
    summarizer = Summarizer()
    fake_llm.responder = summarizer
    questions: list[str] = []
    for i in range(200):
        if i % 50 == 24:
            # Three results, each as big as one may be: together more than the prompt may
            # take, so they have to be cut back in the current turn itself.
            fake_llm.tool_calls(*[("fetch_logs", {"service": s, "lines": 1500}) for s in "abc"])
            question = f"question {i}: compare the logs of a, b and c"
        elif i % 2 == 0:
            # Every 20th turn the tool returns far more than a tool result may take.
            lines = 1500 if i % 20 == 0 else 40
            fake_llm.tool_calls(("fetch_logs", {"service": f"svc{i}", "lines": lines}))
            question = f"question {i}: what do the logs of svc{i} say?"
        else:
            question = f"question {i}: " + "please explain in detail. " * 20
        fake_llm.reply(f"answer {i}")
        questions.append(question.strip())  # as the core stores it
        reply = await bot.send(question)
        assert reply.ok, (i, reply)
        assert reply.text == f"answer {i}"
        assert fake_llm.pending == 0

    requests = fake_llm.requests
    for r in requests:
        assert provider_tokens(r) + r["max_tokens"] <= window
        assert is_protocol_valid(r["messages"])
    # Compaction made the room: every answer was offered its whole reservation.
    assert all(r["max_tokens"] == max_output for r in agent_requests(fake_llm))
    # Compaction happened many times, each summary persisted and each one used.
    messages, summaries = await stored(bot)
    assert len(summaries) >= 10
    assert len(summarizer.seen) >= len(summaries)
    sent_summaries = {
        m["content"]
        for r in agent_requests(fake_llm)
        for m in conversation(r)
        if m["role"] == "user"
    }
    assert all(SUMMARY_PREFIX + s.summary in sent_summaries for s in summaries)
    # A later summary is made from the earlier one plus the turns since: nothing is lost.
    assert all("SUMMARY-" in r["messages"][1]["content"] for r in summarizer.seen[1:])
    # Every answer's request ends with its question, after (at least) the two turns before
    # it, verbatim and in order.
    for r in agent_requests(fake_llm):
        asked = [
            m["content"]
            for m in conversation(r)
            if m["role"] == "user" and not m["content"].startswith(SUMMARY_PREFIX)
        ]
        current = questions.index(asked[-1])
        assert len(asked) >= min(3, current + 1)
        assert asked == questions[current - len(asked) + 1 : current + 1]
    # Results that did not fit were replaced by a marker in what was sent (never stored).
    assert any(m["content"] == TOOL_RESULT_REMOVED for r in requests for m in r["messages"])
    assert not any(m.content == TOOL_RESULT_REMOVED for m in messages)
    # The oversized results (about 110,000 characters each) were cut to about a quarter of
    # the window before they entered the thread.
    big = [m for m in messages if m.role == "tool" and "[truncated " in m.content]
    assert len(big) == 10 + 4 * 3
    # (A quarter by the calibrated counter; a little more as the provider counts it.)
    assert all(len(json.dumps(m.content)) // 4 < window * 0.35 for m in big)


# -- calibration -------------------------------------------------------------------------------


@pytest.mark.parametrize("chars_per_token", [4, 2])
async def test_the_token_counter_calibrates_toward_the_providers_counts(
    make_bot: MakeBot, fake_llm: FakeOpenAI, chars_per_token: int
) -> None:
    def provider(request: Request) -> Scripted:
        counted = json.dumps(request["messages"]) + json.dumps(request.get("tools", []))
        return answer("ok", prompt_tokens=len(counted) // chars_per_token)

    fake_llm.responder = provider
    bot = make_bot(**llm(fake_llm))
    counter = bot.core.agent.counter
    assert counter.chars_per_token == DEFAULT_CHARS_PER_TOKEN
    ratios = [counter.chars_per_token]
    for i in range(8):
        reply = await bot.send(
            f"report {i}: " + "disk usage is high on db-1. " * 150, thread=f"t{i}"
        )
        assert reply.ok
        ratios.append(counter.chars_per_token)
    assert counter.samples == 8
    distances = [abs(r - chars_per_token) for r in ratios]
    assert all(b < a for a, b in itertools.pairwise(distances)), ratios
    assert distances[-1] < 0.25, ratios

    # A new process on the same database starts from the learned ratio, not the default.
    await bot.app.aclose()
    again = make_bot(**llm(fake_llm))
    assert again.core.agent is not None
    await again.send("hello again", thread="restart")
    restored = again.core.agent.counter
    assert abs(restored.chars_per_token - chars_per_token) < 0.5
    assert restored.samples > 5


# -- restart on both databases -----------------------------------------------------------------


async def test_history_and_summary_survive_a_restart(
    make_bot: MakeBot, fake_llm: FakeOpenAI, database_url: str
) -> None:
    settings = llm(fake_llm, database_url=database_url, **NOTES_WINDOW)
    bot = make_bot(**settings)
    summarizer = Summarizer()
    fake_llm.responder = summarizer
    k = await send_notes_until_summarized(bot, fake_llm, summarizer)
    summary = Summarizer.text(len(summarizer.seen))
    calls = len(summarizer.seen)
    messages, summaries = await stored(bot)
    assert len(messages) == 2 * (k + 1)
    assert [s.summary for s in summaries] == [summary]
    await bot.app.aclose()

    again = make_bot(**settings)
    fake_llm.reply("welcome back")
    reply = await again.send("what did we discuss?")
    assert reply.ok and reply.text == "welcome back"
    assert len(summarizer.seen) == calls
    assert conversation(fake_llm.requests[-1]) == [
        *summary_pair(summary),
        *turns(k - 2, k),
        user("what did we discuss?"),
    ]
    # Another thread of the same channel starts empty.
    fake_llm.reply("hello")
    await again.send("new thread", thread="t2")
    assert conversation(fake_llm.requests[-1]) == [user("new thread")]
    messages, _ = await stored(again)
    assert len(messages) == 2 * (k + 1) + 4


# -- the answer's share of the window ----------------------------------------------------------


async def test_an_answer_reservation_as_large_as_the_window_still_fits(
    make_bot: MakeBot, fake_llm: FakeOpenAI
) -> None:
    # A plausible misconfiguration: max output tokens as large as the whole window. Each
    # request may then only ask for what its prompt leaves of the window.
    bot = make_bot(**llm(fake_llm, llm_context_window=4096, llm_max_output_tokens=4096))
    summarizer = Summarizer()
    fake_llm.responder = summarizer
    for i in range(8):
        fake_llm.reply(f"noted {i}")
        reply = await bot.send(note(i))
        assert reply.ok and reply.text == f"noted {i}"
    assert summarizer.seen
    for r in fake_llm.requests:
        assert provider_tokens(r) + r["max_tokens"] <= 4096
        assert is_protocol_valid(r["messages"])
    # The answers still get most of the window.
    assert min(r["max_tokens"] for r in agent_requests(fake_llm)) > 4096 // 2


# -- small windows ------------------------------------------------------------------------------


async def test_a_small_window_keeps_the_summary_instead_of_dropping_it(
    make_bot: MakeBot, fake_llm: FakeOpenAI, write_policy: Callable[[str], Path]
) -> None:
    # 14 turns of about 400 tokens in a 3,000-token window: the last three turns cannot fit.
    bot = make_bot(policy_file=write_policy(POLICY_ROOMY), **llm(fake_llm, llm_context_window=3000))
    summarizer = Summarizer()
    fake_llm.responder = summarizer
    questions = [f"turn {i}: " + " ".join(f"q{i}x{j}" for j in range(170)) for i in range(14)]
    for i, question in enumerate(questions):
        fake_llm.reply(f"answer {i} " + "a" * 400)
        reply = await bot.send(question)
        assert reply.ok, (i, reply)

    sent = agent_requests(fake_llm)
    first = next(i for i, r in enumerate(sent) if any(is_summary_message(m) for m in r["messages"]))
    for i, r in enumerate(sent):
        assert conversation(r)[-1]["content"] == questions[i]  # the question, whole
        assert provider_tokens(r) + r["max_tokens"] <= 3000
        if i >= first:
            # Once summarized, every prompt carries the summary: never made to be thrown away.
            assert sum(is_summary_message(m) for m in r["messages"]) == 1, i
    made = [s.summary for s in (await stored(bot))[1]]
    sent_texts = {m["content"] for r in sent for m in r["messages"]}
    assert made and all(SUMMARY_PREFIX + s in sent_texts for s in made)
    # Each summary after the first folds the one before it in.
    assert all("SUMMARY-" in r["messages"][1]["content"] for r in summarizer.seen[1:])


def is_summary_message(m: Message) -> bool:
    return m["role"] == "user" and str(m["content"]).startswith(SUMMARY_PREFIX)
