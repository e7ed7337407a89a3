"""The chat platforms' settings (Slack and Discord adapters), kept apart from the rest of
`config.settings.Settings`, which inherits them."""

from __future__ import annotations

from typing import Annotated, Any

from pydantic import Field, SecretStr, field_validator, model_validator
from pydantic_settings import BaseSettings, NoDecode

from config.values import (
    DEFAULT_DISCORD_UPLOAD_LIMIT,
    clean_secret,
    clean_url,
    parse_id_list,
    parse_size,
)


class ChatPlatformSettings(BaseSettings):
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

    @field_validator("slack_api_url", "discord_api_url", mode="before")
    @classmethod
    def _platform_url(cls, value: object, info: Any) -> str | None:
        return clean_url(value, info.field_name.upper())

    @field_validator(
        "slack_bot_token", "slack_signing_secret", "slack_app_token", "discord_token", mode="before"
    )
    @classmethod
    def _platform_secret(cls, value: object, info: Any) -> str | None:
        return clean_secret(value, info.field_name.upper())

    @field_validator("discord_guild_ids", "discord_shard_ids", mode="before")
    @classmethod
    def _id_list(cls, value: object, info: Any) -> tuple[int, ...]:
        return parse_id_list(value, info.field_name.upper())

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

    @model_validator(mode="after")
    def _check_shards(self) -> ChatPlatformSettings:
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
