"""Prompt budget benchmark (not a pytest test): how many tokens each part of the prompt takes
in a code question with every feature on, at context windows of 3k to 128k.

Every feature on: the shipped example skills, a repository with its code graph (Threadline's
whole checkout, tests, docs, benches and fixtures included: the repo map), long-term memory
with facts related to the question, an MCP server with a resource (the test server in
tests/support/fakes/mcp_server.py). The thread has three earlier turns of about 400 tokens; the
question makes the model call `grep_code` once. The model is the scripted fake
OpenAI-compatible server on 127.0.0.1; the prompt measured is the one that carries the tool's
result (the model's second call).

Tokens are the agent's own estimate (`TokenCounter`, calibrated by the fake provider's counts
of a quarter of the characters, as it would be by a real one), the figure its budget works with.

    python bench/prompt_budget.py [--windows 3000,4000,...] [--append bench/RESULTS.md]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import sys
import tempfile
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bench.machine import append_results  # noqa: E402
from core.code.graph.outline import HEADER as MAP_HEADER  # noqa: E402
from core.memory.history import SUMMARY_ACK, SUMMARY_PREFIX  # noqa: E402
from core.memory.tokens import PER_MESSAGE_OVERHEAD, TokenCounter  # noqa: E402
from core.skills.service import SKILLS_RULE  # noqa: E402
from tests.support.fakes.openai_server import FakeOpenAI, Scripted, answer  # noqa: E402

PARTS = (
    "rules",
    "context",
    "skills",
    "memory",
    "repo map",
    "resources",
    "tools",
    "summary",
    "earlier turns",
    "current turn",
    "reserved answer",
)
POLICY = """
[defaults]
permissions = ["ask", "code.read", "memory.read", "memory.write", "skills.use", "tts", "mcp:t"]
[defaults.budgets]
tool_calls_per_request = 4
iterations_per_request = 4
tokens_per_user_per_day = 1000000000
tokens_per_channel_per_day = 1000000000
"""
FACTS = (
    "the token counter is calibrated from the usage each provider reports",
    "we decided to keep prompts small for the local models on the staging cluster",
)
QUESTION = "where is the token counter calibrated in the code, and what calls `calibrate`?"


def is_summary_request(request: dict[str, Any]) -> bool:
    first = request["messages"][0]
    marks = ("compress a chat-ops conversation", "Merge these partial summaries")
    return first["role"] == "system" and any(mark in first["content"] for mark in marks)


def summarizer(request: dict[str, Any]) -> Scripted | None:
    if is_summary_request(request):
        return answer("The user asked about deployments and the staging database; answered.")
    return None


def classify(request: dict[str, Any], counter: TokenCounter) -> dict[str, int]:
    """Tokens per part of one chat request, as the agent counts them."""
    sizes = dict.fromkeys(PARTS, 0)
    messages = request["messages"]
    last_user = max(i for i, m in enumerate(messages) if m["role"] == "user")
    for i, m in enumerate(messages):
        content = str(m.get("content") or "")
        n = counter.count_message(m)
        if m["role"] == "system":
            if content.startswith("Conversation context"):
                first, _, rest = content.partition("\n\n")
                sizes["context"] += counter.count_text(first) + PER_MESSAGE_OVERHEAD
                sizes["skills"] += counter.count_text(rest) if rest else 0
            elif content.startswith(SKILLS_RULE[:40]):
                sizes["skills"] += n
            else:
                sizes["rules"] += n
        elif i >= last_user:
            sizes["current turn"] += n
        elif content.startswith("Long-term memory saved by the team"):
            sizes["memory"] += n
        elif content.startswith(MAP_HEADER):
            sizes["repo map"] += n
        elif content.startswith("MCP resources"):
            sizes["resources"] += n
        elif content.startswith(SUMMARY_PREFIX) or content == SUMMARY_ACK:
            sizes["summary"] += n
        else:
            sizes["earlier turns"] += n
    tools = request.get("tools") or []
    sizes["tools"] = int(len(json.dumps(tools)) / counter.chars_per_token) if tools else 0
    sizes["reserved answer"] = int(request.get("max_tokens") or 0)
    return sizes


async def measure(
    window: int, work: Path, fake: FakeOpenAI
) -> tuple[dict[str, int], list[str], int]:
    from bot.app import build_app
    from config.settings import load_settings
    from core.code.walk import index_repo

    home = work / f"w{window}"
    home.mkdir(parents=True)
    policy = home / "policy.toml"
    policy.write_text(POLICY)
    server = ROOT / "tests" / "support" / "fakes" / "mcp_server.py"
    settings = load_settings(
        data_dir=home / "data",
        policy_file=policy,
        llm_base_url=fake.url,
        llm_model="fake-model",
        llm_max_retries=0,
        llm_context_window=window,
        skills_examples=True,
        mcp={"t": {"command": sys.executable, "args": [str(server)], "timeout": 30}},
    )
    app = build_app(settings)
    try:
        from adapters.console.translate import ConsoleIdentity, to_request

        async def send(text: str) -> Any:
            who = ConsoleIdentity(thread="bench", user="alice")
            return await app.core.handle(to_request(text, who))

        repo = await app.repos.register(str(ROOT), "threadline")
        await index_repo(app.db, repo)
        app.mcp.start()
        async with asyncio.timeout(60):
            await app.mcp.wait_ready("t")
        for fact in FACTS:
            await send(f"/save {fact}")
        for i in range(3):
            fake.reply(f"answer {i}: " + "noted, " * 60)
            await send(f"turn {i}: " + " ".join(f"deploy{i}x{j}" for j in range(170)))
        fake.tool_calls(("grep_code", {"pattern": "def calibrate"}))
        fake.reply("`calibrate` is in core/memory/tokens.py; the agent calls it.")
        start = len(fake.requests)
        reply = await send(QUESTION)
        chat = [r for r in fake.requests[start:] if not is_summary_request(r)]
        agent = app.core.agent
        assert agent is not None
        sizes = classify(chat[-1], agent.counter)
        offered = sorted(t["function"]["name"] for t in chat[-1].get("tools") or [])
        assert reply.ok, reply.text
        return sizes, offered, agent.budget.total
    finally:
        await app.aclose()


def table(
    rows: dict[int, dict[str, int]], offered: dict[int, list[str]], limits: dict[int, int]
) -> str:
    windows = sorted(rows)
    head = "| part | " + " | ".join(f"{w:,}" for w in windows) + " |"
    lines = [head, "|---|" + "---:|" * len(windows)]
    for part in PARTS:
        lines.append(f"| {part} | " + " | ".join(str(rows[w][part]) for w in windows) + " |")
    total = {w: sum(v for k, v in rows[w].items()) for w in windows}
    lines.append("| **total** | " + " | ".join(f"**{total[w]}**" for w in windows) + " |")
    lines.append(
        "| prompt budget (0.9 of the window minus the answer) | "
        + " | ".join(str(limits[w]) for w in windows)
        + " |"
    )
    lines.append("")
    lines.append("Tools offered at each window:")
    lines.append("")
    for w in windows:
        lines.append(f"- {w:,}: {len(offered[w])}: {', '.join(offered[w])}")
    return "\n".join(lines)


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--windows", default="3000,4000,8000,32768,131072")
    parser.add_argument("--append", type=Path, default=None)
    args = parser.parse_args()
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    fake = FakeOpenAI().start()
    fake.responder = summarizer
    rows: dict[int, dict[str, int]] = {}
    offered: dict[int, list[str]] = {}
    limits: dict[int, int] = {}
    try:
        with tempfile.TemporaryDirectory() as tmp:
            for window in (int(w) for w in args.windows.split(",")):
                rows[window], offered[window], limits[window] = await measure(
                    window, Path(tmp), fake
                )
    finally:
        fake.stop()
    body = table(rows, offered, limits)
    print(body)
    if args.append:
        note = (
            "Tokens per part of the prompt that carries `grep_code`'s result, in a code question "
            "with every feature on (example skills, repo map, memory, an MCP server with a "
            "resource) after three earlier turns of about 400 tokens; the agent's own estimate, "
            "calibrated by the fake provider (4 characters a token)."
        )
        append_results(args.append, "Prompt budget by window", f"{note}\n\n{body}")


if __name__ == "__main__":
    asyncio.run(main())
