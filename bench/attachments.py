"""What reading an attached file adds to a request before the model is called (not a pytest
test).

    .venv/bin/python bench/attachments.py [--runs 30] [--mb 1] [--append bench/RESULTS.md]

A synthetic application log of `--mb` megabytes (timestamps, levels, request ids, a few
`key=value` secrets, a Python traceback two thirds in) is served from memory by an
`IncomingFile` fetch, and `AttachmentReader.read` turns it into the model's text block: the
fetch, detection by bytes, decoding, redaction (`core.code.redact`, read as a log) and the cut
to the files' share of the window (30 % of 32k and of 128k tokens). `--runs` times each, one
request at a time; p50 / p95 / max in ms. Also timed alone: redaction and the cut, and the same
log gzipped. Target (issue 26): p95 < 300 ms for a 1 MB log on the 2-core machine.
"""

from __future__ import annotations

import argparse
import asyncio
import gzip
import random
import sys
import time
from collections.abc import Awaitable, Callable
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bench.machine import append_results, percentile  # noqa: E402
from core.attachments import AttachmentReader  # noqa: E402
from core.attachments.excerpt import excerpt  # noqa: E402
from core.code.redact import redact  # noqa: E402
from core.llm.providers import ProviderSpec  # noqa: E402
from core.memory.tokens import TokenCounter  # noqa: E402
from core.request import IncomingFile  # noqa: E402

SECRET = "q8Zr3kT0vYb1N6xWmPpL2sJd9HfGc4Ae7uQiKo5R"  # made up


def make_log(size: int, seed: int = 7) -> bytes:
    rng = random.Random(seed)
    levels = ["INFO"] * 12 + ["DEBUG"] * 6 + ["WARN"]
    paths = ["/api/orders", "/api/users/42", "/healthz", "/api/auth/token", "/api/search?q=x"]
    lines: list[str] = []
    total = 0
    i = 0
    traceback_at = size * 2 // 3
    while total < size:
        i += 1
        stamp = f"2026-12-03T10:{i // 3600 % 60:02d}:{i // 60 % 60:02d}.{i % 1000:03d}Z"
        if total >= traceback_at and traceback_at:
            block = [
                f"{stamp} ERROR request {i:08x} failed",
                "Traceback (most recent call last):",
                '  File "/srv/app/api.py", line 120, in handle',
                "    order = orders.get(request.args['id'])",
                "KeyError: 'id'",
            ]
            traceback_at = 0
        elif i % 997 == 0:
            block = [f"{stamp} DEBUG env AWS_SECRET_ACCESS_KEY={SECRET} password=hunter2!x"]
        else:
            block = [
                f"{stamp} {rng.choice(levels)} req={i:08x} {rng.choice(['GET', 'POST'])} "
                f"{rng.choice(paths)} status={rng.choice([200, 200, 200, 201, 404])} "
                f"took={rng.randint(1, 900)}ms user_id={rng.randint(1, 5000)} token_count=12"
            ]
        for line in block:
            lines.append(line)
            total += len(line) + 1
    return "\n".join(lines).encode()


def served(name: str, data: bytes) -> IncomingFile:
    async def fetch(*, max_bytes: int, timeout: float) -> bytes:  # noqa: ASYNC109 (Fetch)
        return data[:max_bytes]

    return IncomingFile(name, len(data), "text/plain", fetch)


async def time_runs(runs: int, work: Callable[[], Awaitable[object]]) -> list[float]:
    await work()  # warm: imports, detect-secrets' patterns, the gate regexes
    times = []
    for _ in range(runs):
        started = time.perf_counter()
        await work()
        times.append((time.perf_counter() - started) * 1000)
    return times


async def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--runs", type=int, default=30)
    parser.add_argument("--mb", type=float, default=1.0)
    parser.add_argument("--append", type=Path)
    args = parser.parse_args()
    data = make_log(int(args.mb * 1024 * 1024))
    packed = gzip.compress(data, mtime=0)
    reader = AttachmentReader()
    counter = TokenCounter()
    rows: list[tuple[str, list[float]]] = []
    checked = ""
    for window in (32_768, 131_072):
        spec = ProviderSpec(name="bench", model="m", context_window=window)

        async def read(
            window: int = window,
            spec: ProviderSpec = spec,
            name: str = "app.log",
            body: bytes = data,
        ) -> object:
            intake = await reader.read(
                [served(name, body)],
                spec=spec,
                window=window,
                count=counter.count_text,
                chars_per_token=counter.chars_per_token,
                question="why did the request fail?",
            )
            block = intake.blocks[0]
            assert SECRET not in block and "KeyError: 'id'" in block
            return intake

        rows.append((f"read, {window // 1024}k window", await time_runs(args.runs, read)))
        if window == 32_768:
            rows.append(
                (
                    f"read `.gz` ({len(packed) // 1024} KB), 32k window",
                    await time_runs(args.runs, lambda: read(name="app.log.gz", body=packed)),
                )
            )
            intake = await read()
            checked = str(getattr(intake, "notices", ""))
    text = data.decode()

    async def redact_only() -> object:
        return redact(text, "app.log", log=True)

    async def cut_only() -> object:
        return excerpt(text, 29_000)

    rows.append(
        (
            "redaction of the whole file (reading scans only the cut)",
            await time_runs(args.runs, redact_only),
        )
    )
    rows.append(("cut alone (29k characters)", await time_runs(args.runs, cut_only)))
    table = ["| step | p50 | p95 | max |", "|---|---:|---:|---:|"]
    for label, times in rows:
        table.append(
            f"| {label} | {percentile(times, 50):.0f} ms | {percentile(times, 95):.0f} ms "
            f"| {max(times):.0f} ms |"
        )
    body = (
        f"A {len(data) / 1024 / 1024:.1f} MB log ({text.count(chr(10)) + 1:,} lines), "
        f"{args.runs} runs each, one at a time.\n\n" + "\n".join(table) + "\n\n"
        f"- notices for the 32k read: {checked}\n"
    )
    print(body)
    if args.append:
        append_results(args.append, "Attached files: reading a log", body)


if __name__ == "__main__":
    asyncio.run(main())
