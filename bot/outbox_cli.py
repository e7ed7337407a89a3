"""`threadline outbox [--json]` lists the messages waiting for delivery or given up on;
`threadline outbox retry KEY` queues a given-up message again (once its channel or the bot's
permissions are fixed). The processes that serve the platform deliver it."""

from __future__ import annotations

import argparse
import json
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from bot.app import App
    from core.outbox import OutboxEntry

EXIT_OK, EXIT_FAILED = 0, 1


def add_parser(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    outbox = sub.add_parser(
        "outbox", help="messages waiting for delivery (digests), and retrying given-up ones"
    )
    outbox.add_argument("action", nargs="?", choices=("list", "retry"), default="list")
    outbox.add_argument("key", nargs="?", metavar="KEY", help="the message to retry")
    outbox.add_argument("--json", action="store_true", help="print the list as JSON")


async def outbox_command(app: App, args: argparse.Namespace) -> int:
    if args.action == "retry":
        if not args.key:
            print("threadline outbox retry: give the KEY of a failed message")
            return EXIT_FAILED
        if await app.outbox.retry(args.key):
            print(f"queued again: {args.key}")
            return EXIT_OK
        print(f"no failed message with key {args.key!r}")
        return EXIT_FAILED
    # Here, not at the top: `threadline --help` imports this module for its parser only.
    from core.outbox import DeliveryState

    entries = await app.outbox.entries()
    if args.json:
        print(json.dumps([_as_json(e) for e in entries], ensure_ascii=False))
        return EXIT_OK
    if not entries:
        print("the outbox is empty: nothing waiting, nothing given up")
    for e in entries:
        waiting = e.state is DeliveryState.PENDING
        when = e.next_attempt_at.isoformat(timespec="seconds") if waiting else ""
        error = f"  last error: {e.last_error}" if e.last_error else ""
        print(
            f"{e.state:8} {e.platform}/{e.tenant}/{e.channel}  {e.key}  "
            f"attempts {e.attempts}{'  next ' + when if when else ''}{error}"
        )
    return EXIT_OK


def _as_json(e: OutboxEntry) -> dict[str, object]:
    return {
        "key": e.key,
        "platform": e.platform,
        "tenant": e.tenant,
        "channel": e.channel,
        "state": e.state,
        "attempts": e.attempts,
        "created_at": e.created_at.isoformat(),
        "next_attempt_at": e.next_attempt_at.isoformat(),
        "last_error": e.last_error,
    }
