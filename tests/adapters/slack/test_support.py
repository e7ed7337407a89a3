"""The Slack adapter's small units: progress throttling, log redaction, Retry-After."""

from __future__ import annotations

import asyncio
import logging

import pytest

from adapters.slack.logs import BOLT_LOGGER, quiet_logger, redact
from adapters.slack.progress import ProgressLine
from adapters.slack.web import retry_after


class Recorder:
    def __init__(self) -> None:
        self.log: list[tuple[str, str]] = []
        self.released = asyncio.Event()
        self.released.set()
        self.posting = asyncio.Event()

    async def post(self, text: str) -> str:
        self.posting.set()
        await self.released.wait()
        self.log.append(("post", text))
        return "ts1"

    async def edit(self, ts: str, text: str) -> None:
        await self.released.wait()
        self.log.append(("edit", text))

    async def delete(self, ts: str) -> None:
        self.log.append(("delete", ts))


def line(rec: Recorder, *, delay: float = 3.0, interval: float = 1.0) -> ProgressLine:
    return ProgressLine(rec.post, rec.edit, rec.delete, delay=delay, interval=interval)


async def test_quick_work_shows_no_progress_line() -> None:
    rec = Recorder()
    progress = line(rec, delay=60.0)
    await progress.update("running `search` (step 1)")
    await progress.finish()
    assert rec.log == []


async def test_a_burst_of_updates_is_posted_once_then_edited_at_most_once_per_interval() -> None:
    rec = Recorder()
    progress = line(rec, delay=0.0, interval=60.0)
    await progress.update("step 1")
    flush = progress._flush
    assert flush is not None
    await flush  # the first line is posted as soon as work is past the delay
    for i in range(2, 30):
        await progress.update(f"step {i}")  # none of these may write before the interval
    await progress.finish()
    assert rec.log == [("post", "step 1"), ("delete", "ts1")]
    assert progress.writes == 1


async def test_the_latest_text_is_written_when_the_interval_allows() -> None:
    rec = Recorder()
    progress = line(rec, delay=0.0, interval=0.0)
    await progress.update("step 1")
    await progress.update("step 2")  # coalesced: the flush writes whatever is latest
    while progress._flush is not None and not progress._flush.done():
        await progress._flush
    await progress.update("step 3")
    while progress._flush is not None and not progress._flush.done():
        await progress._flush
    await progress.finish()
    assert rec.log == [("post", "step 2"), ("edit", "step 3"), ("delete", "ts1")]


async def test_finish_waits_for_a_post_in_flight_and_removes_it() -> None:
    rec = Recorder()
    rec.released.clear()
    progress = line(rec, delay=0.0)
    await progress.update("step 1")
    await rec.posting.wait()
    waiting = asyncio.create_task(progress.finish())
    await asyncio.sleep(0)  # one turn of the loop: finish() is now waiting for the post
    assert not waiting.done()
    rec.released.set()
    await waiting
    assert rec.log == [("post", "step 1"), ("delete", "ts1")]  # no orphaned progress line


def test_redaction_removes_bodies_signatures_and_tokens() -> None:
    bolt_line = (
        "Invalid request signature detected (signature: v0=0123456789abcdef0123456789abcdef, "
        "timestamp: 1700000000, body: token=xoxb-123-456-abc&text=secret+plans)"
    )
    out = redact(bolt_line)
    assert "secret" not in out and "v0=0123" not in out and "xoxb" not in out
    assert out.startswith("Invalid request signature detected")
    assert redact("auth with xoxb-1-2-abc failed") == "auth with [token] failed"


def test_bolt_loggers_built_from_ours_carry_the_filter(caplog: pytest.LogCaptureFixture) -> None:
    from slack_bolt.middleware.request_verification import RequestVerification

    quiet_logger(BOLT_LOGGER)
    mw = RequestVerification("secret", base_logger=logging.getLogger(BOLT_LOGGER))
    with caplog.at_level(logging.INFO):
        mw._debug_log_error("v0=" + "ab" * 32, "1", "token=xoxb-9-9-z&text=top+secret")
    assert "Invalid request signature" in caplog.text
    assert "top+secret" not in caplog.text and "xoxb" not in caplog.text


def test_retry_after_is_read_in_seconds() -> None:
    assert retry_after({"Retry-After": ["7"]}) == 7.0
    assert retry_after({"retry-after": "30"}) == 30.0  # not "3": the whole value counts
    assert retry_after({}) == 1.0
