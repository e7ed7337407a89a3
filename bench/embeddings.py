"""Local embedder speed and memory: NumPy all-MiniLM-L6-v2 (not a pytest test).

Measures, in one process: model load time (weights + tokenizer, first use), throughput in
chunks/s on batches of 64 code-like texts of ~500 characters (cut at line ends from Threadline's
own source), single-query latency p50/p95, and resident memory (after load, and peak).
`--append FILE` appends a dated Markdown section to FILE.

    .venv/bin/python bench/embeddings.py [--chunks 512] [--queries 50] [--append bench/RESULTS.md]
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
from datetime import UTC, datetime
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bench.machine import cpu_model, load_avg, nproc, peak_rss_mb, python_version, rss_mb  # noqa: E402


def code_chunks(n: int, size: int = 500) -> list[str]:
    """~`size`-character pieces of real source, cut at line ends."""
    chunks: list[str] = []
    for path in sorted((ROOT / "core").rglob("*.py")) + sorted((ROOT / "bot").rglob("*.py")):
        current = ""
        for line in path.read_text(encoding="utf-8").splitlines(keepends=True):
            current += line
            if len(current) >= size:
                chunks.append(f"# {path.relative_to(ROOT)}\n{current[: size + 100]}")
                current = ""
                if len(chunks) >= n:
                    return chunks
    while len(chunks) < n:  # a small tree: reuse with a marker so texts differ
        chunks.append(f"# copy {len(chunks)}\n" + chunks[len(chunks) % max(1, len(chunks))])
    return chunks


QUERIES = [
    "How do we retry failed webhooks?",
    "where is the rate limit enforced",
    "which function checks channel permissions",
    "how are slack events verified",
    "database session setup",
]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--chunks", type=int, default=512)
    parser.add_argument("--batch", type=int, default=64, help="texts per embed() call")
    parser.add_argument("--queries", type=int, default=50)
    parser.add_argument("--append", type=Path)
    parser.add_argument(
        "--blas-threads",
        type=int,
        help="set OPENBLAS_NUM_THREADS before NumPy loads (default: OpenBLAS's own choice)",
    )
    args = parser.parse_args()
    if args.blas_threads:
        # Must happen before the first numpy import: OpenBLAS reads it once, at load.
        os.environ["OPENBLAS_NUM_THREADS"] = str(args.blas_threads)

    rss_start = rss_mb()
    t0 = time.perf_counter()
    from core.code.embed_local import LocalMiniLM

    import_s = time.perf_counter() - t0
    model = LocalMiniLM()
    t0 = time.perf_counter()
    model.load()
    load_s = time.perf_counter() - t0
    rss_loaded = rss_mb()

    texts = code_chunks(args.chunks)
    tokens = model.token_counts(texts)
    mean_chars = statistics.mean(len(t) for t in texts)
    mean_tokens = statistics.mean(tokens)
    truncated = sum(1 for n in tokens if n >= model.max_tokens)
    model.embed(texts[: args.batch])  # warm-up

    rows = []
    for inner in (1, 4, 8, 16, 64):  # ascending: peak RSS so far = peak up to this size
        model.batch_size = inner
        t0 = time.perf_counter()
        for start in range(0, len(texts), args.batch):
            model.embed(texts[start : start + args.batch])
        elapsed = time.perf_counter() - t0
        rows.append((inner, elapsed, len(texts) / elapsed, peak_rss_mb()))
        print(f"inner batch {inner}: {len(texts)} chunks in {elapsed:.2f} s, "
              f"{len(texts) / elapsed:.1f} chunks/s")  # fmt: skip
    model.batch_size = LocalMiniLM().batch_size  # the default

    latencies = []
    for i in range(args.queries):
        query = QUERIES[i % len(QUERIES)]
        t0 = time.perf_counter()
        model.embed([query])
        latencies.append((time.perf_counter() - t0) * 1000)
    latencies.sort()
    p50 = statistics.median(latencies)
    p95 = latencies[min(len(latencies) - 1, round(0.95 * (len(latencies) - 1)))]
    rss_end = rss_mb()
    peak = peak_rss_mb()

    print(f"import {import_s * 1000:.0f} ms, load {load_s:.2f} s")
    print(f"query latency p50 {p50:.1f} ms, p95 {p95:.1f} ms")
    print(f"RSS start {rss_start:.0f} MB, after load {rss_loaded:.0f} MB, end {rss_end:.0f} MB, "
          f"peak {peak:.0f} MB")  # fmt: skip

    if args.append:
        import numpy as np

        now = datetime.now(UTC).strftime("%Y-%m-%d %H:%M UTC")
        cmd = ".venv/bin/python bench/embeddings.py"
        cmd += f" --chunks {args.chunks} --queries {args.queries} --append {args.append}"
        if args.blas_threads:
            cmd = f"{cmd} --blas-threads {args.blas_threads}"
        table = "\n".join(
            f"| {args.batch} | {inner} | {elapsed:.2f} | {rate:.1f} | {peak_so_far:.0f} |"
            for inner, elapsed, rate, peak_so_far in rows
        )
        section = f"""
## Local embedder (NumPy all-MiniLM-L6-v2) — {now}

Command: `{cmd}`

- cpus (nproc): {nproc()}, cpu: {cpu_model()}
- OPENBLAS_NUM_THREADS: {os.environ.get("OPENBLAS_NUM_THREADS", "unset")}
- python: {python_version()}, numpy {np.__version__}
- load average (1/5/15 min): {load_avg()}

- model load (weights + tokenizer, first use): {load_s:.2f} s (module import {import_s:.2f} s)
- texts: {len(texts)} code chunks, mean {mean_chars:.0f} chars, mean {mean_tokens:.0f} tokens,
  {truncated} truncated at {model.max_tokens} tokens

| texts per embed() | inner batch | time (s) | chunks/s | peak RSS so far (MB) |
|---:|---:|---:|---:|---:|
{table}

- default inner batch: {LocalMiniLM().batch_size}
- single-query latency over {args.queries} queries: p50 {p50:.1f} ms, p95 {p95:.1f} ms
- resident memory: {rss_start:.0f} MB at start, {rss_loaded:.0f} MB after load,
  {rss_end:.0f} MB at end, peak {peak:.0f} MB

NumPy forward pass (no torch), one process; texts packed without padding, sorted by length
inside each call. One untimed warm-up call before timing. The load average shows how much
else ran on the machine: OpenBLAS threads slow down a lot when another process holds a core.
"""
        with args.append.open("a", encoding="utf-8") as fh:
            fh.write(section)


if __name__ == "__main__":
    main()
