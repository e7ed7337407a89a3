"""Console pages' server time on PostgreSQL with a big audit log (not a pytest test).

    .venv/bin/python bench/console_pages.py [--requests 30] [--append bench/RESULTS.md]

A fresh PostgreSQL schema (TEST_DATABASE_URL, default postgresql://postgres@127.0.0.1:5432/test)
gets, made in SQL by generate_series (server-side, seeded, in time order as a live log is):

- audit_log: 1,000,000 rows of the measured tenant over 90 days, plus 50,000 for each of two
  other tenants: 60 users (a few busy ones), 12 channels, 15 tools and console actions,
  outcomes 90% ok, 5% refused, 2% invalid, 3% failed;
- usage_records: 100,000 rows over 90 days (80,000 of the measured tenant), 4 models;
- quota_usage: today's counters, summed from today's usage.

Then the real console app (bot.server.create_http_app, console on) answers in-process through
httpx.ASGITransport, signed in as an admin of the measured tenant: every page of the navigation
(read from the overview's nav bar, so pages added later are measured too), the usage page by
user over 90 days, the audit log with each filter, and its page 200 (reached by following the
"Older entries" cursor links). Each case: one warm-up, then --requests timed requests, p50/p95
reported; target p95 < 150 ms. The page limit (120 a minute a session) is raised for the run.
Last, the CSV export of the tenant's million rows, streamed: its time, and the process's RSS
and the Python heap (tracemalloc) sampled as it goes, to show memory stays flat.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import re
import statistics
import sys
import tempfile
import time
import tracemalloc
import uuid
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bench.machine import append_results, percentile, rss_mb  # noqa: E402

PG_URL = os.environ.get("TEST_DATABASE_URL", "postgresql://postgres@127.0.0.1:5432/test")
NOW = datetime(2026, 12, 3, 12, 0, tzinfo=UTC)
TENANT, OTHERS = "T0", ("T1", "T2")
TARGET_MS = 150.0
SECRET = "bench-console-secret-" + "x" * 32
POLICY = """
[defaults]
permissions = ["ask"]
[defaults.budgets]
tokens_per_user_per_day = 200000
tokens_per_channel_per_day = 2000000
[[rules]]
name = "admins"
match = { roles = ["admin"] }
grant = ["admin"]
[[rules]]
name = "ops channel"
match = { channel = "C00" }
budgets = { tokens_per_channel_per_day = 5000000 }
"""
TOOLS = [
    "search_code",
    "read_file",
    "list_repos",
    "web_fetch",
    "remember",
    "recall",
    "forget",
    "index_repo",
    "mcp.tickets.create",
    "mcp.tickets.search",
    "digest.add",
    "skill.load",
    "tts.say",
    "console.sign_in",
    "console.sign_out",
]

AUDIT_SQL = """
INSERT INTO audit_log (at, request_id, platform, tenant, channel, thread, "user", tool,
                       outcome, detail, duration_ms, args_chars, args_sha256)
SELECT at, CASE WHEN tool LIKE 'console.%%' THEN 'operator' ELSE 'r' || g END,
       'slack', %(tenant)s, channel, 't' || (g %% 5000), u, tool,
       CASE WHEN r < 0.90 THEN 'ok' WHEN r < 0.95 THEN 'refused'
            WHEN r < 0.97 THEN 'invalid' ELSE 'failed' END,
       CASE WHEN r < 0.90 THEN '' ELSE 'denied by policy rule ' || (g %% 7) END,
       (random() * 900)::int, (random() * 400)::int, md5(g::text) || md5(g::text)
FROM (
  SELECT g, random() AS r,
         %(now)s::timestamptz - random() * interval '90 days' AS at,
         'C' || lpad(floor(random() * 12)::int::text, 2, '0') AS channel,
         'U' || lpad(floor(power(random(), 2) * 60)::int::text, 3, '0') AS u,
         (%(tools)s::text[])[1 + floor(power(random(), 1.7) * %(ntools)s)::int] AS tool
  FROM generate_series(1, %(n)s) AS g
) AS s
ORDER BY at
"""

USAGE_SQL = """
INSERT INTO usage_records (at, day, request_id, platform, tenant, channel, "user", provider,
                           model, prompt_tokens, completion_tokens, cached_tokens)
SELECT at, to_char(at AT TIME ZONE 'UTC', 'YYYY-MM-DD'), 'r' || g, 'slack', %(tenant)s,
       channel, u, 'openai', model, p, c, (p * random() * 0.5)::int
FROM (
  SELECT g, %(now)s::timestamptz - random() * interval '90 days' AS at,
         'C' || lpad(floor(random() * 12)::int::text, 2, '0') AS channel,
         'U' || lpad(floor(power(random(), 2) * 60)::int::text, 3, '0') AS u,
         (ARRAY['gpt-4o-mini', 'gpt-4o', 'claude-sonnet', 'local-qwen'])
           [1 + floor(power(random(), 1.5) * 4)::int] AS model,
         (200 + random() * 6000)::int AS p, (20 + random() * 900)::int AS c
  FROM generate_series(1, %(n)s) AS g
) AS s
ORDER BY at
"""

# What the bot writes beside each usage record (core.llm.usage.write_usage), summed at once.
ROLL_UP_SQL = """
INSERT INTO usage_daily (platform, tenant, breakdown, day, subject, prompt_tokens,
                         completion_tokens, cached_tokens, requests)
SELECT platform, tenant, %(breakdown)s, day, {column}, sum(prompt_tokens),
       sum(completion_tokens), sum(cached_tokens), count(*)
FROM usage_records GROUP BY platform, tenant, day, {column}
"""

QUOTA_SQL = """
INSERT INTO quota_usage (platform, tenant, scope, subject, metric, day, used, reserved, warned)
SELECT platform, tenant, 'user', "user", 'tokens', day, sum(prompt_tokens + completion_tokens),
       0, false
FROM usage_records WHERE day = %(day)s GROUP BY platform, tenant, "user", day
UNION ALL
SELECT platform, tenant, 'channel', channel, 'tokens', day,
       sum(prompt_tokens + completion_tokens), 0, false
FROM usage_records WHERE day = %(day)s GROUP BY platform, tenant, channel, day
"""


def make_schema() -> tuple[str, str]:
    import psycopg

    schema = f"bench_console_{uuid.uuid4().hex[:8]}"
    with psycopg.connect(PG_URL, autocommit=True) as conn:
        conn.execute(f'CREATE SCHEMA "{schema}"')
    sep = "&" if "?" in PG_URL else "?"
    return schema, f"{PG_URL}{sep}options=-csearch_path%3D{schema}"


def drop_schema(schema: str) -> None:
    import psycopg

    with psycopg.connect(PG_URL, autocommit=True) as conn:
        conn.execute(f'DROP SCHEMA "{schema}" CASCADE')


def load(url: str, audit_rows: int, other_rows: int, usage_rows: int) -> dict[str, float]:
    """Fills the tables in SQL; returns how long each took (seconds)."""
    import psycopg

    took: dict[str, float] = {}
    with psycopg.connect(url.replace("+psycopg", ""), autocommit=True) as conn:
        conn.execute("SELECT setseed(0.27)")
        t = time.perf_counter()
        for tenant, n in ((TENANT, audit_rows), *((o, other_rows) for o in OTHERS)):
            args = {"tenant": tenant, "n": n, "now": NOW, "tools": TOOLS, "ntools": len(TOOLS)}
            conn.execute(AUDIT_SQL, args)
        took["audit_log"] = time.perf_counter() - t
        t = time.perf_counter()
        share = int(usage_rows * 0.8)
        for tenant, n in ((TENANT, share), *((o, (usage_rows - share) // 2) for o in OTHERS)):
            conn.execute(USAGE_SQL, {"tenant": tenant, "n": n, "now": NOW})
        for breakdown in ("channel", "user", "model"):
            column = '"user"' if breakdown == "user" else breakdown
            conn.execute(ROLL_UP_SQL.format(column=column), {"breakdown": breakdown})
        conn.execute(QUOTA_SQL, {"day": NOW.strftime("%Y-%m-%d")})
        took["usage_records"] = time.perf_counter() - t
        t = time.perf_counter()
        conn.execute("VACUUM ANALYZE")
        took["vacuum analyze"] = time.perf_counter() - t
    return took


async def create_tables(url: str) -> None:
    from core.store.engine import Database

    db = Database(url)
    try:
        await db.create_all()
    finally:
        await db.dispose()


async def counts(app: Any) -> dict[str, int]:
    from sqlalchemy import text

    async with app.db.session() as s:
        connection = await s.connection()

        async def one(sql: str) -> int:
            return int((await connection.execute(text(sql), {"t": TENANT})).scalar_one())

        return {
            "audit_total": await one("SELECT count(*) FROM audit_log"),
            "audit_tenant": await one("SELECT count(*) FROM audit_log WHERE tenant = :t"),
            "usage_total": await one("SELECT count(*) FROM usage_records"),
        }


def memory_gib() -> str:
    for line in Path("/proc/meminfo").read_text().splitlines():
        if line.startswith("MemTotal:"):
            return f"{int(line.split()[1]) / 2**20:.0f} GiB"
    return "unknown"


def postgres_version(url: str) -> str:
    import psycopg

    with psycopg.connect(url) as conn:
        row = conn.execute("SHOW server_version").fetchone()
    return str(row[0]) if row else "unknown"


async def timed_get(client: Any, path: str) -> tuple[float, Any]:
    t = time.perf_counter()
    resp = await client.get(path)
    return (time.perf_counter() - t) * 1000, resp


CSRF = re.compile(r'name="csrf_token" value="([^"]+)"')
OLDER = re.compile(r'<a href="([^"]+)" id="older"')
NAV = re.compile(r'<nav class="pages"[^>]*>(.*?)</nav>', re.S)
HREF = re.compile(r'<a href="([^"]+)"[^>]*>([^<]+)</a>')


async def page_200(client: Any) -> tuple[str, float]:
    """The audit log's 200th page, reached by following the Older links; returns its path
    and the mean time of the 199 pages walked to it (ms)."""
    path, spent = "/console/audit", []
    for _ in range(199):
        ms, resp = await timed_get(client, path)
        spent.append(ms)
        found = OLDER.search(resp.text)
        assert found is not None, "the audit log ran out of pages before page 200"
        path = found.group(1).replace("&amp;", "&")
    return path, statistics.fmean(spent)


async def export(http_app: Any, cookie: str, *, trace: bool) -> dict[str, Any]:
    """GET /console/audit.csv, driving the ASGI app directly: httpx's ASGITransport collects a
    whole response before handing it over, which would measure the client's buffer, not the
    server's stream. Each chunk is counted and dropped as it is sent; RSS (and with `trace`,
    the traced heap) sampled every 100,000 lines."""
    state = {"lines": 0, "bytes": 0, "next": 100_000, "status": 0}
    samples: list[tuple[int, float, float]] = []
    scope = {
        "type": "http",
        "asgi": {"version": "3.0"},
        "http_version": "1.1",
        "method": "GET",
        "scheme": "http",
        "path": "/console/audit.csv",
        "raw_path": b"/console/audit.csv",
        "root_path": "",
        "query_string": b"",
        "headers": [(b"host", b"testserver"), (b"cookie", cookie.encode())],
        "client": ("127.0.0.1", 50000),
        "server": ("testserver", 80),
    }

    asked = asyncio.Event()

    async def receive() -> dict[str, Any]:
        # The request once; then, as a client that stays connected, nothing until cancelled
        # (the response's disconnect listener waits here).
        if not asked.is_set():
            asked.set()
            return {"type": "http.request", "body": b"", "more_body": False}
        await asyncio.Event().wait()
        return {"type": "http.disconnect"}

    async def send(message: dict[str, Any]) -> None:
        if message["type"] == "http.response.start":
            state["status"] = message["status"]
        elif message["type"] == "http.response.body":
            chunk = message.get("body", b"")
            state["bytes"] += len(chunk)
            state["lines"] += chunk.count(b"\n")
            if state["lines"] >= state["next"]:
                heap = tracemalloc.get_traced_memory()[0] / 2**20 if trace else float("nan")
                samples.append((state["lines"], rss_mb(), heap))
                state["next"] += 100_000

    if trace:
        tracemalloc.start()
    start_rss = rss_mb()
    t = time.perf_counter()
    await http_app(scope, receive, send)
    seconds = time.perf_counter() - t
    peak = tracemalloc.get_traced_memory()[1] / 2**20 if trace else float("nan")
    if trace:
        tracemalloc.stop()
    assert state["status"] == 200, state["status"]
    return {
        "lines": state["lines"],
        "mb": state["bytes"] / 2**20,
        "seconds": seconds,
        "start_rss": start_rss,
        "samples": samples,
        "peak_heap": peak,
    }


async def measure(url: str, work: Path, requests: int) -> dict[str, Any]:
    import httpx

    import bot.console.kit as kit
    from bot.app import build_app
    from bot.heap import freeze_start_up_heap
    from bot.server import create_http_app
    from config.settings import load_settings
    from core.operator.links import SignInLinks
    from core.policy import Identity
    from tests.support.fakes.openai_server import FakeOpenAI

    # The bench asks for more than 120 pages a minute of one session; the limiter still runs.
    kit.PAGE_LIMIT = (1_000_000, timedelta(minutes=1))
    fake = FakeOpenAI().start()
    policy = work / "policy.toml"
    policy.write_text(POLICY)
    settings = load_settings(
        data_dir=work / "data",
        policy_file=policy,
        database_url=url,
        console=True,
        console_secret=SECRET,
        llm_base_url=fake.url,
        llm_model="fake-model",
        llm_max_retries=0,
        skills_examples=False,
    )
    app = build_app(settings, clock=lambda: NOW)
    results: dict[str, Any] = {"cases": []}
    try:
        results.update(await counts(app))
        # What `threadline serve` does once its app is built and its database checked.
        freeze_start_up_heap()
        admin = Identity("slack", TENANT, "C00", "U000", frozenset({"admin"}))
        token = await SignInLinks(app.db, app.core.policy, app.clock).issue(admin)
        http_app = create_http_app(app)
        transport = httpx.ASGITransport(app=http_app)
        async with httpx.AsyncClient(
            transport=transport, base_url="http://testserver", timeout=600
        ) as client:
            # As a browser does: open the link's form (its CSRF field), then press Sign in.
            form = await client.get(f"/console/signin/{token}")
            field = CSRF.search(form.text)
            signed = await client.post(
                f"/console/signin/{token}", data={"csrf_token": field.group(1) if field else ""}
            )
            assert signed.status_code == 303, signed.text
            home = (await client.get("/console/")).text
            nav = NAV.search(home)
            assert nav is not None
            cases = [(f"{title} ({path})", path) for path, title in HREF.findall(nav.group(1))]
            cases += [
                ("Usage by user, 90 days", "/console/usage?by=user&days=90"),
                ("Usage by model, 90 days", "/console/usage?by=model&days=90"),
                ("Usage CSV by channel, 90 days", "/console/usage.csv?by=channel&days=90"),
                ("Audit: user U042 (rare)", "/console/audit?user=U042"),
                ("Audit: channel C07", "/console/audit?channel=C07"),
                ("Audit: tool index_repo", "/console/audit?tool=index_repo"),
                ("Audit: outcome failed", "/console/audit?outcome=failed"),
                ("Audit: tool console.sign_out (rarest)", "/console/audit?tool=console.sign_out"),
                (
                    "Audit: user U042 + outcome invalid",
                    "/console/audit?user=U042&outcome=invalid",
                ),
                (
                    "Audit: one week, C03, ok",
                    "/console/audit?from=2026-10-01&to=2026-10-07&channel=C03&outcome=ok",
                ),
                ("Audit: a user who does not exist", "/console/audit?user=nobody"),
            ]
            deep, walk_mean = await page_200(client)
            results["walk_mean"] = walk_mean
            cases.append(("Audit: page 200 (cursor)", deep))
            for name, path in cases:
                ms, resp = await timed_get(client, path)  # warm-up
                assert resp.status_code == 200, (path, resp.status_code, resp.text[:300])
                times = []
                for _ in range(requests):
                    ms, resp = await timed_get(client, path)
                    times.append(ms)
                results["cases"].append((name, times))
                print(f"{name}: p50 {statistics.median(times):.1f} ms", flush=True)
            cookie = "; ".join(f"{k}={v}" for k, v in client.cookies.items())
            results["export"] = await export(http_app, cookie, trace=False)
            print(f"export: {results['export']['seconds']:.1f} s", flush=True)
            results["export_traced"] = await export(http_app, cookie, trace=True)
    finally:
        await app.aclose()
        fake.stop()
    return results


def report(results: dict[str, Any], took: dict[str, float], requests: int) -> str:
    lines = [
        "Server time of each console page, in-process (httpx.ASGITransport against the real "
        f"console app, signed in as an admin of the measured tenant), {requests} requests each "
        f"after one warm-up. PostgreSQL {results['postgres']} on this machine "
        f"({memory_gib()} of memory); the audit log holds "
        f"{results['audit_total']:,} rows ({results['audit_tenant']:,} of the measured tenant) "
        f"over 90 days, usage {results['usage_total']:,} rows.",
        "",
        "| page | p50 (ms) | p95 (ms) | max (ms) |",
        "|---|---:|---:|---:|",
    ]
    missed = []
    for name, times in results["cases"]:
        p95 = percentile(times, 95)
        lines.append(f"| {name} | {statistics.median(times):.1f} | {p95:.1f} | {max(times):.1f} |")
        if p95 >= TARGET_MS:
            missed.append(name)
    lines += [
        "",
        f"- target p95 < {TARGET_MS:.0f} ms: "
        + ("met by every page" if not missed else f"missed by {', '.join(missed)}"),
        f"- walking to page 200 by cursor: {results['walk_mean']:.1f} ms a page on average",
        "- data load (generate_series in SQL): "
        + ", ".join(f"{k} {v:.1f} s" for k, v in took.items()),
    ]
    for key, label in (("export", "untraced"), ("export_traced", "under tracemalloc")):
        e = results[key]
        samples = ", ".join(
            f"{rows // 1000}k: {rss:.0f} MB" + ("" if heap != heap else f" / heap {heap:.1f} MB")
            for rows, rss, heap in e["samples"]
        )
        peak = "" if e["peak_heap"] != e["peak_heap"] else f"; heap peak {e['peak_heap']:.1f} MB"
        lines.append(
            f"- CSV export ({label}): {e['lines']:,} lines, {e['mb']:.0f} MB in "
            f"{e['seconds']:.1f} s ({e['lines'] / e['seconds']:,.0f} rows/s); RSS at start "
            f"{e['start_rss']:.0f} MB, by lines read: {samples}{peak}"
        )
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--requests", type=int, default=30)
    parser.add_argument("--audit-rows", type=int, default=1_000_000)
    parser.add_argument("--other-rows", type=int, default=50_000)
    parser.add_argument("--usage-rows", type=int, default=100_000)
    parser.add_argument("--append", type=Path, help="append the results to this Markdown file")
    parser.add_argument("--keep", action="store_true", help="keep the schema (prints its name)")
    args = parser.parse_args()
    schema, url = make_schema()
    print(f"schema {schema}", flush=True)
    try:
        asyncio.run(create_tables(url))
        took = load(url, args.audit_rows, args.other_rows, args.usage_rows)
        version = postgres_version(PG_URL)
        print("loaded: " + ", ".join(f"{k} {v:.1f} s" for k, v in took.items()), flush=True)
        with tempfile.TemporaryDirectory() as tmp:
            results = asyncio.run(measure(url, Path(tmp), args.requests))
        results["postgres"] = version
    finally:
        if not args.keep:
            drop_schema(schema)
    text = report(results, took, args.requests)
    print(text)
    if args.append:
        append_results(args.append, "Console pages with a million audit rows", text)


if __name__ == "__main__":
    main()
