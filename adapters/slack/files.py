"""Files attached to Slack messages, handed to core as `IncomingFile`s and downloaded only when
core asks (`IncomingFile.fetch`).

A download goes only to Slack's file host (`https://files.slack.com`) or, for a test or a
proxy, to the origin of the configured `SLACK_API_URL` — the one place the bot token is sent
anyway. Any other URL (a file shared from Google Drive, a forged event) is refused before a
request is made. Redirects are followed by hand, each hop checked the same way; the body is
read in chunks and given up past `max_bytes`; the whole download is bounded by `timeout`.
Neither the token nor a URL is ever logged or put in an error message.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, cast

from yarl import URL

from adapters.slack.errors import error_code
from adapters.slack.web import api_base_url
from core import messages
from core.request import FileFetchError, IncomingFile

if TYPE_CHECKING:
    import aiohttp
    from slack_sdk.web.async_client import AsyncWebClient

    from adapters.slack.payloads import SlackFile

log = logging.getLogger("threadline.slack")

FILE_HOST = "files.slack.com"
CHUNK = 64 * 1024
MAX_REDIRECTS = 3
_REDIRECTS = frozenset({301, 302, 303, 307, 308})
# Files Slack has no bytes of for us: deleted ones, links to files hosted elsewhere, and old
# files a free workspace no longer shows.
_NO_BYTES = frozenset({"tombstone", "external", "hidden_by_limit"})
MAX_FILES = 20  # of one message, given to core (and looked up with files.info)


@dataclass(frozen=True, slots=True)
class Origin:
    scheme: str
    host: str
    port: int | None

    @classmethod
    def of(cls, url: str) -> Origin | None:
        try:
            parsed = URL(url)
        except (ValueError, TypeError):
            return None
        if not parsed.absolute or not parsed.host or parsed.user or parsed.password:
            return None  # relative, or with credentials in it (`user@host`)
        return cls(parsed.scheme.lower(), parsed.host.lower(), parsed.port)


class FileHost:
    """Downloads files from Slack's file host with the bot token. `session` is the adapter's
    HTTP session (aiohttp, as slack_sdk's async client uses)."""

    def __init__(self, session: aiohttp.ClientSession, token: str, api_url: str | None) -> None:
        self._session = session
        self._token = token
        self.allowed = {Origin("https", FILE_HOST, 443)}
        if api_url:
            configured = Origin.of(api_base_url(api_url))
            if configured is not None:
                self.allowed.add(configured)

    def allows(self, url: str) -> bool:
        return Origin.of(url) in self.allowed

    async def complete(self, client: AsyncWebClient, files: list[SlackFile]) -> list[SlackFile]:
        """The message's files with the partial ones (`file_access: check_file_info`) looked up
        with `files.info`; one Slack will not describe is left out (logged)."""
        from slack_sdk.errors import SlackApiError

        out: list[SlackFile] = []
        for f in files[:MAX_FILES]:
            if f.get("file_access") == "check_file_info" and f.get("id"):
                try:
                    found = await client.files_info(file=f["id"])
                except SlackApiError as exc:
                    log.warning("Slack: files.info refused a file (%s)", error_code(exc))
                    continue
                f = cast("SlackFile", found.get("file") or {})
            out.append(f)
        return out

    def incoming(self, files: list[SlackFile]) -> tuple[IncomingFile, ...]:
        """The message's files as core receives them (nothing is downloaded here)."""
        out = []
        for f in files[:MAX_FILES]:
            if f.get("mode") in _NO_BYTES or f.get("file_access") == "check_file_info":
                continue
            name = f.get("name") or f.get("title") or f.get("id") or "file"
            mime = f.get("mimetype") or "application/octet-stream"
            url = f.get("url_private_download") or f.get("url_private") or ""
            out.append(
                IncomingFile(
                    name=name,
                    size=f.get("size"),
                    mime_type=mime,
                    fetch=SlackFetch(self, name, url, mime),
                    voice_message=f.get("subtype") == "slack_audio" or mime.startswith("audio/"),
                )
            )
        return tuple(out)

    async def download(
        self, name: str, url: str, mime_type: str, *, max_bytes: int, seconds: float
    ) -> bytes:
        import aiohttp

        if not self.allows(url):
            log.warning("Slack: not downloading %s: its URL is not on Slack's file host", name)
            raise FileFetchError(messages.incoming_file_not_from_platform(name, "Slack"))
        try:
            async with asyncio.timeout(seconds):
                data = await self._get(name, url, mime_type, max_bytes)
        except TimeoutError:
            raise FileFetchError(messages.incoming_file_too_slow(name, seconds)) from None
        except (aiohttp.ClientError, RuntimeError, OSError) as exc:  # RuntimeError: closed
            log.warning("Slack: downloading %s failed (%s)", name, type(exc).__name__)
            reason = "the connection to Slack failed"
            raise FileFetchError(messages.incoming_file_unreadable(name, reason)) from None
        log.debug("Slack: downloaded %s (%d bytes)", name, len(data))
        return data

    async def _get(self, name: str, url: str, mime_type: str, max_bytes: int) -> bytes:
        headers = {"Authorization": f"Bearer {self._token}", "Accept-Encoding": "identity"}
        for _ in range(MAX_REDIRECTS + 1):
            if not self.allows(url):
                log.warning("Slack: %s redirected away from Slack's file host; not followed", name)
                raise FileFetchError(messages.incoming_file_not_from_platform(name, "Slack"))
            async with self._session.get(url, headers=headers, allow_redirects=False) as resp:
                if resp.status in _REDIRECTS and resp.headers.get("Location"):
                    url = str(resp.url.join(URL(resp.headers["Location"])))
                    continue
                if resp.status != 200:
                    reason = f"Slack answered HTTP {resp.status}"
                    raise FileFetchError(messages.incoming_file_unreadable(name, reason))
                if resp.content_type == "text/html" and "html" not in mime_type:
                    # What Slack serves a token without `files:read`: its sign-in page.
                    reason = "Slack answered with a sign-in page; the app needs files:read"
                    raise FileFetchError(messages.incoming_file_unreadable(name, reason))
                if resp.content_length is not None and resp.content_length > max_bytes:
                    raise FileFetchError(messages.incoming_file_too_large(name, max_bytes))
                data = bytearray()
                async for chunk in resp.content.iter_chunked(CHUNK):
                    data += chunk
                    if len(data) > max_bytes:
                        raise FileFetchError(messages.incoming_file_too_large(name, max_bytes))
                return bytes(data)
        raise FileFetchError(messages.incoming_file_unreadable(name, "too many redirects"))


@dataclass(frozen=True, slots=True)
class SlackFetch:
    """`IncomingFile.fetch` for one Slack file (the URL never shows in a repr)."""

    host: FileHost = field(repr=False)
    name: str
    url: str = field(repr=False)
    mime_type: str

    def __call__(self, *, max_bytes: int, timeout: float) -> Awaitable[bytes]:
        return self.host.download(
            self.name, self.url, self.mime_type, max_bytes=max_bytes, seconds=timeout
        )
