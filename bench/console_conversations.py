"""The console's Conversations pages: server time with a big history (not a pytest test).

    .venv/bin/python bench/console_conversations.py [--backend postgresql|sqlite|both]
        [--requests 30] [--append bench/RESULTS.md]

Made with seeded random rows (inserted in batches, in time order as a live bot writes them):

- thread_messages: 5,000 threads of the measured tenant over 90 days in 12 channels, 5 turns
  each (question, a tool call, its result, the answer: 100,000 messages), one thread of 1,000
  such turns (4,000 messages), and 20,000 messages of another tenant;
- answers (one per turn, 60 askers) and answer_ratings (one answer in ten);
- audit_log: each turn's tool call, plus --audit-noise other rows of the tenant;
- usage_records: two model calls per turn.

Then the real console app answers in-process (httpx.ASGITransport), signed in as an admin of
the measured tenant: the list (plain, by channel, by asker, one week), its page 20 (following
the "Older threads" links), the long thread's first, middle and newest pages, a short thread.
Each case: one warm-up, then --requests timed requests, p50/p95; target p95 < 150 ms.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import random
import re
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

PG_URL = os.environ.get("TEST_DATABASE_URL", "postgresql://postgres@127.0.0.1:5432/test")
NOW = datetime(2026, 12, 3, 12, 0, tzinfo=UTC)
TENANT = "T0"
TARGET_MS = 150.0
SECRET = "bench-console-secret-" + "x" * 32
POLICY = """
[defaults]
permissions = ["ask"]
[[rules]]
name = "admins"
match = { roles = ["admin"] }
grant = ["admin"]
"""
CALL = '[{"id": "c%d", "type": "function", "function": {"name": "%s", "arguments": "{}"}}]'
TOOLS = ["search_code", "read_file", "recall", "list_repos"]
BATCH = 5_000


class Rows:
    """Rows of each table, written in batches as they fill up."""

    def __init__(self, connection: Any) -> None:
        self.connection = connection
        self.pending: dict[Any, list[dict[str, Any]]] = {}
        self.written: dict[str, int] = {}

    async def add(self, table: Any, row: dict[str, Any]) -> None:
        rows = self.pending.setdefault(table, [])
        rows.append(row)
        if len(rows) >= BATCH:
            await self.flush(table)

    async def flush(self, table: Any = None) -> None:
        from sqlalchemy import insert

        for t in [table] if table is not None else list(self.pending):
            rows = self.pending.get(t) or []
            if rows:
                await self.connection.execute(insert(t.__table__), rows)
                self.written[t.__tablename__] = self.written.get(t.__tablename__, 0) + len(rows)
            self.pending[t] = []


async def turn(
    rows: Rows, rng: random.Random, tenant: str, channel: str, thread: str, at: datetime, n: int
) -> None:
    from core.store.models import Answer, AnswerRating, AuditEntry, ThreadMessage, UsageRecord

    conv = {"platform": "slack", "tenant": tenant, "channel": channel, "thread": thread}
    user = f"U{int(rng.random() ** 2 * 60):03}"
    tool = rng.choice(TOOLS)
    request_id = uuid.UUID(int=rng.getrandbits(128)).hex
    words = " ".join(
        rng.choice(("deploy", "queue", "worker", "why", "log", "retry")) for _ in range(30)
    )
    for role, content, calls, call_id in (
        ("user", f"question {n}: {words}?", None, None),
        ("assistant", "", CALL % (n, tool), None),
        ("tool", words * 10, None, f"c{n}"),
        ("assistant", f"answer {n}: {words}.\n{words}", None, None),
    ):
        await rows.add(
            ThreadMessage,
            {
                **conv,
                "at": at,
                "role": role,
                "content": content,
                "tool_calls": calls,
                "tool_call_id": call_id,
            },
        )
    if tenant != TENANT:
        return
    answer_id = uuid.UUID(int=rng.getrandbits(128)).hex
    await rows.add(
        Answer,
        {
            **conv,
            "id": answer_id,
            "created_at": at + timedelta(seconds=1),
            "user": user,
            "model": "gpt-4o",
            "skills": "",
            "tools": tool,
        },
    )
    if rng.random() < 0.1:
        await rows.flush(Answer)  # the rating's foreign key
        await rows.add(
            AnswerRating,
            {
                "answer_id": answer_id,
                "platform": "slack",
                "tenant": tenant,
                "channel": channel,
                "user": "U999",
                "value": rng.choice(("up", "down")),
                "reason": None,
                "created_at": at,
                "updated_at": at,
            },
        )
    await rows.add(
        AuditEntry,
        {
            **conv,
            "at": at,
            "request_id": request_id,
            "user": user,
            "tool": tool,
            "outcome": "ok",
            "detail": "",
            "duration_ms": rng.randrange(900),
            "args_chars": 2,
            "args_sha256": "",
        },
    )
    for _ in range(2):
        await rows.add(
            UsageRecord,
            {
                "at": at,
                "day": at.strftime("%Y-%m-%d"),
                "request_id": request_id,
                "platform": "slack",
                "tenant": tenant,
                "channel": channel,
                "user": user,
                "provider": "openai",
                "model": "gpt-4o",
                "prompt_tokens": rng.randrange(200, 6000),
                "completion_tokens": rng.randrange(20, 900),
                "cached_tokens": 0,
            },
        )


async def fill(url: str, threads: int, audit_noise: int) -> dict[str, int]:
    from core.store.engine import Database
    from core.store.models import AuditEntry

    rng = random.Random(27)
    db = Database(url)
    await db.create_all()
    plan: list[tuple[datetime, str, str, str, int]] = []
    for i in range(threads):
        start = NOW - timedelta(days=90) * rng.random()
        channel = f"C{rng.randrange(12):02}"
        for k in range(5):
            plan.append((start + timedelta(minutes=3 * k), TENANT, channel, f"t{i}", k))
    for k in range(1000):  # the long thread: a turn every 10 minutes for a week
        plan.append((NOW - timedelta(days=7) + timedelta(minutes=10 * k), TENANT, "C00", "long", k))
    for i in range(1000):
        start = NOW - timedelta(days=90) * rng.random()
        plan += [(start + timedelta(minutes=k), "T9", "C00", f"o{i}", k) for k in range(5)]
    plan.sort()
    try:
        async with db.session() as s:
            rows = Rows(await s.connection())
            for at, tenant, channel, thread, n in plan:
                await turn(rows, rng, tenant, channel, thread, at, n)
            for j in range(audit_noise):
                at = NOW - timedelta(days=90) * (1 - j / max(audit_noise, 1))
                await rows.add(
                    AuditEntry,
                    {
                        "at": at,
                        "request_id": f"n{j}",
                        "platform": "slack",
                        "tenant": TENANT,
                        "channel": f"C{j % 12:02}",
                        "thread": f"x{j % 7000}",
                        "user": "U001",
                        "tool": "search_code",
                        "outcome": "ok",
                        "detail": "",
                        "duration_ms": 5,
                        "args_chars": 2,
                        "args_sha256": "",
                    },
                )
            await rows.flush()
        if db.dialect == "postgresql":
            from sqlalchemy import text

            async with db.engine.connect() as conn:
                await conn.execution_options(isolation_level="AUTOCOMMIT")
                # As autovacuum leaves a settled table: index-only scans need the visibility map.
                await conn.execute(text("VACUUM ANALYZE"))
        else:
            from sqlalchemy import text

            async with db.engine.begin() as conn:
                await conn.execute(text("ANALYZE"))
        return rows.written
    finally:
        await db.dispose()


CSRF = re.compile(r'name="csrf_token" value="([^"]+)"')
OLDER = re.compile(r'<a href="([^"]+)" rel="next" id="cv-next"')
NEWEST = re.compile(r'<a href="([^"]+)">Newest turns</a>')
LATER = re.compile(r'<a href="([^"]+)" rel="next">Later turns</a>')


async def timed_get(client: Any, path: str) -> tuple[float, Any]:
    t = time.perf_counter()
    resp = await client.get(path)
    return (time.perf_counter() - t) * 1000, resp


def link(pattern: re.Pattern[str], html: str) -> str:
    found = pattern.search(html)
    assert found is not None, pattern.pattern
    return found.group(1).replace("&amp;", "&")


async def measure(url: str, work: Path, requests: int) -> list[tuple[str, list[float]]]:
    import httpx

    import bot.console.kit as kit
    from bot.app import build_app
    from bot.server import create_http_app
    from config.settings import load_settings
    from core.operator.links import SignInLinks
    from core.policy import Identity

    kit.PAGE_LIMIT = (1_000_000, timedelta(minutes=1))  # more than 120 pages a minute here
    policy = work / "policy.toml"
    policy.write_text(POLICY)
    settings = load_settings(
        data_dir=work / "data",
        policy_file=policy,
        database_url=url,
        console=True,
        console_secret=SECRET,
        skills_examples=False,
    )
    app = build_app(settings, clock=lambda: NOW)
    cases: list[tuple[str, list[float]]] = []
    try:
        admin = Identity("slack", TENANT, "C00", "U000", frozenset({"admin"}))
        token = await SignInLinks(app.db, app.core.policy, app.clock).issue(admin)
        transport = httpx.ASGITransport(app=create_http_app(app))
        async with httpx.AsyncClient(
            transport=transport, base_url="http://testserver", timeout=600
        ) as client:
            form = await client.get(f"/console/signin/{token}")
            field = CSRF.search(form.text)
            signed = await client.post(
                f"/console/signin/{token}", data={"csrf_token": field.group(1) if field else ""}
            )
            assert signed.status_code == 303, signed.text
            path, walk = "/console/conversations", []
            for _ in range(19):
                ms, resp = await timed_get(client, path)
                walk.append(ms)
                path = link(OLDER, resp.text)
            page_20 = path
            short = re.search(r'href="(/console/conversations/C\d\d/t\d+)"', resp.text)
            assert short is not None
            long = "/console/conversations/C00/long"
            first = (await client.get(long)).text
            newest = link(NEWEST, first)
            middle = long
            for _ in range(10):
                middle = link(LATER, (await client.get(middle)).text)
            plan = [
                ("List, newest first", "/console/conversations"),
                ("List, channel C03", "/console/conversations?channel=C03"),
                ("List, asked by U042", "/console/conversations?user=U042"),
                ("List, one week", "/console/conversations?from=2026-10-01&to=2026-10-07"),
                ("List, page 20 (cursor)", page_20),
                ("Thread of 1,000 turns, first page", long),
                ("Thread of 1,000 turns, page 11", middle),
                ("Thread of 1,000 turns, newest page", newest),
                ("Thread of 5 turns", short.group(1)),
            ]
            for name, target in plan:
                ms, resp = await timed_get(client, target)  # warm-up
                assert resp.status_code == 200, (target, resp.status_code, resp.text[:300])
                times = []
                for _ in range(requests):
                    ms, resp = await timed_get(client, target)
                    times.append(ms)
                cases.append((name, times))
                print(f"{name}: p50 {statistics.median(times):.1f} ms", flush=True)
            cases.append(("(walking the list to page 20, each page)", walk))
    finally:
        await app.aclose()
    return cases


def make_pg_schema() -> tuple[str, str]:
    import psycopg

    schema = f"bench_conv_{uuid.uuid4().hex[:8]}"
    with psycopg.connect(PG_URL, autocommit=True) as conn:
        conn.execute(f'CREATE SCHEMA "{schema}"')
    sep = "&" if "?" in PG_URL else "?"
    return schema, f"{PG_URL}{sep}options=-csearch_path%3D{schema}"


def drop_pg_schema(schema: str) -> None:
    import psycopg

    with psycopg.connect(PG_URL, autocommit=True) as conn:
        conn.execute(f'DROP SCHEMA "{schema}" CASCADE')


def run(backend: str, args: argparse.Namespace) -> str:
    with tempfile.TemporaryDirectory() as tmp:
        schema = None
        if backend == "postgresql":
            schema, url = make_pg_schema()
        else:
            url = f"sqlite:///{Path(tmp) / 'bench.db'}"
        try:
            t = time.perf_counter()
            written = asyncio.run(fill(url, args.threads, args.audit_noise))
            took = time.perf_counter() - t
            print(f"{backend}: loaded {written} in {took:.0f} s", flush=True)
            cases = asyncio.run(measure(url, Path(tmp), args.requests))
        finally:
            if schema is not None:
                drop_pg_schema(schema)
    lines = [
        f"{backend}: " + ", ".join(f"{k} {v:,}" for k, v in sorted(written.items())),
        "",
        "| page | p50 (ms) | p95 (ms) | max (ms) |",
        "|---|---:|---:|---:|",
    ]
    missed = []
    for name, times in cases:
        p95 = percentile(times, 95)
        lines.append(f"| {name} | {statistics.median(times):.1f} | {p95:.1f} | {max(times):.1f} |")
        if p95 >= TARGET_MS and not name.startswith("("):
            missed.append(name)
    lines.append("")
    lines.append(
        f"- target p95 < {TARGET_MS:.0f} ms: "
        + ("met by every page" if not missed else f"missed by {', '.join(missed)}")
    )
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--backend", choices=("postgresql", "sqlite", "both"), default="both")
    parser.add_argument("--requests", type=int, default=30)
    parser.add_argument("--threads", type=int, default=5_000)
    parser.add_argument("--audit-noise", type=int, default=200_000)
    parser.add_argument("--append", type=Path, help="append the results to this Markdown file")
    args = parser.parse_args()
    backends = ("sqlite", "postgresql") if args.backend == "both" else (args.backend,)
    text = (
        "Server time of the Conversations pages, in-process (httpx.ASGITransport against the "
        f"real console app), {args.requests} requests each after one warm-up.\n\n"
        + "\n\n".join(run(b, args) for b in backends)
    )
    print(text)
    if args.append:
        append_results(args.append, "Console conversations with 100,000 messages", text)


if __name__ == "__main__":
    main()
