"""The operator web console (bot/console): its settings, kept apart from the rest of
`config.settings.Settings`, which inherits them."""

from __future__ import annotations

from pydantic import Field, SecretStr, field_validator, model_validator
from pydantic_settings import BaseSettings

from config.values import alias, clean_secret

# Sessions are signed with the secret: shorter ones are guessable offline from one cookie.
MIN_SECRET_CHARS = 32


class ConsoleSettings(BaseSettings):
    console: bool = Field(
        False,
        validation_alias=alias("THREADLINE_CONSOLE", "console"),
        description="Serve the operator web console under `/console` (`threadline serve`, and "
        "`threadline run` when it serves Slack over HTTP); needs `THREADLINE_CONSOLE_SECRET`",
    )
    console_secret: SecretStr | None = Field(
        None,
        validation_alias=alias("THREADLINE_CONSOLE_SECRET", "console_secret"),
        description="Signs the console's session cookies: at least 32 random characters "
        "(`openssl rand -hex 32`); every process serving the console needs the same one",
    )
    console_url: str = Field(
        "http://127.0.0.1:8080",
        validation_alias=alias("THREADLINE_CONSOLE_URL", "console_url"),
        description="The address people open the console at, without `/console`; sign-in "
        "links start with it",
    )

    @field_validator("console_secret", mode="before")
    @classmethod
    def _console_secret(cls, value: object) -> str | None:
        return clean_secret(value, "THREADLINE_CONSOLE_SECRET")

    @field_validator("console_url", mode="before")
    @classmethod
    def _console_url(cls, value: object) -> object:
        return value.rstrip("/") if isinstance(value, str) else value

    @model_validator(mode="after")
    def _check_console(self) -> ConsoleSettings:
        if not self.console:
            return self
        secret = self.console_secret
        if secret is None or len(secret.get_secret_value()) < MIN_SECRET_CHARS:
            raise ValueError(
                "THREADLINE_CONSOLE=true needs THREADLINE_CONSOLE_SECRET, at least "
                f"{MIN_SECRET_CHARS} random characters (for example `openssl rand -hex 32`)"
            )
        return self
