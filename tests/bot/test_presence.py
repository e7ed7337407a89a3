"""What a process has connected, and the heartbeat's wait for a change."""

from __future__ import annotations

import asyncio

import pytest

from bot.presence import Presence


async def test_a_wait_cancelled_as_a_state_changes_ends() -> None:
    # A stopping process drops its platforms (a change) as its heartbeat is cancelled: the
    # wait must end with the cancellation, not swallow it and wait on (as wait_for did on 3.11).
    for _ in range(50):
        presence = Presence()
        waiter = asyncio.create_task(presence.changed(within=60))
        await asyncio.sleep(0)
        presence.drop("slack")
        waiter.cancel()
        with pytest.raises(asyncio.CancelledError):
            async with asyncio.timeout(2):
                await waiter


async def test_states_and_changes() -> None:
    presence = Presence()
    presence.track("slack")
    presence.track("discord", lambda: "connecting to the gateway")

    def broken() -> str:
        raise RuntimeError("gone")

    presence.track("other", broken)
    assert presence.states() == {
        "slack": "ok",
        "discord": "connecting to the gateway",
        "other": "unknown (RuntimeError)",
    }
    async with asyncio.timeout(1):
        await presence.changed(within=30)  # tracked since the last wait: at once
    presence.drop("other")
    assert set(presence.states()) == {"slack", "discord"}
