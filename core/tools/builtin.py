"""Tools every installation has. Feature packages (code search, memory...) add their own."""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from core.tools.context import ToolContext
from core.tools.registry import Tool, ToolArgs, tool


class NoArgs(ToolArgs):
    pass


@tool(permission="ask")
def current_time(ctx: ToolContext, args: NoArgs) -> str:
    """The current date and time in UTC (ISO 8601). Use it for questions about today, dates or
    durations."""
    return ctx.now().isoformat(timespec="seconds")


class RecentToolCallsArgs(ToolArgs):
    limit: int = Field(20, ge=1, le=100, description="How many entries, newest first.")
    scope: Literal["channel", "tenant"] = Field(
        "channel", description="This channel only, or the whole workspace/server."
    )


@tool(permission="admin")
async def recent_tool_calls(ctx: ToolContext, args: RecentToolCallsArgs) -> str:
    """Recent entries of Threadline's own audit log (which tools ran, for whom, with what
    outcome). For admins asking what the bot has been doing."""
    from sqlmodel import col, select

    from core.store.models import AuditEntry

    who = ctx.session.identity
    stmt = select(AuditEntry).where(
        col(AuditEntry.platform) == who.platform, col(AuditEntry.tenant) == who.tenant
    )
    if args.scope == "channel":
        stmt = stmt.where(col(AuditEntry.channel) == who.channel)
    stmt = stmt.order_by(col(AuditEntry.id).desc()).limit(args.limit)
    async with ctx.db.session() as s:
        rows = (await s.exec(stmt)).all()
    if not rows:
        return "No tool calls recorded yet."
    return "\n".join(
        f"{r.at:%Y-%m-%d %H:%M:%S} {r.tool} by {r.user} in {r.channel}: {r.outcome} "
        f"({r.duration_ms} ms)"
        for r in rows
    )


def builtin_tools() -> list[Tool]:
    return [current_time, recent_tool_calls]
