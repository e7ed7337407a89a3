"""`threadline hold-search`: a process that keeps the code index open for searches in a shell.

A `threadline search` with no bot running opens the database, the embedded vector store and
the embedding model itself, then throws them away: most of a second of imports and loading
for a search of tens of milliseconds. So the first such search starts this process in the
background (`start_holder`; `THREADLINE_SEARCH_LINGER` seconds, 0: never) and is answered
through it, like a search beside a bot (`bot.code_cli.search_through_holder`); so are the
searches after it, and a `threadline index` in a shell writes through it. It leaves when
nobody has used it for that long, on SIGTERM or SIGINT, and when a bot starting up asks for
the store (`CodeSearch.hold(take_over=True)`): then it lets the store go at once.

It holds what a bot would (the shard, its socket, the loaded model: ~250 MB with the local
model) and serves the same socket with the same checks (`core.code.store_socket`). When
another process holds the store already, or no repository is registered, it leaves at once.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import signal
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from config.settings import Settings

log = logging.getLogger(__name__)

EXIT_OK, EXIT_FAILED = 0, 1
# How long a `threadline search` waits for the holder it started to share the store: a cold
# start (imports, a large shard, the model) on a busy machine; past it, it searches itself.
START_TIMEOUT = 30.0
# How often the holder looks at its idle time: leaving up to this late costs nothing.
IDLE_CHECK_EVERY = 1.0
LOG_NAME = "search-holder.log"
MAX_LOG_BYTES = 1_000_000


async def hold_for_searches(
    settings: Settings, idle: float, *, check_every: float = IDLE_CHECK_EVERY
) -> int:
    """Hold the store and serve searches until nobody has asked for `idle` seconds, a signal
    comes, or a bot asks for the store. Exit code: 0 also when there was nothing to hold."""
    from bot.code_parts import build_embedder, code_search
    from bot.dispatch_cli import database_ready
    from core.code.embeddings import LocalMiniLM
    from core.code.repos import RepoStore
    from core.code.vectors import VectorStoreError
    from core.store.engine import Database

    if settings.qdrant_url:
        log.info("the vector store is a Qdrant server (QDRANT_URL): nothing to hold")
        return EXIT_OK
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(sig, stop.set)
    db = Database(settings.database)
    embedder = build_embedder(settings)
    search = code_search(settings, db, embedder, release=stop.set)
    try:
        if not await database_ready(db):
            return EXIT_FAILED
        if not await RepoStore(db, settings.data_dir / "repos").all():
            log.info("no repository is registered: nothing to hold")
            return EXIT_OK
        try:
            if not await search.hold():
                log.info("another process holds the vector store: nothing to do")
                return EXIT_OK
        except VectorStoreError as exc:
            log.warning("cannot hold the vector store: %s", exc)
            return EXIT_FAILED
        if isinstance(embedder, LocalMiniLM):  # loaded now, not by the first search
            await asyncio.to_thread(embedder.load)
        log.info("holding the vector store for searches in a shell (leaving after %gs idle)", idle)
        await _until_idle(search.idle_for, idle, stop, check_every)
        return EXIT_OK
    finally:
        for sig in (signal.SIGTERM, signal.SIGINT):
            loop.remove_signal_handler(sig)
        await search.aclose()
        await db.dispose()


async def _until_idle(
    idle_for: Callable[[], float | None],
    idle: float,
    stop: asyncio.Event,
    check_every: float,
) -> None:
    while not stop.is_set():
        quiet = idle_for()
        if quiet is None or quiet >= idle:
            log.info("no search for %gs: letting the vector store go", idle)
            return
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(stop.wait(), min(check_every, idle - quiet))


def start_holder(settings: Settings, *, timeout: float = START_TIMEOUT) -> bool:
    """Start `threadline hold-search` in the background, detached from this terminal, and wait
    until it shares the store. Whether it does: False when it left (nothing to hold, another
    process holds the store, it failed: its log is DATA_DIR/search-holder.log) or did not
    share it within `timeout` seconds (it goes on; the next search uses it)."""
    from bot.code_cli import embedded_shard
    from core.code import socket_wire

    shard = embedded_shard(settings)
    socket = socket_wire.socket_path(shard)
    try:
        pid = _spawn(settings)
    except OSError as exc:  # a data dir it cannot write its log to, no interpreter...
        log.debug("could not start threadline hold-search: %s", exc)
        return False
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if socket.exists() and _answers(shard):  # not the socket a killed holder left
            return True
        if os.waitpid(pid, os.WNOHANG) != (0, 0):  # it left (and is reaped)
            return False
        time.sleep(0.02)
    return False


def _spawn(settings: Settings) -> int:
    """`threadline hold-search` in its own session, its output in DATA_DIR's log; its pid."""
    log_path = settings.data_dir / LOG_NAME
    # Appended to by every holder (a few lines each); started afresh once it has grown.
    with contextlib.suppress(OSError):
        if log_path.stat().st_size > MAX_LOG_BYTES:
            log_path.unlink()
    idle = f"{settings.search_linger:g}"
    argv = [sys.executable, "-m", "bot.cli", "hold-search", "--idle", idle]
    # posix_spawn, not Popen: the holder outlives this process on purpose, and a Popen left
    # running is reported as a leak when the command runs inside another program (tests).
    return os.posix_spawn(
        sys.executable,
        argv,
        {**os.environ, "PYTHONPATH": _import_path()},
        file_actions=[
            (os.POSIX_SPAWN_OPEN, 0, os.devnull, os.O_RDONLY, 0),
            (os.POSIX_SPAWN_OPEN, 1, os.devnull, os.O_WRONLY, 0),
            (
                os.POSIX_SPAWN_OPEN,
                2,
                os.fspath(log_path),
                os.O_WRONLY | os.O_CREAT | os.O_APPEND,
                0o600,
            ),
        ],
        setsid=True,  # its own session: a Ctrl-C at this shell does not reach it
    )


def _answers(shard: Path) -> bool:
    from core.code import socket_wire

    try:
        socket_wire.ask(shard, None, timeout=socket_wire.CONNECT_TIMEOUT)
    except (OSError, ValueError, socket_wire.Refused):
        return False
    return True


def _import_path() -> str:
    """Where this process found Threadline's packages, first, so that the child runs the same
    code whatever its working directory."""
    here = str(Path(__file__).resolve().parent.parent)
    rest = os.environ.get("PYTHONPATH")
    return here if not rest else f"{here}{os.pathsep}{rest}"
