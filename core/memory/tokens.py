"""Offline token counting, calibrated against what the provider reports.

No tokenizer download is possible (or wanted) at run time, so counts are estimated from
characters. The ratio starts conservative (over-counting is safe: compaction happens a bit
early) and is corrected from the `prompt_tokens` each response reports for the prompt we
estimated, so it converges to the real model's tokenizer within a few calls.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Sequence
from typing import TYPE_CHECKING

from core.chat import calls_of, text_of

if TYPE_CHECKING:
    from core.chat import Message, ToolSchema

DEFAULT_CHARS_PER_TOKEN = 3.0  # below the ~4 of English prose: code and JSON tokenize densely
PER_MESSAGE_OVERHEAD = 4  # role and separators in the chat template
_MIN_RATIO, _MAX_RATIO = 1.5, 6.0
_SMOOTHING = 0.3


# An image part is priced by the provider in tiles, not characters: counted as this many
# characters (about 1,600 tokens, what a 1568 px image costs; `core.attachments.images`).
IMAGE_PART_CHARS = 4_800


def message_chars(message: Message) -> int:
    size = len(text_of(message))
    content = message.get("content")
    if isinstance(content, list):
        size += IMAGE_PART_CHARS * sum(
            1 for part in content if isinstance(part, dict) and part.get("type") != "text"
        )
    calls = calls_of(message)
    if calls:
        size += len(json.dumps(calls))
    return size


class TokenCounter:
    def __init__(self, chars_per_token: float = DEFAULT_CHARS_PER_TOKEN) -> None:
        self._ratio = chars_per_token
        self._lock = threading.Lock()
        self.samples = 0

    @property
    def chars_per_token(self) -> float:
        return self._ratio

    def count_text(self, text: str) -> int:
        return int(len(text) / self._ratio) + 1

    def count_message(self, message: Message) -> int:
        return int(message_chars(message) / self._ratio) + PER_MESSAGE_OVERHEAD

    def count(self, messages: Sequence[Message], tools: Sequence[ToolSchema] | None = None) -> int:
        chars = sum(message_chars(m) for m in messages)
        if tools:
            chars += len(json.dumps(list(tools)))
        return int(chars / self._ratio) + PER_MESSAGE_OVERHEAD * len(messages) + 8

    def restore(self, chars_per_token: float, samples: int) -> None:
        """Start from a ratio measured earlier (e.g. by another process)."""
        with self._lock:
            self._ratio = min(_MAX_RATIO, max(_MIN_RATIO, chars_per_token))
            self.samples = samples

    def calibrate(
        self,
        messages: Sequence[Message],
        tools: Sequence[ToolSchema] | None,
        reported_prompt_tokens: int,
    ) -> None:
        """Move the ratio toward what the provider counted for this exact prompt."""
        framing = PER_MESSAGE_OVERHEAD * len(messages) + 8
        content_tokens = reported_prompt_tokens - framing
        chars = sum(message_chars(m) for m in messages) + (
            len(json.dumps(list(tools))) if tools else 0
        )
        if content_tokens <= 0 or chars < 200:  # too small to say anything
            return
        observed = min(_MAX_RATIO, max(_MIN_RATIO, chars / content_tokens))
        with self._lock:
            self._ratio = (1 - _SMOOTHING) * self._ratio + _SMOOTHING * observed
            self.samples += 1
