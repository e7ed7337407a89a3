"""Slack HTTP load check (not a pytest test): N mentions sent concurrently to `threadline serve`.

Starts the fake Slack Web API and the fake model on 127.0.0.1 in this process, runs the real
`threadline serve` as a subprocess (SQLite in a temporary data dir) pointed at them, then
sends N signed `app_mention` events at once over HTTP and reports:

  ack latency    time from sending a request to its HTTP response (p50 / p99 / max)
  all replies    time from the first request until the fake Slack recorded N replies

Targets from the issue: every ack under 3 s, p99 under 300 ms. Nothing leaves this machine.

    python bench/slack_load.py [--mentions 200] [--append bench/RESULTS.md]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import shlex
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from datetime import UTC, datetime
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from bench.machine import machine_facts  # noqa: E402
from bench.startup import clean_env, threadline_command  # noqa: E402
from tests.conftest import POLICY_ALL  # noqa: E402
from tests.fakes.openai_server import FakeOpenAI  # noqa: E402
from tests.fakes.slack_api import FakeSlack  # noqa: E402
from tests.fakes.slack_events import SIGNING_SECRET, mention, new_ts, sign  # noqa: E402


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


async def wait_ready(url: str, proc: subprocess.Popen[bytes], deadline: float = 30.0) -> None:
    import aiohttp

    end = time.monotonic() + deadline
    async with aiohttp.ClientSession() as session:
        while time.monotonic() < end:
            if proc.poll() is not None:
                raise SystemExit(f"threadline serve exited with {proc.returncode}")
            try:
                async with session.get(url) as resp:
                    if resp.status == 200:
                        return
            except aiohttp.ClientError:
                pass
            await asyncio.sleep(0.05)  # start-up poll, bounded by the deadline
    raise SystemExit("threadline serve did not become healthy in time")


async def send_all(url: str, n: int) -> tuple[list[float], list[int], float]:
    import aiohttp

    bodies = [
        json.dumps(mention(f"question {i}", channel=f"C{i % 20}", ts=new_ts())).encode()
        for i in range(n)
    ]
    latencies: list[float] = []
    statuses: list[int] = []
    connector = aiohttp.TCPConnector(limit=0)  # all N at once, as Slack would
    async with aiohttp.ClientSession(connector=connector) as session:

        async def one(body: bytes) -> None:
            headers = {"Content-Type": "application/json", **sign(body)}
            started = time.perf_counter()
            async with session.post(url, data=body, headers=headers) as resp:
                await resp.read()
                latencies.append(time.perf_counter() - started)
                statuses.append(resp.status)

        began = time.monotonic()  # the clock the fake Slack stamps its calls with
        await asyncio.gather(*(one(b) for b in bodies))
    return latencies, statuses, began


def percentile(values: list[float], p: float) -> float:
    ordered = sorted(values)
    k = max(0, min(len(ordered) - 1, round(p / 100 * len(ordered) + 0.5) - 1))
    return ordered[k]


def run(n: int) -> dict[str, float | int]:
    slack, llm = FakeSlack().start(), FakeOpenAI().start()
    try:
        with tempfile.TemporaryDirectory(prefix="threadline-slack-bench-") as tmp:
            work = Path(tmp)
            policy = work / "policy.toml"
            policy.write_text(POLICY_ALL)
            env = clean_env(work)
            port = free_port()
            env.update(
                THREADLINE_POLICY=str(policy),
                THREADLINE_LOG_LEVEL="WARNING",
                LLM_BASE_URL=llm.url,
                LLM_MODEL="fake-model",
                LLM_MAX_RETRIES="0",
                SLACK_BOT_TOKEN=slack.bot_token,
                SLACK_SIGNING_SECRET=SIGNING_SECRET,
                SLACK_API_URL=slack.api_url,
            )
            proc = subprocess.Popen(
                [*threadline_command(), "serve", "--port", str(port)],
                env=env,
                cwd=work,
                stdout=subprocess.DEVNULL,
                stderr=(work / "serve.log").open("wb"),
            )
            try:
                base = f"http://127.0.0.1:{port}"
                asyncio.run(wait_ready(f"{base}/healthz", proc))
                latencies, statuses, began = asyncio.run(send_all(f"{base}/slack/events", n))
                replies = slack.wait_calls("chat.postMessage", n, timeout=300)
                all_posted = max(c.at for c in replies) - began
            finally:
                proc.terminate()
                proc.wait(30)
            errors = (work / "serve.log").read_text()
    finally:
        slack.stop()
        llm.stop()
    if any(s != 200 for s in statuses):
        raise SystemExit(f"non-200 acks: {sorted(set(statuses))}\n{errors[-2000:]}")
    duplicates = len(slack.calls("chat.postMessage")) - n
    return {
        "mentions": n,
        "ack_p50_ms": 1000 * statistics.median(latencies),
        "ack_p99_ms": 1000 * percentile(latencies, 99),
        "ack_max_ms": 1000 * max(latencies),
        "all_replies_s": all_posted,
        "extra_posts": duplicates,
        "server_errors_logged": errors.count(" ERROR ") + errors.count("Traceback"),
    }


def markdown_section(result: dict[str, float | int], invocation: str) -> str:
    facts = "\n".join(f"- {k}: {v}" for k, v in machine_facts().items())
    stamp = datetime.now(UTC).strftime("%Y-%m-%d %H:%M UTC")
    return (
        f"## Slack HTTP load — {stamp}\n\n"
        f"Command: `{invocation}`\n\n"
        f"{facts}\n\n"
        "| mentions | ack p50 (ms) | ack p99 (ms) | ack max (ms) | all replies posted (s) "
        "| extra posts | errors logged |\n|---:|---:|---:|---:|---:|---:|---:|\n"
        f"| {result['mentions']} | {result['ack_p50_ms']:.1f} | {result['ack_p99_ms']:.1f} "
        f"| {result['ack_max_ms']:.1f} | {result['all_replies_s']:.2f} "
        f"| {result['extra_posts']} | {result['server_errors_logged']} |\n\n"
        "`threadline serve` (SQLite, fake model answering at once) in its own process; the fake "
        "Slack Web API and the load generator in the benchmark process, all on 127.0.0.1. "
        "Ack latency is measured by the client from send to response.\n"
    )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--mentions", type=int, default=200)
    parser.add_argument("--append", type=Path, metavar="FILE", help="append results (Markdown)")
    args = parser.parse_args(argv)
    result = run(args.mentions)
    for key, value in result.items():
        print(f"{key}: {value:.2f}" if isinstance(value, float) else f"{key}: {value}")
    if args.append:
        invocation = shlex.join(["python", "bench/slack_load.py", *(argv or sys.argv[1:])])
        with args.append.open("a") as out:
            out.write("\n" + markdown_section(result, invocation))
        print(f"appended to {args.append}")
    return 0


if __name__ == "__main__":
    os.environ.setdefault("PYTHONUNBUFFERED", "1")
    sys.exit(main())
