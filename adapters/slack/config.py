"""The Slack adapter's settings, and the errors that stop it at start-up."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from adapters.slack.web import SlackConfigError, api_base_url
from core.errors import ConfigError

Mode = Literal["http", "socket"]


class SlackStartupError(ConfigError):
    """Slack cannot work with these settings; `str()` says why, without secrets."""


@dataclass(frozen=True, slots=True)
class SlackConfig:
    bot_token: str | None
    signing_secret: str | None = None
    app_token: str | None = None
    api_url: str | None = None
    progress_after: float = 3.0  # seconds of work before a progress line appears
    progress_interval: float = 1.0  # at most one edit of it per interval
    max_retry_wait: float = 60.0  # longest Retry-After honoured on a 429
    delivery_backoff: float = 1.0  # first pause before re-delivering after a transient failure
    stream: bool = True  # Slack's streaming methods (SLACK_STREAM); off: a message edited
    assistant_status: bool = True  # "is thinking…" until the first words (SLACK_ASSISTANT_STATUS)
    stream_interval: float = 0.25  # at most one stream call per interval after the first words
    edit_interval: float = 1.0  # at most one edit of a fallback message per interval
    # Stream calls and edits into one channel, all answers there together, per second (0: off).
    channel_calls_per_second: float = 10.0

    def check(self, mode: Mode) -> None:
        """Fail fast with a message naming the variable (bolt would accept the request and
        answer 500 for an empty signing secret, or drop events after a failed auth.test)."""
        if not self.bot_token:
            raise SlackConfigError(
                "SLACK_BOT_TOKEN is not set: the Slack adapter needs the bot token (xoxb-...)"
            )
        if mode == "http" and not self.signing_secret:
            raise SlackConfigError(
                "SLACK_SIGNING_SECRET is empty: Slack HTTP mode verifies every request with it "
                "(Basic Information > App Credentials in the Slack app settings)"
            )
        if mode == "socket" and not (self.app_token or "").startswith("xapp-"):
            raise SlackConfigError(
                "SLACK_APP_TOKEN must be an app-level token (xapp-...) with connections:write "
                "for Socket Mode"
            )
        api_base_url(self.api_url)


__all__ = ["Mode", "SlackConfig", "SlackConfigError", "SlackStartupError"]
