"""Running the `threadline` command in tests.

`run_cli` runs a one-shot command (`ask`, `index`, `search`, `graph`, ...) through
`bot.cli.main` in this process, with the given environment and working directory, and hands
back what a subprocess would (exit status, stdout, stderr). Starting a new interpreter for each
call cost 1.5-2 s of CPU (imports, the embedding model) and most CLI tests make several calls;
the code run is the same. Long-running commands (`run`, `serve`, `worker`, `chat`) and
`isolated=True` still get a real subprocess, and the tests of the console script itself (its
start-up imports, `os._exit`, bytes on argv) run it as one.
"""

from __future__ import annotations

import asyncio
import logging
import os
import subprocess
import sys
import tempfile
import threading
from pathlib import Path

from tests.support.processes import threadline_command

# Commands that print and end (bot/cli.py's `_ONE_SHOT`, plus `db` and `skills`).
IN_PROCESS = frozenset(
    {"ask", "index", "repos", "search", "graph", "map", "outbox", "console", "db", "skills"}
)
# The environment, working directory, standard streams and root logger are the process's:
# one in-process command at a time.
_ONE_AT_A_TIME = threading.Lock()


def run_cli(
    env: dict[str, str],
    cwd: Path,
    *args: str,
    timeout: float = 60.0,
    isolated: bool = False,
) -> subprocess.CompletedProcess[str]:
    if isolated or not args or args[0] not in IN_PROCESS:
        return subprocess.run(
            [*threadline_command(), *args],
            env=env,
            cwd=cwd,
            capture_output=True,
            text=True,
            timeout=timeout,
            check=False,
        )
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return _in_process(env, cwd, args)
    # Called from a coroutine: the command's own asyncio.run needs a thread without a loop.
    result: list[subprocess.CompletedProcess[str]] = []
    worker = threading.Thread(target=lambda: result.append(_in_process(env, cwd, args)))
    worker.start()
    worker.join(timeout)
    assert result, f"threadline {' '.join(args)} did not finish within {timeout} s"
    return result[0]


def _in_process(
    env: dict[str, str], cwd: Path, args: tuple[str, ...]
) -> subprocess.CompletedProcess[str]:
    from bot.cli import main

    # Files, not StringIO: what the command starts (an MCP server, git) inherits a real
    # descriptor for its output, as it would from a shell.
    with (
        tempfile.TemporaryFile("w+", encoding="utf-8", errors="replace") as out,
        tempfile.TemporaryFile("w+", encoding="utf-8", errors="replace") as err,
        _ONE_AT_A_TIME,
    ):
        saved_env, saved_cwd = dict(os.environ), os.getcwd()
        saved_out, saved_err = sys.stdout, sys.stderr
        root = logging.getLogger()
        saved_handlers, saved_level = list(root.handlers), root.level
        try:
            os.environ.clear()
            os.environ.update(env)
            os.chdir(cwd)
            sys.stdout, sys.stderr = out, err
            try:
                code = main(list(args))
            except SystemExit as exit_:  # argparse's usage errors
                code = exit_.code if isinstance(exit_.code, int) else int(exit_.code is not None)
        finally:
            for handler in list(root.handlers):
                handler.flush()
                root.removeHandler(handler)
            for handler in saved_handlers:
                root.addHandler(handler)
            root.setLevel(saved_level)
            sys.stdout, sys.stderr = saved_out, saved_err
            os.chdir(saved_cwd)
            os.environ.clear()
            os.environ.update(saved_env)
        out.seek(0)
        err.seek(0)
        return subprocess.CompletedProcess(["threadline", *args], code, out.read(), err.read())
