"""The operator console under test: the bot's real HTTP app served by uvicorn on 127.0.0.1
(`Served`), links made through the bot, HTTP sign-in for tests without a browser, and an
accessibility check run in the browser (axe-core, from the axe-playwright-python test
dependency; nothing is fetched)."""

from __future__ import annotations

import asyncio
import os
import re
import socket
import threading
from collections.abc import Coroutine
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

import httpx

from tests.conftest import BotHarness
from tests.support.clocks import Clock
from tests.support.fakes.openai_server import FakeOpenAI

if TYPE_CHECKING:
    from playwright.sync_api import Page

    from bot.app import App
    from config.settings import Settings

T = TypeVar("T")
SECRET = "b" * 48  # the served (browser) tests'
WEB_SECRET = "s" * 40  # the in-process HTTP tests'
# Console people are admins when they say so; digests are theirs to add.
POLICY = """
[defaults]
permissions = ["ask", "code.read", "memory.read", "memory.write", "skills.use"]
[[rules]]
name = "admins"
match = { roles = ["admin"] }
grant = ["admin", "digest.manage"]
"""
LINK = re.compile(r"https?://[^/]+(/console/signin/[A-Za-z0-9_-]+)")
CSRF = re.compile(r'name="csrf_token" value="([^"]+)"')
# Read at import, before the autouse fixtures clear THREADLINE_* and change directory.
SCREENSHOTS = (
    Path(os.environ["THREADLINE_SCREENSHOTS"]).resolve()
    if os.environ.get("THREADLINE_SCREENSHOTS")
    else None
)


class Served:
    """The bot's HTTP app (console on) served by uvicorn on a free loopback port, in a thread
    with its own event loop; `run` executes a coroutine there (the app's database is used
    from that loop only)."""

    def __init__(self, settings: Settings, clock: Clock, llm: FakeOpenAI) -> None:
        self.clock = clock
        self.llm = llm
        self._settings = settings
        self._loop = asyncio.new_event_loop()
        self._ready = threading.Event()
        self._sock = socket.socket()
        self._sock.bind(("127.0.0.1", 0))
        self._sock.listen()  # connections wait in the backlog until uvicorn takes them
        self.url = f"http://127.0.0.1:{self._sock.getsockname()[1]}"
        self._thread = threading.Thread(target=self._serve, name="console-server", daemon=True)
        self.app: App

    def _serve(self) -> None:
        asyncio.set_event_loop(self._loop)
        try:
            self._loop.run_until_complete(self._main())
        finally:
            self._loop.close()

    async def _main(self) -> None:
        import uvicorn

        from bot.app import build_app
        from bot.server import _make_server, create_http_app

        self.app = build_app(self._settings, clock=self.clock)
        await self.app.db.create_all()
        config = uvicorn.Config(
            create_http_app(self.app), log_level="warning", lifespan="off", access_log=False
        )
        self.server = _make_server(config)  # leaves the test runner's signals alone
        self._ready.set()
        try:
            await self.server.serve(sockets=[self._sock])
        finally:
            await self.app.aclose()

    def start(self) -> Served:
        self._thread.start()
        assert self._ready.wait(30), "the console server did not start"
        return self

    def stop(self) -> None:
        self.server.should_exit = True
        self._thread.join(30)
        self._sock.close()

    def run(self, work: Coroutine[Any, Any, T]) -> T:
        return asyncio.run_coroutine_threadsafe(work, self._loop).result(30)

    def send(self, text: str, **who: Any) -> Any:
        from adapters.console.translate import ConsoleIdentity, to_request

        who.setdefault("thread", "t1")
        who.setdefault("roles", ("admin",))
        return self.run(self.app.core.handle(to_request(text, ConsoleIdentity(**who))))

    def link(self, **who: Any) -> str:
        reply = self.send("/console", **who)
        found = LINK.search(reply.text)
        assert found is not None, reply.text
        return self.url + found.group(1)


def assert_accessible(page: Page) -> None:
    """axe-core's checks (labels, contrast, landmarks, names of links and buttons, ...) on the
    page as it is now; fails with each violation and the elements it found."""
    from axe_playwright_python.sync_playwright import Axe

    results = Axe().run(page)
    problems = [
        f"{v['id']} ({v['impact']}): {v['help']} — "
        + "; ".join(node["target"][0] for node in v["nodes"][:5])
        for v in results.response["violations"]
    ]
    assert not problems, "\n".join(problems)


def assert_keyboard_reaches(page: Page, *selectors: str, limit: int = 80) -> None:
    """Tab from the top of the page reaches each element of `selectors` (links, buttons,
    fields), and focus is always visible on something."""
    wanted = {s: page.locator(s).first.element_handle() for s in selectors}
    page.locator("body").focus()
    reached: set[str] = set()
    for _ in range(limit):
        page.keyboard.press("Tab")
        for selector, handle in wanted.items():
            if handle is not None and page.evaluate(
                "(el) => el === document.activeElement", handle
            ):
                reached.add(selector)
        if reached == set(wanted):
            return
    raise AssertionError(f"Tab never reached: {sorted(set(wanted) - reached)}")


async def link_for(bot: BotHarness, **who: Any) -> str:
    """A sign-in link's path, made by `/console` through the bot (console identity)."""
    who.setdefault("roles", ["admin"])
    reply = await bot.send("/console", **who)
    found = LINK.search(reply.text)
    assert found is not None, reply.text
    assert reply.ephemeral
    return found.group(1)


async def signin_post(web: httpx.AsyncClient, path: str) -> httpx.Response:
    """What a browser does with a link: open the form (its CSRF cookie and field), press Sign in."""
    form = await web.get(path)
    token = CSRF.search(form.text)
    return await web.post(path, data={"csrf_token": token.group(1) if token else ""})


async def sign_in(web: httpx.AsyncClient, bot: BotHarness, **who: Any) -> str:
    """Signs `web` in; returns the CSRF token of its forms."""
    path = await link_for(bot, **who)
    resp = await signin_post(web, path)
    assert resp.status_code == 303, resp.text
    page = await web.get("/console/")
    assert page.status_code == 200
    token = CSRF.search(page.text)
    assert token is not None
    return token.group(1)


def screenshot(page: Page, name: str) -> None:
    """Saves the page for the docs when THREADLINE_SCREENSHOTS named a directory as the tests
    started (`THREADLINE_SCREENSHOTS=docs/img/console make test`); otherwise does nothing."""
    if SCREENSHOTS is not None:
        SCREENSHOTS.mkdir(parents=True, exist_ok=True)
        page.screenshot(path=str(SCREENSHOTS / f"{name}.png"), full_page=True)


_HIDDEN_VALUE = re.compile(r'(<input type="hidden" name="[^"]*" value=")[^"]*(")')


def shown(html: str) -> str:
    """The page without its hidden inputs' values. The session's CSRF token is random
    URL-safe text: a test saying a short name ("eve", "api") is absent must not find it
    spelled inside the token."""
    return _HIDDEN_VALUE.sub(r"\1\2", html)
