"""Start-up benchmark for the `threadline` console script (not a pytest test).

Measures the wall time of whole processes, as a user experiences them:

  help     threadline --help
  offline  threadline ask "hello"     (no LLM configured: answered without a model)
  budget   threadline ask /budget     (opens the SQLite database in a temporary data dir)

Each command runs once untimed (warm-up: byte-code caches, creating the database), then
`--runs` times (default 10). Prints min / median / max per command; `--append FILE` also
appends a dated Markdown section with the machine facts and the numbers to FILE.

    python bench/startup.py [--runs N] [--append bench/RESULTS.md]
"""

from __future__ import annotations

import argparse
import os
import shlex
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bench.machine import machine_facts  # noqa: E402

# Variables that would change what is measured (a configured model, another database...).
_ISOLATED_PREFIXES = ("LLM_", "THREADLINE_", "SLACK_", "DISCORD_", "QDRANT_", "EMBEDDINGS_")


@dataclass(frozen=True)
class Case:
    name: str
    args: tuple[str, ...]
    expected_exit: int  # a run that exits otherwise is a failure, not a timing


CASES = (
    Case("help", ("--help",), 0),
    # No model configured: the honest "no model" reply is a failed request, exit status 1.
    Case("offline", ("ask", "hello"), 1),
    Case("budget", ("ask", "/budget"), 0),
)


@dataclass(frozen=True)
class Result:
    case: Case
    seconds: list[float]

    @property
    def summary(self) -> tuple[float, float, float]:
        s = self.seconds
        return min(s), statistics.median(s), max(s)


def threadline_command() -> list[str]:
    script = shutil.which("threadline", path=str(Path(sys.executable).parent))
    return [script] if script else [sys.executable, "-m", "bot.cli"]


def clean_env(workdir: Path) -> dict[str, str]:
    env = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith(_ISOLATED_PREFIXES) and k != "DATABASE_URL"
    }
    empty = workdir / "empty.toml"
    empty.write_text("")
    env["THREADLINE_CONFIG"] = str(empty)
    env["THREADLINE_DATA_DIR"] = str(workdir / "data")
    return env


def time_once(cmd: list[str], env: dict[str, str], cwd: Path, case: Case) -> float:
    started = time.perf_counter()
    proc = subprocess.run(cmd, env=env, cwd=cwd, capture_output=True, text=True, check=False)
    elapsed = time.perf_counter() - started
    if proc.returncode != case.expected_exit:
        raise SystemExit(
            f"{case.name}: exit status {proc.returncode}, expected {case.expected_exit}\n"
            f"{proc.stderr}"
        )
    return elapsed


def run(runs: int) -> list[Result]:
    base = threadline_command()
    results = []
    with tempfile.TemporaryDirectory(prefix="threadline-bench-") as tmp:
        workdir = Path(tmp)  # also the cwd, so no stray .env is read
        env = clean_env(workdir)
        for case in CASES:
            cmd = [*base, *case.args]
            time_once(cmd, env, workdir, case)  # warm-up, not counted
            seconds = [time_once(cmd, env, workdir, case) for _ in range(runs)]
            results.append(Result(case, seconds))
    return results


def table(results: list[Result]) -> str:
    lines = [
        "| command | runs | min (s) | median (s) | max (s) |",
        "|---|---:|---:|---:|---:|",
    ]
    for r in results:
        lo, mid, hi = r.summary
        shown = "threadline " + shlex.join(r.case.args)
        lines.append(f"| `{shown}` | {len(r.seconds)} | {lo:.3f} | {mid:.3f} | {hi:.3f} |")
    return "\n".join(lines)


def markdown_section(results: list[Result], invocation: str) -> str:
    facts = "\n".join(f"- {k}: {v}" for k, v in machine_facts().items())
    stamp = datetime.now(UTC).strftime("%Y-%m-%d %H:%M UTC")
    return (
        f"## {stamp}\n\n"
        f"Command: `{invocation}`\n\n"
        f"{facts}\n\n"
        f"{table(results)}\n\n"
        "Wall time of whole processes (interpreter start included), after one untimed "
        "warm-up run per command.\n"
    )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=10, help="timed runs per command")
    parser.add_argument("--append", type=Path, metavar="FILE", help="append results (Markdown)")
    args = parser.parse_args(argv)
    if args.runs < 1:
        parser.error("--runs must be at least 1")

    results = run(args.runs)
    print(table(results))
    if args.append:
        invocation = shlex.join(["python", "bench/startup.py", *(argv or sys.argv[1:])])
        existing = args.append.read_text() if args.append.exists() else ""
        header = "" if existing else "# Start-up benchmark results\n\n"
        sep = "\n" if existing and not existing.endswith("\n\n") else ""
        with args.append.open("a") as out:
            out.write(header + sep + markdown_section(results, invocation))
        print(f"appended to {args.append}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
