"""`feedback`: the answers people in the channel rated 👎 during the period, with their reasons
and links to the answers, so the team (and whoever tunes the bot) can look at what went wrong."""

from __future__ import annotations

from core.digest.kinds.base import DigestContent, DigestContext, Kind, clip, register
from core.feedback.store import FeedbackStore

MAX_ITEMS = 30


async def collect(ctx: DigestContext) -> DigestContent:
    sub = ctx.subscription
    rated = await FeedbackStore(ctx.db).down_rated(
        sub.platform, sub.tenant, sub.channel, ctx.start, ctx.end
    )
    if not rated:
        return DigestContent([], "", empty=True)
    lines = []
    for r in rated[:MAX_ITEMS]:
        where = f"[an answer]({r.link})" if r.link else f"an answer in thread {r.thread}"
        made = f" by `{r.model}`" if r.model else ""
        if r.skills:
            made += f" with {', '.join(r.skills)}"
        why = f": “{clip(r.reason, 200)}”" if r.reason else " (no reason given)"
        lines.append(f"- 👎 {where}{made}{why}")
    if len(rated) > MAX_ITEMS:
        lines.append(f"- … and {len(rated) - MAX_ITEMS} more")
    answers = len({r.answer_id for r in rated})
    head = f"{len(rated)} 👎 on {answers} answer(s)."
    return DigestContent([head, *lines], "\n".join([head, *lines]), empty=False)


register(
    Kind(
        "feedback",
        "Down-rated answers",
        "answers rated 👎 here, with the reasons given",
        collect,
        # The reasons people gave are for those who look after the bot.
        permissions=("admin",),
    )
)
