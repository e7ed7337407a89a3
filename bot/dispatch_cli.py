"""A command run with the whole app: the app is built (and, for `run`, `serve` and `worker`,
held alone and stopped by signals), the schema is checked, the upkeep and the digest scheduler
start for the commands that need them, the command runs, and the app is closed after it.
Apart from bot/cli.py, which parses the command line and answers the commands that need no
app; imports stay light at the top (`--help` imports this module)."""

from __future__ import annotations

import argparse
import asyncio
import sys
from typing import TYPE_CHECKING

from bot import console_cli, process_cli

# Light (no third-party imports): every start-up failure is a ConfigError, caught by family.
from core.errors import ConfigError

if TYPE_CHECKING:
    from bot.app import App
    from bot.shutdown import Shutdown
    from config.settings import Settings
    from core.digest.scheduler import DigestScheduler
    from core.store.engine import Database

EXIT_OK, EXIT_FAILED, EXIT_CONFIG = 0, 1, 2


async def dispatch(args: argparse.Namespace, settings: Settings) -> int:
    from bot.app import build_app

    try:
        app = build_app(settings, with_metrics=args.command in ("serve", "run"))
    except ConfigError as exc:
        print(f"Threadline cannot start: {exc}", file=sys.stderr)
        return EXIT_CONFIG
    if args.command not in ("run", "serve", "worker"):
        return await _dispatch_app(app, args, None)
    from bot.startup_checks import held_alone

    try:
        with held_alone(settings, args.command):
            if not process_cli.long_running(args.command, settings):  # `run` as the console
                return await _dispatch_app(app, args, None)
            from bot.shutdown import Shutdown

            shutdown = Shutdown(settings.shutdown_grace)
            with shutdown.signals():  # through the cleanup: a second signal ends it too
                code = await _dispatch_app(app, args, shutdown)
            finished = shutdown.finished()
            return code if code != EXIT_OK else finished
    except ConfigError as exc:  # another process holds what only one may (SharedResourceError)
        await app.aclose()
        print(exc, file=sys.stderr)
        return EXIT_CONFIG


async def _dispatch_app(app: App, args: argparse.Namespace, shutdown: Shutdown | None) -> int:
    """Run the command with its app, and close the app after it. `shutdown` is given to
    the long-running commands (signals are handled by it while they run)."""
    upkeep: asyncio.Task[None] | None = None
    scheduler: DigestScheduler | None = None
    try:
        # Every command checks the schema first: met later, inside a request or a background
        # task, a refusal would be a generic error line instead of what to do.
        if not await database_ready(app.db):
            return EXIT_FAILED
        if shutdown is not None:  # a serving process: its start-up heap lives as long as it
            from bot.heap import freeze_start_up_heap

            freeze_start_up_heap()
        if args.command in ("run", "serve", "worker", "chat"):
            app.mcp.start()  # MCP servers connect in the background; nothing waits for them
        if args.command in ("run", "serve", "worker"):
            from bot.upkeep import start_upkeep

            upkeep = start_upkeep(app, args.command)
        if args.command in ("run", "worker"):
            # Every worker runs the digest scheduler: claims in SQL make each period run once.
            from core.digest.scheduler import DigestScheduler

            scheduler = DigestScheduler(app.digests)
            await scheduler.start()
            if shutdown is not None:  # no digest starts once the process is shutting down
                shutdown.on_begin(scheduler.pause)
        elif args.command == "chat":  # an edited playbook is tried at once in a chat session
            from bot.upkeep import keep_skills_fresh

            upkeep = asyncio.get_running_loop().create_task(keep_skills_fresh(app))
        if args.command == "ask":
            return await console_cli.ask(app, args)
        if args.command == "chat":
            return await console_cli.chat(app, console_cli.identity(args))
        if args.command == "index":
            from bot.code_cli import index_command

            return await index_command(app, args.source, args.name)
        if args.command == "repos":
            from bot.code_cli import repos_command

            return await repos_command(app, args.json)
        if args.command == "graph":
            from bot.code_cli import graph_command

            return await graph_command(app, args)
        if args.command == "map":
            from bot.map_cli import map_command

            return await map_command(app, args)
        if args.command == "outbox":
            from bot.outbox_cli import outbox_command

            return await outbox_command(app, args)
        if args.command == "console":
            from bot.operator_cli import console_command

            return await console_command(app, args)
        if args.command == "run":
            return await process_cli.run(app, shutdown)
        assert shutdown is not None
        if args.command == "serve":
            from bot.server import serve

            return await serve(app, args.host, args.port, shutdown)
        if args.command == "worker":
            from bot.worker import run_worker

            return await run_worker(app, shutdown)
        raise AssertionError(args.command)
    finally:
        if scheduler is not None:
            await scheduler.stop()  # releases its claims, so another worker may take them over
        if upkeep is not None:
            upkeep.cancel()
            await asyncio.gather(upkeep, return_exceptions=True)
        await app.aclose()


async def database_ready(db: Database) -> bool:
    """The database and its schema are checked up front (a SQLite file is upgraded here), and
    what is wrong is said plainly instead of a traceback (the URL is not printed: it may hold
    a password)."""
    try:
        await db.create_all()
    except ConfigError as exc:  # SchemaError
        print(f"Threadline cannot start: {exc}", file=sys.stderr)
        return False
    except Exception as exc:
        print(
            f"Threadline cannot start: the database (DATABASE_URL) is unreachable: "
            f"{type(exc).__name__}",
            file=sys.stderr,
        )
        return False
    return True
