"""The outbox is drained by the process that owns each platform's connection: `serve` posts
Slack's messages, `worker` Discord's, `run` without chat tokens prints the console's. Each test
starts the real CLI, enqueues into its database from outside (as another process's digest
would), and waits for the delivery on the fake platform."""

from __future__ import annotations

import asyncio
import json
import signal
import subprocess
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

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
from tests.support.fakes.discord_server import FakeDiscord
from tests.support.fakes.slack_api import FakeSlack

__all__ = ["cli_env", "spawn"]  # fixtures shared with the CLI tests


def database_of(env: dict[str, str]) -> str:
    return f"sqlite:///{Path(env['THREADLINE_DATA_DIR']).resolve() / 'threadline.db'}"


# The outboxes here keep the real clock: real `serve`/`worker` processes drain them by theirs.


async def enqueue(url: str, message: OutboxMessage) -> None:
    db = Database(url)
    try:
        assert await Outbox(db).enqueue(message)
    finally:
        await db.dispose()


async def delivered(url: str, key: str) -> bool:
    db = Database(url)
    try:
        state = await Outbox(db).state(key)
    finally:
        await db.dispose()
    return state is not None and state.state == "delivered"


@pytest.fixture
def fake_slack() -> Iterator[FakeSlack]:
    fake = FakeSlack().start()
    yield fake
    fake.stop()


def test_serve_posts_slack_outbox_messages(
    cli_env: dict[str, str], fake_slack: FakeSlack, spawn: Callable[..., Any]
) -> None:
    env = slack_env(cli_env, fake_slack)
    port = free_port()
    proc, log = spawn(env, "serve", "--port", str(port))
    wait_until(
        lambda: http_get(f"http://127.0.0.1:{port}/healthz") is not None, proc, log, "/healthz"
    )
    message = OutboxMessage(
        platform="slack",
        tenant="T0HOME",
        channel="C9",
        text="Nothing new.",
        key="d:1",
        title="Daily",
    )
    asyncio.run(enqueue(database_of(env), message))

    fake_slack.wait_calls("chat.postMessage", 1)
    assert [m["text"] for m in fake_slack.posted("C9")] == ["*Daily*\nNothing new."]
    wait_until(lambda: asyncio.run(delivered(database_of(env), "d:1")), proc, log, "the record")
    proc.send_signal(signal.SIGTERM)
    assert proc.wait(STOP_DEADLINE) == 0, log.read_text()
    assert "Traceback" not in log.read_text()


async def test_worker_posts_discord_outbox_messages(
    cli_env: dict[str, str], tmp_path: Path
) -> None:
    fake = await FakeDiscord().start()
    env = {**cli_env, "DISCORD_TOKEN": fake.token, "DISCORD_API_URL": fake.api_url}
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
        message = OutboxMessage(
            platform="discord",
            tenant=fake.guild_id,
            channel=fake.general,
            text="Nothing new.",
            key="d:2",
            title="Daily",
        )
        await enqueue(database_of(env), message)
        posted = await fake.wait_for(lambda: fake.messages_in(fake.general), within=20)
        assert [p.content for p in posted] == ["**Daily**\nNothing new."]
        proc.send_signal(signal.SIGTERM)
        _, stderr = await asyncio.wait_for(proc.communicate(), 20)
    finally:
        if proc.returncode is None:
            proc.kill()
            await proc.wait()
        await fake.stop()
    assert proc.returncode == 0, stderr.decode()
    assert await delivered(database_of(env), "d:2")


def test_run_without_chat_tokens_prints_console_outbox_messages(
    cli_env: dict[str, str], tmp_path: Path, spawn: Callable[..., Any]
) -> None:
    out = tmp_path / "run-stdout.txt"
    proc, log = spawn(cli_env, "run", stdout=out, stdin=subprocess.PIPE)
    wait_until(lambda: "you>" in out.read_text(), proc, log, "the console prompt")
    message = OutboxMessage(
        platform="console",
        tenant="local",
        channel="console",
        text="- 2 questions answered",
        key="d:3",
        title="Daily digest",
    )
    asyncio.run(enqueue(database_of(cli_env), message))
    wait_until(lambda: "2 questions answered" in out.read_text(), proc, log, "the digest")
    assert "Daily digest" in out.read_text()
    assert proc.stdin is not None
    proc.stdin.close()  # end of input ends the console
    assert proc.wait(STOP_DEADLINE) == 0, log.read_text()
    assert "Traceback" not in log.read_text()


async def give_up(url: str, message: OutboxMessage) -> None:
    db = Database(url)
    try:
        outbox = Outbox(db)
        await outbox.enqueue(message)
        (item,) = await outbox.claim(message.platform, "test")
        await outbox.failed(item, "chat.postMessage: channel_not_found", retry=False)
    finally:
        await db.dispose()


def test_the_outbox_command_lists_and_retries_given_up_messages(
    cli_env: dict[str, str], tmp_path: Path
) -> None:
    url = database_of(cli_env)
    gone = OutboxMessage(platform="slack", tenant="T1", channel="C404", text="x", key="d:gone")
    asyncio.run(give_up(url, gone))
    asyncio.run(enqueue(url, OutboxMessage("discord", "G1", "42", "y", key="d:waiting")))

    listed = run_cli(cli_env, tmp_path, "outbox", "--json")
    assert listed.returncode == 0, listed.stderr
    rows = {row["key"]: row for row in json.loads(listed.stdout)}
    assert rows["d:gone"]["state"] == "failed" and rows["d:gone"]["attempts"] == 1
    assert rows["d:gone"]["last_error"] == "chat.postMessage: channel_not_found"
    assert rows["d:waiting"] | {"created_at": "", "next_attempt_at": ""} == {
        "key": "d:waiting",
        "platform": "discord",
        "tenant": "G1",
        "channel": "42",
        "state": "pending",
        "attempts": 0,
        "created_at": "",
        "next_attempt_at": "",
        "last_error": None,
    }
    text = run_cli(cli_env, tmp_path, "outbox").stdout
    assert "failed   slack/T1/C404  d:gone  attempts 1" in text

    retried = run_cli(cli_env, tmp_path, "outbox", "retry", "d:gone")
    assert (retried.returncode, retried.stdout.strip()) == (0, "queued again: d:gone")
    again = run_cli(cli_env, tmp_path, "outbox", "retry", "d:gone")
    assert again.returncode == 1 and "no failed message" in again.stdout
    rows = {
        row["key"]: row for row in json.loads(run_cli(cli_env, tmp_path, "outbox", "--json").stdout)
    }
    assert (rows["d:gone"]["state"], rows["d:gone"]["attempts"]) == ("pending", 0)
