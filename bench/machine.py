"""What every benchmark records about the machine and the code it ran, and how it appends to
bench/RESULTS.md. Numbers on a shared 2-core machine mean little without the load average and
the commit, so each script reports them the same way through here."""

from __future__ import annotations

import math
import os
import platform
import resource
import subprocess
from collections.abc import Sequence
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def rss_mb() -> float:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return float("nan")


def peak_rss_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def load_avg() -> str:
    return " / ".join(f"{x:.2f}" for x in os.getloadavg())


def cpu_model() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.lower().startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "unknown"


def nproc() -> int:
    return len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 0


def python_version() -> str:
    return f"{platform.python_implementation()} {platform.python_version()}"


def git(*args: str) -> str:
    proc = subprocess.run(["git", *args], cwd=ROOT, capture_output=True, text=True, check=False)
    return proc.stdout.strip() if proc.returncode == 0 else ""


def threadline_version(*paths: str) -> str:
    """The commit, marked when the code under `paths` (default: core, bot, config) has
    uncommitted changes, since then the run measured something no commit holds."""
    watched = paths or ("core", "bot", "config")
    commit = git("rev-parse", "--short", "HEAD") or "unknown"
    subject = git("log", "-1", "--format=%s")[:90]
    dirty = git("status", "--porcelain", "--", *watched)
    marker = f" + uncommitted changes in {'/'.join(watched)}" if dirty else ""
    return f"{commit} ({subject}){marker}"


def machine_facts() -> dict[str, str]:
    return {
        "threadline": threadline_version(),
        "cpus (nproc)": str(nproc()),
        "cpu": cpu_model(),
        "python": python_version(),
        "os": f"{platform.system()} {platform.release()}",
        "load average (1/5/15 min) when written": load_avg(),
    }


def append_section(path: Path, text: str) -> None:
    """Append a Markdown section, separated from what is there by one blank line."""
    existing = path.read_text(encoding="utf-8") if path.exists() else ""
    sep = "" if not existing or existing.endswith("\n\n") else "\n"
    with path.open("a", encoding="utf-8") as out:
        out.write(sep + text)


def append_results(path: Path, title: str, body: str) -> None:
    """Append one run's section: `## TITLE — date`, the command that ran (this process's
    arguments), the machine facts, then `body` (tables and notes)."""
    import sys
    from datetime import UTC, datetime

    stamp = datetime.now(UTC).strftime("%Y-%m-%d %H:%M UTC")
    script = Path(sys.argv[0]).resolve()
    shown = script.relative_to(ROOT) if script.is_relative_to(ROOT) else script
    command = " ".join([f".venv/bin/python {shown}", *sys.argv[1:]])
    machine = "\n".join(f"- {k}: {v}" for k, v in machine_facts().items())
    append_section(
        path, f"## {title} — {stamp}\n\nCommand: `{command}`\n\n{machine}\n\n{body.strip()}\n"
    )


def percentile(values: Sequence[float], p: float) -> float:
    """Nearest-rank percentile (`p` in percent), as every bench here reports them."""
    ordered = sorted(values)
    return ordered[max(0, math.ceil(p / 100 * len(ordered)) - 1)]
