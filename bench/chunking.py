"""Chunking throughput over Threadline's own source (not a pytest test).

Reads every file `walk()` would index under core/, adapters/, bot/ and tests/ once, then times
`chunk_file` over all of them `--runs` times in one thread (parsers warmed up by an untimed
pass) and prints files/s, chunks/s and MB/s per run plus the best. `--append FILE` appends a
dated Markdown section to FILE.

    .venv/bin/python bench/chunking.py [--runs 5] [--append bench/RESULTS.md]
"""

from __future__ import annotations

import argparse
import sys
import time
from collections import Counter
from datetime import UTC, datetime
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bench.machine import load_avg, nproc, python_version  # noqa: E402
from core.code.chunking import chunk_file  # noqa: E402
from core.code.walk import walk  # noqa: E402

FOLDERS = ("core", "adapters", "bot", "tests")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--append", type=Path)
    args = parser.parse_args()

    files: list[tuple[str, str]] = []
    for folder in FOLDERS:
        for walked in walk(ROOT / folder):
            raw = (ROOT / folder / walked.path).read_bytes()
            files.append((f"{folder}/{walked.path}", raw.decode("utf-8", "replace")))
    total_bytes = sum(len(text.encode()) for _, text in files)
    kinds: Counter[str] = Counter()
    for path, text in files:  # warm-up: parsers created, modules imported
        kinds.update(chunk.kind for chunk in chunk_file("threadline", path, text))
    chunks = sum(kinds.values())

    timings = []
    for _ in range(args.runs):
        start = time.perf_counter()
        for path, text in files:
            chunk_file("threadline", path, text)
        timings.append(time.perf_counter() - start)
    best = min(timings)
    exts = Counter(Path(path).suffix or "(none)" for path, _ in files)
    lines = [
        f"files: {len(files)} ({', '.join(f'{e} {n}' for e, n in exts.most_common(5))}), "
        f"{total_bytes / 1e6:.2f} MB, chunks: {chunks} ({dict(kinds)})",
        "runs (s): " + ", ".join(f"{t:.3f}" for t in timings),
        f"best: {len(files) / best:,.0f} files/s, {chunks / best:,.0f} chunks/s, "
        f"{total_bytes / 1e6 / best:.2f} MB/s (one thread)",
    ]
    print("\n".join(lines))
    if args.append:
        stamp = datetime.now(UTC).strftime("%Y-%m-%d %H:%M UTC")
        section = [
            "",
            f"## Chunking throughput — {stamp}",
            "",
            f"Command: `.venv/bin/python bench/chunking.py --runs {args.runs} "
            f"--append {args.append}`",
            "",
            f"- cpus (nproc): {nproc()}",
            f"- python: {python_version()}",
            f"- load average (1/5/15 min): {load_avg()}",
            "",
            *(f"- {line}" for line in lines),
            "",
            "`chunk_file` over the readable files of core/, adapters/, bot/ and tests/ "
            "(as `walk()` selects them), text already in memory, one thread, after one untimed "
            "warm-up pass.",
        ]
        with args.append.open("a") as out:
            out.write("\n".join(section) + "\n")


if __name__ == "__main__":
    main()
