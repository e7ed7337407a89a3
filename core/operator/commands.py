"""`/console`: a personal, single-use sign-in link to the operator console, for admins (the
command needs `admin`; the link is made for the verified identity that asked)."""

from __future__ import annotations

from core.commands import Command, CommandContext, IgnoredArgs, declared
from core.operator.links import LINK_LIFETIME, SignInLinks
from core.request import Reply


def signin_url(console_url: str, token: str) -> str:
    return f"{console_url}/console/signin/{token}"


def console_commands(links: SignInLinks, console_url: str) -> list[Command]:
    minutes = int(LINK_LIFETIME.total_seconds() // 60)

    async def console(ctx: CommandContext, _: IgnoredArgs) -> Reply:
        token = await links.issue(ctx.session.identity)
        return Reply(
            f"Your sign-in link to the Threadline console (works once, for {minutes} minutes; "
            f"do not share it): {signin_url(console_url, token)}",
            ephemeral=True,
        )

    return [
        declared(
            "console",
            "a sign-in link to the operator web console, just for you (admins)",
            IgnoredArgs,
            console,
            permission="admin",
            personal=True,
        )
    ]
