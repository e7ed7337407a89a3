"""A local speech worker that hangs, through the whole bot: the reply comes within the request
deadline or the engine's own timeout (whichever is sooner), says what happened, and the hung
worker process is killed. The worker is a shell script standing in for `python -m
core.tts.worker` that never says it is ready."""

from __future__ import annotations

import asyncio
import os
import time
from collections.abc import Callable
from pathlib import Path

from core import messages
from core.tts import messages as tts_messages
from core.tts.local import LocalEngine
from tests.conftest import BotHarness
from tests.support.fakes.openai_server import FakeOpenAI

MakeBot = Callable[..., BotHarness]
LONG_TEXT = " ".join(f"Sentence number {i} is read aloud in its own segment." for i in range(12))


def hanging_worker(tmp_path: Path) -> tuple[Path, Path]:
    """A "Python" that records its pid and then sleeps instead of loading a voice."""
    pids = tmp_path / "worker-pids"
    script = tmp_path / "hanging-python"
    script.write_text(f'#!/bin/sh\necho $$ >> "{pids}"\nexec sleep 600\n')
    script.chmod(0o755)
    return script, pids


def started(pids: Path) -> list[int]:
    return [int(line) for line in pids.read_text().split()] if pids.exists() else []


def alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return True


def local_bot(make_bot: MakeBot, script: Path, **settings: object) -> BotHarness:
    bot = make_bot(tts_engine="espeak", tts_workers=1, tts_segment_bytes=64, **settings)
    engine = bot.app.voice.engine
    assert isinstance(engine, LocalEngine)
    engine.python = str(script)
    return bot


async def test_a_hung_worker_ends_at_the_request_deadline_and_is_killed(
    make_bot: MakeBot, tmp_path: Path
) -> None:
    script, pids = hanging_worker(tmp_path)
    bot = local_bot(make_bot, script, tts_timeout=60, request_deadline=1.0)
    begun = time.monotonic()
    reply = await asyncio.wait_for(bot.send(f"/tts {LONG_TEXT}"), 10)
    assert time.monotonic() - begun < 8  # far below the 60 s the hang would take
    assert reply.ok is False
    assert reply.text == messages.command_deadline(1.0, "tts")
    assert not reply.attachments
    (pid,) = started(pids)
    assert not alive(pid)
    # The characters reserved for the audio were given back.
    assert "0 of 1,000 characters" in (await bot.send("/budget")).text


async def test_a_worker_that_does_not_start_is_given_the_tts_timeout_once(
    make_bot: MakeBot, tmp_path: Path
) -> None:
    script, pids = hanging_worker(tmp_path)
    bot = local_bot(make_bot, script, tts_timeout=0.5, request_deadline=60)
    begun = time.monotonic()
    reply = await asyncio.wait_for(bot.send(f"/tts {LONG_TEXT}"), 10)
    assert time.monotonic() - begun < 8  # far below the 60 s the hang would take
    assert reply.ok is False
    assert reply.text == tts_messages.FAILED
    # Twelve segments, one start: a worker that did not start is not started again per segment.
    (pid,) = started(pids)
    assert not alive(pid)


async def test_ask_keeps_the_agents_own_deadline_reply(
    make_bot: MakeBot, fake_llm: FakeOpenAI
) -> None:
    # `/ask` runs under the command deadline too, but the agent's own handling (which keeps
    # the question in the thread) answers, not the generic one.
    bot = make_bot(
        request_deadline=1.0,
        llm_base_url=fake_llm.url,
        llm_model="fake-model",
        llm_max_retries=0,
        llm_timeout=30,
    )
    fake_llm.reply("too late", delay=4)
    reply = await asyncio.wait_for(bot.send("/ask what is slow?"), 10)
    assert reply.ok is False
    assert reply.text == messages.request_deadline(1.0, 0)


async def test_ask_voice_out_of_time_for_audio_keeps_the_text(
    make_bot: MakeBot, fake_llm: FakeOpenAI, tmp_path: Path
) -> None:
    script, pids = hanging_worker(tmp_path)
    bot = local_bot(
        make_bot,
        script,
        tts_timeout=60,
        # Three seconds: the model's answer must come well inside it on a loaded machine.
        request_deadline=3.0,
        llm_base_url=fake_llm.url,
        llm_model="fake-model",
        llm_max_retries=0,
    )
    fake_llm.reply("The importer times out because the batch is too large.")
    reply = await asyncio.wait_for(bot.send("/ask --voice why does the importer time out?"), 10)
    assert reply.ok, reply.text
    assert reply.text == "The importer times out because the batch is too large."
    assert not reply.attachments
    assert messages.VOICE_OUT_OF_TIME in reply.notices
    (pid,) = started(pids)
    assert not alive(pid)
