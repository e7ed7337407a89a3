"""The console's cross-cutting checks, each small: the security headers every response
carries, the signed session cookie (and the CSRF token inside it), and in-process rate limits.
"""

from __future__ import annotations

import hmac
import secrets
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import TYPE_CHECKING

from itsdangerous import BadSignature, URLSafeSerializer

if TYPE_CHECKING:
    from starlette.types import ASGIApp, Message, Receive, Scope, Send

COOKIE = "threadline_console"
COOKIE_PATH = "/console"
CSRF_FIELD = "csrf_token"
# Before sign-in there is no session to hold a CSRF token: the sign-in form's token is kept in a
# signed cookie of its own (double submit), so another site cannot sign a browser in as
# someone else by posting a link it holds.
SIGNIN_COOKIE = "threadline_console_signin"
SIGNIN_COOKIE_SECONDS = 600

HEADERS: dict[str, str] = {
    # No inline script anywhere, no framing, nothing from other origins.
    "content-security-policy": (
        "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; "
        "object-src 'none'; base-uri 'none'; form-action 'self'; frame-ancestors 'none'"
    ),
    "x-frame-options": "DENY",
    "referrer-policy": "no-referrer",
    "x-content-type-options": "nosniff",
    "cache-control": "no-store",
    "cross-origin-opener-policy": "same-origin",
}


class SecurityHeaders:
    """Adds `HEADERS` to every response of the app it wraps (pages, errors, static files)."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return

        async def with_headers(message: Message) -> None:
            if message["type"] == "http.response.start":
                names = {k.lower() for k, _ in message.get("headers", [])}
                extra = [
                    (k.encode(), v.encode()) for k, v in HEADERS.items() if k.encode() not in names
                ]
                message["headers"] = [*message.get("headers", []), *extra]
            await send(message)

        await self.app(scope, receive, with_headers)


@dataclass(frozen=True, slots=True)
class CookieSession:
    """What the signed cookie carries: the session's id (its row in SQL says whether it is
    still live) and the CSRF token its forms must send back."""

    session_id: int
    csrf: str


class SessionCookies:
    def __init__(self, secret: str) -> None:
        self._signer = URLSafeSerializer(secret, salt="threadline-console-session")
        self._signin = URLSafeSerializer(secret, salt="threadline-console-signin-form")

    def new(self, session_id: int) -> tuple[str, CookieSession]:
        session = CookieSession(session_id, secrets.token_urlsafe(32))
        return self._signer.dumps({"sid": session_id, "csrf": session.csrf}), session

    def signin_token(self) -> tuple[str, str]:
        """A new sign-in form token: (the cookie's value, the form field's value)."""
        token = secrets.token_urlsafe(32)
        return self._signin.dumps(token), token

    def signin_token_ok(self, cookie: str | None, given: str | None) -> bool:
        if not cookie or not given:
            return False
        try:
            expected = self._signin.loads(cookie)
        except BadSignature:
            return False
        return isinstance(expected, str) and csrf_ok(expected, given)

    def read(self, value: str | None) -> CookieSession | None:
        if not value:
            return None
        try:
            data = self._signer.loads(value)
        except BadSignature:
            return None
        if not isinstance(data, dict):
            return None
        sid, csrf = data.get("sid"), data.get("csrf")
        if not isinstance(sid, int) or not isinstance(csrf, str):
            return None
        return CookieSession(sid, csrf)


def csrf_ok(expected: str, given: str | None) -> bool:
    return given is not None and hmac.compare_digest(expected.encode(), given.encode())


class RateLimit:
    """At most `limit` hits per key in any `window`, counted in this process only (several
    processes each allow as much). Keys are a session or a client address."""

    MAX_KEYS = 10_000

    def __init__(self, limit: int, window: timedelta, clock: Callable[[], datetime]) -> None:
        self._limit = limit
        self._window = window
        self._clock = clock
        self._hits: dict[str, deque[datetime]] = {}

    def allow(self, key: str) -> bool:
        now = self._clock()
        hits = self._hits.get(key)
        if hits is None:
            if len(self._hits) >= self.MAX_KEYS:  # forget the oldest key, memory stays bounded
                del self._hits[next(iter(self._hits))]
            hits = self._hits[key] = deque()
        while hits and hits[0] <= now - self._window:
            hits.popleft()
        if len(hits) >= self._limit:
            return False
        hits.append(now)
        return True
