"""Outbox messages delivered on Discord: the real discord.py client (connected through the real
adapter) against the fake Discord on 127.0.0.1, the outbox on the real database, a
controllable clock."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass
from typing import Any

import pytest

from adapters.discord.client import DiscordAdapter, DiscordConfig
from adapters.discord.outbox import INLINE_LIMIT, nonce, outbox_parts
from bot.app import App, build_app
from bot.delivery import delivering
from core.adapter import ChatAdapter
from core.outbox import OutboxMessage, drain
from core.request import Attachment
from tests.adapters.discord.test_discord import FAST
from tests.support.fakes.discord_server import FakeDiscord
from tests.support.outbox import Clock, Crash, WatchedOutbox, crash_on_record, deliver_due


@dataclass
class Discord:
    app: App
    adapter: DiscordAdapter
    outbox: WatchedOutbox
    clock: Clock
    fake: FakeDiscord

    async def deliver_due(self, owner: str = "A") -> list[str]:
        return await deliver_due(self.outbox, "discord", self.adapter.deliver_outbox, owner)

    def digest(self, key: str = "digest:3:2026-03-02T09:00", **more: Any) -> OutboxMessage:
        more.setdefault("text", "3 questions answered, 1 still open.")
        more.setdefault("channel", self.fake.general)
        return OutboxMessage(platform="discord", tenant=self.fake.guild_id, key=key, **more)


@pytest.fixture
async def discord_bot(make_settings: Callable[..., Any], clock: Clock) -> AsyncIterator[Discord]:
    fake = await FakeDiscord().start()
    settings = make_settings(discord_token=fake.token, discord_api_url=fake.api_url)
    app = build_app(settings, clock=clock)
    adapter = DiscordAdapter(app.core, DiscordConfig.from_settings(settings, **FAST))
    stop = asyncio.Event()
    task = asyncio.create_task(adapter.run(stop))
    async with asyncio.timeout(15):
        await adapter.wait_ready()
    try:
        yield Discord(app, adapter, WatchedOutbox(app.db, clock), clock, fake)
    finally:
        stop.set()
        await asyncio.gather(task, return_exceptions=True)
        await app.aclose()
        await fake.stop()


def long_text(paragraphs: int = 10) -> str:
    return "\n\n".join(f"**Area {i}**: " + ("change " * 60).strip() for i in range(paragraphs))


def sends(fake: FakeDiscord) -> list[Any]:
    return fake.calls_to("POST", r"/channels/\d+/messages")


def test_the_layout_opens_a_thread_only_for_a_long_titled_text() -> None:
    def message(**more: Any) -> OutboxMessage:
        more.setdefault("text", "short")
        return OutboxMessage(platform="discord", tenant="1", channel="2", key="k", **more)

    plan = outbox_parts(message(title="Daily digest"), upload_limit=1 << 20)
    assert plan.thread_name is None and [p.text for p in plan.parts] == ["**Daily digest**\nshort"]
    voice = Attachment("audio", "digest.mp3", b"ID3", "audio/mpeg")
    plan = outbox_parts(
        message(title="Weekly changes", text=long_text(), attachments=(voice,)),
        upload_limit=1 << 20,
    )
    assert plan.thread_name == "Weekly changes"
    assert plan.parts[0].text == "**Weekly changes**" and plan.parts[-1].file == voice
    assert all(len(p.text) <= 2_000 for p in plan.parts)
    plan = outbox_parts(message(text="x" * (INLINE_LIMIT + 1)), upload_limit=1 << 20)
    assert plan.thread_name is None and len(plan.parts) == 1
    assert nonce("k", 0) != nonce("k", 1) and len(nonce("k" * 255, 0)) == 25


async def test_a_short_digest_is_one_message_in_the_channel_sent_with_a_nonce(
    discord_bot: Discord,
) -> None:
    bot, fake = discord_bot, discord_bot.fake
    await bot.outbox.enqueue(bot.digest(title="Daily digest"))
    (outcome,) = await bot.deliver_due()

    (posted,) = fake.messages_in(fake.general)
    assert outcome == f"delivered: {posted.id}"
    assert posted.content == "**Daily digest**\n3 questions answered, 1 still open."
    (call,) = sends(fake)
    assert call.body["nonce"] == nonce("digest:3:2026-03-02T09:00", 0)
    assert call.body["enforce_nonce"] is True
    assert call.body["allowed_mentions"] == {"parse": []}  # a digest never pings
    assert not await bot.outbox.enqueue(bot.digest(title="Daily digest"))
    assert await bot.deliver_due() == []


async def test_a_long_digest_opens_a_thread_named_after_its_title(discord_bot: Discord) -> None:
    bot, fake = discord_bot, discord_bot.fake
    voice = Attachment("audio", "digest.mp3", b"ID3" + bytes(100), "audio/mpeg")
    message = bot.digest(title="Weekly repo changes", text=long_text(), attachments=(voice,))
    await bot.outbox.enqueue(message)
    await bot.deliver_due()

    (top,) = fake.messages_in(fake.general)
    assert top.content == "**Weekly repo changes**"
    (thread,) = fake.threads_opened
    assert (thread["id"], thread["name"]) == (top.id, "Weekly repo changes")
    inside = fake.messages_in(thread["id"])
    plan = outbox_parts(message, upload_limit=10 << 20)
    assert [p.content for p in inside[:-1]] == [p.text for p in plan.parts[1:-1]]
    assert len(inside) == len(plan.parts) - 1 >= 3
    assert [f.filename for f in inside[-1].files] == ["digest.mp3"]
    assert inside[-1].files[0].data == voice.data


async def test_a_message_for_a_thread_goes_into_that_thread(discord_bot: Discord) -> None:
    bot, fake = discord_bot, discord_bot.fake
    thread = await fake.add_thread("release planning")
    await bot.outbox.enqueue(bot.digest(thread=thread, title="Late answer", text="It is done."))
    await bot.deliver_due()
    assert [p.content for p in fake.messages_in(thread)] == ["**Late answer**\nIt is done."]
    assert fake.messages_in(fake.general) == []


async def test_a_server_error_is_retried_after_a_backoff_by_the_drain_loop(
    discord_bot: Discord,
) -> None:
    bot, fake = discord_bot, discord_bot.fake
    # 503: discord.py retries 500/502/504 itself and gives up only after five tries; a 503
    # reaches the outbox at once.
    fake.fail_next("POST", r"/channels/\d+/messages", 503, message="upstream unavailable")
    await bot.outbox.enqueue(bot.digest())
    stop = asyncio.Event()
    task = asyncio.create_task(
        drain(bot.outbox, "discord", "A", bot.adapter.deliver_outbox, every=0.02, stop=stop)
    )
    try:
        assert await bot.outbox.wait_outcomes(1) == [("digest:3:2026-03-02T09:00", "failed")]
        state = await bot.outbox.status("digest:3:2026-03-02T09:00")
        assert state.state == "pending" and "HTTP 503" in (state.last_error or "")
        assert 10 <= (state.next_attempt_at - bot.clock()).total_seconds() <= 12.5
        assert fake.messages_in(fake.general) == []

        bot.clock.advance(seconds=13)
        outcomes = await bot.outbox.wait_outcomes(2)
        assert outcomes[-1] == ("digest:3:2026-03-02T09:00", "delivered")
    finally:
        stop.set()
        await task
    assert [p.content for p in fake.messages_in(fake.general)] == [
        "3 questions answered, 1 still open."
    ]


@pytest.mark.parametrize("dies_after", [0, 2])
async def test_a_crash_between_posting_and_recording_does_not_post_twice(
    discord_bot: Discord, dies_after: int
) -> None:
    """The process sends a part and dies before recording it. Another process takes over once
    the lease has expired, sends that part again with the same nonce, and Discord hands back
    the message it already made."""
    bot, fake = discord_bot, discord_bot.fake
    message = bot.digest(title="Weekly repo changes", text=long_text())
    await bot.outbox.enqueue(message)
    restore = crash_on_record(bot.app.core.events, after=dies_after)
    with pytest.raises(Crash):
        await bot.deliver_due(owner="A")
    restore()
    made = [p for p in fake.posts if not p.deleted]
    assert len(made) == dies_after + 1

    assert await bot.deliver_due(owner="B") == []  # A's lease still holds
    bot.clock.advance(minutes=2, seconds=1)
    (outcome,) = await bot.deliver_due(owner="B")
    assert outcome.startswith("delivered")

    plan = outbox_parts(message, upload_limit=10 << 20)
    (top,) = fake.messages_in(fake.general)
    inside = fake.messages_in(top.id)
    assert [top.content, *(p.content for p in inside)] == [p.text for p in plan.parts]
    assert len(fake.threads_opened) == 1
    # The part in flight was sent twice, with the same nonce; Discord made it once.
    bodies = [c.body for c in sends(fake)]
    assert len(bodies) == len(plan.parts) + 1
    assert bodies[dies_after]["nonce"] == bodies[dies_after + 1]["nonce"]


async def test_a_channel_the_bot_cannot_see_fails_at_once(discord_bot: Discord) -> None:
    bot, fake = discord_bot, discord_bot.fake
    fake.fail_next("POST", r"/channels/\d+/messages", 403, code=50001, message="Missing Access")
    await bot.outbox.enqueue(bot.digest(key="hidden"))
    await bot.deliver_due()
    state = await bot.outbox.status("hidden")
    assert (state.state, state.attempts) == ("failed", 1)
    assert state.last_error == "sending: HTTP 403, code 50001"


async def test_where_the_bot_may_not_open_threads_the_rest_follows_in_the_channel(
    discord_bot: Discord,
) -> None:
    bot, fake = discord_bot, discord_bot.fake
    fake.fail_next(
        "POST",
        r"/channels/\d+/messages/\d+/threads",
        403,
        code=50013,
        message="Missing Permissions",
    )
    message = bot.digest(title="Weekly repo changes", text=long_text())
    await bot.outbox.enqueue(message)
    (outcome,) = await bot.deliver_due()
    assert outcome.startswith("delivered")
    plan = outbox_parts(message, upload_limit=10 << 20)
    assert [p.content for p in fake.messages_in(fake.general)] == [p.text for p in plan.parts]
    assert fake.threads_opened == []


async def test_known_limit_after_discords_nonce_window_a_crash_can_repeat_one_part(
    discord_bot: Discord,
) -> None:
    """Discord keeps nonces for a few minutes only. A takeover later than that (the process
    died and no other drainer ran until after the window) repeats the one part that was sent
    but not recorded; the parts recorded before it are not repeated."""
    bot, fake = discord_bot, discord_bot.fake
    fake.nonce_window = 0.0
    message = bot.digest(title="Weekly repo changes", text=long_text())
    await bot.outbox.enqueue(message)
    restore = crash_on_record(bot.app.core.events, after=1)
    with pytest.raises(Crash):
        await bot.deliver_due(owner="A")
    restore()
    bot.clock.advance(minutes=10)
    await bot.deliver_due(owner="B")
    plan = outbox_parts(message, upload_limit=10 << 20)
    (top,) = fake.messages_in(fake.general)
    inside = [p.content for p in fake.messages_in(top.id)]
    assert len(inside) == len(plan.parts)  # one more than planned: part 1, twice
    assert inside[0] == inside[1] == plan.parts[1].text


async def test_the_adapter_is_driven_through_the_chat_adapter_protocol_alone(
    make_settings: Callable[..., Any], clock: Clock
) -> None:
    """start (returns at READY), deliver through `bot.delivery`, stop: what a process that
    serves several platforms does with each, knowing only `ChatAdapter`."""
    fake = await FakeDiscord().start()
    settings = make_settings(discord_token=fake.token, discord_api_url=fake.api_url)
    app = build_app(settings, clock=clock)
    config = DiscordConfig.from_settings(settings, **FAST)
    adapter: ChatAdapter = DiscordAdapter(app.core, config)
    outbox = WatchedOutbox(app.db, clock, platforms=app.outbox.platforms)
    try:
        async with asyncio.timeout(15):
            await adapter.start()
        await outbox.enqueue(
            OutboxMessage("discord", fake.guild_id, fake.general, "Weekly digest.", "digest:p")
        )
        async with delivering(outbox, adapter, every=0.02):
            assert await outbox.wait_outcomes(1) == [("digest:p", "delivered")]
        await adapter.idle()
        assert await adapter.stop(grace=1.0) == 0
        assert [m.content for m in fake.messages_in(fake.general)] == ["Weekly digest."]
        assert await adapter.stop(grace=1.0) == 0  # stopping twice is harmless
    finally:
        await adapter.stop(grace=0)
        await app.aclose()
        await fake.stop()
