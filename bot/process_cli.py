"""`threadline run`, `serve` and `worker`, the long-running commands: their flags, which of
them runs as a process rather than as the console, and how `run` picks its adapters (Slack,
Discord, both, or the console). Apart from bot/cli.py, which parses and dispatches every
command; imports stay light at the top (`--help` imports this module)."""

from __future__ import annotations

import argparse
import asyncio
import os
import sys
from typing import TYPE_CHECKING

from bot import console_cli

if TYPE_CHECKING:
    from collections.abc import Coroutine
    from typing import Any

    from bot.app import App
    from bot.shutdown import Shutdown
    from config.settings import Settings

EXIT_OK, EXIT_FAILED, EXIT_CONFIG = 0, 1, 2


def add_parsers(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    sub.add_parser("run", help="run everything configured (console when no chat tokens are set)")

    serve = sub.add_parser("serve", help="HTTP server: /healthz, /metrics, Slack's /slack/events")
    serve.add_argument("--host", default="127.0.0.1")
    # A string default goes through `type` only when `serve` is parsed, so a bad $PORT is a
    # usage error of `serve`, not a crash of every command.
    serve.add_argument("--port", type=int, default=os.environ.get("PORT") or "8080")

    sub.add_parser("worker", help="background worker (Discord gateway, scheduler)")


def long_running(command: str, settings: Settings) -> bool:
    chat = (
        settings.slack_bot_token
        or settings.slack_signing_secret
        or settings.slack_app_token
        or settings.discord_token
    )
    return command in ("serve", "worker") or (command == "run" and bool(chat))


async def run(app: App, shutdown: Shutdown | None) -> int:
    """Everything configured: Slack over Socket Mode with an app token, Slack over HTTP with a
    bot token and signing secret (as `serve`, on 127.0.0.1:$PORT), and the Discord gateway
    client with DISCORD_TOKEN (beside Slack when both are set); with no chat tokens, the
    console. On the first run the demo repository is indexed in the background (bot/demo.py).
    """
    from bot.demo import should_index_demo, start_demo

    demo = start_demo(app) if await should_index_demo(app) else None
    try:
        return await _run_adapters(app, shutdown)
    finally:
        if demo is not None and not demo.done():
            demo.cancel()
            await asyncio.gather(demo, return_exceptions=True)


async def _run_adapters(app: App, shutdown: Shutdown | None) -> int:
    from adapters.console.translate import ConsoleIdentity
    from bot.app import slack_http_configured

    s = app.settings
    if shutdown is not None:  # chat tokens are set: no console
        slack: Coroutine[Any, Any, int] | None = None
        if s.slack_app_token:
            from bot.server import run_socket_mode

            slack = run_socket_mode(app, shutdown)
        elif slack_http_configured(s):
            from bot.server import serve

            port = os.environ.get("PORT") or "8080"
            if not port.isdigit():
                print("Threadline cannot start: PORT must be a port number", file=sys.stderr)
                return EXIT_CONFIG
            slack = serve(app, "127.0.0.1", int(port), shutdown)
        if s.discord_token:
            if slack is None:
                from bot.worker import run_worker

                return await run_worker(app, shutdown)
            return await _beside_discord(app, slack, shutdown)
        if slack is not None:
            return await slack
    from adapters.console.outbox import ConsoleAdapter
    from bot.console.local import local_console
    from bot.delivery import delivering

    printer = ConsoleAdapter(s.data_dir / "attachments")
    who = ConsoleIdentity()
    # The web console, when on, is served on 127.0.0.1 beside the chat, with a sign-in link.
    async with delivering(app.outbox, printer), local_console(app, who):
        return await console_cli.chat(app, who)


async def _beside_discord(app: App, slack: Coroutine[Any, Any, int], shutdown: Shutdown) -> int:
    """Slack and Discord in one process, both stopped by `shutdown`. When Discord cannot
    run, Slack is stopped too and the exit status is 1, so the supervisor restarts the
    process."""
    from bot.worker import run_background

    discord = asyncio.create_task(run_background(app, shutdown))

    def ended(task: asyncio.Task[int]) -> None:
        failed = task.cancelled() or task.exception() is not None or task.result() != EXIT_OK
        if failed:
            shutdown.begin("Discord stopped")  # Slack drains its work and returns

    discord.add_done_callback(ended)
    try:
        code = await slack
    finally:
        shutdown.begin("Slack stopped")
        [outcome] = await asyncio.gather(discord, return_exceptions=True)
    discord_code = outcome if isinstance(outcome, int) else EXIT_FAILED
    return code if code != EXIT_OK else discord_code
