"""The background worker (`threadline worker`): the Discord gateway client when DISCORD_TOKEN is
set, next to the digest scheduler (started by the CLI for `worker` and `run`). It stops cleanly
on SIGTERM/SIGINT (`bot.shutdown`: answers in flight finish within the bound, then the gateway
is closed), and exits non-zero when Discord cannot be served — a bad token, a missing
privileged intent, a first connection that failed — so a process supervisor restarts it and
the log says why."""

from __future__ import annotations

import asyncio
import logging
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from adapters.discord.client import DiscordAdapter
    from bot.app import App
    from bot.shutdown import Shutdown

log = logging.getLogger(__name__)

EXIT_OK, EXIT_FAILED = 0, 1


async def run_worker(app: App, shutdown: Shutdown) -> int:
    try:
        await app.db.create_all()
        return await run_background(app, shutdown)
    finally:
        log.info("worker stopped")


async def run_background(app: App, shutdown: Shutdown, **discord_tuning: Any) -> int:
    """The worker's services until `shutdown` starts, without touching signal handlers (so
    `threadline run` can run them next to the Slack server). Returns the exit status."""
    stop = shutdown.requested
    if app.settings.discord_token is None:
        log.info(
            "worker started: digest scheduler only (DISCORD_TOKEN is not set); waiting for SIGTERM"
        )
        await stop.wait()
        log.info("worker stopping")
        return EXIT_OK
    from adapters.discord.client import DiscordAdapter, DiscordConfig, DiscordStartupError
    from bot.delivery import delivering

    ready: asyncio.Task[None] | None = None
    try:
        # Answers in flight get the shutdown bound (the drain starts with the signal).
        tuning = {"shutdown_grace": shutdown.grace, **discord_tuning}
        config = DiscordConfig.from_settings(app.settings, **tuning)
        adapter = DiscordAdapter(app.core, config, app.confirmations)
        app.presence.track("discord", lambda: _gateway_state(adapter))
        ready = asyncio.create_task(adapter.wait_ready(), name="discord-presence")
        ready.add_done_callback(lambda _: app.presence.poke())  # on the board at once
        # Discord's outbox messages (digests, late replies) go out once the gateway is ready.
        async with delivering(
            app.outbox,
            adapter,
            ready=adapter.wait_ready,
            stop=stop,
            grace=shutdown.remaining,
            cut=shutdown.cut,
        ):
            try:
                await adapter.run(stop)  # closes the gateway when it returns
            finally:
                if adapter.cut:
                    shutdown.cut(f"{adapter.cut} Discord answer(s)")
    except DiscordStartupError:
        return EXIT_FAILED  # logged with the reason by the adapter
    finally:
        if ready is not None:
            ready.cancel()
        app.presence.drop("discord")
    log.info("worker stopping")
    return EXIT_OK


def _gateway_state(adapter: DiscordAdapter) -> str:
    client = adapter.client
    if client.is_closed():
        return "gateway closed"
    return "ok" if client.is_ready() else "connecting to the gateway"
