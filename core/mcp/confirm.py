"""Confirmation of tool calls with side effects: only the requesting user's answer counts.

The dispatcher asks the `ConfirmationGate` before running a tool marked `confirm`. The gate
stores a pending confirmation under a fresh unguessable id (bound to the request, its tenant
and its user; `core.mcp.confirm_store`), hands a `ConfirmationPrompt` to the `Confirmer`
registered for the request's platform (the console asks `[y/N]`; Slack and Discord post
buttons carrying the id), and waits up to the timeout for the row to be answered. The answer
may arrive in any process sharing the database (a click routed to another web process): the
waiting gate is woken at once when it arrives here and otherwise notices it by polling the
row. An answer from anyone else is ignored and audited; a platform without a confirmer gets
"unavailable", so the call is refused with a message saying so. Core decides; adapters only
present the question and pass the answer back with the verified identity of who answered.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import secrets
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from typing import Any, Protocol, runtime_checkable

from core.mcp.arguments import Unshowable, details, summarize
from core.mcp.confirm_store import Answered, Confirmation, ConfirmationStore

# Defined beside the store that keeps it (no import cycle); imported from here by the adapters.
from core.mcp.confirm_store import ConfirmationPrompt as ConfirmationPrompt
from core.tools.context import ToolContext
from core.tools.dispatcher import Answer
from core.tools.registry import Tool

log = logging.getLogger(__name__)

DEFAULT_TIMEOUT = 120.0
DEFAULT_POLL = 0.5  # seconds between looks at the row for an answer taken by another process


class Confirmer(Protocol):
    """Presents a prompt on one platform; answers come back through `ConfirmationGate.answer`.
    `ask` returns once the question is shown; it never decides."""

    async def ask(self, prompt: ConfirmationPrompt) -> None: ...


@runtime_checkable
class ClosingConfirmer(Protocol):
    """A confirmer whose question stays visible (buttons): told how every prompt it showed
    ended. An expired one (or one whose request gave up) is shown as such by the process that
    posted it, so nobody clicks a stale button; an answered one was already updated by the
    process that took the click."""

    async def ask(self, prompt: ConfirmationPrompt) -> None: ...

    async def closed(self, prompt: ConfirmationPrompt, outcome: Confirmation) -> None: ...


Mention = Callable[[str], str]  # a user id as the platform writes a mention of it


def question(prompt: ConfirmationPrompt, mention: Mention) -> str:
    return f"{mention(prompt.user)}: {prompt.text} Only you can answer."


def outcome(c: Confirmation, mention: Mention) -> str:
    """What the question turns into once it is settled (or while it still waits)."""
    what = f"`{c.tool}` with {c.arguments}"
    if c.state == "confirmed":
        return f"✅ {mention(c.answered_by or c.user)} confirmed: running {what}."
    if c.state == "declined":
        return f"✖️ {mention(c.answered_by or c.user)} declined: {what} was not run."
    if c.state == "expired":
        return f"⌛ Not confirmed in time: {what} was not run."
    if c.state == "withdrawn":
        return f"⌛ The request ended before an answer: {what} was not run."
    return f"{mention(c.user)}: run {what}? Waiting for their answer."


def only_requester(c: Confirmation, mention: Mention) -> str:
    return f"Only {mention(c.user)}, who asked, can confirm or cancel this."


UNKNOWN_CONFIRMATION = "This confirmation is unknown here (it may belong to another workspace)."
STALE_CONFIRMATION = "This confirmation is already settled; nothing changed."


FULL_ARGUMENTS = "Full arguments"
NO_DETAILS = "The question already shows these arguments in full."


class ConfirmationGate:
    def __init__(
        self,
        store: ConfirmationStore,
        *,
        timeout: float = DEFAULT_TIMEOUT,
        poll: float = DEFAULT_POLL,
        clock: Callable[[], datetime] = lambda: datetime.now(UTC),
    ) -> None:
        self.store = store
        self.timeout = timeout
        self.poll = poll
        self._clock = clock
        self._confirmers: dict[str, Confirmer] = {}
        self._waiting: dict[str, tuple[ConfirmationPrompt, asyncio.Event]] = {}

    def register(self, platform: str, confirmer: Confirmer) -> None:
        self._confirmers[platform] = confirmer

    def unregister(self, platform: str, confirmer: Confirmer) -> None:
        if self._confirmers.get(platform) is confirmer:
            del self._confirmers[platform]

    def pending(self) -> list[ConfirmationPrompt]:
        """The prompts this process is waiting on."""
        return [prompt for prompt, _ in self._waiting.values()]

    async def __call__(self, ctx: ToolContext, tool: Tool, values: dict[str, Any]) -> Answer:
        session = ctx.session
        confirmer = self._confirmers.get(session.identity.platform)
        if confirmer is None:
            return "unavailable"
        who = session.identity
        try:
            summary = summarize(values, list((tool.parameters or {}).get("properties") or {}))
        except Unshowable as exc:
            # A question that cannot show every argument is not asked: it would hide one.
            log.warning("confirmation for %s not shown: its arguments are %s", tool.name, exc)
            return "unshown"
        prompt = ConfirmationPrompt(
            id=secrets.token_urlsafe(18),
            request_id=session.request_id,
            platform=who.platform,
            tenant=who.tenant,
            channel=who.channel,
            thread=session.conversation.thread,
            user=who.user,
            tool=tool.shown_name,
            arguments=summary.text,
            expires_at=self._clock() + timedelta(seconds=self.timeout),
            details=details(values),
            abridged=summary.abridged,
        )
        await self.store.create(prompt)
        wake = asyncio.Event()
        self._waiting[prompt.id] = (prompt, wake)
        try:
            try:
                await confirmer.ask(prompt)
            except Exception:
                log.exception("could not show the confirmation for %s", prompt.tool)
                await self.store.expire(prompt.id)
                return "unshown"
            final = await self._wait(prompt, wake)
            await self._show(confirmer, prompt, final)
            if final is not None and final.state in ("confirmed", "declined"):
                return "confirmed" if final.state == "confirmed" else "declined"
            return "timeout"
        except asyncio.CancelledError:
            # The request gave up (its deadline, a shutdown): nobody may confirm a call that
            # will not run.
            await asyncio.shield(self._give_up(confirmer, prompt))
            raise
        finally:
            self._waiting.pop(prompt.id, None)

    async def _wait(self, prompt: ConfirmationPrompt, wake: asyncio.Event) -> Confirmation | None:
        """The confirmation once answered, or expired by this wait's end."""
        loop = asyncio.get_running_loop()
        deadline = loop.time() + self.timeout
        while True:
            found = await self.store.get(prompt.id)
            if found is None or found.state != "pending":
                return found
            left = deadline - loop.time()
            if left <= 0:
                break
            with contextlib.suppress(TimeoutError):
                async with asyncio.timeout(min(self.poll, left)):
                    await wake.wait()
        # An answer may have won the race with the timeout: the row says which came first.
        return await self.store.expire(prompt.id)

    async def _give_up(self, confirmer: Confirmer, prompt: ConfirmationPrompt) -> None:
        withdrawn = await self.store.expire(prompt.id, state="withdrawn")
        await self._show(confirmer, prompt, withdrawn)

    async def _show(
        self, confirmer: Confirmer, prompt: ConfirmationPrompt, final: Confirmation | None
    ) -> None:
        if final is None or not isinstance(confirmer, ClosingConfirmer):
            return
        try:
            await confirmer.closed(prompt, final)
        except Exception:
            log.warning("could not show how the confirmation for %s ended", prompt.tool)

    async def answer(
        self,
        confirmation_id: str,
        user: str,
        approve: bool,
        *,
        platform: str | None = None,
        tenant: str | None = None,
    ) -> Answered:
        """An answer from a verified `user` (and the platform and tenant it came from):
        counted, ignored (someone else's; audited), stale (already answered or expired;
        audited) or unknown (never asked, or asked in another tenant)."""
        answered = await self.store.answer(
            confirmation_id, user=user, approve=approve, platform=platform, tenant=tenant
        )
        if answered.counted:
            waiting = self._waiting.get(confirmation_id)
            if waiting is not None:
                waiting[1].set()
        return answered
