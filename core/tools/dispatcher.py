"""The dispatcher: every tool call the model proposes passes this chain before anything runs.

    lookup -> permit -> offered -> size -> validate -> budget -> run -> cap -> audit

Each step is a small function that either passes or raises `Rejected` with a short, fixed text
for the model. Rejected and failed calls count against the request's tool budget, so a model
cannot probe forever.
"""

from __future__ import annotations

import asyncio
import inspect
import json
import logging
import time
from collections.abc import Awaitable, Callable, Collection
from dataclasses import dataclass
from typing import Any, Literal

from pydantic import BaseModel, ValidationError

from core.errors import PermissionDenied, ToolError
from core.session import ToolSession
from core.tools.audit import AuditEvent, AuditLog
from core.tools.context import ToolContext
from core.tools.registry import JsonArgs, Tool, ToolRegistry
from core.tools.result import CodeLocation, ToolResult, seen

log = logging.getLogger(__name__)

DEFAULT_MAX_ARGS_CHARS = 4_000
DEFAULT_MAX_RESULT_CHARS = 8_000

# How a confirmation ended: "unavailable" when this platform has no way to ask, "unshown"
# when the question could not be posted (or would have hidden an argument).
Answer = Literal["confirmed", "declined", "timeout", "unavailable", "unshown"]
# Asks the requesting user to confirm a call with side effects (core/mcp/confirm.py).
Confirm = Callable[[ToolContext, Tool, dict[str, Any]], Awaitable[Answer]]

# Why a call was not run or failed ("ok": it ran), as the audit log and ToolCallRecord say it.
OutcomeCode = Literal[
    "ok",
    "unknown_tool",
    "permission_denied",
    "narrowed",
    "not_offered",
    "args_too_large",
    "invalid_args",
    "budget_exhausted",
    "unavailable",
    "confirm_declined",
    "confirm_timeout",
    "confirm_unavailable",
    "confirm_unshown",
    "tool_error",
    "timeout",
    "internal_error",
]
_CONFIRM_REFUSALS: dict[Answer, tuple[OutcomeCode, str]] = {
    "declined": ("confirm_declined", "Error: the user declined this call. Do not retry it."),
    "timeout": (
        "confirm_timeout",
        "Error: the user did not confirm this call in time. Do not retry it unasked.",
    ),
    "unavailable": (
        "confirm_unavailable",
        "Error: this tool has side effects and needs the user's confirmation, which is not "
        "available on this platform yet; tell the user.",
    ),
    "unshown": (
        "confirm_unshown",
        "Error: the confirmation question could not be posted, so this call was not run; "
        "tell the user.",
    ),
}


@dataclass(frozen=True, slots=True)
class ProposedCall:
    """A tool call as the model proposed it; `arguments` is the raw JSON text."""

    id: str
    name: str
    arguments: str


@dataclass(frozen=True, slots=True)
class ToolOutcome:
    call: ProposedCall
    ok: bool
    code: OutcomeCode
    content: str  # what goes back to the model
    permission: str | None = None  # set when the call was denied for a missing permission
    # The code this call showed the model (files and lines), as the tool reported it.
    locations: tuple[CodeLocation, ...] = ()
    skill: str | None = None  # the skill it loaded
    facts: tuple[tuple[str, str], ...] = ()  # the memory facts it returned: (scope, text)


class Rejected(Exception):
    def __init__(
        self, code: OutcomeCode, model_text: str, *, permission: str | None = None
    ) -> None:
        super().__init__(model_text)
        self.code = code
        self.model_text = model_text
        self.permission = permission


def lookup(registry: ToolRegistry, call: ProposedCall) -> Tool:
    found = registry.get(call.name)
    if found is None:
        raise Rejected("unknown_tool", f"Error: there is no tool named {call.name[:64]!r}.")
    return found


def check_size(call: ProposedCall, limit: int) -> None:
    if len(call.arguments) > limit:
        raise Rejected(
            "args_too_large",
            f"Error: the arguments are {len(call.arguments)} characters; the limit is {limit}.",
        )


def validate(t: Tool, call: ProposedCall) -> BaseModel:
    try:
        raw = json.loads(call.arguments or "{}")
    except json.JSONDecodeError:
        raise Rejected("invalid_args", "Error: the arguments are not valid JSON.") from None
    except RecursionError:  # a few thousand brackets fit in the size limit
        raise Rejected("invalid_args", "Error: the arguments are nested too deeply.") from None
    if not isinstance(raw, dict):
        raise Rejected("invalid_args", "Error: the arguments must be a JSON object.")
    if t.check_args is not None:
        found = t.check_args(raw)
        if found:
            text = "; ".join(found[:5])
            raise Rejected("invalid_args", f"Error: invalid arguments ({text}).")
        return JsonArgs(values=raw)
    try:
        return t.args.model_validate(raw)
    except ValidationError as exc:
        # Field names and reasons only: echoing input values back could replay secrets.
        problems = "; ".join(
            f"{'.'.join(str(p) for p in e['loc']) or 'arguments'}: {e['msg']}"
            for e in exc.errors()[:5]
        )
        raise Rejected("invalid_args", f"Error: invalid arguments ({problems}).") from None


def permit(t: Tool, session: ToolSession) -> None:
    if not session.allows(t.permission):
        raise Rejected(
            "permission_denied",
            "Error: this tool is not permitted in this conversation.",
            permission=t.permission,
        )
    narrowing = session.narrowing
    if not narrowing.allows(t.name):
        allowed = ", ".join(sorted(narrowing.allowed or ())) or "none"
        raise Rejected(
            "narrowed",
            f"Error: the skill(s) in use ({', '.join(narrowing.by)}) allow only these tools: "
            f"{allowed}.",
        )


async def check_offered(t: Tool, session: ToolSession, offered: Collection[str] | None) -> None:
    """Only a tool offered in this request runs: a model (or text injected into a tool result)
    naming one it was not shown must not reach it, e.g. `speak`, which spends the user's voice
    budget and is offered only when they asked for audio. Without the request's list (a direct
    dispatch), the tool's own availability check decides."""
    if offered is not None:
        ok = t.name in offered
    else:
        ok = t.available is None or await t.available(session)
    if not ok:
        raise Rejected("not_offered", "Error: this tool is not offered in this request.")


def check_blocked(t: Tool) -> None:
    reason = t.blocked() if t.blocked is not None else None
    if reason is not None:
        raise Rejected("unavailable", f"Error: this tool is not available right now ({reason}).")


def check_budget(session: ToolSession) -> None:
    if session.counters.tool_calls > session.budgets.tool_calls_per_request:
        raise Rejected(
            "budget_exhausted",
            "Error: the tool-call budget for this request is used up; answer with what you have.",
        )


def cap(text: str, limit: int) -> str:
    if len(text) <= limit:
        return text
    return text[:limit] + f"\n[truncated {len(text) - limit} characters]"


class Dispatcher:
    def __init__(
        self,
        registry: ToolRegistry,
        audit: AuditLog,
        *,
        max_args_chars: int = DEFAULT_MAX_ARGS_CHARS,
        max_result_chars: int = DEFAULT_MAX_RESULT_CHARS,
        confirm: Confirm | None = None,
    ) -> None:
        self.registry = registry
        self.confirm = confirm
        self._audit = audit
        self._max_args = max_args_chars
        self._max_result = max_result_chars

    async def dispatch(
        self, ctx: ToolContext, call: ProposedCall, *, offered: Collection[str] | None = None
    ) -> ToolOutcome:
        """Run `call` if every check passes. `offered`: the names of the tools this request's
        model call was offered (None: not known here; the tools' availability checks decide)."""
        session = ctx.session
        session.counters.tool_calls += 1  # counted before any check: refusals spend budget too
        started = time.monotonic()
        detail = ""
        shown = call.name
        try:
            t = lookup(self.registry, call)
            shown = t.shown_name
            # Permission before validation: a tool the session may not use reveals nothing
            # about its arguments, and the user hears about the missing permission.
            permit(t, session)
            await check_offered(t, session, offered)
            check_size(call, self._max_args)
            args = validate(t, call)
            check_budget(session)
            check_blocked(t)
            if t.confirm:
                await self._confirmed(ctx, t, args)
                detail = "confirmed by the requesting user"
            result = await self._run(t, ctx, args)
            limit = t.max_result_chars or self._max_result
            content = cap(result.text, limit)
            showed = seen(result.locations, min(len(result.text), limit))
            outcome = ToolOutcome(
                call,
                True,
                "ok",
                content,
                locations=showed,
                skill=result.skill,
                facts=result.facts,
            )
        except Rejected as r:
            outcome = ToolOutcome(call, False, r.code, r.model_text, r.permission)
            detail = r.model_text
        except PermissionDenied as exc:
            # A tool may need more than its declared permission for some arguments (saving
            # to the global scope, say); that is still a denial the user should hear about.
            outcome = ToolOutcome(
                call,
                False,
                "permission_denied",
                "Error: this is not permitted in this conversation.",
                exc.permission,
            )
            detail = f"missing {exc.permission}"
        except ToolError as exc:
            # The tool's own text may quote its arguments: the model sees it, the audit not.
            outcome = ToolOutcome(call, False, "tool_error", cap(f"Error: {exc}", 1_000))
        except TimeoutError:
            outcome = ToolOutcome(call, False, "timeout", "Error: the tool timed out.")
        except Exception as exc:
            log.exception("tool %s failed (request %s)", call.name, session.request_id)
            outcome = ToolOutcome(call, False, "internal_error", "Error: the tool failed.")
            detail = type(exc).__name__
        elapsed = int((time.monotonic() - started) * 1000)
        await self._audit.record(
            session, AuditEvent(shown, outcome.code, detail, elapsed, call.arguments)
        )
        return outcome

    async def _confirmed(self, ctx: ToolContext, t: Tool, args: BaseModel) -> None:
        values = args.values if isinstance(args, JsonArgs) else args.model_dump()
        answer: Answer = (
            "unavailable" if self.confirm is None else await self.confirm(ctx, t, values)
        )
        if answer != "confirmed":
            raise Rejected(*_CONFIRM_REFUSALS[answer])

    async def refuse_excess(self, ctx: ToolContext, calls: list[ProposedCall]) -> None:
        """Calls proposed beyond the request's tool budget are not run, stored or answered one
        by one (a response with a thousand calls would flood the thread and the audit log):
        one audit entry records how many and which tools."""
        if not calls:
            return
        names = sorted({c.name[:64] for c in calls})
        shown = ", ".join(names[:10]) + (f" (+{len(names) - 10} more)" if len(names) > 10 else "")
        raw = "".join(c.arguments for c in calls)
        await self._audit.record(
            ctx.session,
            AuditEvent(
                "(over budget)",
                "budget_exhausted",
                f"{len(calls)} call(s) beyond the tool budget not run: {shown}",
                0,
                raw,
            ),
        )

    async def _run(self, t: Tool, ctx: ToolContext, args: BaseModel) -> ToolResult:
        async with asyncio.timeout(t.timeout):
            if inspect.iscoroutinefunction(t.func):
                result: Any = await t.func(ctx, args)
            else:
                # Sync tools may block (files, subprocesses): keep them off the event loop.
                result = await asyncio.to_thread(t.func, ctx, args)
        if isinstance(result, ToolResult):
            return result
        return ToolResult(result if isinstance(result, str) else json.dumps(result, default=str))
