"""Work a request starts but does not own runs outside its context: the local speech engine's
idle reaper (started by whichever request first needed a worker) logs without that request's
id, tenant and channel. The store socket's server is covered in test_store_socket_hardening."""

from __future__ import annotations

import asyncio
import logging

import pytest

from core.logcontext import RequestContext, RequestContextFilter, detached, request_scope
from core.tts.local import LocalEngine
from core.tts.synth import synthesize
from tests.core.tts.test_engines import FAST, needs_voice

IN_A_REQUEST = RequestContext("req-first-speaker", "discord", "G-OTHER", "C-OTHER")


@pytest.fixture
def logged(caplog: pytest.LogCaptureFixture) -> pytest.LogCaptureFixture:
    caplog.set_level(logging.INFO)
    caplog.handler.addFilter(RequestContextFilter())
    return caplog


async def test_detached_tasks_see_no_request() -> None:
    async def current() -> str | None:
        record = logging.LogRecord("x", logging.INFO, __file__, 1, "m", None, None)
        RequestContextFilter().filter(record)
        return getattr(record, "request_id", None)

    with request_scope(IN_A_REQUEST):
        inside = await asyncio.create_task(current())
        outside = await detached(current(), name="probe")
    assert (inside, outside) == ("req-first-speaker", None)


@needs_voice
async def test_the_idle_reaper_logs_outside_the_request_that_started_it(
    logged: pytest.LogCaptureFixture,
) -> None:
    engine = LocalEngine("espeak", "en-us", workers=1, idle_timeout=0.2)
    try:
        with request_scope(IN_A_REQUEST):
            await synthesize(engine, "Hello there.", FAST)
        # Until the reaper is done: it stops the workers after they leave `pids()`.
        for _ in range(100):
            if engine._reaper is not None and engine._reaper.done():
                break
            await asyncio.sleep(0.05)
        assert engine.pids() == []
    finally:
        await engine.aclose()
    stopped = [r for r in logged.records if "idle workers stopped" in r.getMessage()]
    assert stopped
    assert [getattr(r, "request_id", None) for r in stopped] == [None]
