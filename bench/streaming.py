"""Streamed answers (issue 25), measured against the fake model streaming at a fixed rate.

The fake OpenAI-compatible server (in this process, on 127.0.0.1) writes each answer as a
provider would: the first piece after `--first-token` seconds, then `--rate` pieces a second,
about four characters (a token) each. N answers of `--tokens` tokens are asked at once through
the real composition root and `Core.stream`, and the bench reports:

  first words    time from the model writing its first piece to core handing it on (p50/p95)
  finished       time from the model's last piece to the final reply (p50/p95)
  CPU per token  CPU time of the event loop's thread (Threadline, the openai client, httpx;
                 not the fake server's threads) per streamed token, at N concurrent answers

The platform sections (Slack's native stream and its fallback, Discord's edited messages) are
measured by `--platform slack|discord` against the fake Slack / Discord servers.

    .venv/bin/python bench/streaming.py [--answers 50] [--append bench/RESULTS.md]
"""

from __future__ import annotations

import argparse
import asyncio
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from bench.machine import append_results, percentile  # noqa: E402
from tests.support.fakes.openai_server import FakeOpenAI  # noqa: E402

POLICY = """
[defaults]
permissions = ["ask"]
[defaults.budgets]
tokens_per_user_per_day = 1000000000
tokens_per_channel_per_day = 1000000000
"""


SHORT_TOKENS = 40  # a second run at this length separates the per-token cost from the rest


def answer_text(i: int, tokens: int) -> str:
    """About `tokens` tokens (four characters each) in paragraphs, unique per answer."""
    words = [f"w{i}x{n:02d}" for n in range(tokens * 4 // 6)]
    lines = [" ".join(words[j : j + 12]) for j in range(0, len(words), 12)]
    return "\n\n".join(lines)


def bench_settings(work: Path, fake: FakeOpenAI, answers: int, **platform: Any) -> Any:
    """Settings for a run in `work` (created here), the fake model answering; `platform`:
    the chat platform's own settings."""
    from config.settings import load_settings

    work.mkdir(parents=True, exist_ok=True)
    policy = work / "policy.toml"
    policy.write_text(POLICY)
    return load_settings(
        data_dir=work / "data",
        policy_file=policy,
        llm_base_url=fake.url,
        llm_model="fake-model",
        llm_max_retries=0,
        max_concurrent_requests=answers,
        skills_examples=False,
        **platform,
    )


@dataclass
class CoreRun:
    first_words: list[float] = field(default_factory=list)
    finished: list[float] = field(default_factory=list)
    deltas: int = 0
    tokens: int = 0
    cpu: float = 0.0
    wall: float = 0.0
    failed: int = 0


async def run_core(fake: FakeOpenAI, work: Path, answers: int, tokens: int) -> CoreRun:
    from adapters.console.translate import ConsoleIdentity, to_request
    from bot.app import build_app
    from core.streaming import Finished, TextDelta

    settings = await asyncio.to_thread(bench_settings, work, fake, answers)
    texts = {f"question {i}": answer_text(i, tokens) for i in range(answers)}
    fake.responder = lambda body: _answer_for(body, texts)
    app = build_app(settings)
    run = CoreRun()
    first_seen: dict[str, float] = {}
    done_at: dict[str, float] = {}

    async def one(question: str, user: str) -> None:
        request = to_request(question, ConsoleIdentity(user=user, thread=question))
        async for event in app.core.stream(request):
            if isinstance(event, TextDelta):
                run.deltas += 1
                first_seen.setdefault(question, time.perf_counter())
            elif isinstance(event, Finished):
                done_at[question] = time.perf_counter()
                if not event.reply.ok or event.reply.text != texts.get(question, "warm."):
                    run.failed += 1

    try:
        await one("warm-up", "bench")  # imports, schema, the first connection
        fake.stream_log.clear()
        cpu, wall = time.thread_time(), time.perf_counter()
        await asyncio.gather(*(one(q, f"u{n % 7}") for n, q in enumerate(texts)))
        run.cpu, run.wall = time.thread_time() - cpu, time.perf_counter() - wall
    finally:
        await app.aclose()
    for question, first, last in fake.stream_log:
        if question in first_seen:
            run.first_words.append(first_seen[question] - first)
            run.finished.append(done_at[question] - last)
            run.tokens += len(texts[question]) // 4
    return run


def _answer_for(body: dict[str, Any], texts: dict[str, str]) -> Any:
    from tests.support.fakes.openai_server import answer

    question = next(
        (m["content"] for m in reversed(body.get("messages", [])) if m.get("role") == "user"), ""
    )
    return answer(texts.get(question, "warm."))


@dataclass
class SlackRun:
    first_words: list[float] = field(default_factory=list)
    finished: list[float] = field(default_factory=list)
    calls: list[int] = field(default_factory=list)  # Slack Web API calls per answer
    min_spacing: float = float("inf")  # closest two writes to one answer's message (s)
    throttled: int = 0
    answered: int = 0
    wrong: int = 0


SLACK_WRITES = ("chat.startStream", "chat.appendStream", "chat.stopStream")


def _words_in(call: Any) -> bool:
    args = call.args
    if args.get("markdown_text"):
        return True
    return any(c.get("type") == "markdown_text" and c.get("text") for c in args.get("chunks") or [])


def run_slack(
    fake: FakeOpenAI, work: Path, answers: int, tokens: int, channels: int, limit: float
) -> SlackRun:
    """`answers` mentions at once over `channels` channels, through the real Slack adapter
    behind uvicorn against the fake Slack Web API (which answers 429 past `limit` calls a
    second per method and channel, as Slack's per-channel limits do)."""
    from itertools import pairwise

    from tests.support.fakes.slack_api import FakeSlack
    from tests.support.fakes.slack_events import SIGNING_SECRET, ServedApp, mention, new_ts

    slack = FakeSlack().start()
    for method in (*SLACK_WRITES, "chat.postMessage", "chat.update"):
        slack.limit_rate(method, limit)
    settings = bench_settings(
        work,
        fake,
        answers,
        slack_bot_token=slack.bot_token,
        slack_signing_secret=SIGNING_SECRET,
        slack_api_url=slack.api_url,
    )
    texts = {f"question {i}": answer_text(i, tokens) for i in range(answers)}
    fake.responder = lambda body: _answer_for(body, texts)
    app = ServedApp(settings).start()
    run = SlackRun()
    try:
        roots: dict[str, str] = {}
        for i, question in enumerate(texts):
            root = new_ts()
            roots[root] = question
            app.post_event(mention(question, channel=f"C{i % channels}", ts=root))
        app.idle(timeout=600)
        run.throttled = slack.throttled
        streams = {m["ts"]: m for m in slack.streams()}
        by_thread: dict[str, list[Any]] = {}
        for call in slack.calls():
            thread = call.args.get("thread_ts")
            if call.method != "chat.startStream":
                stream = streams.get(call.args.get("ts", ""))
                thread = stream["thread_ts"] if stream else thread
            if thread in roots:
                by_thread.setdefault(thread, []).append(call)
        log = {q: (first, last) for q, first, last in fake.stream_log}
        for root, question in roots.items():
            calls = by_thread.get(root, [])
            writes = [c for c in calls if c.method in SLACK_WRITES]
            if not writes or question not in log:
                continue
            run.answered += 1
            first, last = log[question]
            shown = next(c.at for c in writes if _words_in(c))
            run.first_words.append(shown - first)
            run.finished.append(writes[-1].at - last)
            run.calls.append(len(calls))
            gaps = [b.at - a.at for a, b in pairwise(writes[1:-1])]
            run.min_spacing = min([run.min_spacing, *gaps])
            message = next(m for m in streams.values() if m["thread_ts"] == root)
            run.wrong += message["text"] != texts[question]
    finally:
        app.stop()
        slack.stop()
    return run


def slack_table(label: str, run: SlackRun) -> str:
    calls = sorted(run.calls)
    spacing = "n/a" if run.min_spacing == float("inf") else f"{run.min_spacing * 1000:.0f} ms"
    return "\n".join(
        [
            f"**{label}**",
            "",
            *latency_rows(
                ("model's first piece → first words in the thread", run.first_words),
                ("model's last piece → message finished (`chat.stopStream`)", run.finished),
            ),
            "",
            f"- answers streamed: {run.answered}; final text differing from the model's: "
            f"{run.wrong}",
            f"- Slack API calls per answer (status, stream, reactions): median "
            f"{calls[len(calls) // 2] if calls else 0}, max {calls[-1] if calls else 0}; "
            f"closest two appends to one message: {spacing}",
            f"- 429s from Slack: {run.throttled}",
        ]
    )


@dataclass
class DiscordRun:
    first_words: list[float] = field(default_factory=list)
    finished: list[float] = field(default_factory=list)
    edits: list[int] = field(default_factory=list)  # edits per answer
    fastest: float = 0.0  # most edits of one message in any second
    throttled: int = 0
    answered: int = 0
    wrong: int = 0


async def run_discord(fake: FakeOpenAI, work: Path, answers: int, tokens: int) -> DiscordRun:
    """`answers` mentions at once in one channel, through the real Discord adapter (discord.py
    against the fake Discord REST + gateway, which answers 429 past Discord's per-channel edit
    limit). Each mention opens its thread, as Threadline does in a channel."""
    from adapters.discord.client import DiscordAdapter
    from adapters.discord.config import DiscordConfig
    from adapters.discord.translate import render
    from bot.app import build_app
    from core.request import Reply
    from tests.support.fakes.discord_server import FakeDiscord

    discord = await FakeDiscord().start()
    discord.limit_channel_edits(5, 5.0)
    settings = await asyncio.to_thread(
        bench_settings,
        work,
        fake,
        answers,
        discord_token=discord.token,
        discord_api_url=discord.api_url,
    )
    texts = {f"question {i}": answer_text(i, tokens) for i in range(answers)}
    fake.responder = lambda body: _answer_for(body, texts)
    app = build_app(settings)
    fast = {"guild_ready_timeout": 0.05, "identify_delay": 0.0, "connect_timeout": 15.0}
    adapter = DiscordAdapter(app.core, DiscordConfig.from_settings(settings, **fast))
    stop = asyncio.Event()
    task = asyncio.create_task(adapter.run(stop))
    run = DiscordRun()
    try:
        await adapter.wait_ready()
        asked = {}
        for question in texts:
            posted = await discord.post_message(
                discord.alice, discord.general, f"{discord.mention()} {question}"
            )
            asked[posted["id"]] = question
        await discord.wait_for(lambda: all(discord.messages_in(t) for t in asked), 120)
        await adapter.idle()
        run.throttled = len(discord.rate_limited)
        log = {q: (first, last) for q, first, last in fake.stream_log}
        for thread, question in asked.items():
            parts = discord.messages_in(thread)
            if not parts or question not in log:
                continue
            run.answered += 1
            first, last = log[question]
            shown = min(p.posted_at or 0.0 for p in parts)
            done = max(max([p.posted_at or 0.0, *p.edited_at]) for p in parts)
            run.first_words.append(shown - first)
            run.finished.append(done - last)
            run.edits.append(sum(len(p.edited_at) for p in parts))
            for p in parts:
                times = sorted(p.edited_at)
                run.fastest = max(
                    [run.fastest, *(sum(1 for t in times if a <= t < a + 1.0) for a in times)]
                )
            expected = [o.text for o in render(Reply(texts[question]), upload_limit=10**7)]
            run.wrong += [p.content for p in parts] != expected
    finally:
        stop.set()
        await asyncio.wait_for(task, 30)
        await app.aclose()
        await discord.stop()
    return run


def discord_table(label: str, run: DiscordRun) -> str:
    edits = sorted(run.edits)
    return "\n".join(
        [
            f"**{label}**",
            "",
            *latency_rows(
                ("model's first piece → first words in the thread", run.first_words),
                ("model's last piece → final edit", run.finished),
            ),
            "",
            f"- answers: {run.answered}; final messages differing from the non-streamed "
            f"rendering: {run.wrong}",
            f"- edits per answer: median {edits[len(edits) // 2] if edits else 0}, max "
            f"{edits[-1] if edits else 0}; most edits of one message within a second: "
            f"{run.fastest}",
            f"- 429s from Discord: {run.throttled}",
        ]
    )


def latency_rows(*rows: tuple[str, list[float]]) -> list[str]:
    """A Markdown table of latencies: p50, p95 and max of each measure."""
    lines = ["| measure | p50 | p95 | max |", "|---|---:|---:|---:|"]
    for name, values in rows:
        lines.append(f"| {name} | {ms(values, 50)} | {ms(values, 95)} | {ms(values, 100)} |")
    return lines


def ms(values: list[float], p: float) -> str:
    return f"{percentile(values, p) * 1000:.0f} ms" if values else "n/a"


def core_table(run: CoreRun, short: CoreRun, args: argparse.Namespace) -> str:
    per_token = run.cpu / run.tokens * 1e6 if run.tokens else 0.0
    # What a token adds, apart from each request's fixed work (prompt, history, quotas).
    extra = run.tokens - short.tokens
    marginal = (run.cpu - short.cpu) / extra * 1e6 if extra > 0 else 0.0
    return "\n".join(
        [
            f"{args.answers} answers at once, {args.tokens} tokens each, the fake model at "
            f"{args.rate:g} tokens/s after {args.first_token:g} s; `Core.stream` (no platform).",
            "",
            *latency_rows(
                ("model's first piece → first words in core", run.first_words),
                ("model's last piece → final reply", run.finished),
            ),
            "",
            f"- CPU of the event loop's thread: {run.cpu:.2f} s for {run.tokens} tokens "
            f"({per_token:.0f} µs per token with each request's fixed work), {run.deltas} "
            f"deltas; wall {run.wall:.1f} s",
            f"- the same {args.answers} answers at {SHORT_TOKENS} tokens: {short.cpu:.2f} s; so a "
            f"streamed token costs {marginal:.0f} µs of CPU beyond the fixed work",
            f"- answers whose final text differed or failed: {run.failed}",
        ]
    )


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--answers", type=int, default=50)
    parser.add_argument("--tokens", type=int, default=400)
    parser.add_argument("--rate", type=float, default=50.0, help="model tokens per second")
    parser.add_argument("--first-token", type=float, default=0.8, help="seconds")
    parser.add_argument(
        "--platform", choices=("core", "slack", "discord"), action="append", help="default: all"
    )
    parser.add_argument(
        "--slack-limit", type=float, default=20, help="fake Slack: calls/s per method and channel"
    )
    parser.add_argument("--append", type=Path, help="append the results to this Markdown file")
    args = parser.parse_args()
    platforms = args.platform or ["core", "slack", "discord"]
    fake = FakeOpenAI().start()
    fake.stream_rate, fake.first_token_delay = args.rate, args.first_token
    sections: list[str] = []
    try:
        if "core" in platforms:
            with tempfile.TemporaryDirectory() as tmp:
                short = await run_core(fake, Path(tmp) / "short", args.answers, SHORT_TOKENS)
            with tempfile.TemporaryDirectory() as tmp:
                run = await run_core(fake, Path(tmp), args.answers, args.tokens)
            sections.append(core_table(run, short, args))
        if "slack" in platforms:
            for label, answers, channels in (
                ("Slack, 10 answers in 10 channels", 10, 10),
                (f"Slack, {args.answers} answers at once in one channel", args.answers, 1),
            ):
                with tempfile.TemporaryDirectory() as tmp:
                    got = await asyncio.to_thread(
                        run_slack, fake, Path(tmp), answers, args.tokens, channels, args.slack_limit
                    )
                sections.append(slack_table(label, got))
        if "discord" in platforms:
            with tempfile.TemporaryDirectory() as tmp:
                ran = await run_discord(fake, Path(tmp), args.answers, args.tokens)
            label = f"Discord, {args.answers} answers at once in one channel (a thread each)"
            sections.append(discord_table(label, ran))
    finally:
        fake.stop()
    body = "\n\n".join(sections)
    print(body)
    if args.append:
        append_results(args.append, "Streamed answers", body)


if __name__ == "__main__":
    asyncio.run(main())
