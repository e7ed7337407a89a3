"""A chat model whose every call is paid for: reserved against the persistent daily quotas
before it is sent, settled with the provider's reported usage afterwards, recorded in the usage
ledger and the metrics, and used to calibrate the offline token counter.

The agent asks `MeteredModel.complete` and gets the completion with what it cost; it never
touches quotas, calibration or metrics itself.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import TYPE_CHECKING

from core.llm.calibration import SAVE_EVERY, CalibrationStore
from core.llm.client import ChatModel, Completion, TextSink
from core.llm.providers import ProviderSpec
from core.llm.usage import UsageRecorder, settled
from core.memory.tokens import TokenCounter
from core.metrics import Metrics
from core.quotas import QuotaLedger, QuotaState
from core.request import Usage
from core.session import ToolSession
from core.store.engine import Database

if TYPE_CHECKING:
    from core.chat import Message, ToolSchema


@dataclass(frozen=True, slots=True)
class Metered:
    """A completion with what it cost and the daily budgets it took past a warning level."""

    completion: Completion
    usage: Usage
    crossed: list[QuotaState] = field(default_factory=list)


class MeteredModel:
    def __init__(
        self,
        model: ChatModel,
        *,
        quotas: QuotaLedger,
        usage: UsageRecorder,
        db: Database,
        counter: TokenCounter,
        metrics: Metrics | None = None,
    ) -> None:
        self.model = model
        self.counter = counter
        self._quotas = quotas
        self._usage = usage
        self._metrics = metrics
        self._calibration = CalibrationStore(db)
        self._calibration_loaded = False

    @property
    def spec(self) -> ProviderSpec:
        return self.model.spec

    async def ready(self) -> None:
        """Start from the token ratio measured earlier (by this or another process), once."""
        if not self._calibration_loaded:
            self._calibration_loaded = True
            await self._calibration.load(self.spec, self.counter)

    async def complete(
        self,
        session: ToolSession,
        prompt: list[Message],
        tools: list[ToolSchema] | None,
        *,
        expires_at: datetime | None,
        max_output: int | None = None,
        on_text: TextSink | None = None,
    ) -> Metered:
        """One model call, paid for. Raises `BudgetExhausted` when the quotas cannot cover
        the prompt, and the model's `LLMError`s (the reservation released)."""
        spec = self.spec
        estimate = self.counter.count(prompt, tools)
        # The prompt and the answer share the window, and the prompt's size is an estimate:
        # never ask for more than the compaction threshold leaves of the window.
        room = int(spec.context_window * spec.compact_threshold) - estimate
        out = min(max_output or spec.max_output_tokens, max(16, room))
        reservation = await self._quotas.reserve(
            session.token_limits(), estimate + out, minimum=estimate + 16, expires_at=expires_at
        )
        started = time.monotonic()
        try:
            completion = await self.model.complete(
                prompt,
                tools=tools,
                max_tokens=min(out, reservation.amount - estimate),
                on_text=on_text,
            )
        except BaseException:
            await self._quotas.release(reservation)
            if self._metrics is not None:
                elapsed = time.monotonic() - started
                self._metrics.model_call(spec.name, spec.model, None, elapsed, False)
            raise
        await self._calibrate(prompt, tools, completion)
        # Charge what the provider reported, or the local estimate where it reported nothing,
        # zero or less: a request is never free because of a provider's bookkeeping.
        answer = completion.text + "".join(c.name + c.arguments for c in completion.tool_calls)
        usage = settled(completion.usage, estimate, self.counter.count_text(answer))
        crossed = await self._quotas.settle(reservation, usage.total_tokens)
        await self._usage.record(session, spec.name, spec.model, usage)
        if self._metrics is not None:
            self._metrics.model_call(spec.name, spec.model, usage, time.monotonic() - started, True)
        return Metered(completion, usage, crossed)

    async def _calibrate(
        self, prompt: Sequence[Message], tools: list[ToolSchema] | None, done: Completion
    ) -> None:
        if done.usage is None or done.usage.prompt_tokens <= 0:
            return
        before = self.counter.samples
        self.counter.calibrate(prompt, tools, done.usage.prompt_tokens)
        if self.counter.samples != before and self.counter.samples % SAVE_EVERY == 1:
            await self._calibration.save(self.spec, self.counter)
