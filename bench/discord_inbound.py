"""Discord inbound benchmark (not a pytest test): reading a thread's earlier messages and
downloading attached files, through discord.py against the fake Discord.

    .venv/bin/python bench/discord_inbound.py [--messages 300] [--runs 30] \
        [--append bench/RESULTS.md]

A thread of `--messages` human messages (5 authors, ~180 characters each) is seeded in the fake
Discord (tests/support/fakes/discord_server.py, a real aiohttp server on 127.0.0.1); the
adapter's `ThreadHistory` reads it through discord.py's own HTTP client (its rate-limit
handling included), as a mention inside that thread does:

- cold: a new cache (a process that never saw the thread): `GET /channels/{id}/messages`
  paged back by 100 from the question;
- incremental: the same thread again after one new message and a new question (`after=` the
  last message seen);
- then the most a thread is read back (1,000 messages);
- files: `CdnFetch` downloading a 1 MB and a 25 MB attachment from the fake CDN, and refusing a
  25 MB stream past a 1 MB cap (how soon it stops reading).

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

from adapters.discord.endpoints import use_rest_base  # noqa: E402
from adapters.discord.files import file_origins, incoming_file  # noqa: E402
from adapters.discord.history import ThreadHistory  # noqa: E402
from adapters.discord.lib import discord  # noqa: E402
from bench.machine import append_results, percentile  # noqa: E402
from core.request import FileFetchError, IncomingFile  # noqa: E402
from tests.support.fakes.discord_server import FakeDiscord, FakeFile  # noqa: E402

TEXT = "the staging queue keeps growing since the last deploy, and the workers restart every "
MB = 1024 * 1024


def stats(values: list[float]) -> str:
    ms = [v * 1000 for v in values]
    return f"{percentile(ms, 50):.1f} | {percentile(ms, 95):.1f} | {max(ms):.1f}"


def question(fake: FakeDiscord, thread: str) -> int:
    """A message in the thread, as the question would be (no event: only its id matters)."""
    [message] = fake.seed_messages(thread, 1, text="@Threadline what happened?")
    return int(message["id"])


def attachment(fake: FakeDiscord, size: int) -> IncomingFile:
    """A file on the fake CDN whose message claims it is 10 bytes."""
    file = FakeFile("dump.bin", bytes(size), claimed_size=10)
    [message] = fake.seed_messages(fake.general, 1, text="", files=[file])
    raw = message["attachments"][0]
    origins = file_origins(fake.api_url)
    return incoming_file(raw["filename"], raw["size"], None, raw["url"], origins=origins)


async def measure(messages: int, runs: int) -> tuple[dict[str, list[float]], dict[str, float]]:
    fake = await FakeDiscord().start()
    saved = use_rest_base(fake.api_url)
    http = discord.http.HTTPClient(asyncio.get_running_loop())
    out: dict[str, list[float]] = {"cold": [], "incremental": [], "1000": []}
    facts: dict[str, float] = {}
    try:
        await http.static_login(fake.token)  # the connection is warm, as in a running adapter
        authors = [fake.alice, *(fake.add_member(f"person{i}") for i in range(4))]
        thread = await fake.add_thread("incident")
        fake.seed_messages(thread, messages, authors=authors, text=TEXT + "{n} minutes ago")
        pages_before = 0
        for run in range(runs + 1):  # the first run is an untimed warm-up
            history = ThreadHistory(http)
            asked = question(fake, thread)
            started = time.perf_counter()
            found = await history.before(int(thread), asked, 0)
            cold = time.perf_counter() - started
            fake.seed_messages(thread, 1, text=f"new {run}")
            again = question(fake, thread)
            started = time.perf_counter()
            later = await history.before(int(thread), again, 0)
            incremental = time.perf_counter() - started
            assert len(found) >= messages and len(later) == len(found) + 2
            if run:
                out["cold"].append(cold)
                out["incremental"].append(incremental)
            else:
                pages_before = len(fake.calls_to("GET", rf"/channels/{thread}/messages"))
        calls = len(fake.calls_to("GET", rf"/channels/{thread}/messages")) - pages_before
        facts["requests per pair"] = calls / runs

        big = await fake.add_thread("long")
        fake.seed_messages(big, 1_500, text=TEXT + "{n}")
        for _ in range(min(runs, 10)):
            history = ThreadHistory(http)
            asked = question(fake, big)
            started = time.perf_counter()
            found = await history.before(int(big), asked, 0)
            out["1000"].append(time.perf_counter() - started)
            assert len(found) == 1_000

        for size, name in ((MB, "1 MB"), (25 * MB, "25 MB")):
            file = attachment(fake, size)
            started = time.perf_counter()
            data = await file.fetch(max_bytes=32 * MB, timeout=30.0)
            facts[f"fetch {name} (s)"] = time.perf_counter() - started
            assert len(data) == size
        fake.cdn.chunked = True
        file = attachment(fake, 25 * MB)
        started = time.perf_counter()
        try:
            await file.fetch(max_bytes=MB, timeout=30.0)
        except FileFetchError:
            facts["refuse a 25 MB stream past 1 MB (s)"] = time.perf_counter() - started
    finally:
        await http.close()
        saved.restore()
        await fake.stop()
    return out, facts


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--messages", type=int, default=300)
    parser.add_argument("--runs", type=int, default=30)
    parser.add_argument("--append", type=Path, default=None)
    args = parser.parse_args()

    out, facts = asyncio.run(measure(args.messages, args.runs))
    body = "\n".join(
        [
            f"A thread of {args.messages} messages (5 authors), {args.runs} runs after one "
            "warm-up; the fake Discord on 127.0.0.1, discord.py's own HTTP client.",
            "",
            "| measure | p50 (ms) | p95 (ms) | max (ms) |",
            "|---|---:|---:|---:|",
            f"| cold read (new cache: pages of 100 back) | {stats(out['cold'])} |",
            f"| incremental read (one new message, after=) | {stats(out['incremental'])} |",
            f"| cold read of a 1,500-message thread (1,000 kept) | {stats(out['1000'])} |",
            "",
            f"- GET /channels/{{id}}/messages per cold + incremental pair: "
            f"{facts['requests per pair']:.1f}",
            f"- attachment download from the fake CDN: 1 MB in "
            f"{facts['fetch 1 MB (s)'] * 1000:.1f} ms, 25 MB in "
            f"{facts['fetch 25 MB (s)'] * 1000:.1f} ms; a 25 MB stream (no Content-Length) "
            f"refused past a 1 MB cap in "
            f"{facts['refuse a 25 MB stream past 1 MB (s)'] * 1000:.1f} ms",
            f"- target: cold p95 < 500 ms: "
            f"{'met' if percentile(out['cold'], 95) < 0.5 else 'NOT met'}",
        ]
    )
    print(body)
    if args.append:
        append_results(args.append, "Discord inbound: thread history and attached files", body)


if __name__ == "__main__":
    main()
