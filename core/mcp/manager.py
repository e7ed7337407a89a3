"""MCP server connections: started in the background, watched, and retried.

Each configured server gets one background task that connects (the official `mcp` SDK's
`Client` over stdio or streamable HTTP), lists the tools and hands them to the registration
(core/mcp/registration.py: pinned, checked and registered as `SERVER__tool`, the model's name;
people see `SERVER.tool`). The task then watches the connection (a ping now and then, and any
failed call); a server that fails to start, times out, crashes or returns garbage is logged
once, its tools are blocked (not offered, calls refused) and it is reconnected with
exponential backoff and jitter. Start-up never waits for any of it. The calls themselves are
core/mcp/calls.py; the protocol-level steps core/mcp/connection.py.
"""

from __future__ import annotations

import asyncio
import logging
import os
from collections.abc import Callable, Iterable, Mapping
from contextlib import AsyncExitStack, suppress
from datetime import UTC, datetime, timedelta
from typing import Any

from core.backoff import Backoff
from core.mcp.calls import call_tool
from core.mcp.calls import read_resource as read_server_resource
from core.mcp.config import McpServerSettings
from core.mcp.connection import failure_reason, list_resources, list_tools, target, transport
from core.mcp.pins import PinStore
from core.mcp.registration import ToolRegistrar
from core.mcp.resources import resource_tools
from core.mcp.state import ServerState
from core.session import ToolSession
from core.tools.registry import ToolRegistry

log = logging.getLogger(__name__)

RECONNECT = Backoff(first=1.0, limit=60.0)  # seconds; the jitter may go 20% past the limit


class McpManager:
    def __init__(
        self,
        servers: Mapping[str, McpServerSettings],
        registry: ToolRegistry,
        pins: PinStore,
        *,
        environ: Mapping[str, str] | None = None,
        backoff: Backoff = RECONNECT,
        ping_every: float = 30.0,
        clock: Callable[[], datetime] = lambda: datetime.now(UTC),
    ) -> None:
        self.pins = pins
        self._environ = environ if environ is not None else os.environ
        self._backoff = backoff
        self._ping_every = ping_every
        self._clock = clock
        self.servers = {
            name: ServerState(name, cfg) for name, cfg in sorted(servers.items()) if cfg.enabled
        }
        self._tasks: list[asyncio.Task[None]] = []
        self._wake: dict[str, asyncio.Event] = {}
        # Registers the listed tools (and holds their model-facing names); a registered
        # tool's call comes back through `call`.
        self._tools = ToolRegistrar(registry, self.servers, self.call)
        if self.servers:
            for t in resource_tools(self):
                registry.add(t)

    # -- life cycle ---------------------------------------------------------------------

    def start(self, names: Iterable[str] | None = None) -> None:
        """Connect every server (or those of `names`) in the background; returns at once."""
        loop = asyncio.get_running_loop()
        for name in self.servers if names is None else names:
            if name in self._wake or name not in self.servers:
                continue  # already started (or not configured)
            self._wake[name] = asyncio.Event()
            self._tasks.append(loop.create_task(self._keep(name), name=f"mcp:{name}"))

    def usable_by(self, session: ToolSession) -> list[str]:
        """The servers some tool of which `session` may use (`mcp:NAME` or `mcp:NAME.tool`)."""
        return [
            name
            for name in self.servers
            if any(p == f"mcp:{name}" or p.startswith(f"mcp:{name}.") for p in session.permissions)
        ]

    async def connect(self, names: Iterable[str]) -> list[ServerState]:
        """For one-shot commands (`threadline ask`): start `names` and wait until each is ready
        or its first attempt failed, at most its connect timeout; returns those not ready."""
        wanted = [self.servers[n] for n in names if n in self.servers]
        self.start(s.name for s in wanted)

        async def settle(state: ServerState) -> None:
            # A little over the attempt's own timeout: starting the process is not in it.
            with suppress(TimeoutError):
                async with asyncio.timeout(state.config.connect_timeout + 5.0):
                    await state.tried.wait()

        await asyncio.gather(*(settle(s) for s in wanted))
        return [s for s in wanted if s.status != "ready"]

    async def aclose(self) -> None:
        for task in self._tasks:
            task.cancel()
        await asyncio.gather(*self._tasks, return_exceptions=True)
        self._tasks.clear()
        self._wake.clear()

    async def wait_ready(self, name: str) -> ServerState:
        """For tests and the benchmark: wait until `name` is ready (wrap it in a timeout)."""
        state = self.servers[name]
        await state.ready.wait()
        return state

    # -- one server ---------------------------------------------------------------------

    async def _keep(self, name: str) -> None:
        state = self.servers[name]
        while True:
            state.status, state.retry_at = "connecting", None
            state.broken = asyncio.Event()
            try:
                await self._connect_and_watch(state)
                reason = state.reason or "the connection was lost"
            except asyncio.CancelledError:
                raise
            except Exception as exc:  # anyio groups, OSError, garbage from the server...
                reason = failure_reason(exc, state.config.connect_timeout)
            state.client = None
            state.ready.clear()
            state.failures += 1
            delay = self._backoff.delay(state.failures)
            state.status, state.reason = "failed", reason
            state.retry_at = self._clock() + timedelta(seconds=delay)
            state.tried.set()
            if state.failures == 1:  # reported once per outage; recovery is logged too
                log.warning("MCP server %s unavailable: %s (retrying with backoff)", name, reason)
            else:
                log.debug("MCP server %s still unavailable: %s", name, reason)
            wake = self._wake[name]
            wake.clear()
            with suppress(TimeoutError):
                async with asyncio.timeout(delay):
                    await wake.wait()

    async def _connect_and_watch(self, state: ServerState) -> None:
        from mcp import Client

        cfg = state.config
        async with AsyncExitStack() as stack:
            # The handshake and the first listing within the timeout: a command that never
            # speaks MCP must not hold the server in "connecting" for ever.
            async with asyncio.timeout(cfg.connect_timeout):
                client = await stack.enter_async_context(
                    Client(transport(self._target(cfg)), read_timeout_seconds=cfg.connect_timeout)
                )
                listed = await list_tools(client)
                state.resources = await list_resources(client)
            await self._tools.register(state, listed, self.pins)
            state.listings += 1
            state.client = client
            state.status, state.reason = "ready", ""
            state.ready.set()
            state.tried.set()
            if state.failures:
                log.info("MCP server %s is back (%d tools)", state.name, len(state.tools))
            state.failures = 0
            while not state.broken.is_set():
                with suppress(TimeoutError):
                    async with asyncio.timeout(self._ping_every):
                        await state.broken.wait()
                if state.broken.is_set():
                    break
                if state.in_flight:
                    continue
                # Liveness and tampering in one: list again (ping is gone from newer protocol
                # versions); a definition that changed while connected is checked at once.
                try:
                    async with asyncio.timeout(cfg.timeout):
                        listed = await list_tools(client, refresh=True)
                except Exception as exc:
                    state.reason = f"listing tools failed: {failure_reason(exc, cfg.timeout)}"
                    break
                await self._tools.recheck(state, listed, self.pins)
                state.listings += 1
            state.status = "failed"  # block the tools before the connection is torn down
            state.ready.clear()

    def _target(self, cfg: McpServerSettings) -> Any:
        # A method of the manager (its environment): a test wraps it to add variables.
        return target(cfg, self._environ)

    # -- calls --------------------------------------------------------------------------

    async def call(self, server: str, tool: str, arguments: dict[str, Any]) -> str:
        return await call_tool(self.servers[server], tool, arguments)

    async def read_resource(self, server: str, uri: str) -> str:
        return await read_server_resource(self.servers[server], uri)

    def retry_now(self, name: str) -> None:
        if name in self._wake:
            self._wake[name].set()

    async def approve(
        self, name: str, by: str, expected: Mapping[str, str] | None = None
    ) -> list[str]:
        """`/mcp approve` (and the console's Approve): trust the pending definitions of
        `name`'s tools (only if they are `expected`, when given: see `PinStore.approve`)."""
        approved = await self.pins.approve(name, by, expected)
        state = self.servers[name]
        for tool in approved:
            if tool in state.tools:
                state.tools[tool].pin = "pinned"
        return approved
