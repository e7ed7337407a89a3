"""A shell next to a running bot: while one process holds the embedded vector store, other
local processes search and index through it (core/code/store_socket.py), only the local
operator gets in, and when the holder stops the next user simply holds the store itself."""

from __future__ import annotations

import asyncio
import json
import os
import signal
import stat
import struct
import subprocess
import sys
from collections.abc import AsyncIterator, Callable
from pathlib import Path

import pytest

from bot.code_cli import embedded_shard
from bot.upkeep import hold_vector_store
from config.settings import Settings
from core.code.embeddings import LocalMiniLM
from core.code.socket_wire import Refused, ask
from core.code.store_socket import RemoteBackend, addressable, socket_path, token_path
from core.code.vectors import VectorStore
from tests.bot.test_cli import STOP_DEADLINE, cli_env, run_cli, spawn, wait_until  # noqa: F401
from tests.conftest import BotHarness
from tests.core.code.test_search import chunk_ids, indexed_bot, make_shop
from tests.support.code_repo import write
from tests.support.paths import ROOT_DIR

MakeBot = Callable[..., BotHarness]
Spawn = Callable[..., tuple[subprocess.Popen[bytes], Path]]
ROOT = ROOT_DIR


def small_repo(tmp_path: Path) -> Path:
    """A second repository unlike the shop: two copies of one would tie, in either order."""
    root = tmp_path / "src" / "other"
    write(root, "jobs/rotate.py", 'def rotate_logs(days):\n    """Delete old logs."""\n')
    return root


def shard_of(bot: BotHarness) -> Path:
    data_dir: Path = bot.app.settings.data_dir
    collection: str = bot.app.search.collection
    return data_dir / "qdrant-edge" / collection


async def test_a_second_app_searches_and_indexes_through_the_holder(
    make_bot: MakeBot, tmp_path: Path
) -> None:
    holder = await indexed_bot(make_bot, tmp_path)  # holds the shard, and shares it
    shell = make_bot()  # same data dir: `threadline search` / `index` beside the bot
    found = await shell.app.search.search("how is a user's login secret verified?", ["shop"])
    assert found[0].symbol.startswith("passwords.check_password")
    assert isinstance((await shell.app.search.store()).backend, RemoteBackend)

    other = await shell.app.repos.register(str(make_shop(tmp_path / "src", "other")), "other")
    report = await shell.app.indexer.index(other)
    assert report.vectors_error is None
    assert report.vectors is not None
    assert report.vectors.embedded == len(await chunk_ids(shell, "other"))
    # Written into the holder's shard: the bot finds it at once.
    top = await holder.app.search.search("nightly db dump upload", ["other"], k=1)
    assert top[0].repo == "other" and "SnapshotDatabase" in top[0].symbol
    assert await shell.app.search.in_sync(other)


async def test_when_the_holder_stops_the_next_user_holds_the_store(
    make_bot: MakeBot, tmp_path: Path
) -> None:
    holder = await indexed_bot(make_bot, tmp_path)
    shell = make_bot()
    assert await shell.app.search.search("password", ["shop"], k=1)
    await holder.app.search.aclose()  # the bot stopped
    assert not socket_path(shard_of(holder)).exists()
    assert not token_path(shard_of(holder)).exists()

    found = await shell.app.search.search("password", ["shop"], k=1)
    assert found
    store = await shell.app.search.store()
    assert not isinstance(store.backend, RemoteBackend)  # holds it now, and shares it
    assert socket_path(shard_of(shell)).exists()


async def test_only_the_operator_gets_in(make_bot: MakeBot, tmp_path: Path) -> None:
    holder = await indexed_bot(make_bot, tmp_path)
    shard = shard_of(holder)
    for path in (socket_path(shard), token_path(shard)):
        assert stat.S_IMODE(path.stat().st_mode) == 0o600, path

    async def hello(token: str) -> dict[str, object]:
        with addressable(socket_path(shard)) as address:
            reader, writer = await asyncio.open_unix_connection(address)
        body = json.dumps({"token": token}).encode()
        writer.write(struct.pack(">I", len(body)) + body)
        (size,) = struct.unpack(">I", await reader.readexactly(4))
        answer: dict[str, object] = json.loads(await reader.readexactly(size))
        writer.close()
        await writer.wait_closed()
        return answer

    assert await hello("not-the-token") == {"ok": False, "error": "not authorised"}
    assert await hello(token_path(shard).read_text()) == {"ok": True}


async def test_the_holder_answers_whole_searches(make_bot: MakeBot, tmp_path: Path) -> None:
    holder = await indexed_bot(make_bot, tmp_path)
    repo = await holder.app.repos.register(str(small_repo(tmp_path)), "other")
    assert (await holder.app.indexer.index(repo)).vectors_error is None
    shard = shard_of(holder)
    query = "how is a user's login secret verified?"

    def search(**fields: object) -> dict[str, object]:
        request = {"op": "search", "query": query, "repos": None, "k": 5, "roles": None}
        return ask(shard, {**request, **fields}, timeout=30)

    everywhere = await asyncio.to_thread(search)
    expected = await holder.app.search.search(query, ["other", "shop"], k=5)
    assert everywhere == {
        "ok": True,
        "repos": ["other", "shop"],
        "results": [r.as_wire() for r in expected],
    }
    only = await asyncio.to_thread(search, repos=["shop"], roles=["source"], k=2)
    expected = await holder.app.search.search(query, ["shop"], k=2, roles=["source"])
    assert only["results"] == [r.as_wire() for r in expected] and len(expected) == 2

    unknown = await asyncio.to_thread(search, repos=["nope"])
    assert unknown["ok"] is False and unknown["unknown_repo"] == "nope"
    assert unknown["known"] == ["other", "shop"]
    bad = await asyncio.to_thread(search, k="5")
    assert bad["ok"] is False and "bad request" in str(bad["error"])

    token = token_path(shard)
    real = token.read_text()
    token.write_text("not-the-token")  # the search is behind the token like every operation
    try:
        with pytest.raises(Refused):
            await asyncio.to_thread(search)
    finally:
        token.write_text(real)


def test_the_cli_finds_the_shard_without_the_embedder(tmp_path: Path) -> None:
    from bot.app import EDGE_DIR
    from bot.code_parts import build_embedder
    from core.code.embeddings import collection_name

    for fields in (
        {},
        {
            "embeddings_provider": "openai",
            "embeddings_url": "http://127.0.0.1:9/v1",
            "embeddings_model": "text-embedding-3-small",
            "embeddings_dimension": 1536,
        },
    ):
        settings = Settings(data_dir=tmp_path, **fields)  # type: ignore[arg-type]
        expected = tmp_path / EDGE_DIR / collection_name(build_embedder(settings))
        assert embedded_shard(settings) == expected


async def test_a_dead_holders_socket_is_replaced(make_bot: MakeBot, tmp_path: Path) -> None:
    bot = make_bot()
    shard = bot.app.settings.data_dir / "qdrant-edge" / bot.app.search.collection
    shard.parent.mkdir(parents=True)
    socket_path(shard).write_text("left by a crashed process")
    token_path(shard).write_text("stale")
    await bot.app.search.store()
    assert stat.S_ISSOCK(socket_path(shard).stat().st_mode)
    assert token_path(shard).read_text() != "stale"


async def test_a_serving_process_holds_the_store_when_there_is_a_repository(
    make_bot: MakeBot, tmp_path: Path
) -> None:
    """What `bot.upkeep` does at start-up: nothing without a repository or with a server; else
    hold the shard and share it; when a shell's one-shot command holds it, let go and try
    again later."""
    bot = make_bot()
    assert await hold_vector_store(bot.app) is None
    assert not bot.app.search.held and not shard_of(bot).exists()  # not even made
    served = make_bot(qdrant_url="http://127.0.0.1:9")
    repo = await served.app.repos.register(str(make_shop(tmp_path / "src")), "shop")
    assert await hold_vector_store(served.app) is None  # nothing to hold: no store opened
    assert not served.app.search.held

    shell = make_bot()  # the same data dir, no server: the shell's command holds the shard
    assert (await shell.app.indexer.index(repo)).vectors_error is None
    assert await hold_vector_store(bot.app) is False
    assert not bot.app.search.held  # let go: tried again later

    await shell.app.search.aclose()  # the command ended
    assert await hold_vector_store(bot.app) is True
    assert bot.app.search.held and socket_path(shard_of(bot)).exists()
    assert await hold_vector_store(bot.app) is True  # held: nothing to do
    found = await shell.app.search.search("password", ["shop"], k=1)  # through the bot
    assert found and isinstance((await shell.app.search.store()).backend, RemoteBackend)


async def test_a_search_given_up_while_the_store_opens_strands_no_shard(
    make_bot: MakeBot, tmp_path: Path
) -> None:
    """A caller cancelled while the shard loads in its worker thread (a request cut, a process
    stopping right after start) leaves the open to finish; the app's close closes the shard,
    so it can be opened again."""
    bot = await indexed_bot(make_bot, tmp_path)
    await bot.app.search.aclose()
    asking = asyncio.create_task(bot.app.search.search("password", ["shop"]))
    for _ in range(5):  # into the worker thread that opens the shard
        await asyncio.sleep(0)
    asking.cancel()
    with pytest.raises(asyncio.CancelledError):
        await asking
    await bot.app.search.aclose()
    assert not socket_path(shard_of(bot)).exists()
    again = await asyncio.to_thread(VectorStore.local, shard_of(bot).parent, LocalMiniLM())
    await again.close()


# -- processes ------------------------------------------------------------------------------------

HOLDER = """
import asyncio, sys
sys.path.insert(0, sys.argv[1])
from bot.app import build_app
from config.settings import load_settings

async def main():
    app = build_app(load_settings())
    await app.search.store()
    print("ready", flush=True)
    await asyncio.get_running_loop().run_in_executor(None, sys.stdin.readline)
    await app.aclose()

asyncio.run(main())
"""


@pytest.fixture
async def running_bot(cli_env: dict[str, str]) -> AsyncIterator[asyncio.subprocess.Process]:  # noqa: F811
    """A process holding the embedded store as `threadline run` does once it has used it."""
    proc = await asyncio.create_subprocess_exec(
        sys.executable,
        "-c",
        HOLDER,
        str(ROOT),
        env=cli_env,
        stdin=asyncio.subprocess.PIPE,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
    )
    assert proc.stdout is not None and proc.stderr is not None and proc.stdin is not None
    ready = await proc.stdout.readline()
    assert ready == b"ready\n", await proc.stderr.read()
    yield proc
    if proc.returncode is None:
        await stop_bot(proc)


async def stop_bot(proc: asyncio.subprocess.Process) -> None:
    assert proc.stdin is not None and proc.stderr is not None
    proc.stdin.write(b"stop\n")
    await proc.stdin.drain()
    assert await proc.wait() == 0, await proc.stderr.read()


async def test_threadline_index_and_search_in_a_shell_beside_the_bot(
    running_bot: asyncio.subprocess.Process,
    cli_env: dict[str, str],  # noqa: F811
    tmp_path: Path,
) -> None:
    root = make_shop(tmp_path / "src")
    indexed = await asyncio.to_thread(run_cli, cli_env, tmp_path, "index", str(root))
    assert indexed.returncode == 0, indexed.stderr
    assert "not updated" not in indexed.stdout, indexed.stdout
    assert "embedded" in indexed.stdout

    found = await asyncio.to_thread(
        run_cli, cli_env, tmp_path, "search", "nightly db dump upload", "--json"
    )
    assert found.returncode == 0, found.stderr
    rows = json.loads(found.stdout)["results"]
    assert rows[0]["path"] == "ops/backup.go" and rows[0]["role"] == "source"

    write(root, "ops/restore.go", "package ops\n\nfunc RestoreDatabase() error { return nil }\n")
    again = await asyncio.to_thread(run_cli, cli_env, tmp_path, "index", str(root))
    assert again.returncode == 0 and "not updated" not in again.stdout, again.stdout
    found = await asyncio.to_thread(
        run_cli, cli_env, tmp_path, "search", "RestoreDatabase", "--k", "1", "--json"
    )
    assert json.loads(found.stdout)["results"][0]["path"] == "ops/restore.go"
    assert running_bot.returncode is None  # the bot kept running all along
    assert os.environ.get("QDRANT_URL") is None


# `threadline search` as `entry` runs it, and then which heavy modules it imported.
PROBE = """
import json, sys
sys.path.insert(0, sys.argv[1])
from bot.cli import main
code = main(sys.argv[2:])
sys.stdout.flush()
heavy = ("sqlmodel", "sqlalchemy", "numpy", "bot.app")
print(json.dumps(sorted(m for m in heavy if m in sys.modules)), file=sys.stderr)
sys.exit(code)
"""


def probe_cli(env: dict[str, str], cwd: Path, *args: str) -> tuple[int, str, str, list[str]]:
    """Exit status, stdout, stderr (without the last line) and the heavy modules imported."""
    proc = subprocess.run(
        [sys.executable, "-c", PROBE, str(ROOT), *args],
        env=env,
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    *err, imported = proc.stderr.splitlines()
    return proc.returncode, proc.stdout, "\n".join(err), json.loads(imported)


async def test_threadline_search_is_answered_by_the_bot(
    running_bot: asyncio.subprocess.Process,
    cli_env: dict[str, str],  # noqa: F811
    tmp_path: Path,
) -> None:
    for root in (make_shop(tmp_path / "src"), small_repo(tmp_path)):
        indexed = await asyncio.to_thread(run_cli, cli_env, tmp_path, "index", str(root))
        assert indexed.returncode == 0, indexed.stderr
    searches = [
        ("nightly db dump upload", "--json"),
        ("how is a user's login secret verified?", "--repo", "shop", "--k", "3", "--json"),
        ("password", "--role", "test", "--role", "source", "--k", "4", "--json"),
        ("how is a user's login secret verified?", "--k", "3"),  # the text output
        ("zzqx nothing like it",),
    ]
    answers = {}
    for args in searches:
        code, out, err, imported = await asyncio.to_thread(
            probe_cli, cli_env, tmp_path, "search", *args
        )
        assert (code, err, imported) == (0, "", []), (args, err)  # the bot answered it
        answers[args] = out
    rows = json.loads(answers[searches[0]])["results"]
    assert rows[0]["path"] == "ops/backup.go"
    assert {r["repo"] for r in rows} == {"shop", "other"}
    assert {r["repo"] for r in json.loads(answers[searches[1]])["results"]} == {"shop"}
    assert answers[searches[3]].startswith("1. shop:auth/passwords.py:")

    code, out, err, imported = await asyncio.to_thread(
        probe_cli, cli_env, tmp_path, "search", "password", "--repo", "nope"
    )
    assert (code, out, imported) == (1, "", [])
    assert err == "search: no repository named 'nope' (known: other, shop)"
    code, out, err, imported = await asyncio.to_thread(
        probe_cli, cli_env, tmp_path, "search", "password", "--k", "31"
    )
    assert (code, out, err) == (2, "", "search: --k must be between 1 and 30")

    await stop_bot(running_bot)  # the same searches, in the CLI's own process now
    for args in searches:
        alone = await asyncio.to_thread(run_cli, cli_env, tmp_path, "search", *args)
        assert alone.returncode == 0, alone.stderr
        assert alone.stdout == answers[args], args
    code, out, err, imported = await asyncio.to_thread(
        probe_cli, cli_env, tmp_path, "search", "password", "--repo", "nope"
    )
    assert (code, out) == (1, "") and "sqlmodel" in imported
    assert err == "search: no repository named 'nope' (known: other, shop)"
    # Alone, it builds what search needs, not the app (chat model, features, commands).
    code, out, err, imported = await asyncio.to_thread(
        probe_cli, cli_env, tmp_path, "search", "nightly db dump upload", "--json"
    )
    assert (code, out, err) == (0, answers[searches[0]], "")
    assert imported == ["numpy", "sqlalchemy", "sqlmodel"]


async def test_a_bot_started_beside_an_index_answers_shell_searches_from_the_start(
    cli_env: dict[str, str],  # noqa: F811
    spawn: Spawn,  # noqa: F811
    tmp_path: Path,
) -> None:
    """Indexed first, then the bot starts: before anyone asks it anything it holds the store,
    and `threadline search` in a shell is answered by it (the shell loads nothing heavy)."""
    root = make_shop(tmp_path / "src")
    indexed = await asyncio.to_thread(run_cli, cli_env, tmp_path, "index", str(root))
    assert indexed.returncode == 0, indexed.stderr
    shard = embedded_shard(Settings(data_dir=Path(cli_env["THREADLINE_DATA_DIR"])))
    assert not socket_path(shard).exists()

    proc, log = spawn(cli_env, "worker")
    wait_until(lambda: socket_path(shard).exists(), proc, log, "the store socket")
    code, out, err, imported = await asyncio.to_thread(
        probe_cli, cli_env, tmp_path, "search", "nightly db dump upload", "--json"
    )
    assert (code, err, imported) == (0, "", []), log.read_text()  # the bot answered it
    assert json.loads(out)["results"][0]["path"] == "ops/backup.go"

    proc.send_signal(signal.SIGTERM)
    assert await asyncio.to_thread(proc.wait, STOP_DEADLINE) == 0, log.read_text()
    text = log.read_text()
    assert "vector store held" in text and "Traceback" not in text and "WARNING" not in text
    assert not socket_path(shard).exists()
