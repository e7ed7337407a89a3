"""`activity`: what the channel asked Threadline in the period, what was answered and what looks
still open (a question with no answer after it)."""

from __future__ import annotations

from collections import defaultdict

from sqlmodel import col, select

from core.digest.kinds.base import DigestContent, DigestContext, Kind, clip, register
from core.memory.history import SUMMARY_PREFIX
from core.store.models import ThreadMessage

MAX_THREADS = 30  # listed; the rest are counted


async def collect(ctx: DigestContext) -> DigestContent:
    sub = ctx.subscription
    async with ctx.db.session() as s:
        rows = (
            await s.exec(
                select(ThreadMessage)
                .where(
                    col(ThreadMessage.platform) == sub.platform,
                    col(ThreadMessage.tenant) == sub.tenant,
                    col(ThreadMessage.channel) == sub.channel,
                    col(ThreadMessage.at) > ctx.start,
                    col(ThreadMessage.at) <= ctx.end,
                    col(ThreadMessage.role).in_(("user", "assistant")),
                )
                .order_by(col(ThreadMessage.id))
            )
        ).all()
    threads: dict[str, list[ThreadMessage]] = defaultdict(list)
    for row in rows:
        if row.role == "assistant" and row.tool_calls:
            continue  # a step of a tool loop, not an answer
        if row.role == "user" and row.content.startswith(SUMMARY_PREFIX):
            continue
        threads[row.thread].append(row)
    questions = answered = 0
    lines: list[str] = []
    open_lines: list[str] = []
    material: list[str] = []
    for thread, messages in threads.items():
        asked = [m for m in messages if m.role == "user" and m.content.strip()]
        if not asked:
            continue
        questions += len(asked)
        last_user = max(i for i, m in enumerate(messages) if m.role == "user")
        is_open = not any(m.role == "assistant" for m in messages[last_user + 1 :])
        answered += sum(
            1
            for i, m in enumerate(messages)
            if m.role == "user" and any(n.role == "assistant" for n in messages[i + 1 : i + 2])
        )
        first = clip(asked[0].content, 140)
        more = f" (+{len(asked) - 1} follow-up(s))" if len(asked) > 1 else ""
        line = f"- {first}{more}"
        (open_lines if is_open else lines).append(line + (" — *no answer yet*" if is_open else ""))
        answer = next((m.content for m in messages if m.role == "assistant"), "")
        material.append(
            f"Thread {thread}: asked {first!r}{more}; "
            + (f"answered: {clip(answer, 200)!r}" if answer and not is_open else "still open")
        )
    if not questions:
        return DigestContent([], "", empty=True)
    summary = (
        f"{questions} question(s) in {len(threads)} thread(s); {answered} answered, "
        f"{len(open_lines)} thread(s) look still open."
    )
    shown = [*open_lines, *lines]
    out = [summary, *shown[:MAX_THREADS]]
    if len(shown) > MAX_THREADS:
        out.append(f"- … and {len(shown) - MAX_THREADS} more thread(s)")
    return DigestContent(out, "\n".join([summary, *material[:200]]), empty=False)


register(
    Kind(
        "activity",
        "Activity",
        "what the channel asked, what was answered, what looks still open",
        collect,
        permissions=("ask",),  # the channel's questions, as anyone who may ask here sees them
    )
)
