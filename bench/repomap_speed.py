"""How fast the repo map is built on a ~1,000-file repository (not a pytest test).

    .venv/bin/python bench/repomap_speed.py [--data bench/.cache/speed/data] [--runs 15]
        [--append bench/RESULTS.md]

Reuses the data dir `bench/search_speed.py` indexes (bench/.cache/speed: ~987 Python files,
the graph stored by that index), read only. For each conversation below, in one process with
the database open:

- cold: the stored graph loaded (`load_graph` with its cache emptied: the first map after the
  graph changed), seeds found, PageRank, signatures read from disk, the map cut at its budget;
- warm: the same with the graph cached (every later map until the next index).

Then `threadline map --repo NAME` as a new process (wall time, interpreter start included).
"""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import subprocess
import sys
import time
from datetime import UTC, datetime
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bench.machine import (  # noqa: E402
    append_section,
    machine_facts,
    peak_rss_mb,
    percentile,
)

CONVERSATIONS = [
    ("no file or symbol named", "how is this project organised?"),
    ("a symbol", "who calls `Client.send` and what does it call?"),
    ("a file", "explain httpx/_client.py"),
]


async def measure(data: Path, runs: int) -> tuple[list[str], dict[str, str]]:
    from core.code.graph import focus, outline, rank
    from core.memory.tokens import TokenCounter
    from core.store.engine import Database
    from core.store.models import Repo

    db = Database(f"sqlite:///{data / 'threadline.db'}")
    async with db.session() as s:
        from sqlmodel import select

        repo = (await s.exec(select(Repo))).first()
    assert repo is not None and repo.id is not None
    count = TokenCounter().count_text
    rows: list[str] = []
    facts: dict[str, str] = {"repo": f"{repo.name}, {repo.file_count} files"}

    async def once(text: str, cold: bool) -> tuple[float, outline.RepoMap]:
        if cold:
            rank._CACHE.clear()
        start = time.perf_counter()
        graph = await rank.load_graph(db, repo.id or 0)
        assert graph is not None
        found = focus.seeds(graph, text)
        built = outline.build_map(
            graph, Path(repo.root), repo.name, found, outline.default_budget(found), count
        )
        return (time.perf_counter() - start) * 1000, built

    await once("warm-up", True)
    graph = await rank.load_graph(db, repo.id)
    assert graph is not None
    facts["graph"] = f"{graph.size:,} definitions, {len(graph.src) // 2:,} resolved edges"
    for label, text in CONVERSATIONS:
        for cold in (True, False):
            times = []
            built = None
            for _ in range(runs):
                ms, built = await once(text, cold)
                times.append(ms)
            assert built is not None
            rows.append(
                f"| {label} | {'cold' if cold else 'warm'} | {statistics.median(times):.0f} | "
                f"{percentile(times, 95):.0f} | {max(times):.0f} | {built.tokens}/{built.budget} | "
                f"{len(built.files)} | {sum(len(f.definitions) for f in built.files)} |"
            )
            print(rows[-1], flush=True)
    await db.dispose()
    return rows, facts


def cli_times(data: Path, runs: int) -> list[float]:
    env = {**os.environ, "THREADLINE_DATA_DIR": str(data)}
    exe = ROOT / ".venv" / "bin" / "threadline"
    times = []
    for i in range(runs + 1):
        start = time.perf_counter()
        proc = subprocess.run(
            [str(exe), "map", "--repo", "speed", "--focus", "Client.send"],
            env=env,
            capture_output=True,
            check=False,
        )
        elapsed = (time.perf_counter() - start) * 1000
        assert proc.returncode == 0, proc.stderr
        if i:  # the first run is untimed (bytecode, page cache)
            times.append(elapsed)
    return times


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data", type=Path, default=ROOT / "bench/.cache/speed/data")
    parser.add_argument("--runs", type=int, default=15)
    parser.add_argument("--append", type=Path, help="append the results to this Markdown file")
    args = parser.parse_args()
    rows, facts = asyncio.run(measure(args.data, args.runs))
    cli = cli_times(args.data, 5)
    header = (
        "| conversation names | graph | p50 (ms) | p95 (ms) | max (ms) | tokens/budget | files "
        "| definitions |\n|---|---|---:|---:|---:|---:|---:|---:|"
    )
    table = "\n".join([header, *rows])
    print(table)
    line = (
        f"`threadline map --repo speed --focus Client.send` as a new process, 5 runs after one "
        f"untimed: p50 {statistics.median(cli):.0f} ms, max {max(cli):.0f} ms"
    )
    print(line)
    if args.append:
        stamp = datetime.now(UTC).strftime("%Y-%m-%d %H:%M UTC")
        machine = "\n".join(f"- {k}: {v}" for k, v in {**machine_facts(), **facts}.items())
        append_section(
            args.append,
            f"## Repo map: build time — {stamp}\n\n"
            f"Command: `.venv/bin/python bench/repomap_speed.py {' '.join(sys.argv[1:])}`\n\n"
            f"{machine}\n\n{table}\n\n- {line}\n"
            f"- peak RSS of the bench process: {peak_rss_mb():.0f} MB\n\n"
            "Target: the repo map under 500 ms on a 1,000-file repository. Cold = the stored "
            "graph read from SQL and turned into arrays (once after each index; the agent keeps "
            "it per repository until the stored graph changes), then seeds, PageRank (NumPy "
            "power iteration), signatures read from disk and the cut at the budget; warm = the "
            f"same with the graph cached. {args.runs} runs each, one process, SQLite.\n",
        )


if __name__ == "__main__":
    main()
