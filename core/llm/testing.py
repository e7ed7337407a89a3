"""An in-process chat model for tests and demos: answers from a script, or from a function of
the request, and records every request (after pydantic-ai's `TestModel` / `FunctionModel`).

Agent and feature tests use it through the real composition root (`build_app(model=...)`):
no HTTP server, no `openai` client, and the same `ChatModel` protocol every provider
implements. The client's own tests, and a few end-to-end ones, keep the fake
OpenAI-compatible server in tests/support/fakes/.

    model = ScriptedModel()
    model.tool_calls(("grep_code", {"pattern": "def retry"}))
    model.reply("`retry` is in src/app.py.")
    app = build_app(settings, model=model)
"""

from __future__ import annotations

import itertools
import json
import re
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from core.failures import LLMErrorKind
from core.llm.client import Completion, LLMError, TextSink
from core.llm.providers import ProviderSpec
from core.llm.toolcalls import assistant_message
from core.request import Usage
from core.tools.dispatcher import ProposedCall

if TYPE_CHECKING:
    from core.chat import Message, ToolSchema


@dataclass(frozen=True, slots=True)
class ModelRequest:
    """One call the model received."""

    messages: list[Message]
    tools: list[ToolSchema] | None
    max_tokens: int | None

    @property
    def tool_names(self) -> set[str]:
        return {t["function"]["name"] for t in self.tools or []}


# What a responder returns: a completion, its text alone, or None to fall back to the script.
Responder = Callable[[ModelRequest], Completion | str | None]


def count_tokens(request: ModelRequest) -> int:
    """The prompt's tokens as this model reports them: a quarter of its characters as JSON,
    tool schemas included (the fake OpenAI server counts the same way)."""
    chars = len(json.dumps(request.messages)) + len(json.dumps(request.tools or []))
    return max(1, chars // 4)


class ScriptedModel:
    """A `ChatModel` whose answers are queued with `reply`, `tool_calls` and `fail`, or made by
    `responder` (consulted first; None from it means "use the script")."""

    def __init__(
        self, spec: ProviderSpec | None = None, *, responder: Responder | None = None
    ) -> None:
        self.spec = spec or ProviderSpec(name="scripted", model="scripted-model", base_url=None)
        self.responder = responder
        self.requests: list[ModelRequest] = []
        self._script: deque[Completion | LLMError] = deque()
        self._ids = itertools.count(1)

    # -- scripting ----------------------------------------------------------------------------
    def reply(self, text: str) -> None:
        self._script.append(Completion(text=text, finish_reason="stop"))

    def tool_calls(self, *calls: tuple[str, dict[str, Any] | str], text: str = "") -> None:
        proposed = tuple(
            ProposedCall(
                f"call_{next(self._ids)}",
                name,
                args if isinstance(args, str) else json.dumps(args),
            )
            for name, args in calls
        )
        self._script.append(
            Completion(
                text=text,
                tool_calls=proposed,
                finish_reason="tool_calls",
                assistant_message=assistant_message(text, list(proposed)),
            )
        )

    def fail(self, kind: LLMErrorKind, detail: str = "scripted failure") -> None:
        self._script.append(LLMError(kind, detail))

    @property
    def pending(self) -> int:
        return len(self._script)

    # -- the ChatModel protocol -----------------------------------------------------------------
    async def complete(
        self,
        messages: list[Message],
        *,
        tools: list[ToolSchema] | None = None,
        max_tokens: int | None = None,
        on_text: TextSink | None = None,
    ) -> Completion:
        request = ModelRequest(json.loads(json.dumps(messages)), tools, max_tokens)
        self.requests.append(request)
        made = self.responder(request) if self.responder is not None else None
        if made is None:
            if not self._script:
                raise AssertionError(
                    f"ScriptedModel: no answer scripted for call {len(self.requests)}"
                )
            item = self._script.popleft()
            if isinstance(item, LLMError):
                raise item
            made = item
        done = Completion(text=made) if isinstance(made, str) else made
        if on_text is not None:
            # Word by word, spaces kept, as a streaming provider would write it.
            for piece in re.findall(r"\s*\S+\s*|\s+", done.text):
                await on_text(piece)
        if done.usage is not None:
            return done
        answer = done.text + "".join(c.name + c.arguments for c in done.tool_calls)
        usage = Usage(
            prompt_tokens=count_tokens(request), completion_tokens=max(1, len(answer) // 4)
        )
        return Completion(
            text=done.text,
            tool_calls=done.tool_calls,
            usage=usage,
            finish_reason=done.finish_reason,
            assistant_message=done.assistant_message,
        )

    async def aclose(self) -> None:
        return None
