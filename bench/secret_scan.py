"""What content-based secret redaction (core/code/redact.py) costs indexing (not a pytest test).

    .venv/bin/python bench/secret_scan.py [--runs 3] [--root DIR ...] [--append bench/RESULTS.md]

For each corpus (default: the installed SQLAlchemy package in .venv, and this project's core/,
adapters/, bot/ and tests/), the files `walk()` selects are read into memory once; then, best of
`--runs` each, one thread:

- chunk: `chunk_file` over every file (what indexing did before redaction);
- redact: `redact` over every file alone;
- chunk + redact: `chunk_file(redact(text))`, what `core/code/chunk_store.py` does now;
- index: `index_repo` (walk, hash, SQLite writes, chunking; no embedding) into a fresh
  database, with redaction and with it replaced by the identity, runs alternating.

Overhead % = extra time over the run without redaction. Embedding, which indexing runs after
this (~25-40 chunks/s on the 2-core machine, bench/RESULTS.md), is left out: against it the
redaction cost is negligible, so the numbers here are the worst case. Also printed: how many
lines redaction changed (every one is a detected secret or a false positive).
"""

from __future__ import annotations

import argparse
import asyncio
import sys
import tempfile
import time
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bench.machine import append_section, machine_facts  # noqa: E402
from core.code import chunk_store  # noqa: E402
from core.code.chunking import chunk_file  # noqa: E402
from core.code.redact import redact  # noqa: E402
from core.code.walk import walk  # noqa: E402

SITE = ROOT / ".venv" / "lib" / f"python{sys.version_info[0]}.{sys.version_info[1]}"
DEFAULT_ROOTS = [SITE / "site-packages" / "sqlalchemy", ROOT]
PROJECT_FOLDERS = ("core", "adapters", "bot", "tests")


def corpus(root: Path) -> list[tuple[str, str]]:
    folders = [root / f for f in PROJECT_FOLDERS] if root == ROOT else [root]
    files = []
    for folder in folders:
        for walked in walk(folder):
            text = (folder / walked.path).read_bytes().decode("utf-8", "replace")
            files.append((str((folder / walked.path).relative_to(root)), text))
    return files


def best_of(runs: int, work: Callable[[], object]) -> float:
    work()  # warm-up: parsers built, detect-secrets imported
    timings = []
    for _ in range(runs):
        start = time.perf_counter()
        work()
        timings.append(time.perf_counter() - start)
    return min(timings)


async def index_once(root: Path, redacting: bool) -> float:
    from core.code.repos import RepoStore
    from core.code.walk import index_repo
    from core.store.engine import Database

    original = chunk_store.redact
    if not redacting:
        chunk_store.redact = lambda text, path="": text  # type: ignore[assignment]
    try:
        with tempfile.TemporaryDirectory() as tmp:
            db = Database(f"sqlite:///{tmp}/bench.db")
            try:
                await db.create_all()
                repo = await RepoStore(db, Path(tmp) / "repos").register(str(root), "bench")
                start = time.perf_counter()
                await index_repo(db, repo)
                return time.perf_counter() - start
            finally:
                await db.dispose()
    finally:
        chunk_store.redact = original


def measure(root: Path, runs: int) -> dict[str, float | int | str]:
    files = corpus(root)
    nbytes = sum(len(text.encode()) for _, text in files)
    lines = sum(text.count("\n") + (not text.endswith("\n")) for _, text in files if text)
    chunk = best_of(runs, lambda: [chunk_file("b", p, t) for p, t in files])
    scan = best_of(runs, lambda: [redact(t, p) for p, t in files])
    both = best_of(runs, lambda: [chunk_file("b", p, redact(t, p)) for p, t in files])
    changed = 0
    for path, text in files:
        redacted = redact(text, path)
        if redacted is not text:
            pairs = zip(text.split("\n"), redacted.split("\n"), strict=True)  # same lines
            changed += sum(a != b for a, b in pairs)
    # The project folders are indexed as one repository only through ROOT: index just core/.
    index_root = root if root != ROOT else ROOT / "core"
    # Alternated, so drift over the runs (load, caches) weighs on both alike.
    plain, redacting = float("inf"), float("inf")
    for _ in range(runs):
        plain = min(plain, asyncio.run(index_once(index_root, False)))
        redacting = min(redacting, asyncio.run(index_once(index_root, True)))
    return {
        "corpus": str(root.relative_to(ROOT)) if root.is_relative_to(ROOT) else str(root),
        "files": len(files),
        "lines": lines,
        "mb": nbytes / 1e6,
        "chunk": chunk,
        "redact": scan,
        "both": both,
        "changed": changed,
        "index_root": str(index_root.relative_to(ROOT)),
        "index_plain": plain,
        "index_redacting": redacting,
    }


def row(m: dict[str, float | int | str]) -> str:
    chunk, both = float(m["chunk"]), float(m["both"])
    plain, redacting = float(m["index_plain"]), float(m["index_redacting"])
    return (
        f"| {m['corpus'] or '.'} | {m['files']:,} | {m['lines']:,} | {float(m['mb']):.1f} "
        f"| {float(m['redact']):.3f} | {chunk:.3f} | {both:.3f} | {(both - chunk) / chunk:+.0%} "
        f"| {m['changed']} | {m['index_root']}: {plain:.2f} → {redacting:.2f} "
        f"({(redacting - plain) / plain:+.0%}) |"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--root", type=Path, action="append")
    parser.add_argument("--append", type=Path)
    args = parser.parse_args()
    roots = [r.resolve() for r in args.root] if args.root else DEFAULT_ROOTS

    header = (
        "| corpus | files | lines | MB | redact (s) | chunk (s) | chunk + redact (s) | overhead "
        "| lines redacted | index_repo without → with redaction (s) |\n"
        "|---|---:|---:|---:|---:|---:|---:|---:|---:|---|"
    )
    rows = [row(measure(root, args.runs)) for root in roots]
    table = "\n".join([header, *rows])
    print(table)
    if args.append:
        stamp = datetime.now(UTC).strftime("%Y-%m-%d %H:%M UTC")
        facts = "\n".join(f"- {k}: {v}" for k, v in machine_facts().items())
        command = " ".join(["bench/secret_scan.py", *sys.argv[1:]])
        append_section(
            args.append,
            f"## Secret redaction cost on indexing — {stamp}\n\n"
            f"Command: `.venv/bin/python {command}`\n\n"
            f"{facts}\n\n{table}\n\n"
            "Best of the runs, one thread, files read into memory first (`walk()`'s selection). "
            "Overhead = chunk + redact against chunk alone; index_repo = walk, hash, SQLite "
            "writes and chunking into a fresh database, embedding left out (it runs at ~25-40 "
            "chunks/s, so against a whole index the redaction cost is far smaller). The "
            "project row indexes only core/ (index_repo takes one root).\n",
        )


if __name__ == "__main__":
    main()
