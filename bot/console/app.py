"""The console's Starlette app, mounted under `/console` by `bot.server.create_http_app` when
THREADLINE_CONSOLE is on. Server-rendered pages, no script; every state-changing request is a
POST carrying the session's CSRF token.

Sign-in: a link made by `/console` in chat or `threadline console link` opens a page with a
button (a GET never spends the link: chat platforms fetch links to preview them); its POST
redeems the link once and sets the session cookie.
"""

from __future__ import annotations

import logging
from datetime import timedelta
from pathlib import Path
from typing import TYPE_CHECKING, Any
from urllib.parse import parse_qs

from jinja2 import Environment, FileSystemLoader, select_autoescape
from starlette.applications import Starlette
from starlette.middleware import Middleware
from starlette.requests import Request
from starlette.responses import HTMLResponse, RedirectResponse, Response
from starlette.routing import Mount, Route
from starlette.staticfiles import StaticFiles

from bot.console.security import (
    COOKIE,
    COOKIE_PATH,
    CSRF_FIELD,
    CookieSession,
    RateLimit,
    SecurityHeaders,
    SessionCookies,
    csrf_ok,
)
from bot.readiness import ReadinessProbe
from core.operator.links import SESSION_LIFETIME, OperatorSession, Refused, SignInLinks
from core.operator.overview import Overview
from core.tools.audit import AuditLog

if TYPE_CHECKING:
    from bot.app import App

log = logging.getLogger(__name__)

HERE = Path(__file__).parent
MAX_FORM_BYTES = 4096
# In-process limits (each process counts its own): sign-in attempts per client address, and
# pages per session (or per address before sign-in).
SIGNIN_LIMIT = (10, timedelta(minutes=1))
PAGE_LIMIT = (120, timedelta(minutes=1))

REFUSALS = {
    Refused.UNKNOWN: "This sign-in link is not valid. Ask for a new one.",
    Refused.USED: "This sign-in link was already used: each link signs in once. Ask for a new one.",
    Refused.EXPIRED: "This sign-in link has expired: links work for 5 minutes. Ask for a new one.",
    Refused.NOT_ADMIN: "This sign-in link is for someone who is no longer an admin.",
}


def create_console_app(app: App) -> Starlette:
    secret = app.settings.console_secret
    assert secret is not None  # the settings refuse THREADLINE_CONSOLE without one
    links = SignInLinks(app.db, app.core.policy, app.clock)
    overview = Overview(app.db, app.clock)
    audit = AuditLog(app.db, app.clock)
    probe = ReadinessProbe(app)
    cookies = SessionCookies(secret.get_secret_value())
    signin_limit = RateLimit(*SIGNIN_LIMIT, app.clock)
    page_limit = RateLimit(*PAGE_LIMIT, app.clock)
    env = Environment(
        loader=FileSystemLoader(HERE / "templates"),
        autoescape=select_autoescape(default=True, default_for_string=True),
    )

    def page(request: Request, name: str, status: int = 200, **context: Any) -> HTMLResponse:
        body = env.get_template(name).render(
            static=str(request.url_for("console:static", path="console.css").path),
            signout_path=str(request.url_for("console:signout").path),
            **context,
        )
        return HTMLResponse(body, status_code=status)

    def client(request: Request) -> str:
        return request.client.host if request.client is not None else "unknown"

    def refuse(request: Request, status: int, title: str, text: str) -> HTMLResponse:
        return page(request, "message.html", status, title=title, text=text)

    async def signed_in(request: Request) -> tuple[OperatorSession, CookieSession] | None:
        cookie = cookies.read(request.cookies.get(COOKIE))
        if cookie is None:
            return None
        session = await links.session(cookie.session_id)
        return (session, cookie) if session is not None else None

    async def form(request: Request) -> dict[str, str]:
        body = await request.body()
        if len(body) > MAX_FORM_BYTES:
            return {}
        fields = parse_qs(body.decode("utf-8", "replace"), keep_blank_values=True)
        return {k: v[0] for k, v in fields.items()}

    def to_signin(request: Request) -> Response:
        response = RedirectResponse(str(request.url_for("console:signin").path), 303)
        response.delete_cookie(COOKIE, path=COOKIE_PATH)
        return response

    async def home(request: Request) -> Response:
        found = await signed_in(request)
        if found is None:
            return to_signin(request)
        session, cookie = found
        if not page_limit.allow(f"session:{session.id}"):
            return refuse(request, 429, "Slow down", "Too many pages in a minute; try again soon.")
        who = session.identity
        ready = await probe.check()
        parts = dict(ready.checks)  # what /readyz checks, then each MCP server's state
        for name, server in app.mcp.servers.items():
            state = "ok" if server.status == "ready" else server.status
            parts[f"MCP server {name}"] = f"{state}: {server.reason}" if server.reason else state
        figures = await overview.figures(who.platform, who.tenant)
        return page(
            request,
            "overview.html",
            session=session,
            csrf=cookie.csrf,
            csrf_field=CSRF_FIELD,
            readiness=ready,
            parts=parts,
            figures=figures,
        )

    async def signin_help(request: Request) -> Response:
        if not page_limit.allow(f"client:{client(request)}"):
            return refuse(request, 429, "Slow down", "Too many pages in a minute; try again soon.")
        return page(request, "signin.html", token=None, signed_out="out" in request.query_params)

    async def signin_form(request: Request) -> Response:
        if not signin_limit.allow(client(request)):
            return refuse(request, 429, "Slow down", "Too many sign-in attempts; wait a minute.")
        return page(request, "signin.html", token=request.path_params["token"], signed_out=False)

    async def signin(request: Request) -> Response:
        if not signin_limit.allow(client(request)):
            return refuse(request, 429, "Slow down", "Too many sign-in attempts; wait a minute.")
        outcome = await links.redeem(request.path_params["token"])
        if isinstance(outcome, Refused):
            log.info("console sign-in refused: %s (from %s)", outcome, client(request))
            return refuse(request, 403, "Sign-in refused", REFUSALS[outcome])
        await audit.record_action(outcome.identity, "console.sign_in", detail=client(request))
        value, _ = cookies.new(outcome.id)
        response = RedirectResponse(str(request.url_for("console:home").path), 303)
        response.set_cookie(
            COOKIE,
            value,
            max_age=int(SESSION_LIFETIME.total_seconds()),
            path=COOKIE_PATH,
            httponly=True,
            samesite="strict",
            secure=request.url.scheme == "https",
        )
        return response

    async def signout(request: Request) -> Response:
        found = await signed_in(request)
        if found is None:
            return to_signin(request)
        session, cookie = found
        if not csrf_ok(cookie.csrf, (await form(request)).get(CSRF_FIELD)):
            return refuse(request, 403, "Refused", "The form's CSRF token is missing or wrong.")
        await links.sign_out(session.id)
        await audit.record_action(session.identity, "console.sign_out", detail=client(request))
        response = RedirectResponse(str(request.url_for("console:signin").path) + "?out", 303)
        response.delete_cookie(COOKIE, path=COOKIE_PATH)
        return response

    routes = [
        Route("/", home, name="console:home"),
        Route("/signin", signin_help, name="console:signin"),
        Route("/signin/{token}", signin_form, methods=["GET"]),
        Route("/signin/{token}", signin, methods=["POST"]),
        Route("/signout", signout, methods=["POST"], name="console:signout"),
        Mount("/static", StaticFiles(directory=HERE / "static"), name="console:static"),
    ]
    return Starlette(routes=routes, middleware=[Middleware(SecurityHeaders)])
