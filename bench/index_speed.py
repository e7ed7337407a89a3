"""How long indexing a whole repository takes, stage by stage (not a pytest test).

    .venv/bin/python bench/index_speed.py [--root DIR ...] [--database URL] [--runs 3]
        [--append bench/RESULTS.md]

Each run indexes each repository (default: this checkout) from nothing into a fresh database,
as `threadline index` does (`core.code.walk.index_repo`, with the app's graph workers, started
and warmed before timing as a running bot has them): walking, hashing and recording the files,
chunking them (`replace_chunks`), then the code graph (`update_graph`: extraction, resolution,
writing the edges). Embedding is not part of indexing (the vector store catches up on the
next search). `--database` takes a PostgreSQL URL (the repository's rows are deleted after
each run); by default each run gets a new SQLite file. Stage times are the wall-clock time
spent in each stage's function, wrapped by this script; files/s = all files indexed / total.
The best and the median of `--runs` are printed.
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

import core.code.chunk_store as chunk_store  # noqa: E402
import core.code.graph.store as graph_store  # noqa: E402
from bench.machine import append_results, peak_rss_mb  # noqa: E402
from core.code.graph.pool import GraphWorkers  # noqa: E402
from core.code.walk import index_repo  # noqa: E402

STAGES = ("files", "chunks", "graph: extract", "graph: resolve", "graph: write", "graph: other")


def _timed(module: Any, name: str, stage: str, spent: dict[str, float]) -> Callable[[], None]:
    """Wrap `module.name` (async or not) so its wall time adds up in `spent[stage]`; returns
    what puts the original back."""
    original = getattr(module, name)

    if asyncio.iscoroutinefunction(original):

        async def wrapper(*args: Any, **kwargs: Any) -> Any:
            start = time.perf_counter()
            try:
                return await original(*args, **kwargs)
            finally:
                spent[stage] = spent.get(stage, 0.0) + time.perf_counter() - start

    else:

        def wrapper(*args: Any, **kwargs: Any) -> Any:  # type: ignore[misc]
            start = time.perf_counter()
            try:
                return original(*args, **kwargs)
            finally:
                spent[stage] = spent.get(stage, 0.0) + time.perf_counter() - start

    setattr(module, name, wrapper)
    return lambda: setattr(module, name, original)


async def index_once(root: Path, url: str | None, workers: GraphWorkers) -> dict[str, float]:
    from sqlmodel import col, delete

    from core.store.engine import Database
    from core.store.models import Repo

    spent: dict[str, float] = {}
    restore = [
        _timed(chunk_store, "replace_chunks", "chunks", spent),
        _timed(graph_store, "update_graph", "graph", spent),
        _timed(graph_store, "extract_many", "graph: extract", spent),
        _timed(graph_store, "_resolve", "graph: resolve", spent),
        _timed(graph_store, "_write", "graph: write", spent),
    ]
    with tempfile.TemporaryDirectory() as tmp:
        db = Database(url or f"sqlite:///{tmp}/index.db")
        try:
            async with db.session() as s:
                repo = Repo(name=f"bench-{time.time_ns()}", root=str(root), origin=str(root))
                s.add(repo)
            start = time.perf_counter()
            result = await index_repo(db, repo, graph_workers=workers)
            spent["total"] = time.perf_counter() - start
            spent["files indexed"] = len(result.added)
            spent["chunks written"] = result.chunks_written
            if url is not None:
                async with db.session() as s:
                    await s.exec(delete(Repo).where(col(Repo.id) == repo.id))
        finally:
            for undo in restore:
                undo()
            await db.dispose()
    graph = spent.pop("graph", 0.0)
    spent["graph: other"] = graph - sum(spent.get(s, 0.0) for s in STAGES[2:5])
    spent["files"] = spent["total"] - graph - spent.get("chunks", 0.0)
    return spent


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--root", type=Path, action="append", help="a repository (repeatable)")
    parser.add_argument("--database", help="a PostgreSQL URL (default: a new SQLite file)")
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--append", type=Path, help="append the table to this Markdown file")
    args = parser.parse_args()
    roots = [r.resolve() for r in args.root] if args.root else [ROOT]
    workers = GraphWorkers()
    pool = workers.pool()
    if pool is not None:
        asyncio.run(pool.wait_started())
    rows = []
    try:
        for root in roots:
            runs = [asyncio.run(index_once(root, args.database, workers)) for _ in range(args.runs)]
            best = min(runs, key=lambda r: r["total"])
            median_total = statistics.median(r["total"] for r in runs)
            files = int(best["files indexed"])
            stages = " | ".join(f"{best.get(s, 0.0):.2f}" for s in STAGES)
            name = "threadline (this checkout)" if root == ROOT else root.name
            rows.append(
                f"| {name} | {files:,} | {int(best['chunks written']):,} | {stages} | "
                f"**{best['total']:.2f}** | {median_total:.2f} | "
                f"{files / best['total']:.0f} | {files / median_total:.0f} |"
            )
            print(rows[-1], flush=True)
    finally:
        workers.close()
    database = "PostgreSQL" if args.database else "SQLite"
    header = (
        f"| repository | files | chunks | {' (s) | '.join(STAGES)} (s) | total, best (s) | "
        "total, median (s) | files/s, best | files/s, median |\n"
        "|---|---:|---:|" + "---:|" * len(STAGES) + "---:|---:|---:|---:|"
    )
    table = "\n".join([header, *rows])
    print(table)
    print(f"peak RSS {peak_rss_mb():.0f} MB")
    if args.append:
        append_results(
            args.append,
            f"Indexing a repository, stage by stage ({database})",
            f"{table}\n\nStages of the best run ({args.runs} runs); peak RSS of the bench "
            f"process: {peak_rss_mb():.0f} MB. Method: the docstring of bench/index_speed.py.",
        )


if __name__ == "__main__":
    main()
