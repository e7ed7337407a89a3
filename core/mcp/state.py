"""An MCP server's state as the rest of Threadline sees it, and its tools' two names.

Apart from the manager (core/mcp/manager.py) that keeps the state current: the registration,
the calls and `/mcp` read it without needing the connections' life cycle.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, Literal

from core.mcp.config import McpServerSettings
from core.mcp.pins import PinStatus

SEPARATOR = "__"  # SERVER__tool: OpenAI function names allow no '.'
Status = Literal["connecting", "ready", "failed"]


@dataclass(slots=True)
class McpToolInfo:
    name: str  # the server's name for it
    description: str
    confirm: bool
    pin: PinStatus


@dataclass(slots=True)
class ServerState:
    name: str
    config: McpServerSettings
    status: Status = "connecting"
    reason: str = ""
    retry_at: datetime | None = None
    failures: int = 0
    tools: dict[str, McpToolInfo] = field(default_factory=dict)
    skipped: dict[str, str] = field(default_factory=dict)  # tools not registered, and why
    resources: dict[str, str] = field(default_factory=dict)  # uri -> "name: description"
    client: Any = None  # mcp.Client while connected
    broken: asyncio.Event = field(default_factory=asyncio.Event)
    ready: asyncio.Event = field(default_factory=asyncio.Event)  # set while status is "ready"
    tried: asyncio.Event = field(default_factory=asyncio.Event)  # the first attempt has ended
    fingerprint: str = ""  # of the last listing, to notice a change while connected
    in_flight: int = 0  # calls running: a server busy with them may answer a ping late
    listings: int = 0  # tool listings checked since start (tests wait on the watch loop)

    def blocked(self, tool: str) -> str | None:
        if self.status != "ready":
            return f"MCP server {self.name} is {self.status}"
        info = self.tools.get(tool)
        if info is None:
            return f"MCP server {self.name} no longer lists this tool"
        if info.pin == "changed":
            return "its definition changed and awaits an admin's /mcp approve"
        if info.pin == "unapproved":
            return (
                "it is new since the server was first approved and awaits an admin's /mcp approve"
            )
        return None


def model_name(server: str, tool: str) -> str:
    return f"{server}{SEPARATOR}{tool}"


def shown_name(server: str, tool: str) -> str:
    return f"{server}.{tool}"
