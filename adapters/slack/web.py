"""The Slack Web API client Threadline posts with: base URL, shared session, retry handlers.

slack_sdk's default handlers retry connection errors only, and retry them for every method.
Here a 429 is retried after `Retry-After` (Slack refused the call, nothing was posted), and a
connection that broke *after* the request went out is retried only for methods that are safe
to repeat: re-sending `chat.postMessage` after a lost response could post twice, so the
delivery code reconciles those instead (see `adapters.slack.delivery`).
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Mapping
from typing import TYPE_CHECKING

from slack_sdk.http_retry.async_handler import AsyncRetryHandler
from slack_sdk.http_retry.builtin_async_handlers import AsyncRateLimitErrorRetryHandler
from slack_sdk.http_retry.request import HttpRequest
from slack_sdk.http_retry.response import HttpResponse
from slack_sdk.http_retry.state import RetryState
from slack_sdk.web.async_client import AsyncWebClient

from adapters.slack.logs import WEB_LOGGER, quiet_logger
from core.errors import ConfigError

if TYPE_CHECKING:
    import aiohttp

log = logging.getLogger("threadline.slack")

DEFAULT_API_URL = "https://slack.com/api/"

# Calls that create or add something: repeating one after a lost response may create it
# twice (a stream's start, or its words appended twice).
NOT_REPEATABLE = frozenset(
    {
        "chat.postMessage",
        "chat.postEphemeral",
        "files.completeUploadExternal",
        "chat.startStream",
        "chat.appendStream",
        "chat.stopStream",
    }
)


class SlackConfigError(ConfigError, ValueError):
    """The Slack settings cannot work; `str()` says which variable to fix (no secrets)."""


def api_base_url(url: str | None) -> str:
    """`SLACK_API_URL` as slack_sdk needs it: ending in `/api/` (nothing in bolt reads it)."""
    if not url:
        return DEFAULT_API_URL
    base = url.rstrip("/") + "/"
    if not base.endswith("/api/"):
        raise SlackConfigError(
            "SLACK_API_URL must be the Web API base URL ending in /api/ "
            "(e.g. https://slack.com/api/)"
        )
    return base


def _method(request: HttpRequest) -> str:
    return request.url.rstrip("/").rsplit("/", 1)[-1]


class RateLimitRetry(AsyncRateLimitErrorRetryHandler):
    """slack_sdk's 429 retry, waiting what `Retry-After` asks but never longer than `max_wait`
    (a proxy's "retry in an hour" must not hold an answer), and reading fractional or
    malformed values instead of failing on them as slack_sdk's `int()` would."""

    def __init__(self, max_retry_count: int = 3, max_wait: float = 60.0) -> None:
        super().__init__(max_retry_count=max_retry_count)
        self.max_wait = max_wait

    async def prepare_for_next_attempt_async(
        self,
        *,
        state: RetryState,
        request: HttpRequest,
        response: HttpResponse | None = None,
        error: Exception | None = None,
    ) -> None:
        wait = retry_after(dict(response.headers) if response is not None else {})
        log.warning("Slack rate-limited %s; retrying in %.1f s", _method(request), wait)
        state.next_attempt_requested = True
        await asyncio.sleep(min(wait, self.max_wait))
        state.increment_current_attempt()


def retry_after(headers: Mapping[str, str | list[str]]) -> float:
    for name, value in headers.items():
        if name.lower() == "retry-after":
            raw = value[0] if isinstance(value, list) else value
            try:
                return max(0.0, float(raw))
            except ValueError:
                break
    return 1.0


class ConnectionRetry(AsyncRetryHandler):
    """Retry connection failures: always when nothing was sent (connect refused/failed),
    otherwise only for calls that are safe to repeat."""

    async def _can_retry_async(
        self,
        *,
        state: RetryState,
        request: HttpRequest,
        response: HttpResponse | None = None,
        error: Exception | None = None,
    ) -> bool:
        import aiohttp

        if error is None:
            return False
        if isinstance(error, aiohttp.ClientConnectorError):
            return True
        repeatable = _method(request) not in NOT_REPEATABLE and "/upload/" not in request.url
        return repeatable and isinstance(
            error, aiohttp.ServerDisconnectedError | aiohttp.ClientOSError
        )


def make_web_client(
    token: str | None,
    api_url: str | None,
    session: aiohttp.ClientSession | None,
    *,
    max_retry_wait: float = 60.0,
    timeout: int = 30,
) -> AsyncWebClient:
    return AsyncWebClient(
        token=token,
        base_url=api_base_url(api_url),
        session=session,
        timeout=timeout,
        retry_handlers=[RateLimitRetry(max_wait=max_retry_wait), ConnectionRetry()],
        logger=quiet_logger(WEB_LOGGER),
    )
