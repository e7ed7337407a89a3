"""How fast `/graph SYMBOL` answers on a ~1,000-file repository (not a pytest test).

    .venv/bin/python bench/graph_query_speed.py [--data bench/.cache/speed/data] [--runs 200]
        [--append bench/RESULTS.md]

Reuses the data dir `bench/search_speed.py` indexes (bench/.cache/speed: ~987 Python files and
the code graph its index stored), read only. In one process with the database open, as the bot
answers `/graph`: `describe(db, repos, name, depth=2)` — the lookup, the neighbourhood to depth 2
in every direction, the text — for `--runs` names drawn (seeded) from the stored definitions:
half bare names (`send`, often ambiguous: a list of candidates), half qualified ones
(`Client.send`: one definition and its graph). Then the same names with `--image`'s drawing.
"""

from __future__ import annotations

import argparse
import asyncio
import random
import statistics
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


async def measure(data: Path, runs: int) -> tuple[list[str], dict[str, str]]:
    from sqlmodel import select

    from core.code.graph.picture import draw
    from core.code.graph.render import describe
    from core.store.engine import Database
    from core.store.models import GraphSymbol, Repo

    db = Database(f"sqlite:///{data / 'threadline.db'}")
    async with db.session() as s:
        repo = (await s.exec(select(Repo))).first()
        symbols = list((await s.exec(select(GraphSymbol.symbol))).all())
    assert repo is not None and repo.id is not None and symbols
    repos = {repo.id: repo.name}
    rng = random.Random(7)
    qualified = [q for q in symbols if "." in q and not q.startswith("<")]
    names = [rng.choice(qualified) for _ in range(runs // 2)]
    names += [q.rsplit(".", 1)[-1] for q in (rng.choice(qualified) for _ in range(runs // 2))]
    await describe(db, repos, names[0])  # warm-up: imports, first connection
    times: dict[str, list[float]] = {"qualified": [], "bare": [], "with picture": []}
    found = 0
    for i, name in enumerate(names):
        start = time.perf_counter()
        answer = await describe(db, repos, name, depth=2)
        elapsed = (time.perf_counter() - start) * 1000
        times["qualified" if i < runs // 2 else "bare"].append(elapsed)
        if answer.view is not None:
            found += 1
            if len(times["with picture"]) < 30:
                start = time.perf_counter()
                await describe(db, repos, name, depth=2)
                await asyncio.to_thread(draw, answer.view)
                times["with picture"].append((time.perf_counter() - start) * 1000)
    await db.dispose()
    rows = [
        f"| {label} | {len(values)} | {statistics.median(values):.0f} "
        f"| {percentile(values, 95):.0f} | {max(values):.0f} |"
        for label, values in times.items()
        if values
    ]
    facts = {
        "repo": f"{repo.name}, {repo.file_count} files, {len(symbols):,} definitions",
        "names": f"{runs} (seeded), {found} with a single definition (a graph)",
        "peak RSS": f"{peak_rss_mb():.0f} MB",
    }
    return rows, facts


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data", type=Path, default=ROOT / "bench/.cache/speed/data")
    parser.add_argument("--runs", type=int, default=200)
    parser.add_argument("--append", type=Path, help="append the results to this Markdown file")
    args = parser.parse_args()
    rows, facts = asyncio.run(measure(args.data, args.runs))
    table = "\n".join(
        ["| names | answers | p50 (ms) | p95 (ms) | max (ms) |", "|---|---:|---:|---:|---:|", *rows]
    )
    print(table)
    for key, value in facts.items():
        print(f"- {key}: {value}")
    if args.append:
        stamp = datetime.now(UTC).strftime("%Y-%m-%d %H:%M UTC")
        machine = "\n".join(f"- {k}: {v}" for k, v in {**machine_facts(), **facts}.items())
        append_section(
            args.append,
            f"## `/graph` answer time — {stamp}\n\n"
            f"Command: `.venv/bin/python bench/graph_query_speed.py {' '.join(sys.argv[1:])}`\n\n"
            f"{machine}\n\n{table}\n\nTarget: `/graph` p95 under 300 ms on a 1,000-file "
            "repository. Method: the docstring of bench/graph_query_speed.py.",
        )


if __name__ == "__main__":
    main()
