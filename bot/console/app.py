"""The console's Starlette app, mounted under `/console` by `bot.server.create_http_app` when
THREADLINE_CONSOLE is on. Server-rendered pages, no inline script; every state-changing request
is a POST carrying the session's CSRF token. The pages are `bot/console/pages/`, one module each;
what they share (guards, rendering, CSV) is `bot/console/kit.py`.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from jinja2 import Environment, FileSystemLoader, select_autoescape
from starlette.applications import Starlette
from starlette.middleware import Middleware
from starlette.routing import BaseRoute, Mount
from starlette.staticfiles import StaticFiles

from bot.console.kit import Console
from bot.console.pages import PAGES
from bot.console.security import SecurityHeaders, SessionCookies
from core.operator.links import SignInLinks

if TYPE_CHECKING:
    from bot.app import App

HERE = Path(__file__).parent


def create_console_app(app: App) -> Starlette:
    secret = app.settings.console_secret
    assert secret is not None  # the settings refuse THREADLINE_CONSOLE without one
    env = Environment(
        loader=FileSystemLoader(HERE / "templates"),
        autoescape=select_autoescape(default=True, default_for_string=True),
    )
    console = Console(
        app,
        env,
        SignInLinks(app.db, app.core.policy, app.clock),
        SessionCookies(secret.get_secret_value()),
        nav=[page.NAV for page in PAGES if page.NAV is not None],
    )
    routes: list[BaseRoute] = []
    for page in PAGES:
        routes.extend(page.routes(console))
    routes.append(Mount("/static", StaticFiles(directory=HERE / "static"), name="console:static"))
    return Starlette(routes=routes, middleware=[Middleware(SecurityHeaders)])
