"""Helpers for the MCP tests: a world of registry, manager, dispatcher and gate over the test
MCP server (tests/support/fakes/mcp_server.py); `make_world` is a fixture of tests/conftest.py.
"""

from __future__ import annotations

import asyncio
import json
import sys
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass, field
from typing import Any

import pytest
from sqlmodel import select

from core.backoff import Backoff
from core.mcp.config import McpServerSettings
from core.mcp.confirm import ConfirmationGate, ConfirmationPrompt
from core.mcp.confirm_store import ConfirmationStore
from core.mcp.manager import McpManager
from core.mcp.pins import PinStore
from core.policy import Policy
from core.request import Request
from core.session import ToolSession, open_session
from core.store.engine import Database
from core.store.models import AuditEntry
from core.tools.audit import AuditLog
from core.tools.context import ToolContext
from core.tools.dispatcher import Dispatcher, ProposedCall, ToolOutcome
from core.tools.registry import ToolRegistry
from tests.support.paths import FAKES_DIR

SERVER = FAKES_DIR / "mcp_server.py"
START = 30.0  # seconds a server may take to start (a Python interpreter importing the SDK)


def stdio(*, timeout: float = 10.0, **more: Any) -> McpServerSettings:
    return McpServerSettings(command=sys.executable, args=[str(SERVER)], timeout=timeout, **more)


POLICY: dict[str, object] = {
    "defaults": {"permissions": ["ask"]},
    "rules": [
        {"name": "ops may use the test server", "match": {"channel": "C-OPS"}, "grant": ["mcp:t"]},
        {
            "name": "help may look things up only",
            "match": {"channel": "C-HELP"},
            "grant": ["mcp:t.lookup"],
        },
    ],
}


@dataclass
class ScriptedConfirmer:
    """Answers each prompt as told (None: never answers), as a given user."""

    gate: ConfirmationGate
    answers: list[tuple[str, bool] | None] = field(default_factory=list)
    asked: list[ConfirmationPrompt] = field(default_factory=list)

    async def ask(self, prompt: ConfirmationPrompt) -> None:
        self.asked.append(prompt)
        answer = self.answers.pop(0) if self.answers else None
        if answer is not None:
            user, yes = answer
            asyncio.get_running_loop().call_soon(
                lambda: asyncio.ensure_future(self.gate.answer(prompt.id, user, yes))
            )


@dataclass
class World:
    db: Database
    registry: ToolRegistry
    manager: McpManager
    dispatcher: Dispatcher
    gate: ConfirmationGate

    def session(self, channel: str = "C-OPS", platform: str = "console") -> ToolSession:
        request = Request(
            platform=platform,
            tenant="T1",
            channel=channel,
            thread="th-1",
            user="alice",
            roles=(),
            text="q",
        )
        return open_session(request, Policy.from_dict(POLICY))

    async def call(
        self, name: str, args: dict[str, Any], session: ToolSession | None = None
    ) -> ToolOutcome:
        ctx = ToolContext(session=session or self.session(), db=self.db)
        return await self.dispatcher.dispatch(ctx, ProposedCall("c1", name, json.dumps(args)))

    async def audit(self) -> list[AuditEntry]:
        async with self.db.session() as s:
            return list((await s.exec(select(AuditEntry).order_by(AuditEntry.id))).all())  # type: ignore[arg-type]


@pytest.fixture
async def make_world(
    open_db: Callable[[], Database],
) -> AsyncIterator[Callable[..., World]]:
    made: list[McpManager] = []

    def make(
        servers: dict[str, McpServerSettings] | None = None,
        *,
        environ: dict[str, str] | None = None,
        max_result_chars: int = 8_000,
        confirm_timeout: float = 5.0,
        confirm_poll: float = 0.5,
    ) -> World:
        db = open_db()
        registry = ToolRegistry()
        audit = AuditLog(db)
        gate = ConfirmationGate(ConfirmationStore(db), timeout=confirm_timeout, poll=confirm_poll)
        manager = McpManager(
            servers if servers is not None else {"t": stdio()},
            registry,
            PinStore(db),
            environ=environ if environ is not None else {},
            backoff=Backoff(first=0.05, limit=0.2),
            ping_every=0.5,
        )
        made.append(manager)
        dispatcher = Dispatcher(registry, audit, max_result_chars=max_result_chars, confirm=gate)
        return World(db, registry, manager, dispatcher, gate)

    yield make
    for manager in made:
        await manager.aclose()


async def ready(world: World, name: str = "t") -> None:
    world.manager.start()
    async with asyncio.timeout(START):
        await world.manager.wait_ready(name)
