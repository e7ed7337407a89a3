"""The chat-model Protocol and its OpenAI-compatible implementation.

Works with any endpoint that speaks `/chat/completions` (OpenAI, DeepSeek, Qwen, Zhipu, Ollama,
vLLM...). The `openai` package is imported on first use, since it is slow to import and
commands without a model should not pay for it. Retries (429, 5xx, connection errors, with
the provider's Retry-After honoured) are the openai client's own.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol

from core.errors import ThreadlineError
from core.failures import LLMErrorKind
from core.llm.providers import ProviderSpec
from core.llm.stream import DONE, ChunkAssembler, StreamError, sse_data
from core.llm.toolcalls import assistant_message, normalize_tool_calls
from core.llm.usage import parse_usage
from core.request import Usage
from core.tools.dispatcher import ProposedCall

if TYPE_CHECKING:
    from openai import AsyncOpenAI

    from core.chat import AssistantMessage, Message, ToolSchema

log = logging.getLogger(__name__)

# Receives the answer's text as the model writes it (streamed calls), or whole (others).
TextSink = Callable[[str], Awaitable[None]]


class LLMError(ThreadlineError):
    """A model call failed; `kind` says how (the user's message is chosen by it)."""

    def __init__(self, kind: LLMErrorKind, detail: str) -> None:
        super().__init__(f"{kind}: {detail}")
        self.kind: LLMErrorKind = kind


def _no_message() -> AssistantMessage:
    return {"role": "assistant", "content": ""}


@dataclass(frozen=True, slots=True)
class Completion:
    text: str
    tool_calls: tuple[ProposedCall, ...] = ()
    usage: Usage | None = None  # None when the provider did not report it
    finish_reason: str | None = None
    assistant_message: AssistantMessage = field(default_factory=lambda: _no_message())


class ChatModel(Protocol):
    spec: ProviderSpec

    async def complete(
        self,
        messages: list[Message],
        *,
        tools: list[ToolSchema] | None = None,
        max_tokens: int | None = None,
        on_text: TextSink | None = None,
    ) -> Completion:
        """One completion. With `on_text`, the text is handed over as it is written (or
        whole, by models that cannot stream) before the completion returns."""
        ...

    async def aclose(self) -> None: ...


class OpenAICompatibleModel:
    def __init__(self, spec: ProviderSpec) -> None:
        self.spec = spec
        self._client: AsyncOpenAI | None = None
        self._stream_refused = False  # the endpoint said it cannot stream: stop asking

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
        messages: list[Message],
        *,
        tools: list[ToolSchema] | None = None,
        max_tokens: int | None = None,
        on_text: TextSink | None = None,
    ) -> Completion:
        kwargs: dict[str, Any] = {"model": self.spec.model, "messages": messages}
        if tools:
            kwargs["tools"] = tools
        if max_tokens:
            kwargs[self.spec.max_tokens_param] = max_tokens
        if on_text is not None and self.spec.stream and not self._stream_refused:
            try:
                return await _guarded(self._streamed(kwargs, on_text))
            except _StreamRefused:
                # Said once per endpoint and process: the server does not stream.
                log.warning(
                    "provider %s refused a streamed request; asking without streaming",
                    self.spec.name,
                )
                self._stream_refused = True
        completion = await _guarded(self._whole(kwargs))
        if on_text is not None and completion.text:
            await on_text(completion.text)
        return completion

    async def _whole(self, kwargs: dict[str, Any]) -> Completion:
        response = await self._get_client().chat.completions.create(**kwargs)
        # The client does not validate bodies: a non-JSON page (a proxy's or a web UI's HTML
        # at a wrong base URL) comes back as a str, and fields may be missing or null.
        choices = getattr(response, "choices", None)
        if not choices:
            raise LLMError("invalid_response", "no choices in the response")
        choice = choices[0]
        message = getattr(choice, "message", None)
        if message is None:
            raise LLMError("invalid_response", "no message in the response")
        content = getattr(message, "content", None)
        return _completion(
            content if isinstance(content, str) else "",
            normalize_tool_calls(getattr(message, "tool_calls", None)),
            getattr(response, "usage", None),
            getattr(choice, "finish_reason", None),
        )

    async def _streamed(self, kwargs: dict[str, Any], on_text: TextSink) -> Completion:
        import openai

        client = self._get_client().chat.completions.with_streaming_response
        try:
            context = client.create(**kwargs, stream=True, stream_options={"include_usage": True})
            async with context as response:
                if not response.headers.get("content-type", "").startswith("text/event-stream"):
                    # A server that ignored `stream` and answered whole.
                    completion = _from_body(json.loads(await response.read()))
                    if completion.text:
                        await on_text(completion.text)
                    return completion
                got = ChunkAssembler()
                async for line in response.iter_lines():
                    data = sse_data(line)
                    if data is None or not data:
                        continue
                    if data == DONE:
                        break
                    try:
                        piece = got.feed(data)
                    except StreamError as exc:
                        raise LLMError("server", f"error in the stream: {exc}") from None
                    if piece:
                        await on_text(piece)
        except openai.APIStatusError as exc:
            if exc.status_code in STREAM_REFUSED_STATUS and "stream" in str(exc).lower():
                raise _StreamRefused from exc
            raise
        if not got.chunks:
            raise LLMError("invalid_response", "the stream held no completion")
        if got.finish is None:
            # Every provider ends an answer with a reason; a stream that stops without one
            # was cut (a connection closed midway reads like a normal end).
            raise LLMError("unreachable", "the stream ended before the answer did")
        text = "".join(got.text)
        return _completion(text, normalize_tool_calls(got.calls.assembled()), got.usage, got.finish)

    async def aclose(self) -> None:
        if self._client is not None:
            await self._client.close()
            self._client = None


# What servers without streaming answer to `stream: true` (with "stream" in the message).
STREAM_REFUSED_STATUS = frozenset({400, 404, 415, 422, 501})


class _StreamRefused(Exception):
    pass


async def _guarded(call: Awaitable[Completion]) -> Completion:
    """The call, with the client's failures (also those raised while a stream is read)
    turned into `LLMError`s whose kind chooses what the user is told."""
    import httpx
    import openai

    try:
        return await call
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
    except openai.APIError as exc:  # e.g. a body that is not a completion, an error event
        raise LLMError("invalid_response", str(exc)) from exc
    except json.JSONDecodeError as exc:  # a 200 whose JSON-typed body (or event) is not JSON
        raise LLMError("invalid_response", "the response body is not JSON") from exc
    except httpx.TimeoutException as exc:  # the stream stalled past the read timeout
        raise LLMError("timeout", type(exc).__name__) from exc
    except httpx.HTTPError as exc:  # the connection broke while the stream was read
        raise LLMError("unreachable", type(exc).__name__) from exc


def _from_body(body: Any) -> Completion:
    """A whole completion as parsed JSON (a server that answered a streamed request whole)."""
    choices = body.get("choices") if isinstance(body, dict) else None
    if not choices or not isinstance(choices[0], dict):
        raise LLMError("invalid_response", "no choices in the response")
    message = choices[0].get("message")
    if not isinstance(message, dict):
        raise LLMError("invalid_response", "no message in the response")
    content = message.get("content")
    return _completion(
        content if isinstance(content, str) else "",
        normalize_tool_calls(message.get("tool_calls")),
        body.get("usage"),
        choices[0].get("finish_reason"),
    )


def _completion(
    content: str, calls: tuple[ProposedCall, ...], raw_usage: Any, finish: Any
) -> Completion:
    if raw_usage is not None and hasattr(raw_usage, "model_dump"):
        raw_usage = raw_usage.model_dump()
    return Completion(
        text=content,
        tool_calls=calls,
        usage=parse_usage(raw_usage if isinstance(raw_usage, dict) else None),
        finish_reason=finish if isinstance(finish, str) else None,
        assistant_message=assistant_message(content, calls),
    )
