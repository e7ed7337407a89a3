"""Voice replies (`core.tts`): their settings, kept apart from the rest of
`config.settings.Settings`, which inherits them."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import Field, SecretStr, field_validator, model_validator
from pydantic_settings import BaseSettings

from config.values import clean_secret, clean_url


class VoiceSettings(BaseSettings):
    # Voice replies (core/tts): "piper" and "espeak" run in worker processes (the `voice`
    # extra, GPL-3.0).
    tts_engine: Literal["auto", "piper", "espeak", "openai"] = Field(
        "auto",
        description="Voice replies: `piper` (local neural voice), `espeak` (eSpeak NG, light, "
        "many languages), `openai` (an OpenAI-compatible `/audio/speech` endpoint); `auto` is "
        "`openai` when `TTS_BASE_URL` is set, else `piper`",
    )
    tts_voice: str | None = Field(
        None,
        description="Default per engine: `en_US-joe-medium` (Piper; or a path to a Piper `.onnx` "
        "voice), `en-us` (eSpeak NG voice names such as `de`, `fr`, `ja`), `alloy` (OpenAI). An "
        "unknown voice falls back to the default with a warning in the log and a one-line note "
        "in the reply",
    )
    tts_format: Literal["auto", "ogg", "mp3", "wav"] = Field(
        "auto",
        description="`auto`: OGG/Opus on Discord (a voice message) and the console, MP3 on Slack "
        "(inline player); or always `ogg`, `mp3`, `wav`",
    )
    tts_max_chars: int = Field(
        3_000,
        ge=200,
        le=100_000,
        description="Longer text (after preparing it for speech) is summarized by the model when "
        "one is configured, else its first part is read with a spoken note that the rest is in "
        "the text",
    )
    tts_summarize: bool = Field(
        True,
        description="`false`: never spend model tokens on summaries for speech; long text is cut "
        "instead",
    )
    tts_segment_bytes: int = Field(
        600,
        ge=64,
        le=4_096,
        description="Largest segment (UTF-8 bytes) a local engine synthesizes at once",
    )
    tts_workers: int = Field(
        2,
        ge=1,
        le=16,
        description="Local synthesis worker processes, i.e. segments synthesized in parallel "
        "(one core each)",
    )
    tts_timeout: float = Field(
        60.0,
        gt=0,
        le=600,
        description="Seconds one segment may take before its worker is replaced and the segment "
        "retried; also how long a local worker may take to start (at most 60 s): one that does "
        "not is killed and the request fails without trying again",
    )
    tts_worker_idle: float = Field(
        600.0,
        ge=0,
        description="Seconds without a voice request after which the local workers stop (a "
        "Piper worker holds about 400 MB); the next request starts them again (0: keep them "
        "running)",
    )
    tts_base_url: str | None = Field(
        None, description="OpenAI-compatible speech endpoint, e.g. `http://127.0.0.1:8880/v1`"
    )
    tts_api_key: SecretStr | None = Field(
        None, description="Key for that endpoint, if it needs one"
    )
    tts_model: str = Field("gpt-4o-mini-tts", description="Speech model name sent to that endpoint")

    @field_validator("tts_base_url", mode="before")
    @classmethod
    def _tts_url(cls, value: object) -> str | None:
        return clean_url(value, "TTS_BASE_URL")

    @field_validator("tts_api_key", mode="before")
    @classmethod
    def _tts_key(cls, value: object) -> str | None:
        return clean_secret(value, "TTS_API_KEY")

    @field_validator("tts_voice", mode="before")
    @classmethod
    def _tts_voice(cls, value: object, info: Any) -> str | None:
        text = str(value).strip() if value is not None else ""
        return text or None

    @model_validator(mode="after")
    def _check_tts(self) -> VoiceSettings:
        if self.tts_engine == "openai" and not (self.tts_base_url or self.tts_api_key):
            raise ValueError("TTS_ENGINE=openai needs TTS_BASE_URL (or TTS_API_KEY for OpenAI)")
        return self

    @property
    def tts_engine_resolved(self) -> Literal["piper", "espeak", "openai"]:
        if self.tts_engine == "auto":
            return "openai" if self.tts_base_url else "piper"
        return self.tts_engine
