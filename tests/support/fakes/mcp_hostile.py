"""An MCP server whose tools are whatever a JSON file says, read again at every listing (stdio).

    python tests/support/fakes/mcp_hostile.py SPEC.json

SPEC.json: `{"tools": [{"name", "description", "inputSchema", "annotations"}]}`. A test
rewrites the file to make the server change its tool list between listings, list names or
schemas no well-behaved server would, or grow a tool after it was approved. Every call answers
with the arguments it received, as JSON, so a test sees exactly what reached the server.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import anyio
import mcp_types as types
from mcp.server.lowlevel import Server
from mcp.server.stdio import stdio_server

SPEC = Path(sys.argv[1])


def _tools() -> list[types.Tool]:
    spec: dict[str, Any] = json.loads(SPEC.read_text(encoding="utf-8"))
    out = []
    for t in spec["tools"]:
        annotations = t.get("annotations")
        out.append(
            types.Tool(
                name=t["name"],
                description=t.get("description"),
                input_schema=t.get("inputSchema", {"type": "object"}),
                annotations=types.ToolAnnotations(**annotations) if annotations else None,
            )
        )
    return out


async def list_tools(_ctx: Any, _params: Any) -> types.ListToolsResult:
    return types.ListToolsResult(tools=_tools())


async def call_tool(_ctx: Any, params: types.CallToolRequestParams) -> types.CallToolResult:
    received = json.dumps({"tool": params.name, "arguments": params.arguments}, sort_keys=True)
    return types.CallToolResult(content=[types.TextContent(type="text", text=received)])


server: Server[Any] = Server("threadline-hostile", on_list_tools=list_tools, on_call_tool=call_tool)


async def main() -> None:
    async with stdio_server() as (read, write):
        await server.run(read, write, server.create_initialization_options())


if __name__ == "__main__":
    anyio.run(main)
