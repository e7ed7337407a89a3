"""`/feedback [DAYS]`: how people rated the answers of this workspace, for its admins."""

from __future__ import annotations

from datetime import timedelta
from typing import Annotated

from pydantic import Field

from core.commands import Command, CommandArgs, CommandContext, declared, word
from core.feedback.store import FeedbackStore, Tally
from core.request import Reply

DEFAULT_DAYS = 7
MAX_DAYS = 90
ROWS = 10  # per grouping: the most rated first


class FeedbackArgs(CommandArgs):
    words_needed = f"The period is a number of days, 1 to {MAX_DAYS}: `{{command}} 30`."
    days: Annotated[int, Field(ge=1, le=MAX_DAYS)] = word("DAYS", DEFAULT_DAYS)


def _share(t: Tally) -> str:
    return f"👍 {t.up} · 👎 {t.down}" + (f" ({100 * t.up / t.total:.0f}% 👍)" if t.total else "")


def _section(title: str, tallies: list[Tally], shown: str) -> list[str]:
    if not tallies:
        return []
    lines = [f"**By {title}**"]
    for t in tallies[:ROWS]:
        lines.append(f"- {shown.format(t.key)}: {_share(t)}")
    if len(tallies) > ROWS:
        lines.append(f"- … and {len(tallies) - ROWS} more")
    return lines


def feedback_commands(store: FeedbackStore) -> list[Command]:
    async def feedback(ctx: CommandContext, args: FeedbackArgs) -> Reply:
        who = ctx.session.identity
        since = ctx.now - timedelta(days=args.days)
        channels = await store.tallies(who.platform, who.tenant, since, "channel")
        period = "the last 24 hours" if args.days == 1 else f"the last {args.days} days"
        if not channels:
            return Reply(f"No answers were rated in {period}.", ephemeral=True)
        up = sum(t.up for t in channels)
        down = sum(t.down for t in channels)
        lines = [f"**Ratings of answers in {period}**: 👍 {up} · 👎 {down}", ""]
        lines += _section("channel", channels, "<#{}>")
        lines += _section(
            "model", await store.tallies(who.platform, who.tenant, since, "model"), "`{}`"
        )
        lines += _section(
            "skill", await store.tallies(who.platform, who.tenant, since, "skill"), "{}"
        )
        lines.append("")
        lines.append("The `feedback` digest lists the down-rated answers of a channel.")
        return Reply("\n".join(lines), ephemeral=True)

    return [
        declared(
            "feedback",
            "how people rated my answers here, by channel, model and skill (admins)",
            FeedbackArgs,
            feedback,
            permission="admin",
            personal=True,
        )
    ]
