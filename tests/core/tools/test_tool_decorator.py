"""`@tool` (core/tools/registry.py): every option of `Tool` is declared on the decorator, the
name defaults to the function's, and the argument model comes from the `args` annotation."""

from __future__ import annotations

from typing import Any

import pytest
from pydantic import BaseModel, Field

from core.session import ToolSession
from core.tools.context import ToolContext
from core.tools.registry import Tool, ToolArgs, tool


class LookupArgs(ToolArgs):
    key: str = Field(description="What to look up.")


class Loose(BaseModel):  # extra keys allowed: refused as a tool's arguments
    key: str


async def _never(session: ToolSession) -> bool:
    return False


def test_name_defaults_to_the_function_and_description_to_the_docstring() -> None:
    @tool(permission="ask")
    async def lookup(ctx: ToolContext, args: LookupArgs) -> str:
        """Look a key up."""
        return args.key

    assert isinstance(lookup, Tool)
    assert (lookup.name, lookup.description, lookup.args) == (
        "lookup",
        "Look a key up.",
        LookupArgs,
    )
    parameters: Any = lookup.schema()["function"]["parameters"]
    assert parameters["properties"]["key"] == {
        "description": "What to look up.",
        "title": "Key",
        "type": "string",
    }


def test_every_option_reaches_the_tool() -> None:
    @tool(
        name="look_up",
        permission="admin",
        description="Given here, not by a docstring.",
        timeout=5.0,
        available=_never,
        max_result_chars=1_000,
        label="lookups.look_up",
        confirm=True,
    )
    def lookup(ctx: ToolContext, args: LookupArgs) -> str:
        return args.key

    assert (lookup.name, lookup.permission, lookup.description) == (
        "look_up",
        "admin",
        "Given here, not by a docstring.",
    )
    assert (lookup.timeout, lookup.available, lookup.max_result_chars) == (5.0, _never, 1_000)
    assert (lookup.shown_name, lookup.confirm) == ("lookups.look_up", True)


def test_a_declaration_the_registry_cannot_use_fails_at_import_time() -> None:
    with pytest.raises(ValueError, match="docstring"):

        @tool(permission="ask")
        def undocumented(ctx: ToolContext, args: LookupArgs) -> str:
            return ""

    with pytest.raises(ValueError, match="forbid extra keys"):

        @tool(permission="ask")
        def loose(ctx: ToolContext, args: Loose) -> str:
            """Loose."""
            return ""

    with pytest.raises(ValueError, match="unknown permission"):

        @tool(permission="root")
        def rooted(ctx: ToolContext, args: LookupArgs) -> str:
            """Root."""
            return ""
