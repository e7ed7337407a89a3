"""The model's way into long-term memory: `save_memory` and `search_memory`.

Both act for the trusted session in `ToolContext`, never for anyone named in their arguments,
and follow the same rules as `/save` and `/memory search` (core.memory.facts decides).
"""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from core.errors import PermissionDenied, ToolError
from core.memory.facts import MAX_FACT_CHARS, MemoryRefusal, MemoryStore, one_line
from core.tools.context import ToolContext
from core.tools.registry import Tool, ToolArgs, tool
from core.tools.result import ToolResult

MAX_SEARCH_RESULTS = 20


class SaveMemoryArgs(ToolArgs):
    fact: str = Field(
        min_length=1,
        max_length=MAX_FACT_CHARS,
        description="The fact as one self-contained sentence, e.g. 'We deploy with Helm.'",
    )
    scope: Literal["channel", "global", "user"] = Field(
        "channel",
        description=(
            "channel: for this channel (default); global: for the whole workspace/server "
            "(needs an extra permission); user: the user's own preference, visible only to them."
        ),
    )


class SearchMemoryArgs(ToolArgs):
    query: str = Field(min_length=1, max_length=500, description="Keywords to look for.")
    k: int = Field(5, ge=1, le=MAX_SEARCH_RESULTS, description="How many items at most.")


def memory_tools(store: MemoryStore) -> list[Tool]:
    @tool(permission="memory.write", activity="Saving a fact to memory")
    async def save_memory(ctx: ToolContext, args: SaveMemoryArgs) -> str:
        """Save a fact to long-term memory so it is known in later conversations.

        Use it only when the user clearly asks you to remember something stable: a team
        convention, a decision, a preference (e.g. "remember we deploy with Helm"). Never store
        transient state (what is broken right now, today's tasks, tool output), guesses or
        secrets, and do not save on your own initiative. Tell the user the fact was saved only
        after this tool succeeded; if it returns an error, say that it was NOT saved."""
        try:
            result = await store.save(ctx.session, args.fact, args.scope)
        except PermissionDenied:
            raise  # the dispatcher reports it to the user, naming the permission
        except MemoryRefusal as exc:
            raise ToolError(f"not saved: {exc}") from None
        item = result.item
        if result.created:
            return f"Saved as #{item.id} ({item.scope} scope)."
        return f"Already known as #{item.id} ({item.scope} scope); nothing new was stored."

    @tool(permission="memory.read", activity="Searching memory for `{query}`")
    async def search_memory(ctx: ToolContext, args: SearchMemoryArgs) -> str | ToolResult:
        """Search the team's long-term memory (facts saved with /save or save_memory) that is
        visible in this conversation. Use it when a question may depend on a team convention,
        decision or preference that is not already in the conversation."""
        found = await store.search(ctx.session, args.query, args.k)
        if not found:
            return "No saved memory matches."
        text = "\n".join(
            f"#{it.id} [{it.scope}] {one_line(it.text)} (saved by {it.author}, "
            f"{it.created_at:%Y-%m-%d})"
            for it, _score in found
        )
        return ToolResult(text, facts=tuple((it.scope, it.text) for it, _score in found))

    return [save_memory, search_memory]
