"""LLM endpoints: a named `[providers.NAME]` table as the settings file gives it, and a
provider resolved with the defaults and overrides of the environment."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, SecretStr

# OpenAI's reasoning models refuse `max_tokens` and want `max_completion_tokens`; most other
# OpenAI-compatible servers only know `max_tokens`.
MaxTokensParam = Literal["max_tokens", "max_completion_tokens"]


class ProviderSettings(BaseModel):
    """A named LLM endpoint in `[providers.NAME]`. The key is read from the environment
    variable named by `api_key_env`, so the TOML file never holds secrets."""

    # Only ever read from TOML, whose values are typed: `context_window = true` is a mistake,
    # not 1.
    model_config = ConfigDict(extra="forbid", strict=True)

    base_url: str | None = Field(None, description="The provider's OpenAI-compatible endpoint")
    model: str | None = Field(None, description="Model name")
    api_key_env: str | None = Field(
        None, description="NAME of the environment variable that holds the API key"
    )
    context_window: int | None = Field(
        None, ge=1024, description="The model's context window (default: `LLM_CONTEXT_WINDOW`)"
    )
    max_output_tokens: int | None = Field(
        None, ge=16, description="Completion tokens per call (default: `LLM_MAX_OUTPUT_TOKENS`)"
    )
    timeout: float | None = Field(
        None, gt=0, description="Seconds per model request (default: `LLM_TIMEOUT`)"
    )
    max_retries: int | None = Field(
        None,
        ge=0,
        le=10,
        description="Retries on 429, 5xx and connection errors (default: `LLM_MAX_RETRIES`)",
    )
    compact_threshold: float | None = Field(
        None,
        ge=0.3,
        le=0.99,
        description="Compact the thread at this fraction of the window "
        "(default: `LLM_COMPACT_THRESHOLD`)",
    )
    max_tokens_param: MaxTokensParam | None = Field(
        None,
        description="`max_tokens` or `max_completion_tokens` (default: `LLM_MAX_TOKENS_PARAM`)",
    )
    stream: bool | None = Field(
        None,
        description="Stream answers as they are written; `false` for endpoints that cannot "
        "(default: `LLM_STREAM`)",
    )
    vision: bool | None = Field(None, description="The model reads images (default: `LLM_VISION`)")
    transcription_model: str | None = Field(
        None,
        description="Model of the provider's `/audio/transcriptions` endpoint, e.g. `whisper-1` "
        "(default for the active provider: `LLM_TRANSCRIPTION_MODEL`; none: no transcription)",
    )


class ResolvedProvider(BaseModel):
    name: str
    base_url: str | None
    model: str
    api_key: SecretStr | None
    context_window: int
    max_output_tokens: int
    timeout: float
    max_retries: int
    compact_threshold: float
    max_tokens_param: MaxTokensParam
    stream: bool
    vision: bool = False
    transcription_model: str | None = None
