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
from tests.fakes.openai_server import FakeOpenAI  # noqa: E402

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
    from config.settings import load_settings
    from core.streaming import Finished, TextDelta

    await asyncio.to_thread(work.mkdir, parents=True, exist_ok=True)
    policy = work / "policy.toml"
    policy.write_text(POLICY)
    settings = load_settings(
        data_dir=work / "data",
        policy_file=policy,
        llm_base_url=fake.url,
        llm_model="fake-model",
        llm_max_retries=0,
        max_concurrent_requests=answers,
        skills_examples=False,
    )
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
    from tests.fakes.openai_server import answer

    question = next(
        (m["content"] for m in reversed(body.get("messages", [])) if m.get("role") == "user"), ""
    )
    return answer(texts.get(question, "warm."))


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
            "| measure | p50 | p95 | max |",
            "|---|---:|---:|---:|",
            f"| model's first piece → first words in core | {ms(run.first_words, 50)} | "
            f"{ms(run.first_words, 95)} | {ms(run.first_words, 100)} |",
            f"| model's last piece → final reply | {ms(run.finished, 50)} | "
            f"{ms(run.finished, 95)} | {ms(run.finished, 100)} |",
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
    parser.add_argument("--append", type=Path, help="append the results to this Markdown file")
    args = parser.parse_args()
    fake = FakeOpenAI().start()
    fake.stream_rate, fake.first_token_delay = args.rate, args.first_token
    try:
        with tempfile.TemporaryDirectory() as tmp:
            short = await run_core(fake, Path(tmp) / "short", args.answers, SHORT_TOKENS)
        with tempfile.TemporaryDirectory() as tmp:
            run = await run_core(fake, Path(tmp), args.answers, args.tokens)
    finally:
        fake.stop()
    body = core_table(run, short, args)
    print(body)
    if args.append:
        append_results(args.append, "Streamed answers", body)


if __name__ == "__main__":
    asyncio.run(main())
