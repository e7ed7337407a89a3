"""How fast the code graph is built and kept up to date (not a pytest test).

    .venv/bin/python bench/graph_speed.py [--root DIR ...] [--runs 3] [--append bench/RESULTS.md]

For each corpus (default: the installed SQLAlchemy and hypothesis packages in .venv), the
files `walk()` selects are read into memory once; then, best of `--runs`, one thread:

- extract: every file parsed and described (`core.code.graph.build.extract_files`);
- resolve: every file's edges (`core.code.graph.build.resolve_paths`), with all facts in
  memory;
- files/s = graph files / (extract + resolve); files/CPU-s the same over the CPU time this
  process used (on a shared machine, the number that other work disturbs least).

Then the graph is stored as indexing does (`update_graph` into a fresh SQLite database), and
the incremental update of one changed file is timed (parse it, find and re-resolve the files
that depend on it, rewrite in one transaction): a leaf module and a much-imported one, the
median of `--runs`. Peak RSS is the process's after everything.
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import sys
import tempfile
import time
from datetime import UTC, datetime
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bench.machine import append_section, machine_facts, peak_rss_mb  # noqa: E402
from core.code.graph.build import extract_files, resolve_paths  # noqa: E402
from core.code.graph.extract import graph_language  # noqa: E402
from core.code.graph.store import update_graph  # noqa: E402
from core.code.walk import walk  # noqa: E402

SITE = ROOT / ".venv" / "lib" / f"python{sys.version_info.major}.{sys.version_info.minor}"
DEFAULT_ROOTS = [SITE / "site-packages" / "sqlalchemy", SITE / "site-packages" / "hypothesis"]


def measure_cpu(sources: dict[str, bytes], runs: int) -> tuple[float, float, float, int]:
    """Best wall-clock extract and resolve times, the best CPU time of both (this process
    only, so other work on a shared machine inflates it much less), and the edge count."""
    best_extract = best_resolve = best_cpu = float("inf")
    edges = 0
    for _ in range(runs):
        cpu = time.process_time()
        start = time.perf_counter()
        files = extract_files(sources)
        mid = time.perf_counter()
        edges = sum(len(found) for found in resolve_paths(files, files).values())
        end = time.perf_counter()
        best_cpu = min(best_cpu, time.process_time() - cpu)
        best_extract = min(best_extract, mid - start)
        best_resolve = min(best_resolve, end - mid)
    return best_extract, best_resolve, best_cpu, edges


async def measure_update(root: Path, paths: list[str], runs: int) -> dict[str, float]:
    from core.store.engine import Database
    from core.store.models import Repo

    with tempfile.TemporaryDirectory() as tmp:
        db = Database(f"sqlite:///{tmp}/bench.db")
        async with db.session() as s:
            repo = Repo(name="bench", root=str(root), origin=str(root))
            s.add(repo)
        assert repo.id is not None
        start = time.perf_counter()
        await update_graph(db, repo.id, root, paths, [], paths)
        full = time.perf_counter() - start
        # A leaf (imported by few) and the most imported module (re-resolves many files).
        leaf = next(p for p in reversed(paths) if not p.endswith("__init__.py"))
        hub = next((p for p in paths if p.endswith("util/__init__.py")), paths[0])
        out = {"full store (s)": full}
        for label, path in (("leaf", leaf), ("hub", hub)):
            times = []
            for _ in range(runs):
                start = time.perf_counter()
                await update_graph(db, repo.id, root, [path], [], paths)
                times.append(time.perf_counter() - start)
            out[f"one file, {label} (ms)"] = statistics.median(times) * 1000
            out[f"{label} path"] = path  # type: ignore[assignment]
        await db.dispose()
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--root", type=Path, action="append", help="a corpus (repeatable)")
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--append", type=Path, help="append the table to this Markdown file")
    args = parser.parse_args()
    roots = [r.resolve() for r in args.root] if args.root else DEFAULT_ROOTS

    rows = []
    for root in roots:
        paths = [f.path for f in walk(root) if graph_language(f.path) is not None]
        sources = {p: (root / p).read_bytes() for p in paths}
        extract, resolve, cpu, edges = measure_cpu(sources, args.runs)
        update = asyncio.run(measure_update(root, paths, args.runs))
        rate = len(paths) / (extract + resolve)
        rows.append(
            f"| {root.name} | {len(paths)} | {sum(map(len, sources.values())) / 1e6:.1f} | "
            f"{edges:,} | {extract:.2f} | {resolve:.2f} | **{rate:.0f}** | "
            f"{len(paths) / cpu:.0f} | "
            f"{update['full store (s)']:.2f} | "
            f"{update['one file, leaf (ms)']:.0f} (`{update['leaf path']}`) | "
            f"{update['one file, hub (ms)']:.0f} (`{update['hub path']}`) |"
        )
        print(rows[-1], flush=True)
    header = (
        "| corpus | files | MB | edges | extract (s) | resolve (s) | files/s | files/CPU-s | "
        "store all, SQLite (s) | update one leaf file (ms) | update one hub file (ms) |\n"
        "|---|---:|---:|---:|---:|---:|---:|---:|---:|---|---|"
    )
    table = "\n".join([header, *rows])
    print(table)
    print(f"peak RSS {peak_rss_mb():.0f} MB")
    if args.append:
        stamp = datetime.now(UTC).strftime("%Y-%m-%d %H:%M UTC")
        facts = "\n".join(f"- {k}: {v}" for k, v in machine_facts().items())
        append_section(
            args.append,
            f"## Code graph: build and update speed — {stamp}\n\n"
            f"Command: `.venv/bin/python bench/graph_speed.py {' '.join(sys.argv[1:])}`\n\n"
            f"{facts}\n\n{table}\n\nPeak RSS of the bench process: {peak_rss_mb():.0f} MB.\n\n"
            "One thread, files read into memory first; extract and resolve are the best of "
            "the runs (wall clock); files/CPU-s divides by the best CPU time of this process "
            "for both, which load from other processes inflates much less. Store all = "
            "`update_graph` of every file into a fresh SQLite database (parsing included). "
            "Update one file = `update_graph` with that file changed: "
            "parse it, load the stored facts, re-resolve the files that depend on it, rewrite "
            "in one transaction (median of the runs).\n",
        )


if __name__ == "__main__":
    main()
