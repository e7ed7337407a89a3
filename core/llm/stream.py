"""A streamed completion, read from the server-sent events of `/chat/completions`.

The events are parsed here as plain JSON instead of through the `openai` package's chunk
models: building a pydantic object per chunk cost about a third of a millisecond of CPU per
token, which at fifty answers streaming at once is most of a core (bench/streaming.py). The
request, its retries and its HTTP errors stay the client's own.
"""

from __future__ import annotations

import json
from typing import Any

from core.llm.toolcalls import ToolCallDeltas

DONE = "[DONE]"


class StreamError(Exception):
    """The provider reported an error inside the stream (an `error` event)."""


def sse_data(line: str) -> str | None:
    """The payload of an SSE `data:` line; None for comments, event names, blank lines."""
    if not line.startswith("data:"):
        return None
    return line[5:].strip()


class ChunkAssembler:
    """Collects a stream's chunks into what a whole response would have said."""

    def __init__(self) -> None:
        self.text: list[str] = []
        self.calls = ToolCallDeltas()
        self.usage: Any = None
        self.finish: str | None = None
        self.chunks = 0

    def feed(self, data: str) -> str:
        """One event's JSON; returns the text it adds (possibly empty)."""
        chunk = json.loads(data)
        if not isinstance(chunk, dict):
            raise StreamError("an event that is not a JSON object")
        if chunk.get("error"):
            error = chunk["error"]
            message = error.get("message") if isinstance(error, dict) else error
            raise StreamError(str(message)[:200])
        self.chunks += 1
        if isinstance(chunk.get("usage"), dict):
            self.usage = chunk["usage"]  # the last chunk, with no choices
        added: list[str] = []
        for choice in chunk.get("choices") or []:
            if not isinstance(choice, dict) or choice.get("index", 0) != 0:
                continue
            finish = choice.get("finish_reason")
            self.finish = finish if isinstance(finish, str) else self.finish
            delta = choice.get("delta")
            if not isinstance(delta, dict):
                continue
            piece = delta.get("content")
            if isinstance(piece, str) and piece:
                self.text.append(piece)
                added.append(piece)
            self.calls.add(delta.get("tool_calls"))
        return "".join(added)
