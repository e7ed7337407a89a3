"""Real `threadline serve` / `threadline worker` processes for the multi-process tests and the
Slack load check (not a test module itself).

    cluster = Cluster(tmp_path, env)            # env: the fakes' URLs, DATABASE_URL, policy...
    web = cluster.serve("web-1")                # free port, waits for /healthz
    worker = cluster.worker("worker-1", DISCORD_SHARD_IDS="0")
    cluster.wait_until(lambda: ..., "what we wait for")   # on failure: every process's log
    cluster.kill(worker)                        # SIGKILL, as a crashed machine would
    cluster.stop_all()                          # SIGTERM, then SIGKILL what is left

Each process gets its own data dir (so no two share an embedded vector store or a SQLite
file) and, with a PostgreSQL `DATABASE_URL`, its own `application_name` (`threadline-NAME`),
so `pg_stat_activity` tells its connections apart. Output goes to a log file per process,
which failure messages quote.
"""

from __future__ import annotations

import asyncio
import os
import shutil
import signal
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from urllib.parse import parse_qsl, urlencode, urlsplit, urlunsplit

STARTUP_DEADLINE = 90.0  # generous: four processes importing at once on a loaded 2-core box
STOP_DEADLINE = 30.0
LOG_TAIL = 3_000  # characters of each process's log quoted in a failure message


def threadline_command() -> list[str]:
    """The installed console script next to this interpreter, else the module."""
    script = shutil.which("threadline", path=str(Path(sys.executable).parent))
    return [script] if script else [sys.executable, "-m", "bot.cli"]


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def with_application_name(url: str, name: str) -> str:
    """A PostgreSQL URL whose connections show `name` in pg_stat_activity (other URLs as
    they are)."""
    if not url.startswith(("postgres://", "postgresql")):
        return url
    parts = urlsplit(url)
    query = [(k, v) for k, v in parse_qsl(parts.query) if k != "application_name"]
    query.append(("application_name", name))
    return urlunsplit(parts._replace(query=urlencode(query)))


def http_status(url: str, timeout: float = 2.0) -> int | None:
    try:
        with urllib.request.urlopen(url, timeout=timeout) as resp:
            return int(resp.status)
    except urllib.error.HTTPError as exc:
        return exc.code
    except (urllib.error.URLError, OSError):
        return None


@dataclass
class Proc:
    name: str
    command: str  # serve | worker | run
    popen: subprocess.Popen[bytes]
    log: Path
    port: int | None = None
    env: dict[str, str] = field(default_factory=dict, repr=False)
    killed: bool = False  # on purpose (`Cluster.kill`): its exit is no failure

    @property
    def url(self) -> str:
        assert self.port is not None, f"{self.name} listens on no port"
        return f"http://127.0.0.1:{self.port}"

    @property
    def pid(self) -> int:
        return self.popen.pid

    @property
    def application_name(self) -> str:
        return f"threadline-{self.name}"

    def alive(self) -> bool:
        return self.popen.poll() is None

    def log_text(self) -> str:
        return self.log.read_text(errors="replace") if self.log.exists() else ""


class ProcessFailed(AssertionError):
    """A wait ran out or a process died; the message quotes every process's log."""


class Cluster:
    def __init__(self, workdir: Path, env: dict[str, str]) -> None:
        self.workdir = workdir
        self.env = env
        self.procs: list[Proc] = []

    # -- starting ------------------------------------------------------------------------------

    def start(
        self,
        name: str,
        command: str,
        *args: str,
        port: int | None = None,
        env: dict[str, str] | None = None,
    ) -> Proc:
        """`threadline COMMAND ARGS` with the cluster's environment plus `env`."""
        home = self.workdir / name
        home.mkdir(parents=True, exist_ok=True)
        full = {
            **self.env,
            "THREADLINE_DATA_DIR": str(home / "data"),
            "PYTHONUNBUFFERED": "1",
            **(env or {}),
        }
        if "DATABASE_URL" in full:
            full["DATABASE_URL"] = with_application_name(full["DATABASE_URL"], f"threadline-{name}")
        log = home / f"{command}.log"
        with log.open("ab") as out:
            popen = subprocess.Popen(
                [*threadline_command(), command, *args],
                env=full,
                cwd=home,
                stdin=subprocess.DEVNULL,
                stdout=out,
                stderr=subprocess.STDOUT,
            )
        proc = Proc(name, command, popen, log, port, full)
        self.procs.append(proc)
        return proc

    def serve(self, name: str, *, wait: bool = True, **env: str) -> Proc:
        """`threadline serve` on a free port; waits for /healthz unless told not to."""
        port = free_port()
        proc = self.start(
            name, "serve", "--host", "127.0.0.1", "--port", str(port), port=port, env=env
        )
        if wait:
            self.wait_healthy(proc)
        return proc

    def worker(self, name: str, **env: str) -> Proc:
        """`threadline worker`; the caller waits for what tells it is ready (its IDENTIFY on
        the fake gateway, a log line)."""
        return self.start(name, "worker", env=env)

    def wait_healthy(self, proc: Proc, deadline: float = STARTUP_DEADLINE) -> None:
        self.wait_until(
            lambda: http_status(f"{proc.url}/healthz") == 200,
            f"{proc.name}'s /healthz",
            deadline,
            watch=[proc],
        )

    # -- waiting -------------------------------------------------------------------------------

    def wait_until(
        self,
        check: Callable[[], object],
        what: str,
        timeout: float = 60.0,
        *,
        watch: list[Proc] | None = None,
    ) -> None:
        """Poll `check` until it is truthy; fail with the logs when `timeout` passes or a
        watched process (default: every one not killed on purpose) exits."""
        end = time.monotonic() + timeout
        while not check():
            self._check_progress(what, timeout, end, watch)
            time.sleep(0.05)  # a poll interval, bounded by the deadline

    async def until(
        self,
        check: Callable[[], object],
        what: str,
        within: float = 60.0,
        *,
        watch: list[Proc] | None = None,
    ) -> None:
        """`wait_until` for async tests: the fakes on the test's event loop keep serving."""
        end = time.monotonic() + within
        while not check():
            self._check_progress(what, within, end, watch)
            await asyncio.sleep(0.05)

    def _check_progress(
        self, what: str, timeout: float, end: float, watch: list[Proc] | None
    ) -> None:
        watched = self.procs if watch is None else watch
        dead = [p for p in watched if not p.alive() and not p.killed]
        if dead:
            names = ", ".join(f"{p.name} (exit {p.popen.returncode})" for p in dead)
            raise ProcessFailed(f"{names} exited while waiting for {what}\n{self.logs()}")
        if time.monotonic() > end:
            raise ProcessFailed(f"no {what} within {timeout:g} s\n{self.logs()}")

    def logged(self, text: str, procs: list[Proc] | None = None) -> int:
        """How many lines of these processes' logs (default all) contain `text`."""
        return sum(
            line.count(text) for p in (procs or self.procs) for line in p.log_text().splitlines()
        )

    def logs(self) -> str:
        parts = []
        for p in self.procs:
            text = p.log_text()
            parts.append(f"--- {p.name} ({p.command}, pid {p.pid}) ---\n{text[-LOG_TAIL:]}")
        return "\n".join(parts)

    # -- stopping ------------------------------------------------------------------------------

    def kill(self, proc: Proc) -> None:
        """SIGKILL: no shutdown code runs, leases and claims stay behind."""
        proc.killed = True
        proc.popen.send_signal(signal.SIGKILL)
        proc.popen.wait(STOP_DEADLINE)

    def stop(self, proc: Proc, timeout: float = STOP_DEADLINE) -> int:
        """SIGTERM and wait; SIGKILL when it does not exit in time. Returns the exit status."""
        if proc.alive():
            proc.popen.send_signal(signal.SIGTERM)
            try:
                proc.popen.wait(timeout)
            except subprocess.TimeoutExpired:
                proc.popen.kill()
                proc.popen.wait(STOP_DEADLINE)
        return int(proc.popen.returncode)

    def stop_all(self) -> None:
        for proc in self.procs:
            if proc.alive():
                proc.popen.send_signal(signal.SIGTERM)
        end = time.monotonic() + STOP_DEADLINE
        for proc in self.procs:
            try:
                proc.popen.wait(max(0.1, end - time.monotonic()))
            except subprocess.TimeoutExpired:
                proc.popen.kill()
                proc.popen.wait(STOP_DEADLINE)

    def errors_logged(self) -> list[str]:
        """Tracebacks and ERROR lines of every process (what a test asserts is empty)."""
        found = []
        for p in self.procs:
            for line in p.log_text().splitlines():
                if "Traceback" in line or " ERROR " in line or '"level": "ERROR"' in line:
                    found.append(f"{p.name}: {line}")
        return found


def base_env(**values: str) -> dict[str, str]:
    """This environment without Threadline's variables (a developer's shell must not leak
    in), plus `values`."""
    prefixes = ("LLM_", "THREADLINE_", "SLACK_", "DISCORD_", "QDRANT_", "EMBEDDINGS_", "TTS_")
    env = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith(prefixes) and k not in ("DATABASE_URL", "PORT")
    }
    env.update(THREADLINE_DEMO_INDEX="0", **values)
    return env
