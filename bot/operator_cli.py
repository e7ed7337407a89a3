"""`threadline console link --user PLATFORM:TENANT:USER`: a single-use sign-in link to the
operator console, made from a shell (for the first admin, before anyone can ask in chat). The
identity must have `admin` under the policy, as in chat; the link is printed, not sent."""

from __future__ import annotations

import argparse
import sys
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from bot.app import App

EXIT_OK, EXIT_FAILED, EXIT_CONFIG = 0, 1, 2


def add_parser(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    console = sub.add_parser("console", help="the operator web console: sign-in links")
    actions = console.add_subparsers(dest="console_command", required=True, metavar="ACTION")
    link = actions.add_parser("link", help="print a single-use sign-in link (valid 5 minutes)")
    link.add_argument(
        "--user",
        required=True,
        metavar="PLATFORM:TENANT:USER",
        help="whom it signs in, e.g. slack:T0123:U0456 (must be an admin under the policy)",
    )
    link.add_argument("--channel", default="", help="the channel the policy resolves for")
    link.add_argument(
        "--role", action="append", default=[], help="a role the user has (repeatable)"
    )


async def console_command(app: App, args: argparse.Namespace) -> int:
    from core.errors import PermissionDenied
    from core.operator.commands import signin_url
    from core.operator.links import SignInLinks
    from core.policy import Identity

    if not app.settings.console:
        print(
            "threadline console: the console is off; set THREADLINE_CONSOLE=true and "
            "THREADLINE_CONSOLE_SECRET first",
            file=sys.stderr,
        )
        return EXIT_CONFIG
    parts = args.user.split(":")
    if len(parts) != 3 or not all(parts):
        print("threadline console link: --user must be PLATFORM:TENANT:USER", file=sys.stderr)
        return EXIT_CONFIG
    platform, tenant, user = parts
    who = Identity(platform, tenant, args.channel, user, frozenset(args.role))
    links = SignInLinks(app.db, app.core.policy, app.clock)
    try:
        token = await links.issue(who)
    except PermissionDenied:
        print(
            f"threadline console link: {args.user} does not have `admin` under the policy "
            f"({app.settings.policy_file})",
            file=sys.stderr,
        )
        return EXIT_FAILED
    print(signin_url(app.settings.console_url, token))
    return EXIT_OK
