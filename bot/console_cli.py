"""`threadline ask` (one question, one printed reply) and `threadline chat` (the console REPL):
their flags, the console identity they speak as, and the MCP servers a one-shot question
connects. Apart from bot/cli.py, which parses and dispatches every command; imports stay
light at the top (`--help` imports this module)."""

from __future__ import annotations

import argparse
import json
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from adapters.console.translate import ConsoleIdentity
    from bot.app import App
    from core.request import Request

EXIT_OK, EXIT_FAILED = 0, 1


def _identity_flags(p: argparse.ArgumentParser) -> None:
    g = p.add_argument_group("console identity (the local operator is trusted)")
    g.add_argument("--tenant", default="local", help="tenant id (default: local)")
    g.add_argument("--channel", default="console", help="channel id (default: console)")
    g.add_argument("--thread", help="thread id; reuse it to continue a conversation")
    g.add_argument("--user", help="user id (default: the OS user)")
    g.add_argument("--role", action="append", default=[], help="a role; repeat for several")


def add_parsers(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    chat = sub.add_parser("chat", help="interactive console channel")
    _identity_flags(chat)

    ask = sub.add_parser("ask", help="ask one question (or run one command) and print the reply")
    ask.add_argument("text", help='the question or command, e.g. "/budget"')
    ask.add_argument("--json", action="store_true", help="print the reply as JSON")
    _identity_flags(ask)


def identity(args: argparse.Namespace) -> ConsoleIdentity:
    from dataclasses import replace

    from adapters.console.translate import ConsoleIdentity

    # Thread and user keep their defaults (a fresh thread, the OS user) unless given.
    who = ConsoleIdentity(tenant=args.tenant, channel=args.channel, roles=tuple(args.role))
    if args.thread:
        who = replace(who, thread=args.thread)
    if args.user:
        who = replace(who, user=args.user)
    return who


async def ask(app: App, args: argparse.Namespace) -> int:
    from dataclasses import replace

    from adapters.console.translate import render_json, render_text, save_attachments, to_request

    request = to_request(args.text, identity(args))
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


async def chat(app: App, who: ConsoleIdentity) -> int:
    from adapters.console.repl import chat

    return await chat(app.core, who, app.settings.data_dir / "attachments", app.confirmations)
