"""The prompt budget's choices: which tools a small window offers, in what form, and which
optional parts fit beside the conversation."""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any

from core.memory.compaction import CompactionConfig
from core.memory.tokens import TokenCounter
from core.prompt_budget import Needs, OfferedTool, PromptBudget, compact_schema, tool_group

if TYPE_CHECKING:
    from core.chat import ToolSchema


def schema(name: str, words: int = 80) -> ToolSchema:
    return {
        "type": "function",
        "function": {
            "name": name,
            "description": f"Do {name}. " + "More detail. " * words,
            "parameters": {
                "type": "object",
                "properties": {
                    "query": {"type": "string", "description": "What to look for. " * 10},
                    "mode": {"type": "string", "enum": ["a", "b"], "title": "Mode"},
                },
                "required": ["query"],
            },
        },
    }


TOOLS = [
    OfferedTool("current_time", tool_group("ask"), schema("current_time", 5)),
    OfferedTool("save_memory", tool_group("memory.write"), schema("save_memory")),
    OfferedTool("grep_code", tool_group("code.read"), schema("grep_code")),
    OfferedTool("read_file", tool_group("code.read"), schema("read_file")),
    OfferedTool("load_skill", tool_group("skills.use"), schema("load_skill")),
    OfferedTool(
        "tickets__close_ticket", tool_group("mcp:tickets"), schema("tickets__close_ticket")
    ),
]


def budget(window: int) -> PromptBudget:
    config = CompactionConfig(window=window, reserved_output=1024)
    return PromptBudget(config, TokenCounter())


def test_a_large_window_offers_every_tool_whole() -> None:
    choice = budget(131_072).choose_tools(TOOLS, Needs.of("hello"))
    assert [s["function"]["name"] for s in choice.schemas] == [t.name for t in TOOLS]
    assert choice.left_out == ()


def test_a_small_window_offers_the_likely_tools_compactly() -> None:
    b = budget(4000)
    code = b.choose_tools(TOOLS, Needs.of("where is `retry_webhook` defined?"))
    assert code.names == {"grep_code", "read_file"}
    assert "save_memory" in code.left_out
    chat = b.choose_tools(TOOLS, Needs.of("what did we decide about deploys?"))
    assert chat.names == {"save_memory"}
    follow_up = b.choose_tools(TOOLS, Needs.of("and who uses it?", ["where is `x` defined?"]))
    assert "grep_code" in follow_up.names
    mcp = b.choose_tools(TOOLS, Needs.of("close the ticket for the outage"))
    assert "tickets__close_ticket" in mcp.names
    assert b._schema_tokens(code.schemas) <= b.total * 0.25


def test_the_compact_schema_keeps_names_types_and_bounds() -> None:
    small = compact_schema(schema("grep_code"))
    fn = small["function"]
    assert fn.get("description") == "Do grep_code."
    params: Any = fn.get("parameters")
    assert params["required"] == ["query"]
    assert params["properties"]["mode"] == {"type": "string", "enum": ["a", "b"]}
    assert "description" not in json.dumps(params)
    assert len(json.dumps(small)) < len(json.dumps(schema("grep_code"))) / 3


def test_optional_parts_give_way_in_priority_order() -> None:
    b = budget(4000)
    parts = {
        "memory": [{"role": "user", "content": "m" * 600}],
        "code_map": [{"role": "user", "content": "c" * 3000}],
        "resources": [{"role": "user", "content": "r" * 300}],
    }
    kept = b.fit_parts(1000, 800, parts)  # type: ignore[arg-type]
    assert kept == ["memory", "resources"]  # the map does not fit in what memory leaves
    assert b.fit_parts(1000, b.total - 1000, parts) == []  # type: ignore[arg-type]
