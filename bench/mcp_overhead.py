"""MCP benchmark (not a pytest test): Threadline's own overhead per MCP tool call, and start-up
with three MCP servers configured.

Overhead: the same read-only tool of a local stdio MCP server (tests/support/fakes/mcp_server.py) is
called `--calls` times directly through the SDK client and `--calls` times through Threadline's
dispatcher (lookup, permission, size and JSON-schema checks, budget, the pin/availability
check, the run, the result cap and the audit row written to SQL), interleaved; the overhead is
the difference of the medians (and of the 95th percentiles).

Start-up: `McpManager.start()` with three servers (how long it blocks: it must not), then the
time until all three are ready (each a Python process importing the SDK, connected, listed,
pinned, registered).

    python bench/mcp_overhead.py [--calls N] [--postgres URL] [--append bench/RESULTS.md]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bench.machine import append_results, peak_rss_mb, percentile  # noqa: E402
from core.mcp.config import McpServerSettings  # noqa: E402
from core.mcp.manager import McpManager  # noqa: E402
from core.mcp.pins import PinStore  # noqa: E402
from core.policy import Policy  # noqa: E402
from core.request import Request  # noqa: E402
from core.session import open_session  # noqa: E402
from core.store.engine import Database  # noqa: E402
from core.tools.audit import AuditLog  # noqa: E402
from core.tools.context import ToolContext  # noqa: E402
from core.tools.dispatcher import Dispatcher, ProposedCall  # noqa: E402
from core.tools.registry import ToolRegistry  # noqa: E402

SERVER = ROOT / "tests" / "support" / "fakes" / "mcp_server.py"
POLICY = {"defaults": {"permissions": ["ask", "mcp:s0", "mcp:s1", "mcp:s2"]}}


def _server() -> McpServerSettings:
    return McpServerSettings(command=sys.executable, args=[str(SERVER)], timeout=30)


async def startup(db: Database, n: int = 3) -> tuple[float, float, list[float]]:
    registry = ToolRegistry()
    manager = McpManager({f"s{i}": _server() for i in range(n)}, registry, PinStore(db))
    began = time.perf_counter()
    manager.start()
    blocked = time.perf_counter() - began
    ready: list[float] = []
    for name in manager.servers:
        await manager.wait_ready(name)
        ready.append(time.perf_counter() - began)
    all_ready = time.perf_counter() - began
    await manager.aclose()
    return blocked, all_ready, ready


async def overhead(db: Database, calls: int) -> tuple[list[float], list[float]]:
    registry = ToolRegistry()
    manager = McpManager({"s0": _server()}, registry, PinStore(db))
    manager.start()
    await manager.wait_ready("s0")
    client = manager.servers["s0"].client
    dispatcher = Dispatcher(registry, AuditLog(db))
    policy = Policy.from_dict(POLICY)
    args = {"query": "bench"}
    raw = json.dumps(args)
    direct: list[float] = []
    through: list[float] = []
    for i in range(calls + 20):  # the first 20 of each warm up (connections, caches)
        request = Request(
            platform="console",
            tenant="bench",
            channel="c",
            thread="t",
            user="u",
            roles=(),
            text="q",
        )
        session = open_session(request, policy)
        ctx = ToolContext(session=session, db=db)
        t0 = time.perf_counter()
        await client.call_tool("lookup", args)
        t1 = time.perf_counter()
        outcome = await dispatcher.dispatch(ctx, ProposedCall(f"c{i}", "s0__lookup", raw))
        t2 = time.perf_counter()
        assert outcome.ok, outcome.content
        if i >= 20:
            direct.append((t1 - t0) * 1000)
            through.append((t2 - t1) * 1000)
    await manager.aclose()
    return direct, through


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--calls", type=int, default=300)
    parser.add_argument("--postgres", help="also measure with the audit log on this database")
    parser.add_argument("--append", type=Path, help="append the results to this Markdown file")
    ns = parser.parse_args()

    rows: list[str] = []
    with tempfile.TemporaryDirectory() as tmp:
        urls = [("SQLite", f"sqlite:///{Path(tmp) / 'bench.db'}")]
        if ns.postgres:
            urls.append(("PostgreSQL", ns.postgres))
        for label, url in urls:
            db = Database(url)
            if label == "PostgreSQL":  # a clean slate: the pins of an earlier run would match
                from sqlalchemy import text

                async with db.session() as s:
                    await s.exec(text("DELETE FROM mcp_tool_pins WHERE server LIKE 's_'"))  # type: ignore[call-overload]
            direct, through = await overhead(db, ns.calls)
            d50, t50 = percentile(direct, 50), percentile(through, 50)
            d95, t95 = percentile(direct, 95), percentile(through, 95)
            rows.append(
                f"| {label} | {len(direct)} | {d50:.2f} / {d95:.2f} | {t50:.2f} / {t95:.2f} "
                f"| **{t50 - d50:.2f}** / {t95 - d95:.2f} |"
            )
            print(rows[-1])
            if label == "SQLite":
                blocked, all_ready, ready = await startup(db)
            await db.dispose()
    startup_line = (
        f"| 3 stdio servers | {blocked * 1000:.2f} ms | {all_ready:.2f} s "
        f"| {', '.join(f'{r:.2f}' for r in ready)} |"
    )
    print(startup_line)
    body = "\n".join(
        [
            "| audit database | calls | direct SDK call p50 / p95 (ms) "
            "| through the dispatcher p50 / p95 (ms) | Threadline's overhead p50 / p95 (ms) |",
            "|---|---:|---:|---:|---:|",
            *rows,
            "",
            "| start-up | `start()` blocks for | all ready after | each ready after (s) |",
            "|---|---:|---:|---|",
            startup_line,
            "",
            f"- peak RSS of the bench process: {peak_rss_mb():.0f} MB",
            "",
            "Target: Threadline's overhead under 20 ms per MCP tool call on top of the server's "
            "time. Overhead = median of calls through `Dispatcher.dispatch` (lookup, permission, "
            "size, JSON-schema validation, budget, pin/availability check, the call, the cap, "
            "the audit row) minus median of the same call made directly with the SDK client, "
            "interleaved. The pin check itself happens at connect and on each re-listing, not "
            "per call; per call it is an in-memory lookup. Start-up: `start()` only creates the "
            "background tasks; readiness is dominated by each server's Python interpreter "
            "importing the MCP SDK.",
        ]
    )
    if ns.append:
        append_results(ns.append, "MCP tools: overhead per call, start-up", body)


if __name__ == "__main__":
    asyncio.run(main())
