"""A tool: who is on call for a team. The worked example of docs/extending.md.

The model is offered the tool's name, its docstring and the JSON schema of `OnCallArgs`; it never
sees the `ToolContext`. Before the function runs, the dispatcher has checked that the tool
exists and was offered, that the conversation holds its permission, the arguments' size and
schema, and the request's tool budget; afterwards it caps the result and writes the audit line.
"""

from __future__ import annotations

from pydantic import Field

from core.errors import ToolError
from core.tools.context import ToolContext
from core.tools.registry import ToolArgs, tool

# A stand-in for your paging service: a real tool would ask it (and keep within `timeout`).
ROTA = {"payments": "alice", "search": "bob"}


class OnCallArgs(ToolArgs):  # ToolArgs forbids unknown keys: a model cannot smuggle in `user`
    team: str = Field(description="The team's name, e.g. payments.", max_length=64)


@tool(permission="ask", timeout=5.0, max_result_chars=500)
async def who_is_on_call(ctx: ToolContext, args: OnCallArgs) -> str:
    """Who is on call this week for a team. Use it when someone asks whom to page."""
    person = ROTA.get(args.team.strip().lower())
    if person is None:
        # A ToolError's text goes back to the model (never into the audit log), so it can retry.
        raise ToolError(f"no rota for team {args.team!r}; known teams: {', '.join(sorted(ROTA))}")
    return f"{person} is on call for {args.team} this week."
