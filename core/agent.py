"""The agent loop: prompt -> model -> tool calls through the dispatcher -> model ... -> Reply.

At most `iterations_per_request` model calls; the last one is offered no tools, so the model
has to answer with what it has. Each call reserves tokens from the persistent daily quotas
first and settles with the provider's real usage afterwards.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from core import messages
from core.llm.client import ChatModel, Completion, LLMError, estimate_tokens
from core.llm.usage import UsageRecorder
from core.memory.history import HistoryStore
from core.prompt import PromptBuilder
from core.quotas import BudgetExhausted, QuotaLedger, QuotaState
from core.request import Reply, ToolCallRecord, Usage
from core.session import ToolSession
from core.store.engine import Database
from core.tools.context import ToolContext
from core.tools.dispatcher import Dispatcher

log = logging.getLogger(__name__)


@dataclass
class _Turn:
    """What one request adds to the thread, plus what the reply reports."""

    messages: list[dict[str, Any]]
    tool_calls: list[ToolCallRecord]
    notices: list[str]
    usage: Usage = field(default_factory=Usage)


class Agent:
    def __init__(
        self,
        *,
        model: ChatModel,
        dispatcher: Dispatcher,
        history: HistoryStore,
        quotas: QuotaLedger,
        usage: UsageRecorder,
        db: Database,
        prompt: PromptBuilder,
        clock: Callable[[], datetime] = lambda: datetime.now(UTC),
    ) -> None:
        self.model = model
        self._dispatcher = dispatcher
        self._history = history
        self._quotas = quotas
        self._usage = usage
        self._db = db
        self._prompt = prompt
        self._clock = clock

    async def answer(self, session: ToolSession, text: str) -> Reply:
        earlier = await self._history.load(session.conversation)
        turn = _Turn(messages=[{"role": "user", "content": text}], tool_calls=[], notices=[])
        reply = await self._loop(session, earlier, turn)
        # Only a real answer becomes the assistant's words: a failure notice ("budget used
        # up") stored as such would read to the model as something it said.
        if reply.ok:
            turn.messages.append({"role": "assistant", "content": reply.text})
        # One transaction per request: the thread never holds half a turn.
        await self._history.append(session.conversation, turn.messages)
        return reply

    async def _loop(
        self, session: ToolSession, earlier: list[dict[str, Any]], turn: _Turn
    ) -> Reply:
        ctx = ToolContext(session=session, db=self._db)
        max_steps = session.budgets.iterations_per_request
        denied: dict[str, str] = {}
        for step in range(1, max_steps + 1):
            tools = None if step == max_steps else self._dispatcher.registry.schemas(session)
            prompt = self._prompt.build(session, earlier + turn.messages, self._clock())
            try:
                completion = await self._call_model(session, prompt, tools, turn)
            except BudgetExhausted as exc:
                return self._reply(turn, self._exhausted_text(exc), ok=False)
            except LLMError as exc:
                log.warning("model call failed for request %s: %s", session.request_id, exc)
                return self._reply(turn, messages.llm_failure(exc.kind), ok=False)
            session.counters.iterations += 1
            if not completion.tool_calls or tools is None:
                text = completion.text.strip()
                if text:
                    return self._reply(turn, text, denied=denied, session=session)
                # No answer is a failed request. Only a model that still wants tools on the
                # last step ran out of steps; an empty answer earlier is a bad response.
                text = (
                    messages.MODEL_STEP_LIMIT.format(n=max_steps)
                    if completion.tool_calls
                    else messages.llm_failure("invalid_response")
                )
                return self._reply(turn, text, ok=False, denied=denied, session=session)
            turn.messages.append(completion.assistant_message)
            for call in completion.tool_calls:
                outcome = await self._dispatcher.dispatch(ctx, call)
                turn.tool_calls.append(
                    ToolCallRecord(call.name, outcome.ok, None if outcome.ok else outcome.code)
                )
                if outcome.permission:
                    denied[call.name] = outcome.permission
                turn.messages.append(
                    {"role": "tool", "tool_call_id": call.id, "content": outcome.content}
                )
        raise AssertionError("unreachable: the last step offers no tools")

    async def _call_model(
        self,
        session: ToolSession,
        prompt: list[dict[str, Any]],
        tools: list[dict[str, Any]] | None,
        turn: _Turn,
    ) -> Completion:
        spec = self.model.spec
        estimate = estimate_tokens(prompt, tools)
        reservation = await self._quotas.reserve(
            session.token_limits(), estimate + spec.max_output_tokens, minimum=estimate + 16
        )
        try:
            completion = await self.model.complete(
                prompt,
                tools=tools,
                max_tokens=min(spec.max_output_tokens, reservation.amount - estimate),
            )
        except BaseException:
            await self._quotas.release(reservation)
            raise
        # Without reported usage, charge the estimate: never charge nothing.
        usage = completion.usage or Usage(estimate, len(completion.text) // 3 + 1)
        crossed = await self._quotas.settle(reservation, usage.total_tokens)
        turn.notices.extend(_warnings(crossed))
        turn.usage = turn.usage + usage
        await self._usage.record(session, spec.name, spec.model, usage)
        return completion

    def _exhausted_text(self, exc: BudgetExhausted) -> str:
        st = exc.state
        return messages.budget_exhausted(
            st.limit.label,
            st.used + st.reserved,
            st.limit.limit,
            st.limit.unit,
            exc.resets_at,
            self._clock(),
        )

    @staticmethod
    def _reply(
        turn: _Turn,
        text: str,
        *,
        ok: bool = True,
        denied: dict[str, str] | None = None,
        session: ToolSession | None = None,
    ) -> Reply:
        notices = list(turn.notices)
        for name, permission in (denied or {}).items():
            notices.append(
                f"I was not allowed to use `{name}`: {messages.permission_denied(permission)}"
            )
        if session and any(c.error == "budget_exhausted" for c in turn.tool_calls):
            notices.append(
                messages.TOOL_BUDGET_NOTICE.format(n=session.budgets.tool_calls_per_request)
            )
        return Reply(
            text=text,
            ok=ok,
            notices=tuple(notices),
            tool_calls=tuple(turn.tool_calls),
            usage=turn.usage,
        )


def _warnings(crossed: list[QuotaState]) -> list[str]:
    return [messages.budget_warning(st.limit.label, st.used, st.limit.limit) for st in crossed]
