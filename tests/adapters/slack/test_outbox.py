"""Outbox messages delivered on Slack: the real Slack adapter and slack_sdk client against the
fake Slack Web API on 127.0.0.1, the outbox on the real database, a controllable clock."""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator, Callable, Iterator
from dataclasses import dataclass
from typing import Any

import pytest

from adapters.slack.app import SlackAdapter
from adapters.slack.outbox import INLINE_LIMIT, METADATA_EVENT, outbox_parts
from bot.app import App, build_app, build_slack
from core.outbox import OutboxMessage, drain
from core.request import Attachment
from tests.support.fakes.slack_api import FakeSlack
from tests.support.outbox import Clock, Crash, WatchedOutbox, crash_on_record, deliver_due


@pytest.fixture
def fake_slack(clock: Clock) -> Iterator[FakeSlack]:
    fake = FakeSlack(clock.timestamp).start()  # the look-back compares its ts with the outbox's
    yield fake
    fake.stop()


@dataclass
class Slack:
    app: App
    adapter: SlackAdapter
    outbox: WatchedOutbox
    clock: Clock

    async def deliver_due(self, owner: str = "A") -> list[str]:
        return await deliver_due(self.outbox, "slack", self.adapter.deliver_outbox, owner)


@pytest.fixture
async def slack(
    make_settings: Callable[..., Any], fake_slack: FakeSlack, clock: Clock
) -> AsyncIterator[Slack]:
    settings = make_settings(
        slack_bot_token=fake_slack.bot_token,
        slack_signing_secret="not-used-here",
        slack_api_url=fake_slack.api_url,
    )
    app = build_app(settings, clock=clock)
    adapter = build_slack(app, "http")
    await adapter.start()
    yield Slack(app, adapter, WatchedOutbox(app.db, clock), clock)
    await adapter.aclose()
    await app.aclose()


def digest(key: str = "digest:7:2026-03-02T09:00", **more: Any) -> OutboxMessage:
    more.setdefault("text", "3 questions answered, 1 still open.")
    return OutboxMessage(platform="slack", tenant="T0HOME", channel="C1", key=key, **more)


def long_text(paragraphs: int = 12) -> str:
    return "\n\n".join(f"**Area {i}**: " + ("change " * 70).strip() for i in range(paragraphs))


def posts(fake: FakeSlack) -> list[dict[str, Any]]:
    return [c.args for c in fake.calls("chat.postMessage")]


async def calls(fake: FakeSlack, method: str, n: int) -> None:
    await asyncio.to_thread(fake.wait_calls, method, n)


# -- layout --------------------------------------------------------------------------------------


def test_the_layout_keeps_a_long_titled_text_out_of_the_channel() -> None:
    short = digest(title="Daily digest")
    assert outbox_parts(short) == ["*Daily digest*\n3 questions answered, 1 still open."]
    long = digest(title="Weekly changes", text=long_text())
    parts = outbox_parts(long)
    assert parts[0] == "*Weekly changes*" and len(parts) >= 3
    assert all(len(p) <= 3_000 for p in parts)
    in_thread = digest(title="Weekly changes", text=long_text(), thread="1700000000.000100")
    assert outbox_parts(in_thread)[0].startswith("*Weekly changes*\n*Area 0*")
    untitled = digest(text="x" * (INLINE_LIMIT + 10))
    assert outbox_parts(untitled) == ["x" * (INLINE_LIMIT + 10)]


# -- delivery ------------------------------------------------------------------------------------


async def test_a_short_digest_is_one_top_level_message_posted_once(
    slack: Slack, fake_slack: FakeSlack
) -> None:
    assert await slack.outbox.enqueue(digest(title="Daily digest"))
    assert await slack.deliver_due() == [f"delivered: {fake_slack.posted('C1')[0]['ts']}"]

    (posted,) = fake_slack.posted("C1")
    assert posted["text"] == "*Daily digest*\n3 questions answered, 1 still open."
    assert posted["thread_ts"] is None
    assert posted["metadata"] == {
        "event_type": METADATA_EVENT,
        "event_payload": {"key": "digest:7:2026-03-02T09:00", "part": 0},
    }
    state = await slack.outbox.status("digest:7:2026-03-02T09:00")
    assert (state.state, state.message_ref) == ("delivered", posted["ts"])

    # The producer enqueues it again (a retried run): nothing more is posted.
    assert not await slack.outbox.enqueue(digest(title="Daily digest"))
    assert await slack.deliver_due() == []
    assert len(fake_slack.posted("C1")) == 1


async def test_a_long_digest_has_its_title_on_top_and_the_text_and_voice_in_its_thread(
    slack: Slack, fake_slack: FakeSlack
) -> None:
    voice = Attachment("audio", "digest.mp3", b"ID3" + bytes(range(200)), "audio/mpeg")
    message = digest(title="Weekly repo changes", text=long_text(), attachments=(voice,))
    await slack.outbox.enqueue(message)
    await slack.deliver_due()

    top, *thread = fake_slack.posted("C1")
    assert top["text"] == "*Weekly repo changes*" and top["thread_ts"] is None
    assert len(thread) >= 2 and all(m["thread_ts"] == top["ts"] for m in thread)
    assert [m["text"] for m in thread] == outbox_parts(message)[1:]
    assert "*Area 0*" in thread[0]["text"] and "*Area 11*" in thread[-1]["text"]
    (complete,) = fake_slack.calls("files.completeUploadExternal")
    assert complete.args["channel_id"] == "C1" and complete.args["thread_ts"] == top["ts"]
    (uploaded,) = json.loads(complete.args["files"])
    assert fake_slack.upload(uploaded["id"]) == voice.data
    assert fake_slack.calls("conversations.history") == []  # a first attempt posts blind


async def test_a_message_for_a_thread_goes_into_that_thread(
    slack: Slack, fake_slack: FakeSlack
) -> None:
    await slack.outbox.enqueue(digest(title="Late answer", thread="1700000000.000100"))
    await slack.deliver_due()
    (posted,) = fake_slack.posted("C1")
    assert posted["thread_ts"] == "1700000000.000100"
    assert posted["text"].startswith("*Late answer*\n")


async def test_a_failed_post_is_retried_after_a_backoff_by_the_drain_loop(
    slack: Slack, fake_slack: FakeSlack
) -> None:
    fake_slack.fail_next("chat.postMessage", status=500, error="internal_error")
    await slack.outbox.enqueue(digest(title="Daily digest"))
    stop = asyncio.Event()
    task = asyncio.create_task(
        drain(slack.outbox, "slack", "A", slack.adapter.deliver_outbox, every=0.02, stop=stop)
    )
    try:
        assert await slack.outbox.wait_outcomes(1) == [("digest:7:2026-03-02T09:00", "failed")]
        state = await slack.outbox.status("digest:7:2026-03-02T09:00")
        assert state.state == "pending" and "internal_error" in (state.last_error or "")
        assert 10 <= (state.next_attempt_at - slack.clock()).total_seconds() <= 12.5
        assert fake_slack.posted("C1") == []

        slack.clock.advance(seconds=13)  # the backoff is over
        outcomes = await slack.outbox.wait_outcomes(2)
        assert outcomes[-1] == ("digest:7:2026-03-02T09:00", "delivered")
    finally:
        stop.set()
        await task
    assert [m["text"] for m in fake_slack.posted("C1")] == [
        "*Daily digest*\n3 questions answered, 1 still open."
    ]
    # The retry read the channel back first (an earlier attempt existed).
    (history,) = fake_slack.calls("conversations.history")
    assert history.args["channel"] == "C1" and history.args["include_all_metadata"] in ("1", True)


@pytest.mark.parametrize("dies_after", [0, 1, 2])
async def test_a_crash_between_posting_and_recording_does_not_post_twice(
    slack: Slack, fake_slack: FakeSlack, dies_after: int
) -> None:
    """The process posts a part and dies before recording it (after `dies_after` parts were
    recorded). Once its lease has expired another process takes the message over, finds what
    was posted by its metadata, and posts only the rest."""
    message = digest(title="Weekly repo changes", text=long_text())
    expected = outbox_parts(message)
    await slack.outbox.enqueue(message)

    restore = crash_on_record(slack.app.core.events, after=dies_after)
    with pytest.raises(Crash):
        await slack.deliver_due(owner="A")
    restore()
    assert len(fake_slack.posted("C1")) == dies_after + 1  # posted, never recorded

    assert await slack.deliver_due(owner="B") == []  # A's lease still holds
    slack.clock.advance(minutes=2, seconds=1)
    (outcome,) = await slack.deliver_due(owner="B")
    assert outcome.startswith("delivered")

    posted = fake_slack.posted("C1")
    assert [m["text"] for m in posted] == expected  # every part exactly once, in order
    assert len(posts(fake_slack)) == len(expected)  # and nothing was sent twice
    top = posted[0]
    assert all(m["thread_ts"] == top["ts"] for m in posted[1:])
    state = await slack.outbox.status(message.key)
    assert (state.state, state.attempts, state.message_ref) == ("delivered", 2, top["ts"])


async def test_a_lost_response_is_found_in_the_history_instead_of_posted_again(
    slack: Slack, fake_slack: FakeSlack
) -> None:
    fake_slack.drop_next("chat.postMessage")  # Slack posts it; the answer never arrives
    await slack.outbox.enqueue(digest())
    (outcome,) = await slack.deliver_due()
    assert outcome.startswith("failed: chat.postMessage: response lost")

    slack.clock.advance(seconds=13)
    (outcome,) = await slack.deliver_due()
    (posted,) = fake_slack.posted("C1")
    assert outcome == f"delivered: {posted['ts']}"
    assert len(posts(fake_slack)) == 1


async def test_without_the_history_scope_a_retry_posts_with_a_warning(
    slack: Slack, fake_slack: FakeSlack, caplog: pytest.LogCaptureFixture
) -> None:
    fake_slack.fail_next("chat.postMessage", error="internal_error")
    fake_slack.fail_next("conversations.history", error="missing_scope")
    await slack.outbox.enqueue(digest())
    await slack.deliver_due()
    slack.clock.advance(seconds=13)
    (outcome,) = await slack.deliver_due()
    assert outcome.startswith("delivered")
    assert len(fake_slack.posted("C1")) == 1
    assert "missing_scope" in caplog.text


async def test_a_channel_the_bot_cannot_post_in_fails_at_once_and_others_give_up_in_time(
    slack: Slack, fake_slack: FakeSlack
) -> None:
    fake_slack.fail_next("chat.postMessage", error="channel_not_found")
    await slack.outbox.enqueue(digest(key="gone"))
    await slack.deliver_due()
    state = await slack.outbox.status("gone")
    assert (state.state, state.attempts) == ("failed", 1)
    assert state.last_error == "chat.postMessage: channel_not_found"

    slack.outbox.max_attempts = 3
    for _ in range(3):
        fake_slack.fail_next("chat.postMessage", error="service_unavailable")
    await slack.outbox.enqueue(digest(key="flaky"))
    for _ in range(3):
        await slack.deliver_due()
        slack.clock.advance(minutes=5)
    state = await slack.outbox.status("flaky")
    assert (state.state, state.attempts) == ("failed", 3)
    assert await slack.deliver_due() == []
    assert fake_slack.posted("C1") == []


async def test_two_processes_draining_one_postgresql_outbox_post_everything_once(
    make_settings: Callable[..., Any], fake_slack: FakeSlack, pg_url: str, clock: Clock
) -> None:
    settings = make_settings(
        database_url=pg_url,
        slack_bot_token=fake_slack.bot_token,
        slack_signing_secret="not-used-here",
        slack_api_url=fake_slack.api_url,
    )
    apps = [build_app(settings, clock=clock) for _ in range(2)]  # two processes: own engines
    adapters = [build_slack(app, "http") for app in apps]
    for adapter in adapters:
        await adapter.start()
    outboxes = [WatchedOutbox(app.db, clock) for app in apps]
    outboxes[1].changed, outboxes[1].outcomes = outboxes[0].changed, outboxes[0].outcomes
    for i in range(20):
        await outboxes[i % 2].enqueue(digest(key=f"digest:{i}", title=f"Digest {i}"))
    stop = asyncio.Event()
    tasks = [
        asyncio.create_task(
            drain(box, "slack", f"P{n}", adapter.deliver_outbox, every=0.02, stop=stop, limit=3)
        )
        for n, (box, adapter) in enumerate(zip(outboxes, adapters, strict=True))
    ]
    try:
        outcomes = await outboxes[0].wait_outcomes(20, within=30)
    finally:
        stop.set()
        await asyncio.gather(*tasks)
        for app, adapter in zip(apps, adapters, strict=True):
            await adapter.aclose()
            await app.aclose()
    assert sorted(outcomes) == sorted((f"digest:{i}", "delivered") for i in range(20))
    titles = sorted(m["text"].split("\n")[0] for m in fake_slack.posted("C1"))
    assert titles == sorted(f"*Digest {i}*" for i in range(20))  # each exactly once
