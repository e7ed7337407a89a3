"""Where embedded Qdrant spends its time, and what Threadline does instead (not a pytest test).

    .venv/bin/python bench/qdrant_local.py [--points 10000] [--queries 50]
        [--append bench/RESULTS.md]

The setting of the issue's starting facts: `--points` random 384-d unit vectors, each with a
random sparse vector (~60 distinct terms drawn Zipf-like from a 30,000-term vocabulary, BM25-ish
weights) and a payload naming one of 5 repositories; queries are random too (a dense vector, 6
sparse terms), with a filter on 2 of the repositories where a step says so. No embedding model
runs: this times the stores only.

1. Upsert (100 points a call) into Qdrant local mode on disk, with qdrant-client's SQLite
   defaults and with the WAL tuning Threadline applies (`core.code.vectors._tune_local_storage`).
2. Qdrant's query API in local mode: dense, dense + filter, sparse (IDF), sparse + filter, and
   the RRF fusion of both prefetches with the filter (what a hybrid search is).
3. Threadline's in-memory mirror (`core.code.vectors`): compile once, then the same searches.
4. The share of a fused, filtered query spent on evaluating the payload filter alone.
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
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
    threadline_version,
)
from core.code.sparse import Sparse  # noqa: E402
from core.code.vectors import (  # noqa: E402
    DENSE,
    LEG_LIMIT,
    RRF_K,
    SPARSE,
    _compile,
    _mirror_search,
    _Point,
    _tune_local_storage,
)

DIM = 384
VOCAB = 30_000
TERMS_PER_POINT = 60
REPOS = [f"repo{i}" for i in range(5)]
FILTER_REPOS = REPOS[:2]
BATCH = 100


def make_points(n: int, seed: int = 7) -> list[tuple[int, np.ndarray, Sparse, dict[str, Any]]]:
    rng = np.random.default_rng(seed)
    dense = rng.standard_normal((n, DIM)).astype(np.float32)
    dense /= np.linalg.norm(dense, axis=1, keepdims=True)
    ranks = np.arange(1, VOCAB + 1)
    zipf = (1 / ranks) / (1 / ranks).sum()
    points = []
    for i in range(n):
        terms = np.unique(rng.choice(VOCAB, size=TERMS_PER_POINT, p=zipf))
        weights = rng.uniform(0.3, 2.0, size=len(terms)).astype(np.float32)
        payload = {"repo": REPOS[i % len(REPOS)], "path": f"f{i % 997}.py", "name": f"fn{i}"}
        points.append((i + 1, dense[i], Sparse(terms.tolist(), weights.tolist()), payload))
    return points


def make_queries(n: int, seed: int = 11) -> list[tuple[np.ndarray, Sparse]]:
    rng = np.random.default_rng(seed)
    out = []
    for _ in range(n):
        q = rng.standard_normal(DIM).astype(np.float32)
        terms = sorted(set(rng.integers(0, 2_000, size=6).tolist()))  # common-ish terms
        out.append((q / np.linalg.norm(q), Sparse(terms, [1.0] * len(terms))))
    return out


async def upsert_all(client: Any, name: str, points: list[Any]) -> float:
    from qdrant_client.http import models as qm

    started = time.perf_counter()
    for start in range(0, len(points), BATCH):
        batch = [
            qm.PointStruct(
                id=pid,
                vector={
                    DENSE: vec.tolist(),
                    SPARSE: qm.SparseVector(indices=sp.indices, values=sp.values),
                },
                payload=payload,
            )
            for pid, vec, sp, payload in points[start : start + BATCH]
        ]
        await client.upsert(name, points=batch, wait=True)
    return time.perf_counter() - started


async def new_collection(path: Path, tuned: bool) -> tuple[Any, str]:
    from qdrant_client import AsyncQdrantClient
    from qdrant_client.http import models as qm

    client = AsyncQdrantClient(path=str(path))
    name = "bench"
    await client.create_collection(
        name,
        vectors_config={DENSE: qm.VectorParams(size=DIM, distance=qm.Distance.COSINE)},
        sparse_vectors_config={SPARSE: qm.SparseVectorParams(modifier=qm.Modifier.IDF)},
    )
    if tuned and not _tune_local_storage(client, name):
        raise SystemExit("could not tune the local storage: qdrant-client internals changed")
    return client, name


async def time_ms(call: Callable[[], Awaitable[Any]], runs: int) -> dict[str, float]:
    await call()  # warm-up
    samples = []
    for _ in range(runs):
        started = time.perf_counter()
        await call()
        samples.append((time.perf_counter() - started) * 1000)
    samples.sort()
    return {
        "p50": statistics.median(samples),
        "p95": samples[max(0, round(0.95 * len(samples)) - 1)],
    }


async def api_searches(
    client: Any, name: str, queries: list[tuple[np.ndarray, Sparse]]
) -> dict[str, dict[str, float]]:
    from qdrant_client.http import models as qm

    where = qm.Filter(must=[qm.FieldCondition(key="repo", match=qm.MatchAny(any=FILTER_REPOS))])
    it = iter(queries * 1000)

    def sparse_vector(sp: Sparse) -> Any:
        return qm.SparseVector(indices=sp.indices, values=sp.values)

    async def dense(filtered: bool) -> None:
        q, _ = next(it)
        await client.query_points(
            name, query=q.tolist(), using=DENSE, query_filter=where if filtered else None, limit=10
        )

    async def sparse(filtered: bool) -> None:
        _, sp = next(it)
        await client.query_points(
            name,
            query=sparse_vector(sp),
            using=SPARSE,
            query_filter=where if filtered else None,
            limit=10,
        )

    async def fused() -> None:
        q, sp = next(it)
        await client.query_points(
            name,
            prefetch=[
                qm.Prefetch(query=q.tolist(), using=DENSE, limit=LEG_LIMIT, filter=where),
                qm.Prefetch(query=sparse_vector(sp), using=SPARSE, limit=LEG_LIMIT, filter=where),
            ],
            query=qm.RrfQuery(rrf=qm.Rrf(k=RRF_K)),
            limit=10,
        )

    runs = len(queries)
    return {
        "dense": await time_ms(lambda: dense(False), runs),
        "dense + filter": await time_ms(lambda: dense(True), runs),
        "sparse (IDF)": await time_ms(lambda: sparse(False), runs),
        "sparse (IDF) + filter": await time_ms(lambda: sparse(True), runs),
        "RRF of both + filter": await time_ms(fused, runs),
    }


def filter_share(client: Any, name: str, runs: int = 20) -> float:
    """ms to evaluate the repo filter over every point once (what each filtered leg pays)."""
    from qdrant_client.http import models as qm

    collection = client._client.collections[name]  # local mode internals: measurement only
    where = qm.Filter(must=[qm.FieldCondition(key="repo", match=qm.MatchAny(any=FILTER_REPOS))])
    started = time.perf_counter()
    for _ in range(runs):
        collection._payload_and_non_deleted_mask(where, vector_name=DENSE)
    return (time.perf_counter() - started) * 1000 / runs


async def mirror_searches(
    points: list[Any], queries: list[tuple[np.ndarray, Sparse]]
) -> tuple[float, dict[str, dict[str, float]]]:
    started = time.perf_counter()
    compiled = _compile([(pid, _Point(vec, sp, {**pl})) for pid, vec, sp, pl in points], DIM)
    compile_s = time.perf_counter() - started
    it = iter(queries * 1000)

    async def run(mode: str, repos: list[str] | None) -> None:
        q, sp = next(it)
        _mirror_search(compiled, q, sp, [], repos, 10, mode)  # type: ignore[arg-type]

    runs = len(queries)
    return compile_s, {
        "dense": await time_ms(lambda: run("dense", None), runs),
        "dense + filter": await time_ms(lambda: run("dense", FILTER_REPOS), runs),
        "sparse (IDF)": await time_ms(lambda: run("sparse", None), runs),
        "sparse (IDF) + filter": await time_ms(lambda: run("sparse", FILTER_REPOS), runs),
        "RRF of both + filter": await time_ms(lambda: run("hybrid", FILTER_REPOS), runs),
    }


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--points", type=int, default=10_000)
    parser.add_argument("--queries", type=int, default=50)
    parser.add_argument("--append", type=Path)
    args = parser.parse_args()

    load_before = load_avg()
    points = make_points(args.points)
    for p in points:  # payloads as Threadline stores them (a `name` for the symbol leg)
        p[3]["start_line"], p[3]["end_line"] = 1, 2
    queries = make_queries(args.queries)
    with tempfile.TemporaryDirectory() as tmp:
        plain, plain_name = await new_collection(Path(tmp) / "plain", tuned=False)
        plain_s = await upsert_all(plain, plain_name, points)
        await plain.close()
        tuned, name = await new_collection(Path(tmp) / "tuned", tuned=True)
        tuned_s = await upsert_all(tuned, name, points)
        api = await api_searches(tuned, name, queries)
        mask_ms = filter_share(tuned, name)
        await tuned.close()
    compile_s, mirror = await mirror_searches(points, queries)

    n = args.points
    lines = [
        f"## Embedded Qdrant vs the mirror — {datetime.now(UTC):%Y-%m-%d %H:%M} UTC",
        "",
        f"Command: `.venv/bin/python bench/qdrant_local.py --points {n} --queries {args.queries}`",
        "",
        f"- threadline: {threadline_version()}",
        f"- cpus (nproc): {nproc()}; cpu: {cpu_model()}",
        f"- load average (1/5/15 min): {load_before} at start, {load_avg()} at end",
        f"- {n} random 384-d points, ~{TERMS_PER_POINT} sparse terms each, 5 repos; "
        f"filter = 2 of them; {args.queries} random queries; ms",
        "",
        "| upsert (100 points a call, on disk) | total s | ms/point |",
        "|---|---:|---:|",
        f"| qdrant-client defaults | {plain_s:.1f} | {plain_s / n * 1000:.2f} |",
        f"| WAL + synchronous=NORMAL (Threadline) | {tuned_s:.1f} | {tuned_s / n * 1000:.2f} |",
        "",
        "| search | Qdrant query API, local mode p50 / p95 | Threadline mirror p50 / p95 |",
        "|---|---:|---:|",
    ]
    for label in api:
        a, m = api[label], mirror[label]
        lines.append(
            f"| {label} | {a['p50']:.1f} / {a['p95']:.1f} | {m['p50']:.2f} / {m['p95']:.2f} |"
        )
    lines += [
        "",
        f"- evaluating the repo filter over all points once (Qdrant local mode, Python per "
        f"point): {mask_ms:.1f} ms; a fused query evaluates it once per leg",
        f"- mirror compile (once per process and after writes): {compile_s * 1000:.0f} ms",
        f"- peak RSS: {peak_rss_mb():.0f} MB",
        "",
        "Local mode scores sparse vectors with a Python merge-join per point and checks payload",
        "filters with Python per point; the mirror keeps a NumPy matrix, an inverted index and",
        "per-repo masks, and fuses with the same formulas (tests check the rankings agree).",
        "",
    ]
    text = "\n".join(lines)
    print(text)
    if args.append:
        append_section(args.append, text)
        print(f"appended to {args.append}")


if __name__ == "__main__":
    asyncio.run(main())
