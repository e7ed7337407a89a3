"""The Discord adapter's settings, and the error that stops it at start-up."""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any

from adapters.discord.files import CDN_ORIGINS, file_origins
from adapters.pacing import Pacing
from config.settings import DEFAULT_DISCORD_UPLOAD_LIMIT
from core.errors import ConfigError

if TYPE_CHECKING:
    from config.settings import Settings


class DiscordStartupError(ConfigError):
    """The Discord client cannot run with these settings or could not connect; `str()` says
    why, without secrets. The worker exits non-zero so its supervisor restarts it."""


@dataclass(frozen=True, slots=True)
class DiscordConfig:
    token: str = field(repr=False)  # never in logs or tracebacks
    api_url: str | None = None  # DISCORD_API_URL: REST base; the gateway follows it
    guild_ids: tuple[int, ...] = ()  # sync app commands to these guilds instead of globally
    upload_limit: int = DEFAULT_DISCORD_UPLOAD_LIMIT
    shards: str | None = None  # None: one connection; "auto" or "N": auto-sharded client
    shard_ids: tuple[int, ...] = ()
    guild_ready_timeout: float = 2.0  # discord.py waits this long after the last GUILD_CREATE
    identify_delay: float = 5.0  # pause before a re-identify (Discord's identify rate limit)
    connect_timeout: float = 60.0  # the first READY must arrive within this
    typing_every: float = 8.0
    progress_every: float = 1.0  # at most one progress-note edit per interval
    # Answers shown while they are written (False: posted when finished, as before), paced
    # as adapters/pacing says: at most one edit a second, the first words within half a second.
    stream: bool = True
    pacing: Pacing = field(default_factory=Pacing)
    shutdown_grace: float = 30.0  # seconds in-flight answers may take to finish on stop
    # Where attached files may be downloaded from (`files`): Discord's CDN, plus the origin of
    # DISCORD_API_URL when set (a stand-in for Discord serves its own files).
    file_origins: tuple[str, ...] = CDN_ORIGINS
    # Earlier messages of a thread read for context: at most this many, newest kept.
    history_limit: int = 1_000

    @classmethod
    def from_settings(cls, settings: Settings, **tuning: Any) -> DiscordConfig:
        if settings.discord_token is None:
            raise DiscordStartupError("DISCORD_TOKEN is not set: the Discord adapter needs it")
        config = cls(
            token=settings.discord_token.get_secret_value(),
            api_url=settings.discord_api_url,
            guild_ids=settings.discord_guild_ids,
            upload_limit=settings.discord_upload_limit,
            shards=settings.discord_shard_count,
            shard_ids=settings.discord_shard_ids,
            stream=settings.discord_stream,
            file_origins=file_origins(settings.discord_api_url),
        )
        return replace(config, **tuning)

    @property
    def sharded(self) -> bool:
        return self.shards is not None

    @property
    def syncs_commands(self) -> bool:
        """With shards split over processes, only the process with shard 0 syncs commands."""
        return not self.shard_ids or 0 in self.shard_ids


__all__ = ["DiscordConfig", "DiscordStartupError"]
