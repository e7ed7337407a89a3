"""`threadline` command line. Imports stay light at the top: `--help` must start fast."""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import io
import json
import logging
import os
import sys
from typing import TYPE_CHECKING

# Light (no third-party imports): every start-up failure is a ConfigError, caught by family.
from core.errors import ConfigError

if TYPE_CHECKING:
    from collections.abc import Coroutine
    from typing import Any

    from adapters.console.translate import ConsoleIdentity
    from bot.app import App
    from bot.shutdown import Shutdown
    from config.settings import Settings
    from core.digest.scheduler import DigestScheduler
    from core.request import Request

EXIT_OK, EXIT_FAILED, EXIT_CONFIG = 0, 1, 2


def _identity_flags(p: argparse.ArgumentParser) -> None:
    g = p.add_argument_group("console identity (the local operator is trusted)")
    g.add_argument("--tenant", default="local", help="tenant id (default: local)")
    g.add_argument("--channel", default="console", help="channel id (default: console)")
    g.add_argument("--thread", help="thread id; reuse it to continue a conversation")
    g.add_argument("--user", help="user id (default: the OS user)")
    g.add_argument("--role", action="append", default=[], help="a role; repeat for several")


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="threadline",
        description="Threadline: a self-hosted chat-ops agent that answers in the thread.",
    )
    parser.add_argument("-v", "--verbose", action="store_true", help="log at INFO to stderr")
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")

    sub.add_parser("run", help="run everything configured (console when no chat tokens are set)")

    serve = sub.add_parser("serve", help="HTTP server: /healthz, /metrics, Slack's /slack/events")
    serve.add_argument("--host", default="127.0.0.1")
    # A string default goes through `type` only when `serve` is parsed, so a bad $PORT is a
    # usage error of `serve`, not a crash of every command.
    serve.add_argument("--port", type=int, default=os.environ.get("PORT") or "8080")

    sub.add_parser("worker", help="background worker (Discord gateway, scheduler)")

    chat = sub.add_parser("chat", help="interactive console channel")
    _identity_flags(chat)

    ask = sub.add_parser("ask", help="ask one question (or run one command) and print the reply")
    ask.add_argument("text", help='the question or command, e.g. "/budget"')
    ask.add_argument("--json", action="store_true", help="print the reply as JSON")
    _identity_flags(ask)

    index = sub.add_parser("index", help="register and index a code repository (path or git URL)")
    index.add_argument("source", metavar="PATH_OR_GIT_URL", help="a local directory or git URL")
    index.add_argument("--name", help="repository name (default: the last path component)")

    repos = sub.add_parser("repos", help="list code repositories")
    repos.add_argument("--json", action="store_true", help="print the list as JSON")

    from core.code.roles import ROLES  # small: paths and regexes only

    search = sub.add_parser("search", help="hybrid semantic + keyword search over indexed code")
    search.add_argument("query", metavar="QUERY")
    search.add_argument("--repo", help="only this repository")
    search.add_argument("--k", type=int, default=10, help="how many results (1-30, default 10)")
    search.add_argument(
        "--role",
        action="append",
        choices=ROLES,
        help="only files of this role (repeatable; default: all, source first)",
    )
    search.add_argument("--json", action="store_true", help="print results as JSON")

    graph = sub.add_parser(
        "graph", help="code graph: definition, hierarchy, callers and callees of a symbol"
    )
    graph.add_argument(
        "symbol", metavar="SYMBOL", nargs="?", help="name, Class.method or path:symbol"
    )
    graph.add_argument("--repo", help="only this repository (required with --edges)")
    graph.add_argument("--depth", type=int, default=2, help="how far to follow edges (1-5)")
    graph.add_argument("--callers", action="store_true", help="show who calls it")
    graph.add_argument("--callees", action="store_true", help="show what it calls")
    graph.add_argument(
        "--hierarchy", action="store_true", help="show what it extends and what extends it"
    )
    graph.add_argument("--edges", action="store_true", help="every edge of --repo")
    graph.add_argument("--json", action="store_true", help="print JSON")
    graph.add_argument(
        "--image", metavar="FILE", help="also draw the graph as a PNG picture into FILE"
    )
    graph.add_argument(
        "--confident", action="store_true", help="the picture leaves out guessed edges"
    )
    code_map = sub.add_parser(
        "map", help="repo map: files and their main definitions, ranked, within a token budget"
    )
    code_map.add_argument("--repo", required=True, help="the repository")
    code_map.add_argument(
        "--focus", metavar="SYMBOL_OR_PATH", help="rank around this definition or file"
    )
    code_map.add_argument(
        "--tokens", type=int, help="budget (default 1024 with a file focus, else 2048)"
    )
    code_map.add_argument("--json", action="store_true", help="print JSON")
    from bot.outbox_cli import add_parser as add_outbox_parser

    add_outbox_parser(sub)
    from bot.db_cli import add_parser as add_db_parser

    add_db_parser(sub)
    skills = sub.add_parser("skills", help="team skills (SKILL.md playbooks)")
    skills_sub = skills.add_subparsers(dest="skills_command", required=True, metavar="ACTION")
    skills_check = skills_sub.add_parser(
        "check", help="check skill folders; exit 1 when a skill has errors"
    )
    skills_check.add_argument(
        "dirs", nargs="*", metavar="DIR", help="folders to check (default: the configured ones)"
    )
    return parser


# Filesystem paths keep their exact bytes: `os` functions round-trip surrogateescape'd names.
_PATH_ARGUMENTS = frozenset({"source", "dirs"})


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    _valid_text_arguments(args)
    _valid_output(as_json=bool(getattr(args, "json", False)))
    if args.command == "skills" and args.dirs:  # a folder of skills needs no configuration
        from bot.skills_cli import check

        return check(args.dirs, None)
    try:
        settings = _load_settings()
    except ConfigError as exc:
        print(exc, file=sys.stderr)
        return EXIT_CONFIG
    interactive = args.command in (
        "ask",
        "chat",
        "index",
        "repos",
        "search",
        "graph",
        "map",
        "db",
    ) or (args.command == "run" and not _long_running("run", settings))
    quiet = interactive and not args.verbose
    from bot.logs import configure_logging

    configure_logging("WARNING" if quiet else settings.log_level, settings.log_format)
    try:
        if args.command == "skills":
            from bot.skills_cli import check

            return check([], settings)
        if args.command == "db":
            return asyncio.run(_db(args, settings))
        if args.command == "search":
            answered = _search_through_holder(args, settings)
            if answered is not None:
                return answered
        return asyncio.run(_dispatch(args, settings))
    except KeyboardInterrupt:
        return EXIT_OK
    except BrokenPipeError:  # `threadline search ... | head`: the reader left, nothing to say
        with contextlib.suppress(OSError):
            os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return EXIT_OK


def _search_through_holder(args: argparse.Namespace, settings: Settings) -> int | None:
    """`threadline search` beside a bot holding the embedded vector store is answered by the
    bot, before the app is built (the database, NumPy and the embedder are never imported);
    None: search in this process."""
    from bot.code_cli import search_through_holder, search_usage_error

    problem = search_usage_error(args.query, args.k)
    if problem is not None:
        print(problem, file=sys.stderr)
        return EXIT_CONFIG
    return search_through_holder(
        settings, args.query, args.repo, args.k, args.json, roles=args.role
    )


def _valid_text_arguments(args: argparse.Namespace) -> None:
    """Arguments that are not UTF-8 arrive as lone surrogates; replace them here, at the
    boundary, so that nothing behind it (database, JSON, HTTP) sees text it cannot encode."""
    from adapters.console.translate import valid_text

    for name, value in vars(args).items():
        if name in _PATH_ARGUMENTS:
            continue
        if isinstance(value, str):
            setattr(args, name, valid_text(value))
        elif isinstance(value, list):
            setattr(args, name, [valid_text(v) if isinstance(v, str) else v for v in value])


def _valid_output(*, as_json: bool) -> None:
    """Whatever is printed is valid text. Python's stdout writes a lone surrogate (from a file
    name that is not UTF-8, say) back as the raw byte under a C or UTF-8 locale; "replace"
    writes "?" instead. JSON is UTF-8 whatever the locale (RFC 8259)."""
    if not isinstance(sys.stdout, io.TextIOWrapper):
        return
    if as_json:
        sys.stdout.reconfigure(encoding="utf-8", errors="replace")
    else:
        sys.stdout.reconfigure(errors="replace")


def _load_settings() -> Settings:
    from config.settings import SettingsError, load_settings

    try:
        return load_settings()
    except ConfigError:
        raise
    except ValueError as exc:
        # pydantic-settings' own parse errors (MCP='not json' in the environment) pass
        # load_settings unconverted; they stop start-up like any settings error.
        raise SettingsError(str(exc)) from None


async def _db(args: argparse.Namespace, settings: Settings) -> int:
    """`threadline db ...` needs the database only, not the whole app (nor a valid policy)."""
    from bot.db_cli import db_command
    from core.store.engine import Database

    try:
        db = Database(settings.database)
    except ConfigError as exc:
        print(f"threadline db: {exc}", file=sys.stderr)
        return EXIT_CONFIG
    try:
        return await db_command(db, args)
    finally:
        await db.dispose()


async def _dispatch(args: argparse.Namespace, settings: Settings) -> int:
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
            if not _long_running(args.command, settings):  # `run` as the console
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
        if not await _database_ready(app):
            return EXIT_FAILED
        if args.command in ("run", "serve", "worker", "chat"):
            app.mcp.start()  # MCP servers connect in the background; nothing waits for them
        if args.command in ("run", "serve", "worker"):
            from bot.upkeep import start_upkeep

            upkeep = start_upkeep(app)
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
            return await _ask(app, args)
        if args.command == "chat":
            return await _chat(app, _identity(args))
        if args.command == "index":
            from bot.code_cli import index_command

            return await index_command(app, args.source, args.name)
        if args.command == "repos":
            from bot.code_cli import repos_command

            return await repos_command(app, args.json)
        if args.command == "search":
            from bot.code_cli import search_command

            return await search_command(
                app, args.query, args.repo, args.k, args.json, roles=args.role
            )
        if args.command == "graph":
            from bot.code_cli import graph_command

            return await graph_command(app, args)
        if args.command == "map":
            from bot.map_cli import map_command

            return await map_command(app, args)
        if args.command == "outbox":
            from bot.outbox_cli import outbox_command

            return await outbox_command(app, args)
        if args.command == "run":
            return await _run(app, shutdown)
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


def _long_running(command: str, settings: Settings) -> bool:
    chat = (
        settings.slack_bot_token
        or settings.slack_signing_secret
        or settings.slack_app_token
        or settings.discord_token
    )
    return command in ("serve", "worker") or (command == "run" and bool(chat))


async def _database_ready(app: App) -> bool:
    """The database and its schema are checked up front (a SQLite file is upgraded here), and
    what is wrong is said plainly instead of a traceback (the URL is not printed: it may hold
    a password)."""
    try:
        await app.db.create_all()
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


def _identity(args: argparse.Namespace) -> ConsoleIdentity:
    from dataclasses import replace

    from adapters.console.translate import ConsoleIdentity

    # Thread and user keep their defaults (a fresh thread, the OS user) unless given.
    who = ConsoleIdentity(tenant=args.tenant, channel=args.channel, roles=tuple(args.role))
    if args.thread:
        who = replace(who, thread=args.thread)
    if args.user:
        who = replace(who, user=args.user)
    return who


async def _ask(app: App, args: argparse.Namespace) -> int:
    from dataclasses import replace

    from adapters.console.translate import render_json, render_text, save_attachments, to_request

    request = to_request(args.text, _identity(args))
    notices = await _connect_mcp(app, request)
    reply = await app.core.handle(request)
    if notices:
        reply = replace(reply, notices=(*reply.notices, *notices))
    saved = save_attachments(reply, app.settings.data_dir / "attachments")
    if args.json:
        print(json.dumps(render_json(reply, saved), ensure_ascii=False))
    else:
        print(render_text(reply, saved))
    return EXIT_OK if reply.ok else EXIT_FAILED


async def _connect_mcp(app: App, request: Request) -> list[str]:
    """A one-shot question connects the MCP servers its conversation may use (a long-running
    command connects them all in the background), waiting up to their connect timeouts; the
    reply's notices name those not ready. Commands that never reach the model wait for none."""
    from core import commands as cmd
    from core.mcp.commands import not_ready_notice
    from core.session import open_session

    parsed = cmd.parse(request.text)
    if parsed is not None and parsed.name not in ("ask", "mcp"):
        if app.core.commands.get(parsed.name) is not None:
            return []  # a command (not a skill run by name): no tools involved
    names = app.mcp.usable_by(open_session(request, app.core.policy))
    return [not_ready_notice(state) for state in await app.mcp.connect(names)]


async def _chat(app: App, who: ConsoleIdentity) -> int:
    from adapters.console.repl import chat

    return await chat(app.core, who, app.settings.data_dir / "attachments", app.confirmations)


async def _run(app: App, shutdown: Shutdown | None) -> int:
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
    from bot.delivery import delivering

    printer = ConsoleAdapter(s.data_dir / "attachments")
    async with delivering(app.outbox, printer):  # a digest is printed here
        return await _chat(app, ConsoleIdentity())


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


# Commands that print and end: nothing is left to clean up once their output is flushed.
_ONE_SHOT = frozenset({"ask", "index", "repos", "search", "graph", "map", "outbox"})


def entry() -> None:
    """The `threadline` command. A one-shot command leaves with `os._exit` once its output is
    flushed (its app is closed by then): tearing down an interpreter that imported SQLAlchemy,
    pydantic and NumPy took a quarter of a second of every `threadline search`."""
    code = main()
    if sys.argv[1:2] and sys.argv[1] in _ONE_SHOT:
        logging.shutdown()
        for stream in (sys.stdout, sys.stderr):
            with contextlib.suppress(OSError, ValueError):
                stream.flush()
        os._exit(code)
    sys.exit(code)


if __name__ == "__main__":
    entry()
