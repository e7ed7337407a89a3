"""Signing in and out. A link made by `/console` in chat or `threadline console link` opens a
page with a button (a GET never spends the link: chat platforms fetch links to preview them);
its POST redeems the link once and sets the session cookie."""

from __future__ import annotations

import logging

from starlette.requests import Request
from starlette.responses import RedirectResponse, Response
from starlette.routing import BaseRoute, Route

from bot.console.kit import Console, NavItem, Signed
from bot.console.security import (
    COOKIE,
    COOKIE_PATH,
    CSRF_FIELD,
    SIGNIN_COOKIE,
    SIGNIN_COOKIE_SECONDS,
)
from core.operator.links import SESSION_LIFETIME, Refused

log = logging.getLogger(__name__)

NAV: NavItem | None = None

REFUSALS = {
    Refused.UNKNOWN: "This sign-in link is not valid. Ask for a new one.",
    Refused.USED: "This sign-in link was already used: each link signs in once. Ask for a new one.",
    Refused.EXPIRED: "This sign-in link has expired: links work for 5 minutes. Ask for a new one.",
    Refused.NOT_ADMIN: "This sign-in link is for someone who is no longer an admin.",
}


def routes(console: Console) -> list[BaseRoute]:
    async def signin_help(request: Request) -> Response:
        if not console.page_limit.allow(f"client:{console.client(request)}"):
            return console.slow_down(request)
        return console.render(
            request, "signin.html", token=None, signed_out="out" in request.query_params
        )

    async def signin_form(request: Request) -> Response:
        if not console.signin_limit.allow(console.client(request)):
            return console.refuse(
                request, 429, "Slow down", "Too many sign-in attempts; wait a minute."
            )
        cookie, form_token = console.cookies.signin_token()
        response = console.render(
            request,
            "signin.html",
            token=request.path_params["token"],
            signed_out=False,
            form_token=form_token,
        )
        response.set_cookie(
            SIGNIN_COOKIE,
            cookie,
            max_age=SIGNIN_COOKIE_SECONDS,
            path=COOKIE_PATH + "/signin",
            httponly=True,
            samesite="strict",
            secure=request.url.scheme == "https",
        )
        return response

    async def signin(request: Request) -> Response:
        client = console.client(request)
        if not console.signin_limit.allow(client):
            return console.refuse(
                request, 429, "Slow down", "Too many sign-in attempts; wait a minute."
            )
        fields = await console.form(request)
        if not console.cookies.signin_token_ok(
            request.cookies.get(SIGNIN_COOKIE), fields.get(CSRF_FIELD)
        ):
            return console.refuse(
                request,
                403,
                "Sign-in refused",
                "This sign-in form was not opened in this browser, or it is over 10 minutes old. "
                "Open your link again (it still works if you have not used it).",
            )
        outcome = await console.links.redeem(request.path_params["token"])
        if isinstance(outcome, Refused):
            log.info("console sign-in refused: %s (from %s)", outcome, client)
            return console.refuse(request, 403, "Sign-in refused", REFUSALS[outcome])
        await console.audit.record_action(outcome.identity, "console.sign_in", detail=client)
        value, _ = console.cookies.new(outcome.id)
        response = RedirectResponse(console.path(request, "console:home"), 303)
        secure = request.url.scheme == "https"
        response.delete_cookie(
            SIGNIN_COOKIE, path=COOKIE_PATH + "/signin", secure=secure, samesite="strict"
        )
        response.set_cookie(
            COOKIE,
            value,
            max_age=int(SESSION_LIFETIME.total_seconds()),
            path=COOKIE_PATH,
            httponly=True,
            samesite="strict",
            secure=secure,
        )
        return response

    async def signout(request: Request, signed: Signed, _: dict[str, str]) -> Response:
        await console.links.sign_out(signed.session.id)
        await console.record(signed, "console.sign_out", console.client(request))
        response = RedirectResponse(console.path(request, "console:signin") + "?out", 303)
        response.delete_cookie(COOKIE, path=COOKIE_PATH)
        return response

    return [
        Route("/signin", signin_help, name="console:signin"),
        Route("/signin/{token}", signin_form, methods=["GET"]),
        Route("/signin/{token}", signin, methods=["POST"]),
        Route("/signout", console.action(signout), methods=["POST"], name="console:signout"),
    ]
