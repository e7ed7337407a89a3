"""Slack HTTP load check (not a pytest test): N mentions sent to `threadline serve` processes.

Starts the fake Slack Web API and the fake model on 127.0.0.1 in this process, runs the real
`threadline serve` as subprocesses pointed at them, then sends N signed `app_mention` events
over HTTP, spread round-robin over the web processes, and reports:

  ack latency    time from sending a request to its HTTP response (p50 / p99 / max)
  all replies    time from the first request until the fake Slack recorded N replies
  duplicates     replies beyond one per mention (must be 0)
  connections    with PostgreSQL: the most connections each process held at once, polled
                 from pg_stat_activity by application_name (threadline-web-N)

One web process runs on SQLite in a temporary data dir, as before. `--web 2` (or more) needs
PostgreSQL: `--database-url`, by default the local test database in a fresh schema that is
dropped afterwards. `--concurrency` caps the requests in flight (0: all at once, a burst no
real workspace sends). Targets from issue 17: ack p99 under 300 ms, 0 duplicates, at most 20
connections per process. Nothing leaves this machine.

    python bench/slack_load.py [--mentions 200] [--append bench/RESULTS.md]
    python bench/slack_load.py --web 2 --mentions 1000 --concurrency 50 --append bench/RESULTS.md
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import shlex
import shutil
import statistics
import sys
import tempfile
import threading
import time
import uuid
from collections import Counter
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from bench.machine import machine_facts, percentile  # noqa: E402
from tests.conftest import PG_URL, POLICY_ALL  # noqa: E402
from tests.support.fakes.openai_server import FakeOpenAI  # noqa: E402
from tests.support.fakes.slack_api import FakeSlack  # noqa: E402
from tests.support.fakes.slack_events import SIGNING_SECRET, mention, new_ts, sign  # noqa: E402
from tests.support.processes import Cluster, base_env  # noqa: E402

REPLIES_DEADLINE = 600.0
SETTLE = 3.0  # seconds to wait after the last expected reply for any duplicate to show
DROPPED = "Slack work failed"  # a mention that got no answer at all: the adapter's error line


async def send_all(
    urls: list[str], n: int, concurrency: int, users: int, channels: int
) -> tuple[list[float], list[int], float]:
    import aiohttp

    bodies = [
        json.dumps(
            mention(f"question {i}", channel=f"C{i % channels}", user=f"U{i % users}", ts=new_ts())
        ).encode()
        for i in range(n)
    ]
    latencies: list[float] = []
    statuses: list[int] = []
    gate = asyncio.Semaphore(concurrency or n)
    connector = aiohttp.TCPConnector(limit=0)
    timeout = aiohttp.ClientTimeout(total=120)
    async with aiohttp.ClientSession(connector=connector, timeout=timeout) as session:

        async def one(i: int, body: bytes) -> None:
            async with gate:
                headers = {"Content-Type": "application/json", **sign(body)}
                started = time.perf_counter()
                async with session.post(urls[i % len(urls)], data=body, headers=headers) as resp:
                    await resp.read()
                    latencies.append(time.perf_counter() - started)
                    statuses.append(resp.status)

        began = time.monotonic()  # the clock the fake Slack stamps its calls with
        await asyncio.gather(*(one(i, b) for i, b in enumerate(bodies)))
    return latencies, statuses, began


@contextmanager
def fresh_schema(url: str) -> Iterator[str]:
    """`url` with its search_path on a new schema, dropped afterwards."""
    import psycopg

    schema = f"bench_{uuid.uuid4().hex[:10]}"
    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute(f'CREATE SCHEMA "{schema}"')
    sep = "&" if "?" in url else "?"
    try:
        yield f"{url}{sep}options=-csearch_path%3D{schema}"
    finally:
        with psycopg.connect(url, autocommit=True) as conn:
            conn.execute(f'DROP SCHEMA "{schema}" CASCADE')


class ConnectionPeaks:
    """Polls pg_stat_activity in a thread: the most connections each threadline-* application
    held at once."""

    def __init__(self, url: str, every: float = 0.05) -> None:
        self.url, self.every = url, every
        self.peaks: Counter[str] = Counter()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def __enter__(self) -> ConnectionPeaks:
        self._thread.start()
        return self

    def __exit__(self, *_exc: object) -> None:
        self._stop.set()
        self._thread.join(10)

    def _run(self) -> None:
        import psycopg

        with psycopg.connect(self.url, autocommit=True) as conn:
            while not self._stop.is_set():
                rows = conn.execute(
                    "SELECT application_name, count(*) FROM pg_stat_activity "
                    "WHERE datname = current_database() AND application_name LIKE 'threadline-%' "
                    "GROUP BY application_name"
                ).fetchall()
                for name, count in rows:
                    self.peaks[name] = max(self.peaks[name], int(count))
                self._stop.wait(self.every)


def run(
    n: int,
    webs: int,
    database_url: str | None,
    concurrency: int,
    users: int,
    channels: int,
    keep_logs: Path | None = None,
) -> dict[str, object]:
    slack, llm = FakeSlack().start(), FakeOpenAI().start()
    try:
        with tempfile.TemporaryDirectory(prefix="threadline-slack-bench-") as tmp:
            work = Path(tmp)
            policy = work / "policy.toml"
            policy.write_text(POLICY_ALL)
            empty = work / "empty.toml"
            empty.write_text("")
            env = base_env(
                THREADLINE_POLICY=str(policy),
                THREADLINE_CONFIG=str(empty),
                THREADLINE_LOG_LEVEL="WARNING",
                LLM_BASE_URL=llm.url,
                LLM_MODEL="fake-model",
                LLM_MAX_RETRIES="0",
                SLACK_BOT_TOKEN=slack.bot_token,
                SLACK_SIGNING_SECRET=SIGNING_SECRET,
                SLACK_API_URL=slack.api_url,
            )
            if database_url:
                env["DATABASE_URL"] = database_url
            cluster = Cluster(work, env)
            peaks = ConnectionPeaks(database_url) if database_url else None
            try:
                procs = [cluster.serve(f"web-{i + 1}", wait=False) for i in range(webs)]
                for proc in procs:
                    cluster.wait_healthy(proc)
                urls = [f"{p.url}/slack/events" for p in procs]
                if peaks is not None:
                    peaks.__enter__()
                latencies, statuses, began = asyncio.run(
                    send_all(urls, n, concurrency, users, channels)
                )
                complete = wait_replies(slack, cluster, n)
                replies = finished_answers(slack)
                all_posted = max(c.at for c in replies) - began if replies else float("nan")
                time.sleep(SETTLE)  # a bench, not a test: give late duplicates time to show
            finally:
                if peaks is not None:
                    peaks.__exit__()
                cluster.stop_all()
                if keep_logs is not None:
                    keep_logs.mkdir(parents=True, exist_ok=True)
                    for proc in cluster.procs:
                        shutil.copy(proc.log, keep_logs / f"{proc.name}.log")
            errors = cluster.errors_logged()
            logs = cluster.logs()
    finally:
        slack.stop()
        llm.stop()
    if any(s != 200 for s in statuses):
        raise SystemExit(f"non-200 acks: {sorted(set(statuses))}\n{logs[-4000:]}")
    per_thread = Counter(str(m.get("thread_ts")) for m in slack.posted())
    dropped = sum(line.count(DROPPED) for line in errors)
    result: dict[str, object] = {
        "mentions": n,
        "web_processes": webs,
        "database": "postgresql" if database_url else "sqlite",
        "concurrency": concurrency or n,
        "users": users,
        "channels": channels,
        "ack_p50_ms": 1000 * statistics.median(latencies),
        "ack_p99_ms": 1000 * percentile(latencies, 99),
        "ack_max_ms": 1000 * max(latencies),
        "all_replies_s": all_posted if complete else float("nan"),
        "answered": len(per_thread),
        "dropped": dropped,
        "duplicates": sum(c - 1 for c in per_thread.values() if c > 1),
        "server_errors_logged": sum(" ERROR " in line for line in errors),
    }
    if errors:
        result["first_error"] = next((line for line in errors if " ERROR " in line), errors[0])
    if peaks is not None:
        result["pg_connections_peak"] = ", ".join(
            f"{name.removeprefix('threadline-')} {count}"
            for name, count in sorted(peaks.peaks.items())
        )
    return result


def finished_answers(slack: FakeSlack) -> list[Any]:
    """Answers finished in their threads: streams stopped, and messages posted whole (a
    workspace without streaming, a refusal)."""
    return slack.calls("chat.stopStream") + slack.calls("chat.postMessage")


def wait_replies(slack: FakeSlack, cluster: Cluster, n: int) -> bool:
    """Wait until every mention was answered or dropped with an error logged (False: some
    neither within REPLIES_DEADLINE)."""
    end = time.monotonic() + REPLIES_DEADLINE
    while time.monotonic() < end:
        replied = len(finished_answers(slack))
        if replied >= n:
            return True
        if replied + cluster.logged(DROPPED) >= n:
            return False
        time.sleep(1.0)  # the logs are read whole on every poll
    return False


def markdown_section(result: dict[str, object], invocation: str) -> str:
    facts = "\n".join(f"- {k}: {v}" for k, v in machine_facts().items())
    stamp = datetime.now(UTC).strftime("%Y-%m-%d %H:%M UTC")
    r = result
    return (
        f"## Slack HTTP load — {stamp}\n\n"
        f"Command: `{invocation}`\n\n"
        f"{facts}\n\n"
        "| mentions | web processes | database | in flight | users | channels | ack p50 (ms) "
        "| ack p99 (ms) | ack max (ms) | all replies posted (s) | answered | dropped | duplicates "
        "| peak PG connections | errors logged |\n"
        "|---:|---:|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|---:|\n"
        f"| {r['mentions']} | {r['web_processes']} | {r['database']} | {r['concurrency']} "
        f"| {r['users']} | {r['channels']} "
        f"| {r['ack_p50_ms']:.1f} | {r['ack_p99_ms']:.1f} | {r['ack_max_ms']:.1f} "
        f"| {r['all_replies_s']:.2f} | {r['answered']} | {r['dropped']} | {r['duplicates']} "
        f"| {r.get('pg_connections_peak', '—')} | {r['server_errors_logged']} |\n\n"
        + (f"First error logged: `{r['first_error']}`\n\n" if "first_error" in r else "")
        + "All replies posted: nan when some mentions were never answered. "
        "`threadline serve` processes (fake model answering at once) on 127.0.0.1; the fake "
        "Slack Web API, the fake model and the load generator in the benchmark process, on the "
        "same cores. Mentions go round-robin to the web processes, in `channels` channels, "
        "from `users` authors. Ack latency is measured by "
        "the client from send to response; peak PG connections are polled from "
        "pg_stat_activity every 50 ms.\n"
    )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--mentions", type=int, default=200)
    parser.add_argument("--web", type=int, default=1, help="web processes (2+: PostgreSQL)")
    parser.add_argument(
        "--database-url",
        help="PostgreSQL URL (default with --web 2+: the test database, a fresh schema)",
    )
    parser.add_argument(
        "--concurrency", type=int, default=0, help="requests in flight at most (0: all at once)"
    )
    parser.add_argument(
        "--users",
        type=int,
        default=100,
        help="distinct authors (1: every mention updates one user's quota row)",
    )
    parser.add_argument("--channels", type=int, default=20, help="distinct channels")
    parser.add_argument("--logs", type=Path, metavar="DIR", help="keep the processes' logs")
    parser.add_argument("--append", type=Path, metavar="FILE", help="append results (Markdown)")
    args = parser.parse_args(argv)
    url = args.database_url or (PG_URL if args.web > 1 else None)
    if url and not url.startswith(("postgres://", "postgresql")):
        raise SystemExit("--database-url must be a PostgreSQL URL")
    with fresh_schema(url) if url else _nothing() as schema_url:
        result = run(
            args.mentions,
            args.web,
            schema_url,
            args.concurrency,
            args.users,
            args.channels,
            args.logs,
        )
    for key, value in result.items():
        print(f"{key}: {value:.2f}" if isinstance(value, float) else f"{key}: {value}")
    if args.append:
        invocation = shlex.join(["python", "bench/slack_load.py", *(argv or sys.argv[1:])])
        with args.append.open("a") as out:
            out.write("\n" + markdown_section(result, invocation))
        print(f"appended to {args.append}")
    return 0


@contextmanager
def _nothing() -> Iterator[None]:
    yield None


if __name__ == "__main__":
    os.environ.setdefault("PYTHONUNBUFFERED", "1")
    sys.exit(main())
