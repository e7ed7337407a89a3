"""What hybrid search's fusion costs in the store: RRF against DBSF, paired, on one index.

    OPENBLAS_NUM_THREADS=1 .venv/bin/python bench/fusion_cost.py [--data DIR] [--queries 240]
        [--rounds 5] [--append bench/RESULTS.md]

Not a pytest test. Reuses the index bench/search_speed.py built (DIR defaults to its data dir,
bench/.cache/speed/data; run that first) and its seeded queries over the corpus' own words and
identifiers. Each query is embedded once; then its hybrid `QueryPlan` (the product's
`plan_search`, three legs, repo filter) is run by the embedded Qdrant Edge backend with
`fusion="rrf"` and `fusion="dbsf"`, alternately, `--rounds` times: only the store's query is
timed (no embedding, no rerank, no SQL), so the difference is the fusion's. The two orders
alternate from round to round, so neither fusion always runs on a warmer cache.
"""

from __future__ import annotations

import argparse
import asyncio
import sys
import time
from dataclasses import replace
from datetime import UTC, datetime
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bench.machine import (  # noqa: E402
    append_section,
    cpu_model,
    load_avg,
    nproc,
    percentile,
    python_version,
    threadline_version,
)
from bench.search_speed import (  # noqa: E402
    DATA_DIR,
    corpus_vocabulary,
    hybrid_plans,
    make_app,
    make_queries,
)
from core.code.query_terms import dense_text  # noqa: E402
from core.code.vector_query import Fusion, QueryPlan  # noqa: E402
from core.code.vectors import RERANK_POOL  # noqa: E402


async def plans(data_dir: Path, n: int) -> list[QueryPlan]:
    app = make_app(data_dir)
    try:
        store = await app.search.store()
        queries = make_queries(n, *await corpus_vocabulary(app))
        vectors = store.embedder.embed([dense_text(q) for q in queries])
        return hybrid_plans(queries, vectors)
    finally:
        await app.aclose()


async def timings(
    data_dir: Path, all_plans: list[QueryPlan], rounds: int
) -> dict[str, list[float]]:
    app = make_app(data_dir)
    times: dict[str, list[float]] = {"rrf": [], "dbsf": []}
    try:
        backend = (await app.search.store()).backend
        for plan in all_plans[:10]:  # warm-up, untimed
            await backend.query(plan)
        for r in range(rounds):
            order: tuple[Fusion, Fusion] = ("rrf", "dbsf") if r % 2 == 0 else ("dbsf", "rrf")
            for plan in all_plans:
                for fusion in order:
                    t0 = time.perf_counter()
                    await backend.query(replace(plan, fusion=fusion))
                    times[fusion].append((time.perf_counter() - t0) * 1000)
    finally:
        await app.aclose()
    return times


def markdown(times: dict[str, list[float]], n: int, rounds: int, invocation: str) -> str:
    lines = [
        f"Command: `{invocation}`",
        "",
        f"- threadline: {threadline_version()}",
        f"- cpus (nproc): {nproc()}",
        f"- cpu: {cpu_model()}",
        f"- python: {python_version()}",
        f"- load average (1/5/15 min) when written: {load_avg()}",
        "",
        f"The store's hybrid query alone (3 legs, repo filter, {RERANK_POOL} fused candidates "
        f"with payloads), {n} queries x {rounds} rounds, the two fusions alternated; ms:",
        "",
        "| fusion | p50 | p95 | p99 | mean |",
        "|---|---:|---:|---:|---:|",
    ]
    for fusion, values in times.items():
        lines.append(
            f"| {fusion} | {percentile(values, 50):.2f} | {percentile(values, 95):.2f} | "
            f"{percentile(values, 99):.2f} | {sum(values) / len(values):.2f} |"
        )
    return "\n".join(lines) + "\n"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", type=Path, default=DATA_DIR, help="an indexed data dir")
    parser.add_argument("--queries", type=int, default=240)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--append", type=Path, metavar="FILE")
    args = parser.parse_args()
    if not (args.data / "qdrant-edge").exists():
        raise SystemExit(f"no index under {args.data}: run bench/search_speed.py first")
    all_plans = asyncio.run(plans(args.data, args.queries))
    times = asyncio.run(timings(args.data, all_plans, args.rounds))
    invocation = "OPENBLAS_NUM_THREADS=1 .venv/bin/python bench/fusion_cost.py " + " ".join(
        sys.argv[1:]
    )
    stamp = datetime.now(UTC).strftime("%Y-%m-%d %H:%M UTC")
    text = f"## Hybrid fusion cost: RRF vs DBSF — {stamp}\n\n" + markdown(
        times, len(all_plans), args.rounds, invocation.strip()
    )
    print(text)
    if args.append:
        append_section(args.append, text)
        print(f"appended to {args.append}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
