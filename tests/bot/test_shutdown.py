"""Graceful shutdown of the real processes (bot/shutdown.py): SIGTERM during a slow model answer
finishes the answer within THREADLINE_SHUTDOWN_GRACE, a shorter bound cuts it without a half
turn in the database, a second signal exits at once; the worker closes the Discord gateway and
hands back its outbox lease. And the start-up check: a second serving process on one SQLite
data dir is refused with what to set. Bounds are asserted with wide margins (loaded machines)."""

from __future__ import annotations

import asyncio
import json
import signal
import sqlite3
import subprocess
import time
from collections.abc import Callable, Iterator
from functools import partial
from pathlib import Path
from typing import Any

import pytest

from core import messages
from core.outbox import Outbox, OutboxMessage
from core.store.engine import Database
from tests.adapters.slack.test_slack import slack_env
from tests.bot.test_cli import (
    STOP_DEADLINE,
    cli_env,
    free_port,
    http_get,
    run_cli,
    spawn,
    threadline_command,
    wait_until,
)
from tests.core.outbox.test_processes import database_of, enqueue
from tests.support.fakes.discord_server import FakeDiscord
from tests.support.fakes.openai_server import FakeOpenAI
from tests.support.fakes.slack_api import FakeSlack
from tests.support.fakes.slack_events import mention, new_ts, send

__all__ = ["cli_env", "spawn"]  # fixtures shared with the CLI tests

Spawn = Callable[..., tuple[subprocess.Popen[bytes], Path]]


@pytest.fixture
def fake_slack() -> Iterator[FakeSlack]:
    fake = FakeSlack().start()
    yield fake
    fake.stop()


def serve_env(
    cli_env: dict[str, str], slack: FakeSlack, llm: FakeOpenAI, **extra: str
) -> dict[str, str]:
    return slack_env(
        cli_env,
        slack,
        LLM_BASE_URL=llm.url,
        LLM_MODEL="fake-model",
        LLM_MAX_RETRIES="0",
        **extra,
    )


def start_serve(spawn: Spawn, env: dict[str, str]) -> tuple[subprocess.Popen[bytes], Path, str]:
    port = free_port()
    proc, log = spawn(env, "serve", "--port", str(port))
    base = f"http://127.0.0.1:{port}"
    wait_until(lambda: http_get(f"{base}/healthz") is not None, proc, log, "/healthz")
    return proc, log, base


def post_event(base: str, body: dict[str, Any]) -> int:
    return send(f"{base}/slack/events", json.dumps(body).encode(), "application/json").status


def thread_rows(env: dict[str, str]) -> list[tuple[str, str, str | None, str | None]]:
    path = Path(env["THREADLINE_DATA_DIR"]) / "threadline.db"
    with sqlite3.connect(path) as db:
        return list(
            db.execute(
                "SELECT role, content, tool_calls, tool_call_id FROM thread_messages ORDER BY id"
            )
        )


def wait_exit(proc: subprocess.Popen[bytes], within: float) -> tuple[int, float]:
    started = time.monotonic()
    code = proc.wait(within)
    return code, time.monotonic() - started


def test_sigterm_during_a_slow_answer_posts_it_and_exits_zero(
    cli_env: dict[str, str], fake_slack: FakeSlack, fake_llm: FakeOpenAI, spawn: Spawn
) -> None:
    env = serve_env(cli_env, fake_slack, fake_llm)
    proc, log, base = start_serve(spawn, env)
    fake_llm.tool_calls(("current_time", {}))
    fake_llm.reply("Deploys go out at noon.", delay=3.0)

    assert post_event(base, mention("when do deploys go out?", ts=new_ts())) == 200
    fake_llm.wait_for_requests(2, timeout=30)  # the slow answer is being written
    proc.send_signal(signal.SIGTERM)

    # Draining: alive, not ready, and new events are left for Slack to retry elsewhere.
    wait_until(lambda: "shutting down" in log.read_text(), proc, log, "the shutdown line")
    alive = http_get(f"{base}/healthz")  # /readyz: the next test
    assert alive is not None and alive[0] == 200
    assert post_event(base, mention("a new question", ts=new_ts())) == 503

    code, _ = wait_exit(proc, 25 + STOP_DEADLINE)
    text = log.read_text()
    assert code == 0, text
    assert "Traceback" not in text
    assert [m["text"] for m in fake_slack.posted("C1")] == ["Deploys go out at noon."]
    rows = thread_rows(env)
    assert [r[0] for r in rows] == ["user", "assistant", "tool", "assistant"]
    assert rows[0][1] == "when do deploys go out?"
    assert rows[-1][1] == "Deploys go out at noon."
    (call,) = json.loads(rows[1][2] or "[]")
    assert rows[2][3] == call["id"]  # the tool call has its result: nothing dangles
    assert len(fake_llm.requests) == 2  # the refused event reached no model


def test_readyz_says_shutting_down_with_503(
    cli_env: dict[str, str], fake_slack: FakeSlack, fake_llm: FakeOpenAI, spawn: Spawn
) -> None:
    import urllib.error
    import urllib.request

    env = serve_env(cli_env, fake_slack, fake_llm)
    proc, log, base = start_serve(spawn, env)
    fake_llm.reply("Later.", delay=3.0)
    assert post_event(base, mention("hold on", ts=new_ts())) == 200
    fake_llm.wait_for_requests(1, timeout=30)
    proc.send_signal(signal.SIGTERM)
    wait_until(lambda: "shutting down" in log.read_text(), proc, log, "the shutdown line")
    with pytest.raises(urllib.error.HTTPError) as refused:
        urllib.request.urlopen(f"{base}/readyz", timeout=5)
    assert refused.value.code == 503
    assert json.loads(refused.value.read()) == {
        "status": "not ready",
        "failing": ["process"],
        "checks": {"process": "shutting down"},
    }
    assert wait_exit(proc, 25 + STOP_DEADLINE)[0] == 0, log.read_text()


def test_a_bound_shorter_than_the_answer_cuts_it_without_a_half_written_turn(
    cli_env: dict[str, str], fake_slack: FakeSlack, fake_llm: FakeOpenAI, spawn: Spawn
) -> None:
    env = serve_env(cli_env, fake_slack, fake_llm, THREADLINE_SHUTDOWN_GRACE="1")
    proc, log, base = start_serve(spawn, env)
    fake_llm.tool_calls(("current_time", {}))
    fake_llm.reply("Too late.", delay=10.0)

    assert post_event(base, mention("a long question", ts=new_ts())) == 200
    fake_llm.wait_for_requests(2, timeout=30)
    proc.send_signal(signal.SIGTERM)

    # 1 s of grace, at most 3 s of backstop, and process start/exit on a loaded machine;
    # still well under the 10 s answer.
    code, took = wait_exit(proc, 20)
    text = log.read_text()
    assert code == 1, text
    assert took < 9, text
    assert "cut: 1 Slack answer(s)" in text
    assert "Traceback" not in text
    # The asker is told, in the thread, rather than left with a reaction and no answer.
    assert [m["text"] for m in fake_slack.posted("C1")] == [messages.ANSWER_CUT]
    # The question is kept (stored when its request started); nothing else of the turn is.
    assert thread_rows(env) == [("user", "a long question", None, None)]


def test_a_second_signal_exits_at_once(
    cli_env: dict[str, str], fake_slack: FakeSlack, fake_llm: FakeOpenAI, spawn: Spawn
) -> None:
    env = serve_env(cli_env, fake_slack, fake_llm, THREADLINE_SHUTDOWN_GRACE="60")
    proc, log, base = start_serve(spawn, env)
    fake_llm.reply("Too late.", delay=20.0)
    assert post_event(base, mention("a long question", ts=new_ts())) == 200
    fake_llm.wait_for_requests(1, timeout=30)
    proc.send_signal(signal.SIGTERM)
    wait_until(lambda: "shutting down" in log.read_text(), proc, log, "the shutdown line")

    proc.send_signal(signal.SIGINT)
    code, took = wait_exit(proc, 20)
    text = log.read_text()
    assert code == 128 + signal.SIGINT, text
    assert took < 10, text  # not the 20 s answer, nor the 60 s bound
    assert "second SIGINT: stopping at once" in text
    assert thread_rows(env) == [("user", "a long question", None, None)]


# -- the worker -----------------------------------------------------------------------------------


async def test_worker_sigterm_closes_the_gateway_and_hands_back_the_outbox_lease(
    cli_env: dict[str, str], tmp_path: Path
) -> None:
    fake = await FakeDiscord().start()
    env = {
        **cli_env,
        "DISCORD_TOKEN": fake.token,
        "DISCORD_API_URL": fake.api_url,
        "THREADLINE_SHUTDOWN_GRACE": "2",
    }
    proc = await asyncio.create_subprocess_exec(
        *threadline_command(),
        "worker",
        env=env,
        cwd=tmp_path,
        stdout=asyncio.subprocess.DEVNULL,
        stderr=asyncio.subprocess.PIPE,
    )
    try:
        await fake.wait_for(lambda: fake.identifies, within=30)
        # Discord holds the post for 60 s (a rate limit): the delivery is in hand at SIGTERM.
        fake.rate_limit_next("POST", r"/channels/\d+/messages", retry_after=60)
        message = OutboxMessage(
            platform="discord", tenant=fake.guild_id, channel=fake.general, text="Hi", key="d:9"
        )
        await enqueue(database_of(env), message)
        await fake.wait_for(lambda: fake.calls_to("POST", r"/channels/\d+/messages"), within=30)
        proc.send_signal(signal.SIGTERM)
        _, stderr = await asyncio.wait_for(proc.communicate(), 30)
        closes = await fake.wait_for(lambda: fake.gateway.closes, within=10)
    finally:
        if proc.returncode is None:
            proc.kill()
            await proc.wait()
        await fake.stop()
    text = stderr.decode()
    assert proc.returncode == 1, text  # the delivery in hand was cut at the 2 s bound
    assert "cut: a discord outbox delivery" in text
    assert "Traceback" not in text
    # A closing handshake, not a dropped socket (1006). discord.py's close() sends 4000, not
    # 1000 (its reader answers aiohttp's close first), so Discord keeps the session resumable
    # until it times out; a restarted worker identifies anew either way.
    assert len(closes) == 1, closes
    assert closes[0] not in (None, 1006), closes
    db = Database(database_of(env))
    try:  # another drainer takes the message at once, without waiting out the lease
        (item,) = await Outbox(db).claim("discord", "another-worker")
    finally:
        await db.dispose()
    assert item.message.key == "d:9"


async def test_run_with_slack_and_discord_stops_both_on_one_sigterm(
    cli_env: dict[str, str], fake_slack: FakeSlack, tmp_path: Path
) -> None:
    fake = await FakeDiscord().start()
    env = slack_env(
        cli_env,
        fake_slack,
        SLACK_APP_TOKEN=fake_slack.app_token,
        SLACK_SIGNING_SECRET="",
        DISCORD_TOKEN=fake.token,
        DISCORD_API_URL=fake.api_url,
    )
    proc = await asyncio.create_subprocess_exec(
        *threadline_command(),
        "run",
        env=env,
        cwd=tmp_path,
        stdout=asyncio.subprocess.DEVNULL,
        stderr=asyncio.subprocess.PIPE,
    )
    try:
        await fake.wait_for(lambda: fake.identifies, within=30)
        await asyncio.to_thread(fake_slack.wait_calls, "apps.connections.open", 1, 30)
        proc.send_signal(signal.SIGTERM)
        _, stderr = await asyncio.wait_for(proc.communicate(), 30)
        closes = await fake.wait_for(lambda: fake.gateway.closes, within=10)
    finally:
        if proc.returncode is None:
            proc.kill()
            await proc.wait()
        await fake.stop()
    text = stderr.decode()
    assert proc.returncode == 0, text
    assert "Socket Mode stopped" in text
    assert "shutdown: clean" in text
    assert closes[0] not in (None, 1006), closes
    assert "Traceback" not in text


# -- start-up checks ------------------------------------------------------------------------------


def test_a_second_serving_process_on_one_sqlite_data_dir_is_refused(
    cli_env: dict[str, str], tmp_path: Path, spawn: Spawn
) -> None:
    port = free_port()
    first, log = spawn(cli_env, "serve", "--port", str(port))
    wait_until(
        lambda: http_get(f"http://127.0.0.1:{port}/healthz") is not None, first, log, "/healthz"
    )

    second = run_cli(cli_env, tmp_path, "worker", timeout=60)
    assert second.returncode == 2, second.stderr
    assert f"pid {first.pid} (threadline serve)" in second.stderr
    assert "DATABASE_URL=postgresql://" in second.stderr
    assert "QDRANT_URL=" in second.stderr
    assert "Traceback" not in second.stderr
    # A shell command beside the serving process works as before.
    repos = run_cli(cli_env, tmp_path, "repos", "--json")
    assert repos.returncode == 0, repos.stderr

    first.send_signal(signal.SIGTERM)
    assert first.wait(STOP_DEADLINE) == 0, log.read_text()
    # The lock went with the process: the next one starts.
    third, third_log = spawn(cli_env, "-v", "worker")
    wait_until(lambda: "worker started" in third_log.read_text(), third, third_log, "start")
    third.send_signal(signal.SIGTERM)
    assert third.wait(STOP_DEADLINE) == 0, third_log.read_text()


def started(log: Path) -> bool:
    return "worker started" in log.read_text()


def test_with_postgresql_and_a_qdrant_server_several_processes_start(
    cli_env: dict[str, str], pg_url: str, spawn: Spawn
) -> None:
    env = {**cli_env, "DATABASE_URL": pg_url, "QDRANT_URL": "http://127.0.0.1:1"}
    procs = [spawn(env, "-v", "worker") for _ in range(2)]
    for proc, log in procs:
        wait_until(partial(started, log), proc, log, "start")
    for proc, _ in procs:
        proc.send_signal(signal.SIGTERM)
    for proc, log in procs:
        assert proc.wait(STOP_DEADLINE) == 0, log.read_text()
