"""`/mcp`: the MCP servers, their state and the tools this conversation may use; `/mcp diff
NAME` and `/mcp approve NAME` (admin) for tool definitions that changed since approval."""

from __future__ import annotations

from datetime import datetime

from core.commands import Command, CommandArgs, CommandContext, NoArgs, Verb, with_verbs, word
from core.mcp.manager import McpManager
from core.mcp.state import ServerState, shown_name
from core.request import Reply

USAGE = "Usage: `/mcp`, `/mcp diff SERVER` or `/mcp approve SERVER` (admin)."
_MAX_DIFF_CHARS = 3_500


class ServerArgs(CommandArgs):
    quotes = False  # a server's name is one word as typed
    name: str = word("SERVER")


def mcp_commands(manager: McpManager) -> list[Command]:
    async def overview(ctx: CommandContext, _verb: str, _args: NoArgs) -> Reply:
        return Reply(_overview(manager, ctx), ephemeral=True)

    async def review(ctx: CommandContext, verb: str, args: ServerArgs) -> Reply:
        name = args.name
        if name not in manager.servers:
            known = ", ".join(manager.servers) or "none configured"
            return Reply(f"No MCP server named `{name}` (known: {known}).", ok=False)
        if verb == "diff":
            return Reply(await _diff(manager, name), ephemeral=True)
        approved = await manager.approve(
            name, f"{ctx.session.identity.platform}:{ctx.session.identity.user}"
        )
        if not approved:
            return Reply(
                f"`{name}` has no new or changed tool definitions to approve.", ephemeral=True
            )
        names = ", ".join(f"`{shown_name(name, t)}`" for t in approved)
        return Reply(f"Approved the new definitions of {names}; they can be used again.")

    return [
        with_verbs(
            "mcp",
            "MCP servers, their state and the tools you may use here",
            [
                Verb((), NoArgs, overview),
                Verb(("diff", "approve"), ServerArgs, review, "admin"),
            ],
            permission="ask",
            personal=True,
            usage=USAGE,
        )
    ]


def _overview(manager: McpManager, ctx: CommandContext) -> str:
    if not manager.servers:
        return "No MCP servers are configured (`[mcp.NAME]` in the settings file)."
    lines = ["**MCP servers**"]
    for state in manager.servers.values():
        lines.append(f"- `{state.name}` ({state.config.transport}): {_status(state, ctx.now)}")
        usable, other = [], 0
        for tool, info in sorted(state.tools.items()):
            permitted = ctx.session.allows(f"mcp:{shown_name(state.name, tool)}")
            if not permitted:
                other += 1
                continue
            marks = []
            if info.confirm:
                marks.append("asks you to confirm")
            if info.pin == "changed":
                marks.append("disabled: definition changed, awaiting `/mcp approve`")
            elif info.pin == "unapproved":
                marks.append("disabled: new since approval, awaiting `/mcp approve`")
            note = f" ({'; '.join(marks)})" if marks else ""
            usable.append(f"`{shown_name(state.name, tool)}`{note}")
        if usable:
            lines.append("  - tools you may use here: " + ", ".join(usable))
        elif state.tools:
            lines.append("  - none of its tools is permitted here")
        if other and usable:
            lines.append(f"  - {other} more tool(s) not permitted here")
        lines += _not_offered(state, ctx)
    return "\n".join(lines)


_SHOWN_SKIPPED = 5


def _not_offered(state: ServerState, ctx: CommandContext) -> list[str]:
    """Tools the server lists that are not offered at all (an unusable name or schema, a name
    taken by another server), among those this conversation could use."""
    shown = []
    for tool, why in sorted(state.skipped.items()):
        name = "".join(c if c.isascii() and (c.isalnum() or c in "_-") else "?" for c in tool)
        if ctx.session.allows(f"mcp:{shown_name(state.name, name)}"):  # mcp:NAME grants it too
            shown.append(f"`{shown_name(state.name, name)}` ({why})")
    if not shown:
        return []
    more = f" (+{len(shown) - _SHOWN_SKIPPED} more)" if len(shown) > _SHOWN_SKIPPED else ""
    return ["  - not offered: " + "; ".join(shown[:_SHOWN_SKIPPED]) + more]


def _status(state: ServerState, now: datetime) -> str:
    if state.status == "ready":
        more = f", {len(state.resources)} resource(s)" if state.resources else ""
        return f"ready, {len(state.tools)} tool(s){more}"
    if state.status == "connecting":
        return "connecting"
    retry = ""
    if state.retry_at is not None:
        seconds = max(0, round((state.retry_at - now).total_seconds()))
        retry = f"; retrying at {state.retry_at:%H:%M:%S} UTC (in {seconds} s)"
    return f"failed ({state.reason}){retry}"


def not_ready_notice(state: ServerState) -> str:
    """For a one-shot request (`threadline ask`) that went ahead without this server."""
    why = f": {state.reason}" if state.reason else ""
    return (
        f"MCP server `{state.name}` was not ready ({state.status}{why}); "
        "its tools were not offered."
    )


async def _diff(manager: McpManager, name: str) -> str:
    changes = await manager.pins.pending(name)
    if not changes:
        return f"`{name}`: every tool definition is as approved."
    head = f"**{name}**: {len(changes)} tool definition(s) new or changed since approval"
    text = "\n\n".join([head, *(c.describe() for c in changes)])
    if len(text) > _MAX_DIFF_CHARS:
        text = text[:_MAX_DIFF_CHARS] + "\n… (cut; the rest is in the database table mcp_tool_pins)"
    return text + f"\n\nRun `/mcp approve {name}` to trust the new definitions."
