"""Typed settings from the environment, `.env` and `config/threadline.toml`.

Precedence: explicit arguments > environment > `.env` > the TOML file > defaults. Keys in the
TOML file are the environment names in lower case (`llm_model = "..."`), plus a `[providers.X]`
table per named LLM provider. Errors name the setting to fix and never print secret values.

The general fields are here. Each feature's fields are a class of their own that `Settings`
inherits: the model endpoints (`config.llm`), attachments, the console, voice and the chat
platforms. The settings file's reading (`config.source`), single values' parsing
(`config.values`), providers (`config.providers`) and error reporting (`config.errors`) each
have a module too.
"""

from __future__ import annotations

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
from config.llm import ModelSettings
from config.platforms import ChatPlatformSettings
from config.providers import ProviderSettings, ResolvedProvider
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
)
from config.voice import VoiceSettings
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


class Settings(
    ModelSettings, AttachmentSettings, ConsoleSettings, VoiceSettings, ChatPlatformSettings
):
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
    search_linger: float = Field(
        300.0,
        ge=0,
        le=86_400,
        validation_alias=_alias("THREADLINE_SEARCH_LINGER", "search_linger"),
        description="Seconds a `threadline hold-search` started by a `threadline search` in a "
        "shell (no bot running, embedded store) keeps the index and the model open for the next "
        "searches, after the last one; it lets the store go when a bot starts. 0: each search "
        "opens them itself",
    )
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

    feedback: bool = Field(
        True,
        validation_alias=_alias("THREADLINE_FEEDBACK", "feedback"),
        description="Put 👍/👎 buttons under every answer and record ratings (with the answer's "
        "model, skills and tools, never its text); `/feedback` and the `feedback` digest show them",
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

    @field_validator("embeddings_url", "qdrant_url", mode="before")
    @classmethod
    def _url(cls, value: object, info: Any) -> str | None:
        return clean_url(value, info.field_name.upper())

    @field_validator("embeddings_api_key", "qdrant_api_key", mode="before")
    @classmethod
    def _secret(cls, value: object, info: Any) -> str | None:
        return clean_secret(value, info.field_name.upper())

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

    @property
    def database(self) -> str:
        return self.database_url or f"sqlite:///{self.data_dir.resolve() / 'threadline.db'}"


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
