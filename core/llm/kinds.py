"""Why a model call failed, as a type. It imports nothing, so `core.messages` can name the
kinds without a cycle."""

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
