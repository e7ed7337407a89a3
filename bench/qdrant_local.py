"""The embedded vector store alone: a Qdrant Edge shard driven as Threadline drives it (not a
pytest test).

    .venv/bin/python bench/qdrant_local.py [--points 10000] [--queries 200]
        [--append bench/RESULTS.md]

`--points` random 384-d unit vectors, each with a random sparse vector (~60 distinct terms drawn
Zipf-like from a 30,000-term vocabulary, BM25-ish weights) and a payload naming one of 5
repositories and one of the roles; queries are random too (a dense vector, 6 sparse terms). No
embedding model runs: this times the store only, through `core.code.edge_store.EdgeBackend` and
the `QueryPlan`s `core.code.vectors.plan_search` builds (so: the store as the bot uses it,
payloads returned, writes flushed).

1. Upsert into a new shard on disk, in calls of 64 points (the app's embedding batch) and of
   1,000.
2. Queries, one at a time: dense, dense + repo filter, sparse (IDF), sparse + filter, hybrid
   (dense + sparse prefetches, repo filter, RRF k=60; 60 fused candidates, as the role rerank
   takes them), hybrid with the exact-symbol leg and a role filter. Then the hybrid query from
   two threads at once (throughput).
3. Deleting 10% of the points (then the vacuum `delete` runs), and the hybrid query after it.
4. Close, and reopen in a new process (time to a first answer, RSS).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Awaitable, Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bench.machine import (  # noqa: E402
    append_section,
    cpu_model,
    load_avg,
    nproc,
    peak_rss_mb,
    rss_mb,
    threadline_version,
)
from core.code.edge_store import EdgeBackend  # noqa: E402
from core.code.roles import ROLES  # noqa: E402
from core.code.sparse import Sparse  # noqa: E402
from core.code.vector_query import PointData, QueryPlan, SparseQuery  # noqa: E402
from core.code.vectors import RERANK_POOL, plan_search  # noqa: E402

DIM = 384
VOCAB = 30_000
TERMS_PER_POINT = 60
REPOS = [f"repo{i}" for i in range(5)]
FILTER_REPOS = REPOS[:2]


def make_points(n: int, seed: int = 7) -> list[PointData]:
    rng = np.random.default_rng(seed)
    dense = rng.standard_normal((n, DIM)).astype(np.float32)
    dense /= np.linalg.norm(dense, axis=1, keepdims=True)
    ranks = np.arange(1, VOCAB + 1)
    zipf = (1 / ranks) / (1 / ranks).sum()
    points = []
    for i in range(n):
        terms = np.unique(rng.choice(VOCAB, size=TERMS_PER_POINT, p=zipf))
        weights = rng.uniform(0.3, 2.0, size=len(terms)).astype(np.float32)
        payload = {
            "repo": REPOS[i % len(REPOS)],
            "path": f"f{i % 997}.py",
            "name": f"fn{i % 3000}",
            "role": ROLES[i % len(ROLES)],
            "symbol": f"fn{i}()",
            "kind": "function",
            "language": "python",
            "start_line": 1,
            "end_line": 20,
            "digest": f"{i:040x}",
        }
        points.append(
            PointData(
                i + 1, dense[i].tolist(), SparseQuery(terms.tolist(), weights.tolist()), payload
            )
        )
    return points


def make_queries(n: int, seed: int = 11) -> list[tuple[list[float], Sparse]]:
    rng = np.random.default_rng(seed)
    out = []
    for _ in range(n):
        q = rng.standard_normal(DIM).astype(np.float32)
        terms = sorted(set(rng.integers(0, 2_000, size=6).tolist()))  # common-ish terms
        out.append(((q / np.linalg.norm(q)).tolist(), Sparse(terms, [1.0] * len(terms))))
    return out


def plans(queries: list[tuple[list[float], Sparse]]) -> dict[str, list[QueryPlan]]:
    def each(**kw: Any) -> list[QueryPlan]:
        out = []
        for dense, sparse in queries:
            plan = plan_search(dense, sparse, kw.pop("names", None) or [], **kw)
            assert plan is not None
            out.append(plan)
        return out

    return {
        "dense": each(repos=None, roles=None, limit=10, mode="dense"),
        "dense + repo filter": each(repos=FILTER_REPOS, roles=None, limit=10, mode="dense"),
        "sparse (IDF)": each(repos=None, roles=None, limit=10, mode="sparse"),
        "sparse (IDF) + repo filter": each(repos=FILTER_REPOS, roles=None, limit=10, mode="sparse"),
        "hybrid: RRF of both + repo filter": each(
            repos=FILTER_REPOS, roles=None, limit=RERANK_POOL, mode="hybrid"
        ),
        "hybrid + exact-symbol leg + role filter": each(
            repos=FILTER_REPOS,
            roles=["source", "test"],
            limit=RERANK_POOL,
            mode="hybrid",
            names=["fn17", "fn42"],
        ),
    }


def dist(ms: list[float]) -> dict[str, float]:
    ordered = sorted(ms)
    return {
        "p50": ordered[len(ordered) // 2],
        "p95": ordered[min(len(ordered) - 1, int(len(ordered) * 0.95))],
        "mean": statistics.mean(ordered),
    }


async def timed(calls: list[Callable[[], Awaitable[Any]]]) -> list[float]:
    out = []
    for call in calls:
        t0 = time.perf_counter()
        await call()
        out.append((time.perf_counter() - t0) * 1000)
    return out


async def upsert(backend: EdgeBackend, points: list[PointData], batch: int) -> float:
    t0 = time.perf_counter()
    for start in range(0, len(points), batch):
        await backend.upsert(points[start : start + batch])
    return time.perf_counter() - t0


async def measure(path: Path, n: int, n_queries: int) -> dict[str, Any]:
    out: dict[str, Any] = {"rss_start_mb": rss_mb()}
    points = make_points(n)
    queries = make_queries(n_queries)
    out["rss_points_made_mb"] = rss_mb()
    small = EdgeBackend.open(path / "b64", DIM)
    out["upsert_64_s"] = await upsert(small, points, 64)
    await small.close()
    t0 = time.perf_counter()
    backend = EdgeBackend.open(path / "bench", DIM)
    out["create_s"] = time.perf_counter() - t0
    out["upsert_1000_s"] = await upsert(backend, points, 1000)
    out["rss_after_upsert_mb"] = rss_mb()
    by_kind = plans(queries)
    out["search"] = {}
    for label, kind_plans in by_kind.items():
        await backend.query(kind_plans[0])  # warm-up
        ms = await timed([lambda p=p: backend.query(p) for p in kind_plans])  # type: ignore[misc]
        out["search"][label] = dist(ms)
    hybrid = by_kind["hybrid: RRF of both + repo filter"]

    async def stream(part: list[QueryPlan]) -> None:
        for p in part:
            await backend.query(p)

    t0 = time.perf_counter()
    await asyncio.gather(stream(hybrid[::2]), stream(hybrid[1::2]))
    out["two_threads_qps"] = len(hybrid) / (time.perf_counter() - t0)
    t0 = time.perf_counter()
    await backend.delete([p.id for p in points[::10]])
    out["delete_10pct_s"] = time.perf_counter() - t0
    out["search_after_delete"] = dist(
        await timed([lambda p=p: backend.query(p) for p in hybrid])  # type: ignore[misc]
    )
    out["rss_end_mb"] = rss_mb()
    t0 = time.perf_counter()
    await backend.close()
    out["close_s"] = time.perf_counter() - t0
    out["reopen"] = reopen(path / "bench", hybrid[0])
    out["peak_mb"] = peak_rss_mb()
    return out


PROBE = """
import asyncio, json, sys, time
t0 = time.perf_counter()
sys.path.insert(0, sys.argv[1])
from bench.machine import rss_mb
from core.code.edge_store import EdgeBackend
from core.code.vector_query import Leg, QueryPlan, SparseQuery, Where
imported = time.perf_counter() - t0
rss0 = rss_mb()
t1 = time.perf_counter()
backend = EdgeBackend.open(__import__("pathlib").Path(sys.argv[2]), 384)
opened = time.perf_counter() - t1
plan = QueryPlan(
    (
        Leg("dense", json.loads(sys.argv[3]), Where(repos=("repo0", "repo1")), 60),
        Leg("sparse", SparseQuery([1, 5, 9], [1.0, 1.0, 1.0]), Where(repos=("repo0", "repo1")), 60),
    ),
    60,
    (1.0, 1.0),
)
async def main():
    t = time.perf_counter()
    await backend.query(plan)
    first = time.perf_counter() - t
    await backend.close()
    return first
first = asyncio.run(main())
print(json.dumps({"import_s": imported, "open_s": opened, "first_query_s": first,
                  "rss_before_open_mb": rss0, "rss_open_mb": rss_mb()}))
"""


def reopen(path: Path, plan: QueryPlan) -> dict[str, Any]:
    dense = plan.legs[0].vector
    assert isinstance(dense, list)
    t0 = time.perf_counter()
    proc = subprocess.run(
        [sys.executable, "-c", PROBE, str(ROOT), str(path), json.dumps(dense)],
        capture_output=True,
        text=True,
        check=True,
    )
    result: dict[str, Any] = json.loads(proc.stdout.strip().splitlines()[-1])
    result["process_s"] = time.perf_counter() - t0
    return result


def markdown(r: dict[str, Any], args: argparse.Namespace, load0: str, load1: str) -> str:
    stamp = datetime.now(UTC).strftime("%Y-%m-%d %H:%M UTC")
    rows = "\n".join(
        f"| {label} | {d['p50']:.2f} | {d['p95']:.2f} | {d['mean']:.2f} |"
        for label, d in r["search"].items()
    )
    ro = r["reopen"]
    after = r["search_after_delete"]
    per_s_64 = args.points / r["upsert_64_s"]
    per_s_1000 = args.points / r["upsert_1000_s"]
    after_row = f"{after['p50']:.2f} | {after['p95']:.2f} | {after['mean']:.2f}"
    return f"""## Embedded store alone: Qdrant Edge — {stamp}

Command: `.venv/bin/python bench/qdrant_local.py --points {args.points} --queries {args.queries}`

- threadline: {threadline_version()}
- cpus (nproc): {nproc()}; cpu: {cpu_model()}
- load average (1/5/15 min): {load0} at start, {load1} at end
- {args.points} random 384-d points, ~60 sparse terms each, 5 repos, 6 roles; filter = 2 repos;
  {args.queries} random queries; `EdgeBackend` as the app drives it (writes flushed, payloads
  returned, exact search)

| upsert into a new shard on disk | seconds | points/s |
|---|---:|---:|
| calls of 64 points (the app's embedding batch) | {r["upsert_64_s"]:.2f} | {per_s_64:.0f} |
| calls of 1,000 points | {r["upsert_1000_s"]:.2f} | {per_s_1000:.0f} |

| query (ms) | p50 | p95 | mean |
|---|---:|---:|---:|
{rows}
| hybrid + repo filter after deleting 10% (vacuumed) | {after_row} |

- hybrid from two threads at once: {r["two_threads_qps"]:.0f} queries/s
- deleting 10% of the points, vacuum included: {r["delete_10pct_s"]:.2f} s
- RSS: {r["rss_start_mb"]:.0f} MB at start, {r["rss_points_made_mb"]:.0f} MB with the points
  made in Python, {r["rss_after_upsert_mb"]:.0f} MB after the upserts, {r["rss_end_mb"]:.0f} MB
  at the end; peak {r["peak_mb"]:.0f} MB
- close (flush): {r["close_s"]:.2f} s
- reopen in a new process: imports {ro["import_s"]:.2f} s, **open {ro["open_s"]:.2f} s**, first
  hybrid query {ro["first_query_s"] * 1000:.1f} ms; whole process {ro["process_s"]:.2f} s; RSS
  {ro["rss_before_open_mb"]:.0f} MB before the open, **{ro["rss_open_mb"]:.0f} MB** with the
  shard open
"""


async def run(args: argparse.Namespace) -> int:
    load0 = load_avg()
    with tempfile.TemporaryDirectory(prefix="edge-bench-") as tmp:
        r = await measure(Path(tmp), args.points, args.queries)
    text = markdown(r, args, load0, load_avg())
    print(text)
    if args.append:
        append_section(args.append, text)
    return 0


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--points", type=int, default=10_000)
    parser.add_argument("--queries", type=int, default=200)
    parser.add_argument("--append", type=Path, help="append the Markdown to this file")
    return asyncio.run(run(parser.parse_args()))


if __name__ == "__main__":
    sys.exit(main())
