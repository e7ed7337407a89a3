"""An MCP server over streamable HTTP on 127.0.0.1 (port 0), with a header from the
environment that the server requires."""

from __future__ import annotations

import asyncio
import socket
from collections.abc import AsyncIterator, Awaitable, Callable, MutableMapping
from typing import Any

import pytest
import uvicorn

from core.mcp.config import McpServerSettings
from tests.support.mcp import World, ready

Scope = MutableMapping[str, Any]
ASGI = Callable[[Scope, Any, Any], Awaitable[None]]
TOKEN = "Bearer test-token-1"


def _require_token(app: ASGI) -> ASGI:
    async def guarded(scope: Scope, receive: Any, send: Any) -> None:
        if (
            scope["type"] == "http"
            and dict(scope["headers"]).get(b"authorization") != TOKEN.encode()
        ):
            await send({"type": "http.response.start", "status": 401, "headers": []})
            await send({"type": "http.response.body", "body": b"no"})
            return
        await app(scope, receive, send)

    return guarded


@pytest.fixture
async def http_url() -> AsyncIterator[str]:
    """The server's URL. Tests take it before `make_world`, so that their MCP clients are
    closed before the server stops (uvicorn waits for open streams)."""
    from tests.support.fakes.mcp_server import server

    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    port = sock.getsockname()[1]
    config = uvicorn.Config(
        _require_token(server.streamable_http_app()),
        log_level="warning",
        lifespan="on",
        timeout_graceful_shutdown=2,
    )
    http = uvicorn.Server(config)
    task = asyncio.get_running_loop().create_task(http.serve(sockets=[sock]))
    async with asyncio.timeout(10):
        while not http.started:  # noqa: ASYNC110  (uvicorn offers no event)
            await asyncio.sleep(0.01)
    yield f"http://127.0.0.1:{port}/mcp"
    http.should_exit = True
    await task
    sock.close()


async def test_http_server_with_header_from_the_environment(
    http_url: str, make_world: Callable[..., World]
) -> None:
    cfg = McpServerSettings(url=http_url, headers={"Authorization": "T_AUTH"}, timeout=5)
    world = make_world({"t": cfg}, environ={"T_AUTH": TOKEN})
    await ready(world)
    outcome = await world.call("t__lookup", {"query": "over http"})
    assert outcome.ok, outcome.content
    assert "found: over http" in outcome.content


async def test_http_server_refusing_us_is_reported_and_retried(
    http_url: str, make_world: Callable[..., World]
) -> None:
    cfg = McpServerSettings(url=http_url, headers={"Authorization": "T_AUTH"}, timeout=5)
    world = make_world({"t": cfg}, environ={"T_AUTH": "Bearer wrong"})
    world.manager.start()
    async with asyncio.timeout(20):
        while world.manager.servers["t"].failures < 2:  # noqa: ASYNC110
            await asyncio.sleep(0.02)
    assert world.manager.servers["t"].status in ("failed", "connecting")
    assert not any(n.startswith("t__") for n in world.registry.names())


async def test_a_missing_header_variable_is_named(make_world: Callable[..., World]) -> None:
    cfg = McpServerSettings(url="http://127.0.0.1:9/mcp", headers={"X-Key": "NOT_SET"})
    world = make_world({"t": cfg}, environ={})
    world.manager.start()
    async with asyncio.timeout(10):
        while world.manager.servers["t"].failures < 1:  # noqa: ASYNC110
            await asyncio.sleep(0.02)
    assert "NOT_SET not set" in world.manager.servers["t"].reason
