"""Speaking to one MCP server: where to connect, its paged listings, and why it failed.

Apart from the manager (core/mcp/manager.py), which decides when to connect, watch and retry:
these are the protocol-level steps it (and the calls, core/mcp/calls.py) take on a client.
The `mcp` SDK and httpx2 are imported where used, as they were in the manager: heavy to load.
"""

from __future__ import annotations

import sys
from collections.abc import AsyncIterator, Mapping
from contextlib import asynccontextmanager
from typing import Any

from core.mcp.config import McpServerSettings

MAX_TOOLS_PER_SERVER = 128
MAX_RESOURCES = 200


async def list_tools(client: Any, *, refresh: bool = False) -> list[Any]:
    tools: list[Any] = []
    cursor: str | None = None
    while True:
        page = await client.list_tools(cursor=cursor, cache_mode="refresh" if refresh else "use")
        tools.extend(page.tools)
        cursor = page.next_cursor
        if cursor is None or len(tools) >= MAX_TOOLS_PER_SERVER:
            return tools[:MAX_TOOLS_PER_SERVER]


async def list_resources(client: Any) -> dict[str, str]:
    capabilities = client.server_capabilities
    if capabilities is None or capabilities.resources is None:
        return {}
    page = await client.list_resources()
    out: dict[str, str] = {}
    for r in page.resources[:MAX_RESOURCES]:
        about = (r.description or "").strip().replace("\n", " ")[:200]
        out[str(r.uri)[:2048]] = f"{r.name[:100]}: {about}" if about else r.name[:100]
    return out


def target(cfg: McpServerSettings, environ: Mapping[str, str]) -> Any:
    from mcp import StdioServerParameters

    if cfg.command is not None:
        env = {k: environ[k] for k in cfg.env if k in environ}
        return StdioServerParameters(command=cfg.command, args=list(cfg.args), env=env, cwd=cfg.cwd)
    assert cfg.url is not None
    missing = sorted(env for env in cfg.headers.values() if not environ.get(env))
    if missing:
        raise ValueError(f"environment variable(s) {', '.join(missing)} not set (headers)")
    headers = {h: environ[env] for h, env in cfg.headers.items()}
    return _http_transport(cfg.url, headers, cfg.timeout)


def transport(server: Any) -> Any:
    """What `mcp.Client` connects through: a command server's stdio transport made here, the
    others as they are."""
    from mcp import StdioServerParameters
    from mcp.client.stdio import stdio_client

    if isinstance(server, StdioServerParameters):
        # The server's stderr goes to this process's stderr as it is now: the SDK's default is
        # the stderr of the moment `mcp` was first imported, which may since have been replaced.
        return stdio_client(server, errlog=sys.stderr)
    return server


@asynccontextmanager
async def _http_transport(url: str, headers: dict[str, str], seconds: float) -> AsyncIterator[Any]:
    """Streamable HTTP with our headers, closing the HTTP client with the connection."""
    import httpx2
    from mcp.client.streamable_http import streamable_http_client

    async with httpx2.AsyncClient(headers=headers, timeout=seconds) as http:
        async with streamable_http_client(url, http_client=http) as streams:
            yield streams


def failure_reason(exc: BaseException, timeout: float) -> str:
    while isinstance(exc, BaseExceptionGroup) and exc.exceptions:
        exc = exc.exceptions[0]
    if isinstance(exc, TimeoutError):
        return f"no answer within {timeout:g} s"
    text = str(exc).strip().splitlines()[0][:200] if str(exc).strip() else ""
    return f"{type(exc).__name__}: {text}" if text else type(exc).__name__
