"""The speech engine Protocol and its errors.

An engine turns one segment of plain text into PCM. Everything around it (preparing the text,
cutting it into segments, parallelism, retries, merging, encoding) is the same for every engine
and lives in `core.tts.synth`, so an engine stays a small adapter to one synthesizer.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Protocol

from core.tts.audio import Audio


class SynthesisError(Exception):
    """A segment could not be synthesized. `retryable`: trying again may help (a crashed
    worker, a timeout, a 5xx); otherwise (bad input, a missing engine) it will not."""

    def __init__(self, message: str, *, retryable: bool = True) -> None:
        super().__init__(message)
        self.retryable = retryable


class EngineUnavailable(SynthesisError):
    """The engine cannot run here at all (its optional packages are not installed)."""

    def __init__(self, message: str) -> None:
        super().__init__(message, retryable=False)


@dataclass(frozen=True, slots=True)
class Segment:
    """One synthesized segment; `notes` are one-line remarks for the user ("voice X is not
    available, read with Y")."""

    audio: Audio
    notes: tuple[str, ...] = field(default=())


class SpeechEngine(Protocol):
    @property
    def name(self) -> str:
        """Shown in logs and the bench: "piper", "espeak", "openai"."""
        ...

    @property
    def segment_bytes(self) -> int:
        """Longest segment, in UTF-8 bytes, this engine is given at once."""
        ...

    @property
    def concurrency(self) -> int:
        """How many segments it synthesizes at the same time."""
        ...

    async def synthesize(self, text: str) -> Segment: ...

    async def aclose(self) -> None: ...
