"""A resolved model endpoint: where to send requests and how patiently."""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass(frozen=True, slots=True)
class ProviderSpec:
    name: str
    model: str
    base_url: str | None = None  # None: the openai library's default endpoint
    api_key: str | None = field(default=None, repr=False)  # repr=False: never in logs
    context_window: int = 32_768
    max_output_tokens: int = 1_024
    timeout: float = 60.0
    max_retries: int = 2
    compact_threshold: float = 0.9  # compact the thread at this fraction of context_window
    max_tokens_param: str = "max_tokens"  # or "max_completion_tokens" (OpenAI reasoning models)
    stream: bool = True  # ask for answers as they are written (off: endpoints that cannot)
    vision: bool = False  # the model reads images (attached ones go to it as image parts)
    # The provider's `/audio/transcriptions` model (e.g. "whisper-1"); None: voice messages
    # and audio files cannot be transcribed with this provider.
    transcription_model: str | None = None
