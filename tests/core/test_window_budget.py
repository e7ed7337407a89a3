"""The whole prompt within one budget, with every feature on, at the small windows many local
models run with: skills (the shipped examples), a repository with its code graph (the repo map),
long-term memory, an MCP server with a resource. Through the real composition root, the real
`openai` client and the scripted fake OpenAI-compatible server on 127.0.0.1.

What must reach the model, whatever the window: this turn's question and its tool results
(shortened, never removed), then the thread's summary and the previous turn.
"""

from __future__ import annotations

import asyncio
import json
import shutil
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from core.code.walk import index_repo
from core.memory.compaction import TOOL_RESULT_REMOVED, is_protocol_valid
from core.memory.history import SUMMARY_PREFIX
from tests.conftest import POLICY_ALL, BotHarness
from tests.support.fakes.openai_server import FakeOpenAI, Scripted, answer
from tests.support.paths import ROOT_DIR

MakeBot = Callable[..., BotHarness]
Request = dict[str, Any]

ROOT = ROOT_DIR
MCP_SERVER = ROOT / "tests" / "support" / "fakes" / "mcp_server.py"
SUMMARIZE_MARK = "You compress a chat-ops conversation"
MERGE_MARK = "Merge these partial summaries"

POLICY = (
    POLICY_ALL.replace(
        "tokens_per_user_per_day = 100000", "tokens_per_user_per_day = 1000000000"
    ).replace("tokens_per_channel_per_day = 1000000", "tokens_per_channel_per_day = 1000000000")
    + """
[[rules]]
name = "the test MCP server"
match = { channel = "console" }
grant = ["mcp:t"]
"""
)


def is_summary_request(request: Request) -> bool:
    first = request["messages"][0]
    return first["role"] == "system" and (
        SUMMARIZE_MARK in first["content"] or MERGE_MARK in first["content"]
    )


class Summarizer:
    """Answers summarization requests; leaves the agent's own requests to the script."""

    def __init__(self) -> None:
        self.seen: list[Request] = []

    def __call__(self, request: Request) -> Scripted | None:
        if not is_summary_request(request):
            return None
        self.seen.append(request)
        return answer(f"SUMMARY-{len(self.seen)}: the user asked about deployments.")


def agent_requests(fake: FakeOpenAI) -> list[Request]:
    return [r for r in fake.requests if not is_summary_request(r)]


def provider_tokens(request: Request) -> int:
    """The prompt as the fake provider counts it (tools included: they are prompt too)."""
    tools = request.get("tools")
    return (len(json.dumps(request["messages"])) + (len(json.dumps(tools)) if tools else 0)) // 4


def make_code_repo(base: Path) -> Path:
    """A real slice of Python code (Threadline's own memory and tools packages)."""
    root = base / "svc"
    for package in ("core/memory", "core/tools"):
        shutil.copytree(
            ROOT / package, root / package, ignore=shutil.ignore_patterns("__pycache__")
        )
    return root


async def everything_on(
    make_bot: MakeBot,
    fake: FakeOpenAI,
    tmp_path: Path,
    write_policy: Callable[[str], Path],
    window: int,
) -> BotHarness:
    bot = make_bot(
        llm_base_url=fake.url,
        llm_model="fake-model",
        llm_max_retries=0,
        llm_context_window=window,
        policy_file=write_policy(POLICY),
        skills_examples=True,
        mcp={"t": {"command": sys.executable, "args": [str(MCP_SERVER)], "timeout": 10}},
    )
    repo = await bot.app.repos.register(str(make_code_repo(tmp_path)))
    await index_repo(bot.app.db, repo)
    bot.app.mcp.start()
    async with asyncio.timeout(30):
        await bot.app.mcp.wait_ready("t")
    for fact in (
        "deploys go out on Tuesdays and Thursdays after the standup",
        "the staging database is refreshed from production every Sunday night",
    ):
        reply = await bot.send(f"/save {fact}")
        assert reply.ok, reply
    return bot


def has_summary(request: Request) -> bool:
    return any(str(m["content"]).startswith(SUMMARY_PREFIX) for m in request["messages"])


def this_turns_result(request: Request) -> str:
    """The one tool result after the request's last user message (the question)."""
    messages = request["messages"]
    last_user = max(i for i, m in enumerate(messages) if m["role"] == "user")
    [result] = [m for m in messages[last_user:] if m["role"] == "tool"]
    return str(result["content"])


@pytest.mark.parametrize("window", [3000, 4000, 8000])
async def test_this_turns_tool_result_reaches_the_model_on_every_turn(
    make_bot: MakeBot,
    fake_llm: FakeOpenAI,
    tmp_path: Path,
    write_policy: Callable[[str], Path],
    window: int,
) -> None:
    bot = await everything_on(make_bot, fake_llm, tmp_path, write_policy, window)
    summarizer = Summarizer()
    fake_llm.responder = summarizer
    for i in range(16):
        fake_llm.tool_calls(("grep_code", {"pattern": "def count"}))
        fake_llm.reply(f"answer {i}: `count` is defined in core/memory/tokens.py")
        reply = await bot.send(f"question {i}: where is the function `count` defined in the code?")
        assert reply.ok, (i, reply)
        sent = agent_requests(fake_llm)[-1]
        result = this_turns_result(sent)
        assert result != TOOL_RESULT_REMOVED, i
        assert "tokens.py" in result, (i, result[:300])
        assert is_protocol_valid(sent["messages"])
        assert provider_tokens(sent) + sent["max_tokens"] <= window, i
        if i:
            # The previous turn (or the summary standing for it) is there too.
            assert has_summary(sent) or f"answer {i - 1}" in json.dumps(sent["messages"]), i


@pytest.mark.parametrize("window", [3000, 4000])
async def test_a_long_thread_keeps_its_summary_and_previous_turn(
    make_bot: MakeBot,
    fake_llm: FakeOpenAI,
    tmp_path: Path,
    write_policy: Callable[[str], Path],
    window: int,
) -> None:
    bot = await everything_on(make_bot, fake_llm, tmp_path, write_policy, window)
    summarizer = Summarizer()
    fake_llm.responder = summarizer
    questions = [f"turn {i}: " + " ".join(f"q{i}x{j}" for j in range(170)) for i in range(14)]
    for i, question in enumerate(questions):
        fake_llm.reply(f"answer {i} " + "a" * 400)
        reply = await bot.send(question)
        assert reply.ok, (i, reply)
    sent = agent_requests(fake_llm)
    last = sent[-1]
    conversation = [m for m in last["messages"] if m["role"] != "system"]
    assert conversation[-1]["content"] == questions[-1]
    assert has_summary(last)
    assert "answer 12" in json.dumps(last["messages"])  # the previous turn
    for r in sent:
        assert provider_tokens(r) + r["max_tokens"] <= window
