"""An OpenAI-compatible `/audio/speech` endpoint as a `SpeechEngine` (the `openai` package).

Audio is asked for as WAV: self-describing (rate, channels), so servers that speak another
rate than OpenAI's 24 kHz still merge correctly. A voice the server rejects falls back to the
default voice once, with a warning in the log and a one-line note to the user; later segments
go straight to the default.
"""

from __future__ import annotations

import asyncio
import logging
from dataclasses import dataclass, field
from typing import Any

from core.tts.audio import decode
from core.tts.engine import Segment, SynthesisError

log = logging.getLogger(__name__)

DEFAULT_VOICE = "alloy"
DEFAULT_MODEL = "gpt-4o-mini-tts"


@dataclass
class OpenAISpeechEngine:
    base_url: str | None
    api_key: str | None
    model: str = DEFAULT_MODEL
    voice: str = DEFAULT_VOICE
    default_voice: str = DEFAULT_VOICE
    segment_bytes: int = 4_000  # the API takes up to 4,096 characters per request
    concurrency: int = 4
    timeout: float = 60.0
    _client: Any = field(default=None, init=False, repr=False)
    _note: str | None = field(default=None, init=False, repr=False)
    _lock: asyncio.Lock = field(default_factory=asyncio.Lock, init=False, repr=False)

    @property
    def name(self) -> str:
        return "openai"

    def _api(self) -> Any:
        if self._client is None:
            from openai import AsyncOpenAI

            # Retries are the synthesizer's (one policy for every engine), not the client's.
            self._client = AsyncOpenAI(
                base_url=self.base_url,
                api_key=self.api_key or "not-needed",
                timeout=self.timeout,
                max_retries=0,
            )
        return self._client

    async def synthesize(self, text: str) -> Segment:
        import openai

        voice = self.voice
        try:
            data = await self._speech(text, voice)
        except openai.BadRequestError as exc:
            if voice == self.default_voice or not _about_voice(exc):
                raise SynthesisError(
                    f"speech request refused: {_message(exc)}", retryable=False
                ) from None
            async with self._lock:
                if self.voice == voice:  # the first segment to find out tells the others
                    log.warning(
                        "TTS voice %r was refused (%s); using %r",
                        voice,
                        _message(exc),
                        self.default_voice,
                    )
                    self._note = (
                        f'The voice "{voice}" is not available; read with "{self.default_voice}".'
                    )
                    self.voice = self.default_voice
            data = await self._speech(text, self.default_voice)
        notes = (self._note,) if self._note else ()
        return Segment(await asyncio.to_thread(decode, data), notes)

    async def _speech(self, text: str, voice: str) -> bytes:
        import openai

        try:
            response = await self._api().audio.speech.create(
                model=self.model, voice=voice, input=text, response_format="wav"
            )
        except openai.BadRequestError:
            raise
        except openai.APIStatusError as exc:
            retryable = exc.status_code == 429 or exc.status_code >= 500
            raise SynthesisError(
                f"speech endpoint: HTTP {exc.status_code}", retryable=retryable
            ) from None
        except (openai.APIConnectionError, openai.APITimeoutError) as exc:
            raise SynthesisError(f"speech endpoint unreachable: {type(exc).__name__}") from None
        return bytes(response.content)

    async def aclose(self) -> None:
        if self._client is not None:
            await self._client.close()
            self._client = None


def _message(exc: Exception) -> str:
    body = getattr(exc, "body", None)
    if isinstance(body, dict):
        error = body.get("error", body)
        if isinstance(error, dict) and error.get("message"):
            return str(error["message"])[:200]
    return str(exc)[:200]


def _about_voice(exc: Exception) -> bool:
    body = getattr(exc, "body", None)
    error = body.get("error", body) if isinstance(body, dict) else None
    if isinstance(error, dict) and error.get("param") == "voice":
        return True
    return "voice" in _message(exc).lower()
