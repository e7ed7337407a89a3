"""Voice and audio to text with the provider's transcription endpoint (OpenAI's
`/audio/transcriptions`, Whisper-compatible servers): the real `openai` client, the provider's
own base URL and key, and the model of its `transcription_model` setting."""

from __future__ import annotations

from typing import Protocol

from core.llm.providers import ProviderSpec


class TranscriptionError(Exception):
    pass


class Transcriber(Protocol):
    async def transcribe(self, name: str, data: bytes, mime_type: str) -> str: ...


class OpenAITranscriber:
    def __init__(self, spec: ProviderSpec, model: str) -> None:
        self._spec = spec
        self._model = model

    async def transcribe(self, name: str, data: bytes, mime_type: str) -> str:
        import openai

        client = openai.AsyncOpenAI(
            api_key=self._spec.api_key or "not-needed",
            base_url=self._spec.base_url,
            timeout=self._spec.timeout,
            max_retries=self._spec.max_retries,
        )
        try:
            result = await client.audio.transcriptions.create(
                model=self._model, file=(name, data, mime_type or "application/octet-stream")
            )
        except openai.OpenAIError as exc:
            raise TranscriptionError(type(exc).__name__) from None
        finally:
            await client.close()
        return result.text.strip()


def transcriber_for(spec: ProviderSpec) -> Transcriber | None:
    """The provider's transcriber, or None when it has no transcription model."""
    if not spec.transcription_model:
        return None
    return OpenAITranscriber(spec, spec.transcription_model)
