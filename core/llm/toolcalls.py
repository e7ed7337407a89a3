"""Tool calls as they enter Threadline from a model response, made protocol-safe.

Providers (and models) get the tool-call shape wrong in ways that would otherwise poison a
thread for good: ids missing, empty or repeated (a stored tool result then answers no call, and
every later prompt is refused with HTTP 400), `arguments` sent as a JSON object instead of a
string, names thousands of characters long. This is the one place where a response's calls are
read, so everything after it (dispatcher, history, audit, replies) sees well-formed calls.
"""

from __future__ import annotations

import json
import re
import uuid
from collections.abc import Iterable
from typing import TYPE_CHECKING, Any

from core.tools.dispatcher import ProposedCall

if TYPE_CHECKING:
    from core.chat import AssistantMessage, ToolCall

MAX_NAME_CHARS = 64  # OpenAI's limit for function names; no registered tool is longer
MAX_ID_CHARS = 64
_ID_OK = re.compile(r"^[A-Za-z0-9_.:-]+$")


def new_call_id() -> str:
    return f"call_{uuid.uuid4().hex[:24]}"


def _field(obj: Any, name: str) -> Any:
    """An attribute of the client's object, or a key when the provider's shape left a dict."""
    if isinstance(obj, dict):
        return obj.get(name)
    return getattr(obj, name, None)


def _arguments(raw: Any) -> str:
    if raw is None:
        return "{}"
    if isinstance(raw, str):
        return raw if raw.strip() else "{}"
    # An object (or list) where a JSON string belongs: keep what the model meant.
    try:
        return json.dumps(raw, ensure_ascii=False, default=str)
    except (TypeError, ValueError):
        return "{}"


def _name(raw: Any) -> str:
    name = raw if isinstance(raw, str) else ""
    if len(name) > MAX_NAME_CHARS:
        return name[: MAX_NAME_CHARS - 1] + "…"  # cannot match a tool: refused as unknown
    return name


def normalize_tool_calls(raw_calls: Iterable[Any] | None) -> tuple[ProposedCall, ...]:
    """The response's tool calls, each with a unique usable id, a bounded name and its
    arguments as a JSON string. Entries without a function part are skipped."""
    if raw_calls is None or isinstance(raw_calls, str | bytes | dict):
        return ()
    calls: list[ProposedCall] = []
    seen: set[str] = set()
    for raw in raw_calls:
        function = _field(raw, "function")
        if function is None:
            continue
        call_id = _field(raw, "id")
        if (
            not isinstance(call_id, str)
            or not call_id
            or len(call_id) > MAX_ID_CHARS
            or not _ID_OK.match(call_id)
            or call_id in seen
        ):
            call_id = new_call_id()
        seen.add(call_id)
        calls.append(
            ProposedCall(
                id=call_id,
                name=_name(_field(function, "name")),
                arguments=_arguments(_field(function, "arguments")),
            )
        )
    return tuple(calls)


def assistant_message(content: str, calls: Iterable[ProposedCall]) -> AssistantMessage:
    """The assistant message to keep in the thread for a response (chat-completions shape)."""
    message: AssistantMessage = {"role": "assistant", "content": content}
    tool_calls: list[ToolCall] = [
        {"id": c.id, "type": "function", "function": {"name": c.name, "arguments": c.arguments}}
        for c in calls
    ]
    if tool_calls:
        message["tool_calls"] = tool_calls
    return message


class ToolCallDeltas:
    """Tool calls as a streamed response sends them: pieces of each call spread over many
    chunks, keyed by `index`. Assembled into the same raw shape a whole response has, so
    `normalize_tool_calls` makes them safe exactly as it does the others.

    Providers differ: some repeat the whole name in every piece, some send the arguments as
    one object, some leave `index` out or reuse it for the next call (with a new id).
    """

    def __init__(self) -> None:
        self._calls: dict[object, dict[str, Any]] = {}
        self._last: object | None = None

    def add(self, deltas: Iterable[Any] | None) -> None:
        if deltas is None or isinstance(deltas, str | bytes | dict):
            return
        for delta in deltas:
            self._add(delta)

    def _add(self, delta: Any) -> None:
        index = _field(delta, "index")
        call_id = _field(delta, "id")
        key: object = index if isinstance(index, int) else self._last
        current = self._calls.get(key) if key is not None else None
        if current is None or (
            isinstance(call_id, str) and call_id and current["id"] and call_id != current["id"]
        ):
            # A new call: a new index, or a new id where the provider reused the index.
            key = (index, len(self._calls)) if current is not None else key
            if key is None:
                key = ("call", len(self._calls))
            current = self._calls[key] = {"id": "", "name": "", "arguments": "", "object": None}
        self._last = key
        if isinstance(call_id, str) and call_id and not current["id"]:
            current["id"] = call_id
        function = _field(delta, "function")
        if function is None:
            return
        name = _field(function, "name")
        if isinstance(name, str) and name and name != current["name"]:
            current["name"] += name
        arguments = _field(function, "arguments")
        if isinstance(arguments, str):
            current["arguments"] += arguments
        elif arguments is not None:
            current["object"] = arguments  # the whole arguments at once, as an object

    def assembled(self) -> list[dict[str, Any]]:
        return [
            {
                "id": c["id"] or None,
                "type": "function",
                "function": {
                    "name": c["name"],
                    "arguments": c["object"] if c["object"] is not None else c["arguments"],
                },
            }
            for c in self._calls.values()
        ]
