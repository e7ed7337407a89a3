"""Long answers summarized for listening by the configured model.

The call is an ordinary model call for the person who asked: it reserves from their daily token
budgets first and is charged and recorded like any other.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from core.llm.usage import settled
from core.memory.tokens import TokenCounter
from core.tts import messages

if TYPE_CHECKING:
    from core.chat import Message
    from core.llm.client import ChatModel
    from core.llm.usage import UsageRecorder
    from core.quotas import QuotaLedger
    from core.session import ToolSession

CHARS_PER_TOKEN_OUT = 3  # a generous guess of the summary's tokens per character allowed


class ModelSummarizer:
    def __init__(
        self,
        model: ChatModel,
        quotas: QuotaLedger,
        usage: UsageRecorder,
        counter: TokenCounter | None = None,
    ) -> None:
        self._model = model
        self._quotas = quotas
        self._usage = usage
        self._counter = counter or TokenCounter()

    async def __call__(self, session: ToolSession, text: str, max_chars: int) -> str:
        prompt: list[Message] = [
            {"role": "system", "content": messages.summary_prompt(max_chars)},
            {"role": "user", "content": text},
        ]
        spec = self._model.spec
        estimate = self._counter.count(prompt, None)
        out = min(spec.max_output_tokens, max_chars // CHARS_PER_TOKEN_OUT + 64)
        reservation = await self._quotas.reserve(
            session.token_limits(), estimate + out, minimum=estimate + 16
        )
        try:
            completion = await self._model.complete(
                prompt, max_tokens=max(16, reservation.amount - estimate)
            )
        except BaseException:
            await self._quotas.release(reservation)
            raise
        usage = settled(completion.usage, estimate, self._counter.count_text(completion.text))
        await self._quotas.settle(reservation, usage.total_tokens)
        await self._usage.record(session, spec.name, spec.model, usage)
        return completion.text.strip()
