"""`bot.heap.limit_malloc_arenas`: glibc's malloc arenas bounded in the processes that index
and embed, so that each worker thread's arena does not keep its own high-water mark of freed
NumPy arrays (bench/RESULTS.md: the peak RSS of an index). Checked by what glibc itself reports
(`malloc_stats` lists one "Arena" per arena), in a child process each: an arena, once made,
stays for the life of the process."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

pytestmark = pytest.mark.skipif(
    not sys.platform.startswith("linux"), reason="glibc's malloc arenas are Linux's"
)

EIGHT_THREADS_ALLOCATING = textwrap.dedent(
    """
    import ctypes, sys, threading
    if sys.argv[1] == "bounded":
        from bot.heap import limit_malloc_arenas
        print("set" if limit_malloc_arenas() else "not set", flush=True)
    elif sys.argv[1].startswith("cli "):  # the command line as `threadline` gets it
        from bot.cli import main
        main(sys.argv[1].split()[1:])
    start = threading.Barrier(8)
    def work():
        start.wait()
        for _ in range(200):
            kept = [bytearray(1000) for _ in range(50)]
    threads = [threading.Thread(target=work) for _ in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    ctypes.CDLL(None).malloc_stats()
    """
)


def arenas(mode: str, **env: str) -> tuple[str, int]:
    done = subprocess.run(
        [sys.executable, "-c", EIGHT_THREADS_ALLOCATING, mode],
        capture_output=True,
        text=True,
        timeout=60,
        env={k: v for k, v in os.environ.items() if k != "MALLOC_ARENA_MAX"} | env,
        check=False,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    count = sum(line.startswith("Arena ") for line in done.stderr.splitlines())
    return done.stdout.strip(), count


def test_eight_threads_allocating_use_two_arenas_once_bounded() -> None:
    assert arenas("free")[1] > 2  # glibc's default: one per thread, up to 8 per core
    assert arenas("bounded") == ("set", 2)


def test_an_operators_own_malloc_arena_max_is_left_alone() -> None:
    said, count = arenas("bounded", MALLOC_ARENA_MAX="4")
    assert said == "not set"
    assert count == 4


def test_the_index_command_bounds_its_arenas_and_a_search_does_not(tmp_path: Path) -> None:
    # `threadline index` of a missing folder fails at once, after the bound is set.
    env = {"DATA_DIR": str(tmp_path / "data"), "THREADLINE_CONFIG": str(tmp_path / "none.toml")}
    assert arenas(f"cli index {tmp_path / 'missing'}", **env)[1] == 2
    assert arenas("cli search ?", **env)[1] > 2  # a one-shot search skips the ctypes import
