"""`threadline` command line: the parser, and `main`, which answers the commands that need no
app (`db`, `skills`, `search` beside a bot that holds the store) and hands the others to
bot/dispatch_cli.py. Each command's own work lives in its module (bot/console_cli.py: ask, chat;
bot/process_cli.py: run, serve, worker; bot/code_cli.py, bot/map_cli.py, bot/db_cli.py,
bot/outbox_cli.py, bot/skills_cli.py, bot/operator_cli.py: console link). Imports stay light
at the top: `--help` must start fast."""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import io
import logging
import os
import sys
from typing import TYPE_CHECKING

from bot import console_cli, process_cli
from bot.dispatch_cli import dispatch
from bot.heap import limit_malloc_arenas

# Light (no third-party imports): every start-up failure is a ConfigError, caught by family.
from core.errors import ConfigError

if TYPE_CHECKING:
    from config.settings import Settings

EXIT_OK, EXIT_FAILED, EXIT_CONFIG = 0, 1, 2


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="threadline",
        description="Threadline: a self-hosted chat-ops agent that answers in the thread.",
    )
    parser.add_argument("-v", "--verbose", action="store_true", help="log at INFO to stderr")
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")

    process_cli.add_parsers(sub)  # run, serve, worker
    console_cli.add_parsers(sub)  # chat, ask

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

    hold = sub.add_parser(
        "hold-search",
        help="keep the code index and the embedding model open for `threadline search` in a "
        "shell (`search` starts one itself: THREADLINE_SEARCH_LINGER)",
    )
    hold.add_argument(
        "--idle",
        type=_seconds,
        default=None,
        help="leave after this many seconds without a search (default: THREADLINE_SEARCH_LINGER)",
    )

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
    from bot.operator_cli import add_parser as add_console_parser

    add_console_parser(sub)
    skills = sub.add_parser("skills", help="team skills (SKILL.md playbooks)")
    skills_sub = skills.add_subparsers(dest="skills_command", required=True, metavar="ACTION")
    skills_check = skills_sub.add_parser(
        "check", help="check skill folders; exit 1 when a skill has errors"
    )
    skills_check.add_argument(
        "dirs", nargs="*", metavar="DIR", help="folders to check (default: the configured ones)"
    )
    return parser


def _seconds(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a number of seconds: {text!r}") from None
    if not 0 < value <= 86_400:
        raise argparse.ArgumentTypeError("must be more than 0 and at most 86400 seconds")
    return value


# Filesystem paths keep their exact bytes: `os` functions round-trip surrogateescape'd names.
_PATH_ARGUMENTS = frozenset({"source", "dirs"})

# Commands whose process may index and embed (bot.heap).
_EMBEDDING = frozenset({"run", "serve", "worker", "chat", "index", "hold-search"})


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    if args.command in _EMBEDDING:  # first: before anything starts a thread
        limit_malloc_arenas()
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
        "console",
    ) or (args.command == "run" and not process_cli.long_running("run", settings))
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
            from bot.code_cli import SearchAsk, search

            return search(settings, SearchAsk(args.query, args.repo, args.k, args.json, args.role))
        if args.command == "hold-search":
            from bot.search_holder import hold_for_searches

            idle = settings.search_linger if args.idle is None else args.idle
            return asyncio.run(hold_for_searches(settings, idle))
        return asyncio.run(dispatch(args, settings))
    except KeyboardInterrupt:
        return EXIT_OK
    except BrokenPipeError:  # `threadline search ... | head`: the reader left, nothing to say
        with contextlib.suppress(OSError):
            os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return EXIT_OK


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


# Commands that print and end: nothing is left to clean up once their output is flushed.
_ONE_SHOT = frozenset({"ask", "index", "repos", "search", "graph", "map", "outbox", "console"})


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
