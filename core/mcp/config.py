"""`[mcp.NAME]` tables of the settings file: which MCP servers to connect and how.

    [mcp.tracker]                      # stdio: Threadline starts the server as a subprocess
    command = "tracker-mcp"
    args = ["--readonly"]
    env = ["TRACKER_TOKEN"]            # NAMES of Threadline's variables passed through
    timeout = 20                       # seconds per call (default 30)
    connect_timeout = 60               # seconds to start, shake hands, list (default 30)
    destructive_tools = ["close_issue"]

    [mcp.ci]                           # streamable HTTP
    url = "http://127.0.0.1:8931/mcp"
    headers = { Authorization = "CI_MCP_AUTH" }   # header -> NAME of a variable holding it

The file never holds secrets: `env` and `headers` name environment variables, read at connect.
"""

from __future__ import annotations

import re
from typing import Annotated

from pydantic import AfterValidator, BaseModel, ConfigDict, Field, model_validator

# A server name is part of permission strings (`mcp:NAME.tool`) and tool names (`NAME__tool`).
SERVER_NAME = re.compile(r"^[a-z0-9](?:[a-z0-9-]|_(?!_)){0,30}$")
_ENV_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
_HEADER_NAME = re.compile(r"^[A-Za-z0-9!#$%&'*+.^_`|~-]+$")
_TOOL_NAME = re.compile(r"^[A-Za-z0-9_-]{1,64}$")


def _env_names(value: list[str]) -> list[str]:
    for name in value:
        if not _ENV_NAME.match(name):
            raise ValueError(f"{name!r} is not an environment variable name")
    return value


def _headers(value: dict[str, str]) -> dict[str, str]:
    for header, env in value.items():
        if not _HEADER_NAME.match(header):
            raise ValueError(f"{header!r} is not an HTTP header name")
        if not _ENV_NAME.match(env):
            raise ValueError(
                f"header {header!r} must name an environment variable that holds its value "
                "(the value itself does not belong in the file; it is not shown here)"
            )
    return value


def _tool_names(value: list[str]) -> list[str]:
    for name in value:
        if not _TOOL_NAME.match(name):
            raise ValueError(f"{name!r} is not a tool name")
    return value


def _url(value: str) -> str:
    text = value.strip()
    if not re.match(r"^https?://[^\s/]+", text):
        raise ValueError("must be an http:// or https:// URL")
    return text


class McpServerSettings(BaseModel):
    """One MCP server: either `command` (stdio) or `url` (streamable HTTP)."""

    model_config = ConfigDict(extra="forbid", strict=True, frozen=True)

    command: str | None = Field(None, min_length=1)
    args: list[str] = []
    env: Annotated[list[str], AfterValidator(_env_names)] = []
    cwd: str | None = None
    url: Annotated[str, AfterValidator(_url)] | None = None
    headers: Annotated[dict[str, str], AfterValidator(_headers)] = {}
    timeout: float = Field(30.0, gt=0, le=600)  # seconds per call (and per listing)
    # Seconds to start (or reach) the server, shake hands and list its tools.
    connect_timeout: float = Field(30.0, gt=0, le=600)
    destructive_tools: Annotated[list[str], AfterValidator(_tool_names)] = []
    enabled: bool = True

    @model_validator(mode="after")
    def _one_transport(self) -> McpServerSettings:
        if (self.command is None) == (self.url is None):
            raise ValueError("set either command (stdio) or url (streamable HTTP), not both")
        if self.url is None and self.headers:
            raise ValueError("headers apply to url servers only")
        if self.command is None and (self.args or self.env or self.cwd):
            raise ValueError("args, env and cwd apply to command servers only")
        return self

    @property
    def transport(self) -> str:
        return "stdio" if self.command is not None else "http"


def check_server_names(names: list[str]) -> None:
    for name in names:
        if not SERVER_NAME.match(name):
            raise ValueError(
                f"[mcp.{name}]: a server name is 1-31 characters: lower-case letters, digits, "
                "'-' and single '_'"
            )
    # The model sees NAME__tool. With no '__' inside a name, two servers' names can coincide
    # only for NAME and NAME_ (`a` + `_x` and `a_` + `x` are both `a___x`); refusing that pair
    # keeps every other name as it was (pins are stored by name).
    for name in sorted(names):
        if name + "_" in names:
            raise ValueError(
                f"[mcp.{name}] and [mcp.{name}_]: their tools' names for the model could be the "
                f"same (`{name}` + `_x` and `{name}_` + `x` are both `{name}___x`); rename one"
            )
