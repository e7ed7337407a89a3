"""The background worker (`threadline worker`): the Discord gateway client when DISCORD_TOKEN is
set, next to the digest scheduler (started by the CLI for `worker` and `run`). It stops cleanly
on SIGTERM/SIGINT (answers in flight finish first), and exits non-zero when Discord cannot be
served — a bad token, a missing privileged intent, a first connection that failed — so a
process supervisor restarts it and the log says why."""

from __future__ import annotations

import asyncio
import logging
import signal
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from bot.app import App

log = logging.getLogger(__name__)

EXIT_OK, EXIT_FAILED = 0, 1


async def run_worker(app: App, stop: asyncio.Event | None = None) -> int:
    stop = stop or asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(sig, stop.set)
    try:
        await app.db.create_all()
        return await run_background(app, stop)
    finally:
        for sig in (signal.SIGTERM, signal.SIGINT):
            loop.remove_signal_handler(sig)
        log.info("worker stopped")


async def run_background(app: App, stop: asyncio.Event, **discord_tuning: Any) -> int:
    """The worker's services until `stop` is set, without touching signal handlers (so
    `threadline run` can run them next to the Slack server). Returns the exit status."""
    if app.settings.discord_token is None:
        log.info(
            "worker started: digest scheduler only (DISCORD_TOKEN is not set); waiting for SIGTERM"
        )
        await stop.wait()
        log.info("worker stopping")
        return EXIT_OK
    from adapters.discord.client import DiscordAdapter, DiscordConfig, DiscordStartupError
    from bot.delivery import delivering

    try:
        config = DiscordConfig.from_settings(app.settings, **discord_tuning)
        adapter = DiscordAdapter(app.core, config, app.confirmations)
        # Discord's outbox messages (digests, late replies) go out once the gateway is ready.
        async with delivering(
            app, "discord", adapter.deliver_outbox, ready=adapter.wait_ready, stop=stop
        ):
            await adapter.run(stop)
    except DiscordStartupError:
        return EXIT_FAILED  # logged with the reason by the adapter
    log.info("worker stopping")
    return EXIT_OK
