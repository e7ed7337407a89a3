"""Confirmation of tool calls with side effects: only the requesting user's answer counts.

The dispatcher asks the `ConfirmationGate` before running a tool marked `confirm`. The gate
creates a pending confirmation keyed by a fresh id (bound to the request and its user), hands
a `ConfirmationPrompt` to the `Confirmer` registered for the request's platform (the adapter
shows it: a console prompt; buttons later), and waits for `answer()` up to the timeout. An
answer from anyone else is ignored and audited; a platform without a confirmer gets
"unavailable", so the call is refused with a message saying so. Core decides; adapters only
present the question and pass the answer back with the verified identity of who answered.
"""

from __future__ import annotations

import asyncio
import json
import secrets
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any, Literal, Protocol

from core.session import ToolSession
from core.tools.audit import AuditEvent, AuditLog
from core.tools.context import ToolContext
from core.tools.registry import Tool

DEFAULT_TIMEOUT = 120.0
_SUMMARY_CHARS = 300

Answer = Literal["confirmed", "declined", "timeout", "unavailable"]


@dataclass(frozen=True, slots=True)
class ConfirmationPrompt:
    id: str
    request_id: str
    platform: str
    tenant: str
    channel: str
    thread: str
    user: str  # the requesting user: the only one whose answer counts
    tool: str  # as people see it: `tracker.close_issue`
    arguments: str  # a capped summary
    expires_at: datetime

    @property
    def text(self) -> str:
        return f"Run `{self.tool}` with {self.arguments}? It may change things outside Threadline."


class Confirmer(Protocol):
    """Presents a prompt on one platform; answers come back through `ConfirmationGate.answer`.
    `ask` returns once the question is shown; it never decides."""

    async def ask(self, prompt: ConfirmationPrompt) -> None: ...


@dataclass(slots=True)
class _Pending:
    prompt: ConfirmationPrompt
    session: ToolSession
    future: asyncio.Future[bool]


def summarize(values: dict[str, Any]) -> str:
    text = json.dumps(values, ensure_ascii=False, sort_keys=True, default=str)
    return text if len(text) <= _SUMMARY_CHARS else text[:_SUMMARY_CHARS] + "…"


class ConfirmationGate:
    def __init__(self, audit: AuditLog, *, timeout: float = DEFAULT_TIMEOUT) -> None:
        self._audit = audit
        self.timeout = timeout
        self._confirmers: dict[str, Confirmer] = {}
        self._pending: dict[str, _Pending] = {}

    def register(self, platform: str, confirmer: Confirmer) -> None:
        self._confirmers[platform] = confirmer

    def pending(self) -> list[ConfirmationPrompt]:
        return [p.prompt for p in self._pending.values()]

    async def __call__(self, ctx: ToolContext, tool: Tool, values: dict[str, Any]) -> Answer:
        session = ctx.session
        confirmer = self._confirmers.get(session.identity.platform)
        if confirmer is None:
            return "unavailable"
        who = session.identity
        prompt = ConfirmationPrompt(
            id=secrets.token_urlsafe(12),
            request_id=session.request_id,
            platform=who.platform,
            tenant=who.tenant,
            channel=who.channel,
            thread=session.conversation.thread,
            user=who.user,
            tool=tool.shown_name,
            arguments=summarize(values),
            expires_at=datetime.now(UTC) + timedelta(seconds=self.timeout),
        )
        future: asyncio.Future[bool] = asyncio.get_running_loop().create_future()
        self._pending[prompt.id] = _Pending(prompt, session, future)
        try:
            await confirmer.ask(prompt)
            async with asyncio.timeout(self.timeout):
                return "confirmed" if await future else "declined"
        except TimeoutError:
            return "timeout"
        finally:
            self._pending.pop(prompt.id, None)

    async def answer(self, confirmation_id: str, user: str, approve: bool) -> str:
        """An answer from a verified `user`: "counted", "ignored" (someone else's; audited)
        or "unknown" (expired, already answered, or never asked)."""
        pending = self._pending.get(confirmation_id)
        if pending is None or pending.future.done():
            return "unknown"
        if user != pending.prompt.user:
            await self._audit.record(
                pending.session,
                AuditEvent(
                    pending.prompt.tool,
                    "confirm_ignored",
                    f"answer by another user ({user[:64]}) ignored",
                    0,
                    "",
                ),
            )
            return "ignored"
        pending.future.set_result(approve)
        return "counted"
