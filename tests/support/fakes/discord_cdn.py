"""The fake Discord's CDN: the files people attach, served on `/attachments/...` of the fake's
own origin with signed URLs, as `cdn.discordapp.com` serves them.

    url = fake.cdn.store("123/456/app.log", data, "text/plain")  # the attachment's `url`
    fake.cdn.requests        # every download asked for (path and query), in order
    fake.cdn.headers         # the headers each download was asked with

A download whose `hm` signature is not the one handed out, or of a file that is gone, is
answered 404 as Discord's CDN answers it. Knobs for the unhappy paths: `chunked` (no
Content-Length: a stream of unknown length), `held` (downloads wait for the event), and
`redirect` (a 302 elsewhere).
"""

from __future__ import annotations

import asyncio
import secrets
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field

from aiohttp import web

from tests.support.fakes.discord_http import Call

CHUNK = 16 * 1024


@dataclass
class Stored:
    data: bytes
    content_type: str | None
    signature: str


@dataclass
class FakeCdn:
    origin: Callable[[], str]  # the fake's origin, known once it listens
    changed: Callable[[], Awaitable[None]]  # wakes the fake's waiters
    files: dict[str, Stored] = field(default_factory=dict)
    requests: list[Call] = field(default_factory=list)
    headers: list[dict[str, str]] = field(default_factory=list)
    chunked: bool = False
    held: asyncio.Event | None = None
    redirect: str | None = None

    def store(self, path: str, data: bytes, content_type: str | None) -> str:
        """Keep a file at `path`; returns its signed URL (`ex`, `is`, `hm` as Discord's)."""
        signature = secrets.token_hex(16)
        self.files[path] = Stored(data, content_type, signature)
        return f"{self.origin()}/attachments/{path}?ex=6790f1a4&is=678fa024&hm={signature}&"

    def route(self, app: web.Application) -> None:
        app.router.add_get("/attachments/{path:.*}", self.download)

    async def download(self, request: web.Request) -> web.StreamResponse:
        path = request.match_info["path"]
        call = Call("GET", f"/attachments/{path}", dict(request.query), None, [], time.monotonic())
        self.requests.append(call)
        self.headers.append(dict(request.headers))
        await self.changed()
        stored = self.files.get(path)
        if stored is None or request.query.get("hm") != stored.signature:
            return web.Response(status=404, text="This content is no longer available.")
        if self.held is not None:
            await self.held.wait()
        if self.redirect is not None:
            return web.Response(status=302, headers={"Location": self.redirect})
        content_type = stored.content_type or "application/octet-stream"
        if not self.chunked:
            return web.Response(body=stored.data, headers={"Content-Type": content_type})
        response = web.StreamResponse(headers={"Content-Type": content_type})
        response.enable_chunked_encoding()
        await response.prepare(request)
        try:
            for start in range(0, len(stored.data), CHUNK):
                await response.write(stored.data[start : start + CHUNK])
            await response.write_eof()
        except ConnectionError:
            pass  # the client stopped reading (a download cut short)
        return response


__all__ = ["FakeCdn", "Stored"]
