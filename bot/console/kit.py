"""What every console page shares: rendering a template with the navigation and the session's
CSRF token, the sign-in and rate-limit guard in front of each page, the CSRF check in front of
each action, the audit record of an admin's action, and streamed CSV downloads.

A page module (`bot/console/pages/`) writes plain handlers and wraps them:
`console.page(handler)` for a GET (the handler gets the request and the signed-in operator),
`console.action(handler)` for a POST (it also gets the form, already CSRF-checked).
"""

from __future__ import annotations

import csv
import io
from collections.abc import AsyncIterator, Awaitable, Callable, Iterable, Sequence
from dataclasses import dataclass
from datetime import timedelta
from typing import TYPE_CHECKING, Any
from urllib.parse import parse_qs

from jinja2 import Environment
from starlette.requests import Request
from starlette.responses import HTMLResponse, RedirectResponse, Response, StreamingResponse

from bot.console.security import (
    COOKIE,
    COOKIE_PATH,
    CSRF_FIELD,
    CookieSession,
    RateLimit,
    SessionCookies,
    csrf_ok,
)
from core.operator.links import OperatorSession, SignInLinks
from core.policy import Identity
from core.tools.audit import AuditLog

if TYPE_CHECKING:
    from bot.app import App

MAX_FORM_BYTES = 4096
# In-process limits (each process counts its own): sign-in attempts per client address, and
# pages per session (or per address before sign-in).
SIGNIN_LIMIT = (10, timedelta(minutes=1))
PAGE_LIMIT = (120, timedelta(minutes=1))


@dataclass(frozen=True, slots=True)
class Signed:
    """The operator behind a request: their live session and the cookie that named it."""

    session: OperatorSession
    cookie: CookieSession

    @property
    def identity(self) -> Identity:
        return self.session.identity


@dataclass(frozen=True, slots=True)
class NavItem:
    title: str
    route: str  # the route's name, e.g. "console:usage"; current on its path and below it


PageHandler = Callable[[Request, Signed], Awaitable[Response]]
ActionHandler = Callable[[Request, Signed, dict[str, str]], Awaitable[Response]]
Endpoint = Callable[[Request], Awaitable[Response]]


class Console:
    def __init__(
        self,
        app: App,
        env: Environment,
        links: SignInLinks,
        cookies: SessionCookies,
        nav: Sequence[NavItem] = (),
    ) -> None:
        self.app = app
        self.env = env
        self.links = links
        self.cookies = cookies
        self.audit = AuditLog(app.db, app.clock)
        self.nav = tuple(nav)
        self.signin_limit = RateLimit(*SIGNIN_LIMIT, app.clock)
        self.page_limit = RateLimit(*PAGE_LIMIT, app.clock)

    # --- rendering -------------------------------------------------------------------------

    def render(
        self,
        request: Request,
        name: str,
        status: int = 200,
        *,
        signed: Signed | None = None,
        **context: Any,
    ) -> HTMLResponse:
        here = request.url.path
        paths = [(item.title, str(request.url_for(item.route).path)) for item in self.nav]
        nav = [(title, path, _current(here, path)) for title, path in paths]
        body = self.env.get_template(name).render(
            static=str(request.url_for("console:static", path="console.css").path),
            signout_path=str(request.url_for("console:signout").path),
            nav=nav if signed is not None else [],
            session=signed.session if signed is not None else None,
            csrf=signed.cookie.csrf if signed is not None else None,
            csrf_field=CSRF_FIELD,
            **context,
        )
        return HTMLResponse(body, status_code=status)

    def refuse(self, request: Request, status: int, title: str, text: str) -> HTMLResponse:
        return self.render(request, "message.html", status, title=title, text=text)

    def path(self, request: Request, route: str, **params: Any) -> str:
        return str(request.url_for(route, **params).path)

    def redirect(self, request: Request, route: str, query: str = "", **params: Any) -> Response:
        """Back to a page after an action (303: the browser GETs it)."""
        target = self.path(request, route, **params)
        return RedirectResponse(f"{target}?{query}" if query else target, 303)

    # --- guards ----------------------------------------------------------------------------

    @staticmethod
    def client(request: Request) -> str:
        return request.client.host if request.client is not None else "unknown"

    async def signed_in(self, request: Request) -> Signed | None:
        cookie = self.cookies.read(request.cookies.get(COOKIE))
        if cookie is None:
            return None
        session = await self.links.session(cookie.session_id)
        return Signed(session, cookie) if session is not None else None

    @staticmethod
    async def form(request: Request) -> dict[str, str]:
        body = await request.body()
        if len(body) > MAX_FORM_BYTES:
            return {}
        fields = parse_qs(body.decode("utf-8", "replace"), keep_blank_values=True)
        return {k: v[0] for k, v in fields.items()}

    def to_signin(self, request: Request) -> Response:
        response = RedirectResponse(self.path(request, "console:signin"), 303)
        response.delete_cookie(COOKIE, path=COOKIE_PATH)
        return response

    def slow_down(self, request: Request) -> Response:
        return self.refuse(request, 429, "Slow down", "Too many pages in a minute; try again soon.")

    def page(self, handler: PageHandler) -> Endpoint:
        """A GET page: signed-in admins only (others go to sign-in), rate-limited per session."""

        async def endpoint(request: Request) -> Response:
            signed = await self.signed_in(request)
            if signed is None:
                return self.to_signin(request)
            if not self.page_limit.allow(f"session:{signed.session.id}"):
                return self.slow_down(request)
            return await handler(request, signed)

        return endpoint

    def action(self, handler: ActionHandler) -> Endpoint:
        """A POST action: as `page`, and the form must carry the session's CSRF token."""

        async def endpoint(request: Request) -> Response:
            signed = await self.signed_in(request)
            if signed is None:
                return self.to_signin(request)
            if not self.page_limit.allow(f"session:{signed.session.id}"):
                return self.slow_down(request)
            fields = await self.form(request)
            if not csrf_ok(signed.cookie.csrf, fields.get(CSRF_FIELD)):
                return self.refuse(
                    request, 403, "Refused", "The form's CSRF token is missing or wrong."
                )
            return await handler(request, signed, fields)

        return endpoint

    async def record(self, signed: Signed, action: str, detail: str = "") -> None:
        """Write an admin's action to the audit log, with who did it."""
        await self.audit.record_action(signed.identity, action, detail=detail)

    # --- downloads -------------------------------------------------------------------------

    @staticmethod
    def csv(filename: str, header: Sequence[str], rows: AsyncIterator[Iterable[Any]]) -> Response:
        """A CSV download streamed row by row: memory stays flat however many rows there are.
        Cells that a spreadsheet would run as a formula are quoted with a leading `'`."""

        async def body() -> AsyncIterator[str]:
            buffer = io.StringIO()
            writer = csv.writer(buffer)
            writer.writerow(header)
            async for row in rows:
                writer.writerow([_cell(value) for value in row])
                if buffer.tell() > 64 * 1024:
                    yield buffer.getvalue()
                    buffer.seek(0)
                    buffer.truncate()
            yield buffer.getvalue()

        return StreamingResponse(
            body(),
            media_type="text/csv; charset=utf-8",
            headers={"content-disposition": f'attachment; filename="{filename}"'},
        )


def _current(here: str, path: str) -> bool:
    """Whether the nav item at `path` is the page at `here`: its own path or one below it (a
    thread is under Conversations). A path ending in "/" (the overview, `/console/`) is the
    parent of every page, so it is current only when exact."""
    if here == path:
        return True
    return not path.endswith("/") and here.startswith(path + "/")


def _cell(value: Any) -> Any:
    if isinstance(value, str) and value[:1] in ("=", "+", "-", "@", "\t", "\r"):
        return "'" + value
    return value
