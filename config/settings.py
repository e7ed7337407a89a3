"""Typed settings from the environment, `.env` and `config/threadline.toml`.

Precedence: explicit arguments > environment > `.env` > the TOML file > defaults. Keys in the
TOML file are the environment names in lower case (`llm_model = "..."`), plus a `[providers.X]`
table per named LLM provider. Errors name the setting to fix and never print secret values.

The fields are here; the settings file's reading (`config.source`), single values' parsing
(`config.values`), providers (`config.providers`) and error reporting (`config.errors`) each
have a module of their own.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Annotated, Any, Literal

from pydantic import (
    Field,
    SecretStr,
    ValidationError,
    field_validator,
    model_validator,
)
from pydantic_settings import (
    BaseSettings,
    NoDecode,
    PydanticBaseSettingsSource,
    SettingsConfigDict,
)

from config.attachments import AttachmentSettings
from config.console import ConsoleSettings
from config.errors import SettingsError, describe_error
from config.providers import MaxTokensParam, ProviderSettings, ResolvedProvider
from config.source import (
    CONFIG_DIR,
    SettingsFileSource,
    config_file,
)
from config.values import (
    DEFAULT_DISCORD_UPLOAD_LIMIT,
    MAX_MODEL_CHARS,
    MAX_PROVIDER_CHARS,
    alias,
    clean_secret,
    clean_url,
    parse_id_list,
    parse_size,
)
from core.code.forge import ForgeKind, parse_forge_hosts
from core.mcp.config import McpServerSettings, check_server_names

DEFAULT_POLICY_FILE = CONFIG_DIR / "policy.toml"

# What `config.settings` has always offered its importers, wherever it lives now.
__all__ = [
    "CONFIG_DIR",
    "DEFAULT_DISCORD_UPLOAD_LIMIT",
    "DEFAULT_POLICY_FILE",
    "MAX_MODEL_CHARS",
    "MAX_PROVIDER_CHARS",
    "ProviderSettings",
    "ResolvedProvider",
    "Settings",
    "SettingsError",
    "config_file",
    "load_settings",
]


_alias = alias


class Settings(AttachmentSettings, ConsoleSettings):
    model_config = SettingsConfigDict(
        env_file=".env",
        env_file_encoding="utf-8",
        case_sensitive=False,
        extra="ignore",
        populate_by_name=True,
    )

    data_dir: Path = Field(
        Path("data"),
        validation_alias=_alias("THREADLINE_DATA_DIR", "data_dir"),
        description="Where the SQLite database, the embedded vector store, clones and saved "
        "attachments live",
    )
    database_url: str | None = Field(
        None,
        description="`sqlite:///path.db` or `postgresql://user@host:5432/db`; empty: SQLite in "
        "the data dir",
    )
    # PostgreSQL connections each process may hold: the pool keeps up to DATABASE_POOL_SIZE
    # open and opens up to DATABASE_MAX_OVERFLOW more under load (20 at most by default, so N
    # processes need N x 20 of the server's max_connections). Overflow connections are closed
    # as soon as they are returned, so under steady load they are reconnected over and over:
    # the kept part is the larger one (bench/slack_load.py: 5 + 10 dropped requests on pool
    # timeouts where 20 + 0 answered all). SQLite ignores both.
    database_pool_size: int = Field(
        15,
        ge=1,
        le=100,
        description="PostgreSQL connections each process keeps open once it needed them (1-100)",
    )
    database_max_overflow: int = Field(
        5,
        ge=0,
        le=100,
        description="More connections a process may open under load, closed again when returned "
        "(0-100): a process never holds more than pool size + overflow, 20 by default, so N "
        "processes need N × 20 of the server's `max_connections`",
    )
    policy_file: Path = Field(
        DEFAULT_POLICY_FILE,
        validation_alias=_alias("THREADLINE_POLICY", "policy_file"),
        description="The policy file: permissions, budgets, repos, skills and models per rule",
    )
    max_message_chars: int = Field(
        20_000,
        ge=1,
        validation_alias=_alias("THREADLINE_MAX_MESSAGE_CHARS", "max_message_chars"),
        description="Longer messages are refused with a clear message",
    )
    tool_max_args_chars: int = Field(
        4_000,
        ge=2,
        validation_alias=_alias("THREADLINE_TOOL_MAX_ARGS_CHARS", "tool_max_args_chars"),
        description="Tool-call arguments above this are refused",
    )
    tool_max_result_chars: int = Field(
        8_000,
        ge=100,
        validation_alias=_alias("THREADLINE_TOOL_MAX_RESULT_CHARS", "tool_max_result_chars"),
        description="Tool results are cut to this before the model sees them",
    )
    request_deadline: float = Field(
        120.0,
        gt=0,
        le=3600,
        validation_alias=_alias("THREADLINE_REQUEST_DEADLINE", "request_deadline"),
        description="Seconds one request may take, commands included (`/tts`, `/voice`, …; only "
        "`/index` runs to the end), model calls and tools together; past it the user is told, "
        "and the question and finished tool calls are kept in the thread (audio not ready in "
        "time is left out, the text answer stands)",
    )
    # Requests one process answers at once; the rest wait their turn in order. Without a bound a
    # burst of mentions starts every answer together: each holds database connections over more
    # event-loop turns, and past the pool's 30 s wait requests fail instead of waiting.
    max_concurrent_requests: int = Field(
        16,
        ge=1,
        le=1000,
        validation_alias=_alias("THREADLINE_MAX_CONCURRENT_REQUESTS", "max_concurrent_requests"),
        description="Requests one process answers at once; more wait their turn in arrival order "
        "(the `threadline_requests_queued` gauge) instead of competing for database connections",
    )
    # Under the usual 30 s a platform waits before it kills the process.
    shutdown_grace: float = Field(
        25.0,
        gt=0,
        le=3600,
        validation_alias=_alias("THREADLINE_SHUTDOWN_GRACE", "shutdown_grace"),
        description="Seconds `run`, `serve` and `worker` give work in flight after "
        "SIGTERM/SIGINT before cutting it",
    )
    persona: str = Field(
        "",
        validation_alias=_alias("THREADLINE_PERSONA", "persona"),
        description="Team notes added to the system prompt",
    )
    skills_dirs: Annotated[tuple[Path, ...], NoDecode] = Field(
        (),
        validation_alias=_alias("THREADLINE_SKILLS_DIRS", "skills_dirs"),
        description="Comma-separated skill folders, searched before `./skills` and the shipped "
        "examples",
    )
    skills_examples: bool = Field(
        True,
        validation_alias=_alias("THREADLINE_SKILLS_EXAMPLES", "skills_examples"),
        description="Load the example skills shipped in Threadline's `skills/` folder (incident "
        "triage, release notes, review checklist)",
    )
    skills_index_share: float = Field(
        0.01,
        gt=0,
        le=0.25,
        validation_alias=_alias("THREADLINE_SKILLS_INDEX_SHARE", "skills_index_share"),
        description="Share of the model's context window the skills index may take (0.01 = 1%)",
    )
    thread_context_share: float = Field(
        0.2,
        ge=0,
        le=0.5,
        validation_alias=_alias("THREADLINE_THREAD_CONTEXT_SHARE", "thread_context_share"),
        description="Share of the model's context window a thread's earlier messages may take "
        "when Threadline is mentioned inside a thread (the newest kept; 0 = never read them)",
    )
    log_level: str = Field(
        "INFO",
        validation_alias=_alias("THREADLINE_LOG_LEVEL", "log_level"),
        description="Log level for `serve`/`worker` (`chat`/`ask` log warnings only, unless `-v`)",
    )
    log_format: Literal["text", "json"] = Field(
        "text",
        validation_alias=_alias("LOG_FORMAT", "log_format"),
        description="`json`: one JSON object per log line (`ts`, `level`, `logger`, `message`, "
        "`exc`, and `request_id`, `platform`, `tenant`, `channel` on every line of a request). "
        "Message text and secrets are never logged",
    )

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
    mcp: dict[str, McpServerSettings] = Field(
        {}, description="MCP servers: `[mcp.NAME]` tables of the settings file"
    )
    mcp_confirm_timeout: float = Field(
        120.0,
        gt=0,
        le=3600,
        validation_alias=_alias("THREADLINE_MCP_CONFIRM_TIMEOUT", "mcp_confirm_timeout"),
        description="Seconds the requesting user has to confirm an MCP tool call with side "
        "effects (no answer: not run)",
    )

    # Code search. Changing the embedding model re-embeds into a new collection.
    embeddings_provider: Literal["local", "openai"] = Field(
        "local",
        description="`local`: all-MiniLM-L6-v2 on the CPU, offline. `openai`: an "
        "OpenAI-compatible `/embeddings` endpoint (needs `EMBEDDINGS_URL`, `EMBEDDINGS_MODEL` "
        "and `EMBEDDINGS_DIMENSION`). Changing the model embeds into a new collection",
    )
    embeddings_url: str | None = Field(
        None, description="The embeddings endpoint, e.g. `http://127.0.0.1:11434/v1`"
    )
    embeddings_api_key: SecretStr | None = Field(
        None, description="Key for that endpoint, if it needs one"
    )
    embeddings_model: str | None = Field(None, description="Embedding model name")
    embeddings_dimension: int | None = Field(
        None, ge=8, le=8192, description="Length of its vectors"
    )
    qdrant_url: str | None = Field(
        None,
        description="A Qdrant server (`http://127.0.0.1:6333`); empty: an embedded Qdrant Edge "
        "shard under `$THREADLINE_DATA_DIR/qdrant-edge`, held by one process that shares it "
        "with the other local ones",
    )
    qdrant_api_key: SecretStr | None = Field(None, description="Qdrant server API key")
    demo_index: bool = Field(
        True,
        validation_alias=_alias("THREADLINE_DEMO_INDEX", "demo_index"),
        description="`threadline run` indexes this checkout as the `threadline` repository "
        "while no other repository is registered",
    )
    forge_hosts: Annotated[dict[str, ForgeKind], NoDecode] = Field(
        {},
        validation_alias=_alias("THREADLINE_FORGE_HOSTS", "forge_hosts"),
        description="Self-hosted forges an answer's sources link to, as `HOST=KIND` pairs "
        "separated by commas (`git.example.org=gitea,code.corp=gitlab`; KIND: github, gitlab, "
        "bitbucket, gitea). github.com, gitlab.com, bitbucket.org, codeberg.org and hosts "
        "named `github.*`, `gitlab.*` or with a `gitea`/`forgejo` label need no entry",
    )

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

    slack_bot_token: SecretStr | None = Field(
        None, description="Slack bot token (`xoxb-...`); checked with `auth.test` at start-up"
    )
    slack_signing_secret: SecretStr | None = Field(
        None, description="Slack HTTP mode: verifies every request to `/slack/events`"
    )
    slack_app_token: SecretStr | None = Field(
        None,
        description="Slack Socket Mode: app-level token (`xapp-...`, `connections:write`)",
    )
    slack_api_url: str | None = Field(
        None,
        description="Slack Web API base URL (enterprise proxies); must end in `/api/`; "
        "default `https://slack.com/api/`",
    )
    feedback: bool = Field(
        True,
        validation_alias=_alias("THREADLINE_FEEDBACK", "feedback"),
        description="Put 👍/👎 buttons under every answer and record ratings (with the answer's "
        "model, skills and tools, never its text); `/feedback` and the `feedback` digest show them",
    )
    slack_stream: bool = Field(
        True,
        description="Stream answers into Slack threads with Slack's streaming methods "
        "(`chat.startStream`); a workspace that refuses them gets a message edited at most "
        "once a second instead",
    )
    slack_assistant_status: bool = Field(
        True,
        description="Show Slack's 'is thinking…' status (`assistant.threads.setStatus`) until "
        "the first words of an answer arrive",
    )
    discord_token: SecretStr | None = Field(
        None,
        description="Discord bot token; `threadline worker` (and `run`) serve Discord when it "
        "is set",
    )
    discord_api_url: str | None = Field(
        None,
        description="Discord REST base (proxies, tests); `/api/v10` is appended when missing. "
        "The gateway URL is then taken from that server's `GET /gateway/bot`; default: "
        "Discord's API",
    )
    discord_guild_ids: Annotated[tuple[int, ...], NoDecode] = Field(
        (),
        description="Comma-separated server ids: sync `/threadline` to these servers only "
        "(updates show at once) instead of globally",
    )
    discord_upload_limit: int = Field(
        DEFAULT_DISCORD_UPLOAD_LIMIT,
        description="Largest file attached to an answer (bytes, or `KB`/`MB` in 1,024s); never "
        "above what the server's boost level allows; larger files are refused with a message",
    )
    discord_stream: bool = Field(
        True,
        description="Write answers into their Discord message as they come (edited at most once "
        "a second, continued before 2,000 characters); off: post each answer when finished",
    )
    discord_shard_count: str | None = Field(
        None,
        description="Empty: one gateway connection. `auto`: discord.py's auto-sharded client in "
        "this process. A number: that many shards in total, over all worker processes",
    )
    # After validation both names hold the count.
    discord_shards: str | None = Field(
        None,
        description="The older name of `DISCORD_SHARD_COUNT`, still read; both set to different "
        "values is an error",
    )
    discord_shard_ids: Annotated[tuple[int, ...], NoDecode] = Field(
        (),
        description="With a numeric `DISCORD_SHARD_COUNT`: the shards this process runs (e.g. "
        "`0,1`); default all of them. Only the process running shard 0 syncs commands",
    )

    @classmethod
    def settings_customise_sources(
        cls,
        settings_cls: type[BaseSettings],
        init_settings: PydanticBaseSettingsSource,
        env_settings: PydanticBaseSettingsSource,
        dotenv_settings: PydanticBaseSettingsSource,
        file_secret_settings: PydanticBaseSettingsSource,
    ) -> tuple[PydanticBaseSettingsSource, ...]:
        return (
            init_settings,
            env_settings,
            dotenv_settings,
            SettingsFileSource(settings_cls, config_file()),
        )

    @field_validator(
        "llm_base_url",
        "slack_api_url",
        "discord_api_url",
        "embeddings_url",
        "qdrant_url",
        "tts_base_url",
        mode="before",
    )
    @classmethod
    def _url(cls, value: object, info: Any) -> str | None:
        return clean_url(value, info.field_name.upper())

    @field_validator(
        "llm_api_key",
        "embeddings_api_key",
        "qdrant_api_key",
        "tts_api_key",
        "slack_bot_token",
        "slack_signing_secret",
        "slack_app_token",
        "discord_token",
        mode="before",
    )
    @classmethod
    def _secret(cls, value: object, info: Any) -> str | None:
        return clean_secret(value, info.field_name.upper())

    @field_validator("discord_guild_ids", "discord_shard_ids", mode="before")
    @classmethod
    def _id_list(cls, value: object, info: Any) -> tuple[int, ...]:
        return parse_id_list(value, info.field_name.upper())

    @field_validator("forge_hosts", mode="before")
    @classmethod
    def _forge_hosts(cls, value: object) -> object:
        return parse_forge_hosts(value) if isinstance(value, str) else value

    @field_validator("skills_dirs", mode="before")
    @classmethod
    def _paths(cls, value: object) -> tuple[Path, ...]:
        if value is None:
            return ()
        items = value.split(",") if isinstance(value, str) else value
        if not isinstance(items, list | tuple):
            raise ValueError("THREADLINE_SKILLS_DIRS must be a comma-separated list of folders")
        return tuple(Path(str(i).strip()) for i in items if str(i).strip())

    @field_validator("discord_upload_limit", mode="before")
    @classmethod
    def _upload_limit(cls, value: object) -> int:
        return parse_size(value, "DISCORD_UPLOAD_LIMIT")

    @field_validator("discord_shard_count", "discord_shards", mode="before")
    @classmethod
    def _shards(cls, value: object, info: Any) -> str | None:
        text = str(value).strip().lower() if value is not None else ""
        if not text:
            return None
        if text != "auto" and not (text.isdigit() and int(text) >= 1):
            name = info.field_name.upper()
            raise ValueError(f'{name} must be "auto" or a shard count (1 or more)')
        return str(int(text)) if text.isdigit() else text

    @field_validator("llm_model", "llm_provider", "tts_voice", mode="before")
    @classmethod
    def _name(cls, value: object) -> str | None:
        text = str(value).strip() if value is not None else ""
        return text or None

    @field_validator("database_url", mode="before")
    @classmethod
    def _database_url(cls, value: object) -> str | None:
        text = str(value).strip() if value is not None else ""
        return text or None

    @field_validator("mcp", mode="after")
    @classmethod
    def _mcp_names(cls, value: dict[str, McpServerSettings]) -> dict[str, McpServerSettings]:
        check_server_names(list(value))
        return value

    @model_validator(mode="after")
    def _check_llm(self) -> Settings:
        self.llm()  # resolve once so that a broken LLM setup fails at start-up
        return self

    @model_validator(mode="after")
    def _check_embeddings(self) -> Settings:
        if self.embeddings_provider != "openai":
            return self
        missing = [
            name
            for name, value in (
                ("EMBEDDINGS_URL", self.embeddings_url),
                ("EMBEDDINGS_MODEL", self.embeddings_model),
                ("EMBEDDINGS_DIMENSION", self.embeddings_dimension),
            )
            if not value
        ]
        if missing:
            raise ValueError(f"EMBEDDINGS_PROVIDER=openai needs {', '.join(missing)}")
        return self

    @model_validator(mode="after")
    def _check_tts(self) -> Settings:
        if self.tts_engine == "openai" and not (self.tts_base_url or self.tts_api_key):
            raise ValueError("TTS_ENGINE=openai needs TTS_BASE_URL (or TTS_API_KEY for OpenAI)")
        return self

    @property
    def tts_engine_resolved(self) -> Literal["piper", "espeak", "openai"]:
        if self.tts_engine == "auto":
            return "openai" if self.tts_base_url else "piper"
        return self.tts_engine

    @model_validator(mode="after")
    def _check_shards(self) -> Settings:
        count, old = self.discord_shard_count, self.discord_shards
        if count is not None and old is not None and count != old:
            raise ValueError(
                f"DISCORD_SHARD_COUNT={count} and DISCORD_SHARDS={old} disagree: set only "
                "DISCORD_SHARD_COUNT (DISCORD_SHARDS is its older name)"
            )
        self.discord_shard_count = self.discord_shards = count or old
        if not self.discord_shard_ids:
            return self
        if self.discord_shard_count is None or not self.discord_shard_count.isdigit():
            raise ValueError(
                "DISCORD_SHARD_IDS needs a numeric DISCORD_SHARD_COUNT (the total shard count)"
            )
        total = int(self.discord_shard_count)
        if any(i >= total for i in self.discord_shard_ids):
            raise ValueError(f"DISCORD_SHARD_IDS must be below DISCORD_SHARD_COUNT ({total})")
        return self

    @property
    def database(self) -> str:
        return self.database_url or f"sqlite:///{self.data_dir.resolve() / 'threadline.db'}"

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


def load_settings(**overrides: Any) -> Settings:
    path = config_file()
    if path.is_dir():
        raise SettingsError(
            f"Threadline cannot start: the settings file {path} (THREADLINE_CONFIG) is a "
            "directory; name a TOML file"
        )
    if not path.is_file():
        # The default file ships with the package; a missing one was named on purpose.
        raise SettingsError(
            f"Threadline cannot start: the settings file {path} (THREADLINE_CONFIG) does not exist"
        )
    try:
        return Settings(**overrides)
    except ValidationError as exc:
        raise SettingsError(describe_error(exc, path)) from None
    except UnicodeDecodeError:
        # The settings file reports its own decoding errors (SettingsFileSource); the other file
        # read here is `.env`, by python-dotenv, whose error names no file.
        dotenv = Path(str(Settings.model_config.get("env_file") or ".env")).resolve()
        raise SettingsError(
            f"Threadline cannot start: the .env file {dotenv} is not UTF-8 text (save it as UTF-8)"
        ) from None
