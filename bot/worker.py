"""The background worker (`threadline worker`): Discord gateway and scheduler live here once
those features exist. Until then it starts, says what is not configured, and stops cleanly on
SIGTERM/SIGINT so a process supervisor can manage it."""

from __future__ import annotations

import asyncio
import logging
import signal
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from bot.app import App

log = logging.getLogger(__name__)


async def run_worker(app: App, stop: asyncio.Event | None = None) -> int:
    stop = stop or asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(sig, stop.set)
    await app.db.create_all()
    log.info(
        "worker started; nothing to run: no Discord adapter or scheduler is configured in this "
        "version (waiting for SIGTERM)"
    )
    await stop.wait()
    log.info("worker stopping")
    return 0
