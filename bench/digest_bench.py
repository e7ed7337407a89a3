"""Digests: exactly once with two workers, build time, scheduler idle cost (not a pytest test).

    .venv/bin/python bench/digest_bench.py [--postgres URL] [--idle-seconds 60]
        [--append bench/RESULTS.md]

1. Two workers (two `DigestRunner`s, each with its own database engine, as two processes
   would have) both call `run_due` at each of 60 simulated periods of a controllable clock;
   counts the digests handed to the outbox (target: exactly 60) and the time per period. On
   SQLite, and on PostgreSQL when `--postgres` is given (a throwaway schema is used).
2. An `activity` digest over 1,000 thread messages (250 threads) without a model: build time.
3. The scheduler at idle: APScheduler with 20 subscriptions and the minute pass, for
   `--idle-seconds` of wall time; CPU time of this process over wall time (target < 1%).
"""

from __future__ import annotations

import argparse
import asyncio
import resource
import statistics
import sys
import tempfile
import time
import uuid
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bench.machine import append_results, percentile  # noqa: E402

POLICY = """
[defaults]
permissions = ["ask", "code.read", "memory.read", "digest.manage"]
"""


class Clock:
    def __init__(self, now: datetime) -> None:
        self.now = now

    def __call__(self) -> datetime:
        return self.now


def runner(db: Any, clock: Clock, owner: str, policy: Any, repos: Any) -> Any:
    from core.digest.runner import standalone_runner

    return standalone_runner(db, policy=policy, repos=repos, owner=owner, clock=clock)


async def exactly_once(url: str, tmp: Path) -> dict[str, float]:
    from sqlmodel import func, select

    from core.code.repos import RepoStore
    from core.digest.runner import schedule_of
    from core.digest.store import DigestStore
    from core.policy import Policy
    from core.store.engine import Database
    from core.store.models import DigestSubscription, OutboxRow

    clock = Clock(datetime(2026, 12, 1, 8, 2, tzinfo=UTC))
    policy = Policy.from_dict({"defaults": {"permissions": ["ask", "digest.manage"]}})
    dbs = [Database(url) for _ in range(3)]
    await dbs[0].create_all()
    sub = await DigestStore(dbs[0], clock).add(
        DigestSubscription(
            platform="slack",
            tenant="T1",
            channel="C1",
            created_by="U1",
            kind="activity",
            cron="*/5 * * * *",
            tz="Europe/Berlin",
        )
    )
    workers = [
        runner(db, clock, f"w{i}", policy, RepoStore(db, tmp / "repos"))
        for i, db in enumerate(dbs[1:])
    ]
    times: list[float] = []
    at = clock.now
    for _ in range(60):
        at = schedule_of(sub).next_after(at)
        clock.now = at + timedelta(seconds=2)
        started = time.perf_counter()
        await asyncio.gather(*(w.run_due() for w in workers))
        times.append((time.perf_counter() - started) * 1000)
    async with dbs[0].session() as s:
        posted = (await s.exec(select(func.count()).select_from(OutboxRow))).one()
    for db in dbs:
        await db.dispose()
    return {"posted": float(posted), "p50": percentile(times, 50), "p95": percentile(times, 95)}


async def activity_build(tmp: Path) -> tuple[float, float]:
    from core.code.repos import RepoStore
    from core.memory.history import HistoryStore
    from core.policy import Policy
    from core.request import ConversationKey
    from core.store.engine import Database
    from core.store.models import DigestSubscription

    db = Database(f"sqlite:///{tmp / 'activity.db'}")
    await db.create_all()
    history = HistoryStore(db)
    for t in range(250):
        conv = ConversationKey("slack", "T1", "C1", f"th{t}")
        await history.append(
            conv,
            [
                {"role": "user", "content": f"question {t} about service {t % 17} failing"},
                {"role": "assistant", "content": f"answer {t}: check the logs " * 5},
                {"role": "user", "content": f"follow-up {t}"},
                {"role": "assistant", "content": f"done {t}"},
            ],
        )
    clock = Clock(datetime.now(UTC) + timedelta(minutes=1))
    policy = Policy.from_dict({"defaults": {"permissions": ["ask"]}})
    r = runner(db, clock, "w", policy, RepoStore(db, tmp / "repos"))
    sub = DigestSubscription(
        id=1,
        platform="slack",
        tenant="T1",
        channel="C1",
        created_by="U1",
        kind="activity",
        cron="0 9 * * *",
        tz="UTC",
        created_at=clock.now - timedelta(days=2),
    )
    runs: list[float] = []
    for _ in range(7):
        started = time.perf_counter()
        digest = await r.build(sub, clock.now - timedelta(days=1), clock.now)
        runs.append(time.perf_counter() - started)
    assert "250 thread(s)" in digest.text, digest.text[:300]
    await db.dispose()
    return statistics.median(runs), max(runs)


async def idle(tmp: Path, seconds: float) -> float:
    from core.code.repos import RepoStore
    from core.digest.scheduler import DigestScheduler
    from core.digest.store import DigestStore
    from core.policy import Policy
    from core.store.engine import Database
    from core.store.models import DigestSubscription

    db = Database(f"sqlite:///{tmp / 'idle.db'}")
    await db.create_all()
    clock = Clock(datetime.now(UTC))
    store = DigestStore(db, lambda: datetime.now(UTC))
    for i in range(20):
        await store.add(
            DigestSubscription(
                platform="slack",
                tenant="T1",
                channel=f"C{i}",
                created_by="U1",
                kind="activity",
                cron=f"{i} 9 * * 1-5",
                tz="Europe/Berlin",
            )
        )
    policy = Policy.from_dict({"defaults": {"permissions": ["ask"]}})
    r = runner(db, clock, "w", policy, RepoStore(db, tmp / "repos"))
    r.store = store
    scheduler = DigestScheduler(r)
    await scheduler.start()
    usage = resource.getrusage(resource.RUSAGE_SELF)
    cpu0, wall0 = usage.ru_utime + usage.ru_stime, time.monotonic()
    await asyncio.sleep(seconds)
    usage = resource.getrusage(resource.RUSAGE_SELF)
    cpu = usage.ru_utime + usage.ru_stime - cpu0
    wall = time.monotonic() - wall0
    await scheduler.stop()
    await db.dispose()
    return 100 * cpu / wall


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--postgres", help="a PostgreSQL URL to run part 1 on as well")
    parser.add_argument("--idle-seconds", type=float, default=60.0)
    parser.add_argument("--append", type=Path, help="append the results to this Markdown file")
    args = parser.parse_args()
    rows = []
    with tempfile.TemporaryDirectory() as tmp_dir:
        tmp = Path(tmp_dir)
        urls = [("SQLite", f"sqlite:///{tmp / 'once.db'}")]
        if args.postgres:
            import psycopg

            schema = f"bench_{uuid.uuid4().hex[:10]}"
            with psycopg.connect(args.postgres, autocommit=True) as conn:
                conn.execute(f'CREATE SCHEMA "{schema}"')
            sep = "&" if "?" in args.postgres else "?"
            urls.append(("PostgreSQL", f"{args.postgres}{sep}options=-csearch_path%3D{schema}"))
        try:
            for label, url in urls:
                r = asyncio.run(exactly_once(url, tmp))
                rows.append(
                    f"| two workers, 60 periods, {label} | {int(r['posted'])} digests posted "
                    f"(target 60) | per period p50 {r['p50']:.1f} ms, p95 {r['p95']:.1f} ms |"
                )
        finally:
            if args.postgres:
                with psycopg.connect(args.postgres, autocommit=True) as conn:
                    conn.execute(f'DROP SCHEMA "{schema}" CASCADE')
        median, worst = asyncio.run(activity_build(tmp))
        rows.append(
            f"| `activity` over 1,000 thread messages, no model | built in {median * 1000:.0f} ms "
            f"(median of 7; max {worst * 1000:.0f} ms; target < 1 s) | |"
        )
        pct = asyncio.run(idle(tmp, args.idle_seconds))
        rows.append(
            f"| scheduler at idle, 20 subscriptions, {args.idle_seconds:.0f} s | {pct:.2f}% of "
            "a core (target < 1%) | |"
        )
    table = "\n".join(["| what | result | time |", "|---|---|---|", *rows])
    print(table)
    if args.append:
        append_results(
            args.append,
            "Digests: exactly once, build time, idle cost",
            f"{table}\n\n"
            "Two workers = two `DigestRunner`s with their own database engines calling "
            "`run_due` at once for each period (a controllable clock): every period is claimed "
            "by one of them. Idle = CPU time of the process over wall time with APScheduler and "
            "the minute pass running.",
        )


if __name__ == "__main__":
    main()
