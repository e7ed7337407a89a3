"""The `ChatAdapter` protocol and the platform registry: a platform core has never heard of is
registered, its outbox messages are delivered through its adapter by the same drain that
serves Slack, Discord and the console — and no line of core names it."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from adapters.console.outbox import ConsoleAdapter
from adapters.discord.client import DiscordAdapter
from adapters.slack.app import SlackAdapter
from bot.delivery import delivering
from bot.platforms import BUILT_IN, builtin_platforms
from core.adapter import ChatAdapter
from core.outbox import DeliveryError, OutboxItem, OutboxMessage
from tests.support.outbox import Clock, WatchedOutbox


class MatrixAdapter:
    """A fourth platform, as a plugin would write it: nothing but the protocol."""

    platform = "matrix"

    def __init__(self) -> None:
        self.started = self.stopped = False
        self.posted: list[tuple[str, str]] = []  # (room, text)
        self.refuse: set[str] = set()  # rooms the bot was removed from

    async def start(self) -> None:
        self.started = True

    async def deliver_outbox(self, item: OutboxItem) -> str:
        room = item.message.channel
        if room in self.refuse:
            raise DeliveryError(f"not in room {room}", retry=False)
        self.posted.append((room, item.message.text))
        return f"$event{len(self.posted)}"

    async def idle(self) -> None:
        return None

    async def stop(self, grace: float) -> int:
        self.stopped = True
        return 0


def built_in_adapters_are_chat_adapters(
    slack: SlackAdapter, discord: DiscordAdapter, console: ConsoleAdapter
) -> list[ChatAdapter]:
    """Checked by mypy: the built-in adapters implement the protocol the fourth one does."""
    return [slack, discord, console]


def message(key: str, platform: str = "matrix", room: str = "!ops:example.org") -> OutboxMessage:
    return OutboxMessage(platform, "example.org", room, "3 questions answered.", key)


async def test_a_registered_fourth_platform_gets_its_outbox_messages(
    open_db: Callable[[], Any], clock: Clock
) -> None:
    platforms = builtin_platforms()
    outbox = WatchedOutbox(open_db(), clock, platforms=platforms)
    adapter = MatrixAdapter()
    assert isinstance(adapter, ChatAdapter)
    with pytest.raises(ValueError, match="matrix"):
        await outbox.enqueue(message("digest:1"))  # not registered yet: refused

    platforms.register(adapter.platform)
    await adapter.start()
    adapter.refuse.add("!gone:example.org")
    await outbox.enqueue(message("digest:1"))
    await outbox.enqueue(message("digest:2", room="!gone:example.org"))
    await outbox.enqueue(message("digest:3", platform="slack"))  # not this drainer's
    async with delivering(outbox, adapter, every=0.02):
        outcomes = await outbox.wait_outcomes(2)
    await adapter.stop(grace=1.0)

    assert sorted(outcomes) == [("digest:1", "delivered"), ("digest:2", "failed")]
    assert adapter.posted == [("!ops:example.org", "3 questions answered.")]
    delivered = await outbox.status("digest:1")
    assert delivered.state == "delivered" and delivered.message_ref == "$event1"
    failed = await outbox.status("digest:2")
    assert failed.state == "failed" and failed.last_error == "not in room !gone:example.org"
    assert await outbox.backlog("slack") == 1 and await outbox.backlog("matrix") == 0
    assert adapter.started and adapter.stopped


async def test_the_console_is_a_chat_adapter_like_the_others(
    open_db: Callable[[], Any], clock: Clock, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    console = ConsoleAdapter(tmp_path)
    assert isinstance(console, ChatAdapter) and console.platform in BUILT_IN
    outbox = WatchedOutbox(open_db(), clock, platforms=builtin_platforms())
    await outbox.enqueue(message("digest:c", platform="console", room="console"))
    await console.start()
    async with delivering(outbox, console, every=0.02):
        assert await outbox.wait_outcomes(1) == [("digest:c", "delivered")]
    await console.idle()
    assert await console.stop(grace=1.0) == 0
    assert "3 questions answered." in capsys.readouterr().out


async def test_draining_an_unregistered_platform_is_refused(
    open_db: Callable[[], Any], clock: Clock
) -> None:
    outbox = WatchedOutbox(open_db(), clock, platforms=builtin_platforms())
    with pytest.raises(ValueError, match="not registered"):
        async with delivering(outbox, MatrixAdapter()):
            await asyncio.sleep(0)  # never reached
