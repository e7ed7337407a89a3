"""`memory`: long-term facts saved or changed in the channel's scopes during the period."""

from __future__ import annotations

from datetime import UTC

from sqlmodel import col, or_, select

from core.digest.kinds.base import DigestContent, DigestContext, Kind, clip, register
from core.store.models import MemoryItem

MAX_ITEMS = 40


async def collect(ctx: DigestContext) -> DigestContent:
    sub = ctx.subscription
    async with ctx.db.session() as s:
        rows = (
            await s.exec(
                select(MemoryItem)
                .where(
                    col(MemoryItem.platform) == sub.platform,
                    col(MemoryItem.tenant) == sub.tenant,
                    # The channel's own facts and the tenant-wide ones; never a user's private
                    # ones, which a channel digest would show to everyone.
                    or_(
                        (col(MemoryItem.scope) == "channel")
                        & (col(MemoryItem.scope_key) == sub.channel),
                        col(MemoryItem.scope) == "global",
                    ),
                    col(MemoryItem.updated_at) > ctx.start,
                    col(MemoryItem.updated_at) <= ctx.end,
                )
                .order_by(col(MemoryItem.updated_at))
            )
        ).all()
    notes = ["Deleted facts are not listed: deletions are not recorded."]
    if not rows:
        return DigestContent([], "", empty=True, notes=notes)
    lines = []
    for item in rows[:MAX_ITEMS]:
        at = item.created_at
        created = (at if at.tzinfo else at.replace(tzinfo=UTC)) > ctx.start
        verb = "saved" if created else "changed"
        lines.append(
            f"- #{item.id} [{item.scope}] {clip(item.text, 160)} ({verb} by {item.author})"
        )
    if len(rows) > MAX_ITEMS:
        lines.append(f"- … and {len(rows) - MAX_ITEMS} more")
    head = f"{len(rows)} fact(s) saved or changed."
    return DigestContent([head, *lines], "\n".join([head, *lines]), empty=False, notes=notes)


register(
    Kind(
        "memory",
        "Memory",
        "facts saved or changed in this channel's scopes",
        collect,
        permissions=("memory.read",),
    )
)
