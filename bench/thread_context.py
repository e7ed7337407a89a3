"""Thread context benchmark (not a pytest test): how long reading a Slack thread's earlier
messages takes, and rendering them for the model.

    .venv/bin/python bench/thread_context.py [--messages 300] [--runs 30] \
        [--append bench/RESULTS.md]

A thread of `--messages` human messages (5 authors, ~180 characters each, every tenth with a
file) is seeded in the fake Slack Web API (tests/support/fakes/slack_api.py, a real aiohttp
server on 127.0.0.1); the adapter's `ThreadCache` reads it through the real slack_sdk async
client, as a mention inside that thread does:

- cold: a new cache (a process that never saw the thread): `conversations.replies` paged by
  200 and `users.info` for each author;
- incremental: the same thread again after one new message (`oldest` = the last message seen);
- render: core's part (`core.agent.thread_context`): dropping what history has and quoting the
  rest within 20% of a 32k window, with the agent's token estimate.

Target: cold p95 under 500 ms for 300 messages on the 2-core machine.
"""

from __future__ import annotations

import argparse
import asyncio
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from adapters.slack.filters import BotIdentity  # noqa: E402
from adapters.slack.thread import ThreadCache  # noqa: E402
from adapters.slack.web import make_web_client  # noqa: E402
from bench.machine import append_results, percentile  # noqa: E402
from core.agent import thread_context  # noqa: E402
from core.memory.tokens import TokenCounter  # noqa: E402
from tests.support.fakes.slack_api import FakeSlack  # noqa: E402

ROOT_TS = "1700000000.000001"
WINDOW = 32_768
TEXT = "the staging queue keeps growing since the last deploy, and the workers restart every "


def seed(fake: FakeSlack, messages: int) -> None:
    for i in range(5):
        fake.set_user(f"U{i}", f"person{i}")
    fake.add_message("C1", "Deploys keep failing on main", user="U0", ts=ROOT_TS, thread_ts=ROOT_TS)
    for i in range(messages):
        files = [fake.forged_file(f"trace{i}.txt")] if i % 10 == 0 else None
        fake.add_message(
            "C1",
            f"{i}: {TEXT}{i} minutes <@U{(i + 1) % 5}>",
            user=f"U{i % 5}",
            ts=f"{1700000001 + i}.000000",
            thread_ts=ROOT_TS,
            files=files,
        )


def stats(values: list[float]) -> str:
    ms = [v * 1000 for v in values]
    return f"{percentile(ms, 50):.1f} | {percentile(ms, 95):.1f} | {max(ms):.1f}"


async def measure(
    fake: FakeSlack, messages: int, runs: int
) -> tuple[dict[str, list[float]], list[int]]:
    import aiohttp

    bot = BotIdentity(user_id=fake.bot_user_id, bot_id=fake.bot_id, team_id=fake.team_id)
    out: dict[str, list[float]] = {"cold": [], "incremental": [], "render": []}
    counter = TokenCounter()
    seen: list[int] = []
    async with aiohttp.ClientSession() as session:
        client = make_web_client(fake.bot_token, fake.api_url, session)
        await client.auth_test()  # the connection is warm, as in a running adapter
        latest = f"{1700000001 + messages + 1000}.000000"
        for run in range(runs + 1):  # the first run is an untimed warm-up
            cache = ThreadCache(client, bot)
            reader = cache.reader("T1", "C1", ROOT_TS, latest)
            started = time.perf_counter()
            found = await reader.earlier()
            cold = time.perf_counter() - started
            fake.add_message(
                "C1",
                f"new {run}",
                user="U1",
                ts=f"{1700000001 + messages + run}.5",
                thread_ts=ROOT_TS,
            )
            started = time.perf_counter()
            again = await reader.earlier()
            incremental = time.perf_counter() - started
            started = time.perf_counter()
            fresh = thread_context.new_to_history(again, [])
            text = thread_context.render(fresh, int(WINDOW * 0.2), counter.count_text)
            rendered = time.perf_counter() - started
            assert text is not None and len(again) == len(found) + 1
            seen.append(len(found))
            if run:
                out["cold"].append(cold)
                out["incremental"].append(incremental)
                out["render"].append(rendered)
    return out, seen


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--messages", type=int, default=300)
    parser.add_argument("--runs", type=int, default=30)
    parser.add_argument("--append", type=Path, default=None)
    args = parser.parse_args()

    fake = FakeSlack().start()
    try:
        seed(fake, args.messages)
        out, seen = asyncio.run(measure(fake, args.messages, args.runs))
        calls = fake.calls("conversations.replies")
        users = fake.calls("users.info")
    finally:
        fake.stop()
    pairs = args.runs + 1  # every run: one cold read, one incremental read
    body = "\n".join(
        [
            f"A thread of {args.messages} messages (5 authors), {args.runs} runs after one "
            "warm-up; the fake Slack Web API on 127.0.0.1, the real slack_sdk client.",
            "",
            "| measure | p50 (ms) | p95 (ms) | max (ms) |",
            "|---|---:|---:|---:|",
            f"| cold read (new cache: pages + users.info) | {stats(out['cold'])} |",
            f"| incremental read (one new message) | {stats(out['incremental'])} |",
            f"| core: drop known + quote within 20% of 32k | {stats(out['render'])} |",
            "",
            f"- messages returned by a cold read: {min(seen)} to {max(seen)} (the root and every "
            "reply; each run adds one message to the thread)",
            f"- conversations.replies calls per cold + incremental pair: {len(calls) / pairs:.1f}; "
            f"users.info calls per cold read: {len(users) / pairs:.1f}",
            f"- target: cold p95 < 500 ms: "
            f"{'met' if percentile(out['cold'], 95) < 0.5 else 'NOT met'}",
        ]
    )
    print(body)
    if args.append:
        append_results(args.append, "Thread context: reading a Slack thread", body)


if __name__ == "__main__":
    main()
