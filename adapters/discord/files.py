"""Files attached to a Discord message or command, handed to core as `IncomingFile`s.

Nothing is downloaded when a message arrives: each file carries a `CdnFetch` that core calls
if it wants the bytes. A fetch reaches only Discord's CDN (`cdn.discordapp.com`,
`media.discordapp.net`, over HTTPS) or the origin configured in its place (the
`DISCORD_API_URL` stand-in: a proxy, the fake in tests); any other URL fails before a
connection is made. It follows no redirects, sends no credentials (CDN URLs are signed
themselves), reads at most `max_bytes` and gives up after `timeout` seconds. Signed URLs
carry their signature in the query string, so only scheme, host and path are ever logged.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urlsplit

import aiohttp
import yarl

from adapters.discord.lib import discord
from core import messages
from core.request import FileFetchError, IncomingFile

log = logging.getLogger("threadline.discord")

# Discord's CDN, as the origins (scheme, host, port) its attachment URLs use.
CDN_ORIGINS: tuple[str, ...] = ("https://cdn.discordapp.com", "https://media.discordapp.net")
IS_VOICE_MESSAGE = 1 << 13  # message flag: a recorded voice message
CHUNK = 64 * 1024
DEFAULT_MIME = "application/octet-stream"
PLATFORM_NAME = "Discord"
UNAVAILABLE = "Discord did not serve it; it may have been deleted"
IDENTITY = {"Accept-Encoding": "identity"}

Origin = tuple[str, str, int]


def parse(url: str) -> yarl.URL | None:
    try:
        return yarl.URL(url)
    except (TypeError, ValueError):
        return None


def origin_of(url: str | yarl.URL | None) -> Origin | None:
    """(scheme, host, port) of `url` as aiohttp will read it (yarl parses both), the port
    made explicit; None for what is not an absolute http(s) URL."""
    parsed = parse(url) if isinstance(url, str) else url
    if parsed is None or not parsed.absolute or parsed.scheme not in ("http", "https"):
        return None
    if not parsed.host or parsed.port is None:
        return None
    return parsed.scheme, parsed.host.lower(), parsed.port


def file_origins(api_url: str | None) -> tuple[str, ...]:
    """Where attachments may be fetched from: Discord's CDN, and the origin of
    `DISCORD_API_URL` when one is set (a stand-in for Discord serves its own files)."""
    if not api_url:
        return CDN_ORIGINS
    parts = urlsplit(api_url)
    return (*CDN_ORIGINS, f"{parts.scheme}://{parts.netloc}")


def redacted(url: str | yarl.URL) -> str:
    """A URL for logs: scheme, host and path, never the signed query string."""
    parsed = parse(url) if isinstance(url, str) else url
    if parsed is None or not parsed.absolute:
        return "(not a web URL)"
    return str(parsed.with_user(None).with_query(None).with_fragment(None))


@dataclass(frozen=True, slots=True)
class CdnFetch:
    """Downloads one attachment from Discord's CDN (`core.request.Fetch`)."""

    name: str
    url: str = field(repr=False)  # signed: never shown
    allowed: frozenset[Origin] = field(repr=False)
    size: int | None = None  # what Discord says the file weighs

    def __call__(self, *, max_bytes: int, timeout: float) -> Awaitable[bytes]:
        return self._fetch(max_bytes, timeout)

    async def _fetch(self, max_bytes: int, seconds: float) -> bytes:
        url = parse(self.url)
        if url is None or origin_of(url) not in self.allowed:
            log.warning("Discord: not fetching %s from %s", self.name, _host(self.url))
            raise FileFetchError(messages.incoming_file_not_from_platform(self.name, PLATFORM_NAME))
        if self.size is not None and self.size > max_bytes:
            raise FileFetchError(messages.incoming_file_too_large(self.name, max_bytes))
        try:
            async with asyncio.timeout(seconds):
                return await self._download(url, max_bytes)
        except TimeoutError:
            raise FileFetchError(messages.incoming_file_too_slow(self.name, seconds)) from None
        except aiohttp.ClientError as exc:
            log.info("Discord: fetching %s failed (%s)", redacted(self.url), type(exc).__name__)
            unreadable = messages.incoming_file_unreadable(self.name, UNAVAILABLE)
            raise FileFetchError(unreadable) from None

    async def _download(self, url: yarl.URL, max_bytes: int) -> bytes:
        # A session of its own: no bot token, no cookies, no proxy settings from the
        # environment, and no redirects (a 3xx is an error, wherever it points). The bytes
        # are asked for as stored (nothing to decompress past the cap).
        async with (
            aiohttp.ClientSession(trust_env=False) as session,
            session.get(
                url, allow_redirects=False, auto_decompress=False, headers=IDENTITY
            ) as response,
        ):
            if response.status != 200:
                log.info(
                    "Discord: fetching %s answered HTTP %s", redacted(self.url), response.status
                )
                raise FileFetchError(messages.incoming_file_unreadable(self.name, UNAVAILABLE))
            if response.content_length is not None and response.content_length > max_bytes:
                raise FileFetchError(messages.incoming_file_too_large(self.name, max_bytes))
            data = bytearray()
            async for chunk in response.content.iter_chunked(CHUNK):
                data += chunk
                if len(data) > max_bytes:  # stop reading: the rest is never downloaded
                    raise FileFetchError(messages.incoming_file_too_large(self.name, max_bytes))
            return bytes(data)


def _host(url: str) -> str:
    origin = origin_of(url)
    return origin[1] if origin else "an address that is not a web URL"


def incoming_file(
    name: str,
    size: int | None,
    content_type: str | None,
    url: str,
    *,
    origins: Iterable[str],
    voice_message: bool = False,
) -> IncomingFile:
    allowed = frozenset(o for o in map(origin_of, origins) if o is not None)
    return IncomingFile(
        name=name,
        size=size,
        mime_type=(content_type or DEFAULT_MIME).split(";")[0].strip() or DEFAULT_MIME,
        fetch=CdnFetch(name, url, allowed, size),
        voice_message=voice_message,
    )


def message_files(message: discord.Message, origins: Iterable[str]) -> tuple[IncomingFile, ...]:
    """The attachments of a message (a voice message's one audio file is marked), then those
    of the message it replies to in the same channel: "@Threadline what is wrong here?" as a
    reply to someone's log asks about that log."""
    listed = tuple(origins)
    files = _attachments(message, listed)
    reference = message.reference
    replied = reference.resolved if reference is not None else None
    if isinstance(replied, discord.Message) and replied.channel.id == message.channel.id:
        files += _attachments(replied, listed)
    return files


def _attachments(message: discord.Message, origins: tuple[str, ...]) -> tuple[IncomingFile, ...]:
    voice = bool(message.flags.value & IS_VOICE_MESSAGE)
    return tuple(
        incoming_file(
            a.filename, a.size, a.content_type, a.url, origins=origins, voice_message=voice
        )
        for a in message.attachments
    )


def resolved_files(
    option_ids: Iterable[str], resolved: Mapping[str, Any], origins: Iterable[str]
) -> tuple[IncomingFile, ...]:
    """The attachments an application command's attachment options name, from the
    interaction's `resolved.attachments` (raw Discord JSON)."""
    listed = tuple(origins)
    out: list[IncomingFile] = []
    for attachment_id in option_ids:
        raw = resolved.get(str(attachment_id))
        if not isinstance(raw, Mapping) or not raw.get("url"):
            continue
        size = raw.get("size")
        out.append(
            incoming_file(
                str(raw.get("filename") or "file"),
                int(size) if isinstance(size, int) else None,
                raw.get("content_type"),
                str(raw["url"]),
                origins=listed,
            )
        )
    return tuple(out)


__all__ = [
    "CDN_ORIGINS",
    "CdnFetch",
    "file_origins",
    "incoming_file",
    "message_files",
    "redacted",
    "resolved_files",
]
