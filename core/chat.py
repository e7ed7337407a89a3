"""The shapes of what is sent to a chat model: the `openai` package's own message and tool
TypedDicts, so mypy checks every message core builds against what the API accepts, and the
few readers core needs of them.

The types are imported for the type checker only: importing `openai` costs a few hundred
milliseconds, which commands that never call a model (`threadline --help`) must not pay.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, TypeAlias

if TYPE_CHECKING:
    from openai.types.chat import (
        ChatCompletionAssistantMessageParam,
        ChatCompletionMessageFunctionToolCallParam,
        ChatCompletionMessageParam,
        ChatCompletionToolMessageParam,
        ChatCompletionToolParam,
    )

    Message: TypeAlias = ChatCompletionMessageParam
    AssistantMessage: TypeAlias = ChatCompletionAssistantMessageParam
    ToolMessage: TypeAlias = ChatCompletionToolMessageParam
    ToolCall: TypeAlias = ChatCompletionMessageFunctionToolCallParam
    ToolSchema: TypeAlias = ChatCompletionToolParam


def text_of(message: Message) -> str:
    """A message's content as text: core writes strings; parts (images, audio) add their text."""
    content = message.get("content")
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    return "".join(str(part.get("text") or "") for part in content if isinstance(part, dict))


def calls_of(message: Message) -> list[ToolCall]:
    """The function calls of an assistant message (none for other roles)."""
    if message["role"] != "assistant":
        return []
    calls = message.get("tool_calls") or ()
    return [c for c in calls if c["type"] == "function"]


def tool_result(call_id: str, content: str) -> ToolMessage:
    return {"role": "tool", "tool_call_id": call_id, "content": content}
