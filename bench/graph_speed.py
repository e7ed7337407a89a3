"""How fast the code graph is built and kept up to date (not a pytest test).

    .venv/bin/python bench/graph_speed.py [--root DIR ...] [--own] [--runs 3]
        [--workers 1 --workers 2] [--append bench/RESULTS.md]

For each corpus (default: the installed SQLAlchemy and hypothesis packages in .venv; `--own`
adds Threadline's core/, adapters/, bot/ and tests/ as one corpus, the chunking bench's), the
files `walk()` selects are read once (so the page cache holds them); then, best of `--runs`,
for each `--workers` N (default 1):

- extract: every file parsed and described as indexing does it
  (`core.code.graph.pool.extract_many`: one worker = batches in a thread of this process;
  more = that many worker processes, started and warmed before timing, their facts sent back
  as the stored JSON and rebuilt here);
- resolve: every file's edges (`core.code.graph.build.resolve_paths`), with all facts in
  memory, in this process;
- files/s = graph files / (extract + resolve); files/CPU-s the same over the CPU time this
  process and its workers used (on a shared machine, the number that other work disturbs
  least).

Then the graph is stored as indexing does (`update_graph` into a fresh SQLite database, with
the last N), and the incremental update of one changed file is timed (parse it, find and
re-resolve the files that depend on it, rewrite in one transaction): a leaf module and a
much-imported one, the median of `--runs`. Peak RSS is the process's after everything.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import sys
import tempfile
import time
from datetime import UTC, datetime
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bench.machine import append_section, machine_facts, peak_rss_mb  # noqa: E402
from core.code.graph.build import resolve_paths  # noqa: E402
from core.code.graph.extract import graph_language  # noqa: E402
from core.code.graph.model import FileFacts  # noqa: E402
from core.code.graph.pool import GraphWorkers, extract_many  # noqa: E402
from core.code.graph.store import update_graph  # noqa: E402
from core.code.walk import walk  # noqa: E402

SITE = ROOT / ".venv" / "lib" / f"python{sys.version_info.major}.{sys.version_info.minor}"
DEFAULT_ROOTS = [SITE / "site-packages" / "sqlalchemy", SITE / "site-packages" / "hypothesis"]
OWN = ("core", "adapters", "bot", "tests")  # what bench/chunking.py reads


def corpus(root: Path, folders: tuple[str, ...] = ()) -> list[str]:
    """The graph files of `root` (only those under `folders`, when given), as `walk()` sees
    each folder."""
    if not folders:
        return [f.path for f in walk(root) if graph_language(f.path) is not None]
    return [
        f"{folder}/{f.path}"
        for folder in folders
        for f in walk(root / folder)
        if graph_language(f.path) is not None
    ]


def _cpu_of(pids: set[int]) -> float:
    """CPU seconds (user + system) the live processes `pids` used so far."""
    total = 0
    for pid in pids:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
        total += int(fields[11]) + int(fields[12])  # utime, stime
    return total / os.sysconf("SC_CLK_TCK")


def _peak_rss_mb(pids: set[int]) -> float:
    """The largest peak RSS among live processes `pids` (0 when none)."""
    peaks = [0.0]
    for pid in pids:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmHWM:"):
                peaks.append(int(line.split()[1]) / 1024)
    return max(peaks)


async def start_pool(workers: GraphWorkers | None) -> tuple[float, set[int]]:
    """Start (and warm) the pool before timing: the app keeps it while it runs."""
    pool = workers.pool() if workers is not None else None
    if pool is None:
        return 0.0, set()
    start = time.perf_counter()
    await pool.wait_started()
    return time.perf_counter() - start, pool.pids()


def measure_cpu(
    root: Path, paths: list[str], runs: int, workers: GraphWorkers | None, pids: set[int]
) -> tuple[float, float, float, int]:
    """Best wall-clock extract and resolve times, the best CPU time of both (this process and
    its workers, so other work on a shared machine inflates it much less), and the edges."""
    best_extract = best_resolve = best_cpu = float("inf")
    edges = 0
    for _ in range(runs):
        cpu = time.process_time() + _cpu_of(pids)
        start = time.perf_counter()
        extracted, _ = asyncio.run(extract_many(root, paths, workers))
        files: dict[str, FileFacts] = {p: f for p, f in extracted.items() if f is not None}
        mid = time.perf_counter()
        edges = sum(len(found) for found in resolve_paths(files, files).values())
        end = time.perf_counter()
        best_cpu = min(best_cpu, time.process_time() + _cpu_of(pids) - cpu)
        best_extract = min(best_extract, mid - start)
        best_resolve = min(best_resolve, end - mid)
    return best_extract, best_resolve, best_cpu, edges


async def measure_update(
    root: Path, paths: list[str], runs: int, workers: GraphWorkers | None
) -> dict[str, float]:
    from core.store.engine import Database
    from core.store.models import Repo

    with tempfile.TemporaryDirectory() as tmp:
        db = Database(f"sqlite:///{tmp}/bench.db")
        async with db.session() as s:
            repo = Repo(name="bench", root=str(root), origin=str(root))
            s.add(repo)
        assert repo.id is not None
        start = time.perf_counter()
        await update_graph(db, repo.id, root, paths, [], paths, workers)
        full = time.perf_counter() - start
        # A leaf (imported by few) and the most imported module (re-resolves many files).
        leaf = next(p for p in reversed(paths) if not p.endswith("__init__.py"))
        hub = next((p for p in paths if p.endswith("util/__init__.py")), paths[0])
        out = {"full store (s)": full}
        for label, path in (("leaf", leaf), ("hub", hub)):
            times = []
            for _ in range(runs):
                start = time.perf_counter()
                await update_graph(db, repo.id, root, [path], [], paths, workers)
                times.append(time.perf_counter() - start)
            out[f"one file, {label} (ms)"] = statistics.median(times) * 1000
            out[f"{label} path"] = path  # type: ignore[assignment]
        await db.dispose()
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--root", type=Path, action="append", help="a corpus (repeatable)")
    parser.add_argument("--own", action="store_true", help="add core+adapters+bot+tests")
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument(
        "--workers", type=int, action="append", help="extraction processes (repeatable)"
    )
    parser.add_argument("--append", type=Path, help="append the table to this Markdown file")
    args = parser.parse_args()
    roots = [r.resolve() for r in args.root] if args.root else DEFAULT_ROOTS
    corpora = [(root.name, root, corpus(root)) for root in roots]
    if args.own:
        corpora.append(("threadline (" + ", ".join(OWN) + ")", ROOT, corpus(ROOT, OWN)))

    rows = []
    for name, root, paths in corpora:
        sources = {p: (root / p).read_bytes() for p in paths}
        for workers in args.workers or [1]:
            owned = GraphWorkers(workers) if workers > 1 else None
            started, pids = asyncio.run(start_pool(owned))
            extract, resolve, cpu, edges = measure_cpu(root, paths, args.runs, owned, pids)
            update = asyncio.run(measure_update(root, paths, args.runs, owned))
            worker_rss = _peak_rss_mb(pids)
            if owned is not None:
                owned.close()
            rate = len(paths) / (extract + resolve)
            rows.append(
                f"| {name} | {workers} | {len(paths)} | "
                f"{sum(map(len, sources.values())) / 1e6:.1f} | "
                f"{edges:,} | {extract:.2f} | {resolve:.2f} | **{rate:.0f}** | "
                f"{len(paths) / cpu:.0f} | {started:.2f} | {worker_rss:.0f} | "
                f"{update['full store (s)']:.2f} | "
                f"{update['one file, leaf (ms)']:.0f} (`{update['leaf path']}`) | "
                f"{update['one file, hub (ms)']:.0f} (`{update['hub path']}`) | "
                f"{os.getloadavg()[0]:.1f} |"
            )
            print(rows[-1], flush=True)
    header = (
        "| corpus | workers | files | MB | edges | extract (s) | resolve (s) | files/s | "
        "files/CPU-s | pool start (s) | worker peak RSS (MB) | store all, SQLite (s) | "
        "update one leaf file (ms) | "
        "update one hub file (ms) | load (1 min) |\n"
        "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|---|---:|"
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
            "Extract with `workers` processes (1: a thread of the bench process), resolve in "
            "the bench process; extract and resolve are the best of the runs (wall clock); "
            "files/CPU-s divides by the best CPU time of the bench process and its workers "
            "for both, which load from other processes inflates much less. Pool start = "
            "starting and warming the workers, once per process, not in the timings; worker "
            "peak RSS = the largest of the workers'. "
            "Store all = "
            "`update_graph` of every file into a fresh SQLite database (parsing included). "
            "Update one file = `update_graph` with that file changed: "
            "parse it, load the stored facts, re-resolve the files that depend on it, rewrite "
            "in one transaction (median of the runs).\n",
        )


if __name__ == "__main__":
    main()
