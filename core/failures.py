"""Why a model call failed, as a type (`core.llm.LLMError.kind`). It imports nothing and sits
at the bottom of core, so `core.messages` words each kind without importing the model client's
package (which stands above it)."""

from __future__ import annotations

from typing import Literal

LLMErrorKind = Literal[
    "timeout",
    "unreachable",
    "rate_limited",
    "auth",
    "bad_request",
    "server",
    "invalid_response",
]
