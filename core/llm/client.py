"""The chat-model Protocol and its OpenAI-compatible implementation.

Works with any endpoint that speaks `/chat/completions` (OpenAI, DeepSeek, Qwen, Zhipu, Ollama,
vLLM...). The `openai` package is imported on first use, since it is slow to import and
commands without a model should not pay for it. Retries (429, 5xx, connection errors, with
the provider's Retry-After honoured) are the openai client's own.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol

from core.errors import ThreadlineError
from core.llm.kinds import LLMErrorKind
from core.llm.providers import ProviderSpec
from core.llm.toolcalls import assistant_message, normalize_tool_calls
from core.llm.usage import parse_usage
from core.request import Usage
from core.tools.dispatcher import ProposedCall

if TYPE_CHECKING:
    from openai import AsyncOpenAI


class LLMError(ThreadlineError):
    """A model call failed; `kind` says how (the user's message is chosen by it)."""

    def __init__(self, kind: LLMErrorKind, detail: str) -> None:
        super().__init__(f"{kind}: {detail}")
        self.kind: LLMErrorKind = kind


@dataclass(frozen=True, slots=True)
class Completion:
    text: str
    tool_calls: tuple[ProposedCall, ...] = ()
    usage: Usage | None = None  # None when the provider did not report it
    finish_reason: str | None = None
    assistant_message: dict[str, Any] = field(default_factory=dict)


class ChatModel(Protocol):
    spec: ProviderSpec

    async def complete(
        self,
        messages: list[dict[str, Any]],
        *,
        tools: list[dict[str, Any]] | None = None,
        max_tokens: int | None = None,
    ) -> Completion: ...

    async def aclose(self) -> None: ...


class OpenAICompatibleModel:
    def __init__(self, spec: ProviderSpec) -> None:
        self.spec = spec
        self._client: AsyncOpenAI | None = None

    def _get_client(self) -> AsyncOpenAI:
        if self._client is None:
            from openai import AsyncOpenAI

            self._client = AsyncOpenAI(
                # Local servers (Ollama, vLLM) need no key, but the client insists on one.
                api_key=self.spec.api_key or "not-needed",
                base_url=self.spec.base_url,
                timeout=self.spec.timeout,
                max_retries=self.spec.max_retries,
            )
        return self._client

    async def ping(self, seconds: float = 3.0) -> str:
        """Whether the endpoint answers (`/readyz`): "ok", or why not (never the key). A
        server without a model list (404) answers, so it counts as reachable."""
        import openai

        client = self._get_client().with_options(timeout=seconds, max_retries=0)
        try:
            await client.models.list()
        except (openai.AuthenticationError, openai.PermissionDeniedError) as exc:
            return f"the model endpoint refused our credentials (HTTP {exc.status_code})"
        except openai.NotFoundError:
            return "ok"
        except openai.APIStatusError as exc:
            return f"the model endpoint answered HTTP {exc.status_code}"
        except openai.APITimeoutError:
            return "the model endpoint did not answer in time"
        except openai.APIConnectionError:
            return "the model endpoint cannot be reached"
        return "ok"

    async def complete(
        self,
        messages: list[dict[str, Any]],
        *,
        tools: list[dict[str, Any]] | None = None,
        max_tokens: int | None = None,
    ) -> Completion:
        import openai

        kwargs: dict[str, Any] = {"model": self.spec.model, "messages": messages}
        if tools:
            kwargs["tools"] = tools
        if max_tokens:
            kwargs[self.spec.max_tokens_param] = max_tokens
        try:
            response = await self._get_client().chat.completions.create(**kwargs)
        except openai.APITimeoutError as exc:
            raise LLMError("timeout", str(exc)) from exc
        except openai.APIConnectionError as exc:
            raise LLMError("unreachable", str(exc)) from exc
        except openai.RateLimitError as exc:
            raise LLMError("rate_limited", str(exc)) from exc
        except (openai.AuthenticationError, openai.PermissionDeniedError) as exc:
            raise LLMError("auth", str(exc)) from exc
        except openai.APIStatusError as exc:
            kind: LLMErrorKind = "server" if exc.status_code >= 500 else "bad_request"
            raise LLMError(kind, f"HTTP {exc.status_code}") from exc
        except openai.APIError as exc:  # e.g. a body that is not a completion
            raise LLMError("invalid_response", str(exc)) from exc
        except json.JSONDecodeError as exc:  # a 200 whose JSON-typed body is not JSON
            raise LLMError("invalid_response", "the response body is not JSON") from exc
        # The client does not validate bodies: a non-JSON page (a proxy's or a web UI's HTML
        # at a wrong base URL) comes back as a str, and fields may be missing or null.
        choices = getattr(response, "choices", None)
        if not choices:
            raise LLMError("invalid_response", "no choices in the response")
        choice = choices[0]
        message = getattr(choice, "message", None)
        if message is None:
            raise LLMError("invalid_response", "no message in the response")
        calls = normalize_tool_calls(getattr(message, "tool_calls", None))
        content = getattr(message, "content", None)
        content = content if isinstance(content, str) else ""
        assistant = assistant_message(content, calls)
        raw_usage = getattr(response, "usage", None)
        if raw_usage is not None and hasattr(raw_usage, "model_dump"):
            raw_usage = raw_usage.model_dump()
        usage = parse_usage(raw_usage if isinstance(raw_usage, dict) else None)
        return Completion(
            text=content,
            tool_calls=calls,
            usage=usage,
            finish_reason=getattr(choice, "finish_reason", None),
            assistant_message=assistant,
        )

    async def aclose(self) -> None:
        if self._client is not None:
            await self._client.close()
            self._client = None
