"""The model endpoints: `LLM_*`, which configure the active one, and the `[providers.NAME]`
tables of the settings file a policy rule picks from. Kept apart from the rest of
`config.settings.Settings`, which inherits them; `llm()` and `provider()` resolve an endpoint."""

from __future__ import annotations

import os

from pydantic import Field, SecretStr, field_validator, model_validator
from pydantic_settings import BaseSettings

from config.providers import MaxTokensParam, ProviderSettings, ResolvedProvider
from config.values import MAX_MODEL_CHARS, MAX_PROVIDER_CHARS, clean_secret, clean_url


class ModelSettings(BaseSettings):
    llm_provider: str | None = Field(
        None, description="Name of a `[providers.NAME]` table in the settings file"
    )
    llm_base_url: str | None = Field(
        None,
        description="OpenAI-compatible endpoint, e.g. `http://127.0.0.1:11434/v1` (a trailing "
        "`/` is dropped)",
    )
    llm_api_key: SecretStr | None = Field(
        None, description="API key (trimmed; a key with whitespace inside is refused)"
    )
    llm_model: str | None = Field(
        None, description="Model name; required once an LLM is configured"
    )
    llm_context_window: int = Field(
        32_768, ge=1024, description="The model's context window in tokens"
    )
    llm_max_output_tokens: int = Field(
        1_024,
        ge=16,
        description="Completion tokens asked for (and reserved from the budget) per call",
    )
    llm_timeout: float = Field(60.0, gt=0, description="Seconds per model request")
    llm_max_retries: int = Field(
        2,
        ge=0,
        le=10,
        description="Retries on 429, 5xx and connection errors (honouring `Retry-After`)",
    )
    llm_compact_threshold: float = Field(
        0.9,
        ge=0.3,
        le=0.99,
        description="Compact the thread when the prompt reaches this fraction of the window "
        "(per provider: `compact_threshold`)",
    )
    llm_max_tokens_param: MaxTokensParam = Field(
        "max_tokens",
        description="How the answer's token limit is sent: `max_tokens`, or "
        "`max_completion_tokens` for OpenAI's reasoning models (per provider: "
        "`max_tokens_param`)",
    )
    llm_stream: bool = Field(
        True,
        description="Stream answers as the model writes them (`stream=true` with usage); an "
        "endpoint that refuses streaming is asked without it from then on (per provider: "
        "`stream`)",
    )
    llm_vision: bool = Field(
        False,
        description="The model reads images: attached images go to it (scaled down); off, the "
        "reply says it cannot read them (per provider: `vision`)",
    )
    llm_transcription_model: str | None = Field(
        None,
        description="The provider's `/audio/transcriptions` model (e.g. `whisper-1`): voice "
        "messages and audio files are transcribed with it; empty: they cannot be (per provider: "
        "`transcription_model`)",
    )
    providers: dict[str, ProviderSettings] = Field(
        {}, description="Named LLM endpoints: `[providers.NAME]` tables of the settings file"
    )

    @field_validator("llm_base_url", mode="before")
    @classmethod
    def _llm_url(cls, value: object) -> str | None:
        return clean_url(value, "LLM_BASE_URL")

    @field_validator("llm_api_key", mode="before")
    @classmethod
    def _llm_key(cls, value: object) -> str | None:
        return clean_secret(value, "LLM_API_KEY")

    @field_validator("llm_model", "llm_provider", mode="before")
    @classmethod
    def _name(cls, value: object) -> str | None:
        text = str(value).strip() if value is not None else ""
        return text or None

    @model_validator(mode="after")
    def _check_llm(self) -> ModelSettings:
        self.llm()  # resolve once so that a broken LLM setup fails at start-up
        return self

    def llm(self) -> ResolvedProvider | None:
        """The active LLM endpoint, or None when no model is configured (a supported mode)."""
        name = self.llm_provider
        base: ProviderSettings
        if name:
            if name not in self.providers:
                known = ", ".join(sorted(self.providers)) or "none defined"
                raise ValueError(
                    f"LLM_PROVIDER={name!r} is not a provider in the settings file (known: {known})"
                )
            base = self.providers[name]
        elif self.llm_base_url or self.llm_model or self.llm_api_key:
            name, base = "default", ProviderSettings()
        else:
            return None
        return self._resolve(name, base, overrides=True)

    def provider(self, name: str) -> ResolvedProvider:
        """A named `[providers.NAME]` endpoint, as a policy rule's `model` picks it. The LLM_*
        variables apply only to the active provider (LLM_PROVIDER), which this returns as
        `llm()` does. Raises KeyError for an unknown name."""
        if name == self.llm_provider:
            resolved = self.llm()
            assert resolved is not None
            return resolved
        return self._resolve(name, self.providers[name], overrides=False)

    def _resolve(self, name: str, base: ProviderSettings, *, overrides: bool) -> ResolvedProvider:
        base_url = (self.llm_base_url if overrides else None) or clean_url(
            base.base_url, f"providers.{name}.base_url"
        )
        model = (self.llm_model if overrides else None) or base.model
        if not model:
            raise ValueError(
                "no model name: set LLM_MODEL (environment or .env), or llm_model / "
                f"[providers.{name}] model in the settings file (THREADLINE_CONFIG)"
            )
        # Usage is recorded per provider and model (usage_records: 64 and 128 characters):
        # longer names would fail every usage write on PostgreSQL.
        if len(model) > MAX_MODEL_CHARS:
            raise ValueError(
                f"the model name of provider {name[:64]!r} is {len(model)} characters long; "
                f"at most {MAX_MODEL_CHARS} are allowed (LLM_MODEL / [providers.{name[:64]}] model)"
            )
        if len(name) > MAX_PROVIDER_CHARS:
            raise ValueError(
                f"the provider name {name[:64]!r}... is {len(name)} characters long; at most "
                f"{MAX_PROVIDER_CHARS} are allowed"
            )
        key = self.llm_api_key if overrides else None
        if key is None and base.api_key_env:
            cleaned = clean_secret(os.environ.get(base.api_key_env), base.api_key_env)
            key = SecretStr(cleaned) if cleaned else None
        return ResolvedProvider(
            name=name,
            base_url=base_url,
            model=model,
            api_key=key,
            context_window=base.context_window or self.llm_context_window,
            max_output_tokens=base.max_output_tokens or self.llm_max_output_tokens,
            timeout=base.timeout or self.llm_timeout,
            max_retries=base.max_retries if base.max_retries is not None else self.llm_max_retries,
            compact_threshold=base.compact_threshold or self.llm_compact_threshold,
            max_tokens_param=base.max_tokens_param or self.llm_max_tokens_param,
            stream=base.stream if base.stream is not None else self.llm_stream,
            vision=base.vision if base.vision is not None else self.llm_vision,
            transcription_model=base.transcription_model
            or (self.llm_transcription_model if overrides else None),
        )
