"""A command: `/oncall TEAM [--next-week]`. The worked example of docs/extending.md.

The arguments are declared once, as a `CommandArgs` model: the parsing, the message for words
that do not fit and the usage line `/help` shows all come from it. The same command works on
Slack (`/threadline oncall payments`), Discord and the console.
"""

from __future__ import annotations

from core.commands import CommandArgs, CommandContext, declared, flag, word
from core.errors import Refusal
from core.request import Reply

# A stand-in for your paging service: (this week, next week) per team.
ROTA = {"payments": ("alice", "carol"), "search": ("bob", "dave")}


class OnCallArgs(CommandArgs):
    words_needed = "Name a team: `{command} payments`."  # said when TEAM is missing
    team: str = word("TEAM")
    next_week: bool = flag()  # --next-week


async def oncall(ctx: CommandContext, args: OnCallArgs) -> Reply:
    pair = ROTA.get(args.team.lower())
    if pair is None:
        # A Refusal is a friendly answer (ok=False), not an error in the log.
        raise Refusal(f"There is no rota for `{args.team}`; teams: {', '.join(sorted(ROTA))}.")
    person, when = (pair[1], "next week") if args.next_week else (pair[0], "this week")
    return Reply(f"**{person}** is on call for {args.team} {when}.")


# The command to register: `/oncall TEAM [--next-week]`, for conversations holding `ask`.
ONCALL = declared("oncall", "who is on call for a team", OnCallArgs, oncall, permission="ask")
