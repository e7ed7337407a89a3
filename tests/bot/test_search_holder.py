"""`threadline hold-search` (bot/search_holder.py): a `threadline search` with no bot running
starts a process that keeps the index open, the next searches are answered by it without
importing the database or the model, it leaves when idle, and a bot starting up takes the store
over from it. Real processes, a real shard, the real socket."""

from __future__ import annotations

import asyncio
import json
import signal
import subprocess
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from bot.code_cli import embedded_shard
from config.settings import Settings
from core.code.edge_store import EdgeBackend
from core.code.socket_wire import ask
from core.code.store_socket import StoreServer, socket_path
from core.code.vectors import VectorStore
from tests.bot.test_cli import STOP_DEADLINE, cli_env, run_cli, spawn, wait_until  # noqa: F401
from tests.core.code.test_search import make_shop
from tests.core.code.test_store_sharing import probe_cli

Spawn = Callable[..., tuple[subprocess.Popen[bytes], Path]]


def shard_of(env: dict[str, str]) -> Path:
    return embedded_shard(Settings(data_dir=Path(env["THREADLINE_DATA_DIR"])))


def holder_log(env: dict[str, str]) -> str:
    path = Path(env["THREADLINE_DATA_DIR"]) / "search-holder.log"
    return path.read_text() if path.exists() else ""


def wait_for(condition: Callable[[], bool], what: str, timeout: float = STOP_DEADLINE) -> None:
    """Poll `condition` (a process this test did not start: no handle to wait on)."""
    import time

    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(0.05)


def holding(
    start: Spawn, env: dict[str, str], idle: str = "600"
) -> tuple[subprocess.Popen[bytes], Path]:
    """`threadline hold-search --idle IDLE` (started with the `spawn` fixture), once it
    shares the store."""
    shard = shard_of(env)
    proc, log = start(env, "hold-search", "--idle", idle)
    wait_until(lambda: socket_path(shard).exists(), proc, log, "the holder's socket")
    return proc, log


@pytest.fixture
def indexed(cli_env: dict[str, str], tmp_path: Path) -> Iterator[dict[str, str]]:  # noqa: F811
    """The shop indexed into the CLI's data dir; a holder left running is told to go."""
    done = run_cli(cli_env, tmp_path, "index", str(make_shop(tmp_path / "src")))
    assert done.returncode == 0, done.stderr
    yield cli_env
    shard = shard_of(cli_env)
    if socket_path(shard).exists():
        try:
            ask(shard, {"op": "release"}, timeout=10)
        except OSError:  # a socket left by a holder the test killed
            return
        wait_for(lambda: not socket_path(shard).exists(), "the holder to leave")


async def test_a_search_starts_a_holder_that_answers_the_next_ones(
    indexed: dict[str, str], tmp_path: Path
) -> None:
    env = {**indexed, "THREADLINE_SEARCH_LINGER": "60"}
    shard = shard_of(env)
    first = await asyncio.to_thread(
        run_cli, env, tmp_path, "search", "nightly db dump upload", "--json"
    )
    assert first.returncode == 0, first.stderr
    assert json.loads(first.stdout)["results"][0]["path"] == "ops/backup.go"
    assert socket_path(shard).exists()  # the holder outlived the command
    assert "holding the vector store" in holder_log(env)

    # The next search is answered by it: nothing heavy is imported by the command.
    code, out, err, imported = await asyncio.to_thread(
        probe_cli, env, tmp_path, "search", "how is a user's login secret verified?", "--json"
    )
    assert (code, err, imported) == (0, "", []), holder_log(env)
    assert json.loads(out)["results"][0]["path"] == "auth/passwords.py"
    # An unknown repository is said as plainly as without a holder.
    code, out, err, imported = await asyncio.to_thread(
        probe_cli, env, tmp_path, "search", "password", "--repo", "nope"
    )
    assert (code, out, imported) == (1, "", [])
    assert err == "search: no repository named 'nope' (known: shop)"


async def test_a_bot_starting_up_takes_the_store_over(
    indexed: dict[str, str],
    spawn: Spawn,  # noqa: F811
    tmp_path: Path,
) -> None:
    env = {**indexed, "THREADLINE_SEARCH_LINGER": "60"}
    shard = shard_of(env)
    first = await asyncio.to_thread(run_cli, env, tmp_path, "search", "password", "--k", "1")
    assert first.returncode == 0 and socket_path(shard).exists(), first.stderr

    proc, log = spawn(env, "worker")
    wait_until(lambda: "vector store held" in log.read_text(), proc, log, "the worker to hold")
    assert "asked to let the store go" in holder_log(env)
    # The worker answers now; a search does not start another holder.
    code, out, err, imported = await asyncio.to_thread(
        probe_cli, env, tmp_path, "search", "nightly db dump upload", "--json"
    )
    assert (code, err, imported) == (0, "", []), log.read_text()
    assert json.loads(out)["results"][0]["path"] == "ops/backup.go"
    # A bot does not let go when asked: only a holder started for the shell does.
    refused = await asyncio.to_thread(ask, shard, {"op": "release"}, timeout=10)
    assert refused == {"ok": False, "error": "this holder keeps the store"}

    proc.send_signal(signal.SIGTERM)
    assert await asyncio.to_thread(proc.wait, STOP_DEADLINE) == 0, log.read_text()
    text = log.read_text() + holder_log(env)
    assert "Traceback" not in text and "WARNING" not in text, text
    assert not socket_path(shard).exists()


def test_the_holder_leaves_when_idle_and_on_sigterm(
    indexed: dict[str, str],
    spawn: Spawn,  # noqa: F811
) -> None:
    shard = shard_of(indexed)
    proc, log = holding(spawn, indexed, "2")
    assert proc.wait(STOP_DEADLINE) == 0, log.read_text()
    assert "no search for 2s" in log.read_text()
    assert not socket_path(shard).exists()

    proc, log = holding(spawn, indexed)
    proc.send_signal(signal.SIGTERM)
    assert proc.wait(STOP_DEADLINE) == 0, log.read_text()
    assert not socket_path(shard).exists()
    assert "Traceback" not in log.read_text()


def test_a_second_holder_or_nothing_to_hold_leaves_at_once(
    indexed: dict[str, str],
    spawn: Spawn,  # noqa: F811
    tmp_path: Path,
) -> None:
    first, first_log = holding(spawn, indexed)
    second, log = spawn(indexed, "hold-search", "--idle", "600")
    assert second.wait(STOP_DEADLINE) == 0, log.read_text()
    assert "another process holds the vector store" in log.read_text()
    assert first.poll() is None  # it did not ask the first to let go
    first.send_signal(signal.SIGTERM)
    assert first.wait(STOP_DEADLINE) == 0, first_log.read_text()

    server = {**indexed, "QDRANT_URL": "http://127.0.0.1:9"}  # nothing is sent to it
    remote, log = spawn(server, "hold-search")
    assert remote.wait(STOP_DEADLINE) == 0, log.read_text()
    assert "Qdrant server (QDRANT_URL): nothing to hold" in log.read_text()

    empty = {**indexed, "THREADLINE_DATA_DIR": str(tmp_path / "empty-data")}
    alone, log = spawn(empty, "hold-search")
    assert alone.wait(STOP_DEADLINE) == 0, log.read_text()
    assert "nothing to hold" in log.read_text()
    # With nothing indexed a search starts no holder, and says there is nothing to search.
    searched = run_cli({**empty, "THREADLINE_SEARCH_LINGER": "60"}, tmp_path, "search", "x")
    assert searched.returncode == 0, searched.stderr
    assert not (tmp_path / "empty-data" / "search-holder.log").exists()


def test_holding_for_zero_seconds_is_refused(
    cli_env: dict[str, str],  # noqa: F811
    tmp_path: Path,
) -> None:
    for idle in ("0", "-1", "soon"):
        done = run_cli(cli_env, tmp_path, "hold-search", "--idle", idle)
        assert done.returncode == 2 and "--idle" in done.stderr, done.stderr
    bad = run_cli({**cli_env, "THREADLINE_SEARCH_LINGER": "-5"}, tmp_path, "search", "x")
    assert bad.returncode == 2 and "search_linger" in bad.stderr.lower(), bad.stderr


async def test_idle_time_counts_from_the_last_answer(tmp_path: Path) -> None:
    from core.code.embeddings import LocalMiniLM

    now = [100.0]
    store = await asyncio.to_thread(VectorStore.local, tmp_path / "edge", LocalMiniLM())
    backend = store.backend
    assert isinstance(backend, EdgeBackend)
    shard = backend.path
    server = StoreServer(backend, shard, clock=lambda: now[0])
    await server.start()
    try:
        now[0] = 130.0
        assert server.idle_for() == 30.0
        answer = await asyncio.to_thread(ask, shard, {"op": "states", "repo": None}, timeout=10)
        assert answer["ok"]
        assert server.idle_for() == 0.0
        now[0] = 131.5
        assert server.idle_for() == 1.5
        released = await asyncio.to_thread(ask, shard, {"op": "release"}, timeout=10)
        assert released == {"ok": False, "error": "this holder keeps the store"}
    finally:
        await server.close()
        await store.close()


async def test_a_killed_holders_socket_does_not_fool_the_next_search(
    indexed: dict[str, str],
    spawn: Spawn,  # noqa: F811
    tmp_path: Path,
) -> None:
    shard = shard_of(indexed)
    proc, _ = holding(spawn, indexed)
    proc.kill()
    proc.wait(STOP_DEADLINE)
    assert socket_path(shard).exists()  # left behind

    env = {**indexed, "THREADLINE_SEARCH_LINGER": "60"}
    found = await asyncio.to_thread(run_cli, env, tmp_path, "search", "nightly db dump upload")
    assert found.returncode == 0 and "ops/backup.go" in found.stdout, found.stderr
    # A new holder replaced the dead one's socket, and answers the next search.
    code, out, err, imported = await asyncio.to_thread(
        probe_cli, env, tmp_path, "search", "nightly db dump upload", "--json"
    )
    assert (code, err, imported) == (0, "", []), holder_log(env)
    assert json.loads(out)["results"][0]["path"] == "ops/backup.go"


async def test_a_holder_that_cannot_start_leaves_the_search_to_the_command(
    indexed: dict[str, str], tmp_path: Path
) -> None:
    """Its log cannot be opened (here a folder stands where the file goes): the search is
    answered in the command's own process, without a traceback."""
    (Path(indexed["THREADLINE_DATA_DIR"]) / "search-holder.log").mkdir()
    env = {**indexed, "THREADLINE_SEARCH_LINGER": "60"}
    found = await asyncio.to_thread(
        run_cli, env, tmp_path, "search", "nightly db dump upload", "--json"
    )
    assert found.returncode == 0 and "Traceback" not in found.stderr, found.stderr
    assert json.loads(found.stdout)["results"][0]["path"] == "ops/backup.go"
    assert not socket_path(shard_of(env)).exists()
