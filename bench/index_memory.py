"""Peak RSS of indexing, with glibc's malloc arenas bounded (bot.heap) and at glibc's default.

    OPENBLAS_NUM_THREADS=1 .venv/bin/python bench/index_memory.py [--package rich] [--runs 2]
        [--append bench/RESULTS.md]

Not a pytest test. Each run is a child process that indexes, as a bot process does: it builds
the app (`build_app`, the local NumPy embedder, the embedded Qdrant Edge shard, SQLite) on a new
data dir, registers the corpus and runs `app.indexer.index` on it, then reports its peak RSS
(ru_maxrss), its RSS once the index is done, and the index's wall time. The two modes alternate
run by run, so that the load of the machine falls on both alike:

- `bounded`: the child calls `bot.heap.limit_malloc_arenas()` first, as `threadline run`,
  `serve`, `worker` and `index` do;
- `default`: it does not (glibc's default: up to eight arenas per core).

An operator's MALLOC_ARENA_MAX is removed from the children's environment. The corpus is the
`.py` files of one package installed in this venv (default: rich, about 1,450 chunks), copied
to bench/.cache/index-memory/src.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import shutil
import statistics
import subprocess
import sys
import time
from importlib import metadata, util
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from bench.machine import append_results, peak_rss_mb, rss_mb  # noqa: E402

CACHE = ROOT / "bench" / ".cache" / "index-memory"
MODES = ("default", "bounded")


def corpus(package: str, cache: Path = CACHE) -> Path:
    """A fresh copy of an installed package's files under `cache`/src (its `.py` files and the
    rest, without bytecode)."""
    spec = util.find_spec(package)
    if spec is None or not spec.submodule_search_locations:
        raise SystemExit(f"{package} is not a package installed in this venv")
    source = Path(next(iter(spec.submodule_search_locations)))
    target = cache / "src" / package
    shutil.rmtree(target, ignore_errors=True)
    shutil.copytree(source, target, ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))
    return target


async def index_once(src: Path, data: Path) -> dict[str, float]:
    from bench.search_speed import make_app  # the app as the speed benchmark builds it

    app = make_app(data)
    try:
        repo = await app.repos.register(str(src), src.name)
        start = time.perf_counter()
        report = await app.indexer.index(repo)
        seconds = time.perf_counter() - start
    finally:
        await app.aclose()
    if report.vectors is None:
        raise SystemExit(f"vectors were not indexed: {report.vectors_error}")
    return {
        "chunks": float(report.files.chunks_written),
        "seconds": seconds,
        "peak_mb": peak_rss_mb(),
        "after_mb": rss_mb(),
    }


def child(mode: str, src: Path, data: Path) -> None:
    if mode == "bounded":
        from bot.heap import limit_malloc_arenas

        if not limit_malloc_arenas():
            raise SystemExit("the arenas could not be bounded here (not glibc?)")
    shutil.rmtree(data, ignore_errors=True)
    print(json.dumps(asyncio.run(index_once(src, data))))


def run(mode: str, src: Path) -> dict[str, float]:
    env = {k: v for k, v in os.environ.items() if k != "MALLOC_ARENA_MAX"}
    done = subprocess.run(
        [sys.executable, __file__, "--child", mode, "--src", str(src)],
        capture_output=True,
        text=True,
        env=env,
        check=False,
    )
    if done.returncode != 0:
        raise SystemExit(f"the {mode} run failed:\n{done.stderr[-2000:]}")
    result: dict[str, float] = json.loads(done.stdout.strip().splitlines()[-1])
    print(f"{mode}: {result}", file=sys.stderr)
    return result


def markdown(package: str, results: dict[str, list[dict[str, float]]]) -> str:
    chunks = int(results["default"][0]["chunks"])
    version = metadata.version(package)
    lines = [
        f"Corpus: the `.py` files of {package} {version} ({chunks} chunks), indexed in a child "
        f"process per run, the modes alternated; {len(results['default'])} runs each "
        "(median, then every run).",
        "",
        "| arenas | peak RSS (MB) | RSS after the index (MB) | index (s) | runs: peak MB |",
        "|---|---:|---:|---:|---|",
    ]
    for mode in MODES:
        rows = results[mode]
        peaks = [r["peak_mb"] for r in rows]
        after = statistics.median(r["after_mb"] for r in rows)
        seconds = statistics.median(r["seconds"] for r in rows)
        label = "bounded (2, bot.heap)" if mode == "bounded" else "glibc default"
        lines.append(
            f"| {label} | {statistics.median(peaks):.0f} | {after:.0f} | {seconds:.1f} | "
            f"{', '.join(f'{p:.0f}' for p in peaks)} |"
        )
    return "\n".join(lines) + "\n"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--package", default="rich", help="the installed package to index")
    parser.add_argument("--runs", type=int, default=2, help="runs per mode")
    parser.add_argument("--append", type=Path, metavar="FILE")
    parser.add_argument("--child", choices=MODES, help=argparse.SUPPRESS)
    parser.add_argument("--src", type=Path, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        child(args.child, args.src, CACHE / f"data-{args.child}")
        return 0
    src = corpus(args.package)
    results: dict[str, list[dict[str, float]]] = {mode: [] for mode in MODES}
    for i in range(args.runs):
        for mode in MODES if i % 2 == 0 else MODES[::-1]:
            results[mode].append(run(mode, src))
    text = markdown(args.package, results)
    print(text)
    if args.append:
        append_results(args.append, "Peak RSS of indexing, malloc arenas bounded", text)
        print(f"appended to {args.append}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
