"""The operator console in a real browser: Debian's chromium (`make test` installs it; nothing
is downloaded) driven by Playwright, against the real HTTP app served by uvicorn on 127.0.0.1,
with data made through the bot. One browser per module, a fresh context per test.
tests/bot/test_console_web.py covers the details (cookies, headers, CSRF) without a browser."""

from __future__ import annotations

import asyncio
import os
import re
import shutil
import socket
import threading
from collections.abc import Callable, Coroutine, Iterator
from datetime import timedelta
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

import pytest

from tests.support.clocks import Clock
from tests.support.fakes.openai_server import FakeOpenAI

if TYPE_CHECKING:
    from playwright.sync_api import Browser, BrowserContext

    from bot.app import App
    from config.settings import Settings

T = TypeVar("T")
CHROMIUM = os.environ.get("THREADLINE_TEST_CHROMIUM") or shutil.which("chromium")
SECRET = "b" * 48
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


@pytest.fixture(scope="module")
def browser() -> Iterator[Browser]:
    """One browser for this module's tests. Not for the session: while Playwright's sync API
    is started, the main thread counts as running an event loop, and the async tests that
    follow cannot start theirs."""
    if CHROMIUM is None:
        pytest.skip("Debian's chromium is not installed (`make test` installs it)")
    from playwright.sync_api import sync_playwright

    with sync_playwright() as playwright:
        launched = playwright.chromium.launch(executable_path=CHROMIUM, headless=True)
        yield launched
        launched.close()


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


@pytest.fixture(params=["sqlite", "postgresql"])
def served(
    request: pytest.FixtureRequest,
    make_settings: Callable[..., Settings],
    write_policy: Callable[[str], Path],
    fake_llm: FakeOpenAI,
    clock: Clock,
) -> Iterator[Served]:
    overrides: dict[str, Any] = {"llm_base_url": fake_llm.url, "llm_model": "fake-model"}
    if request.param == "postgresql":
        overrides["database_url"] = request.getfixturevalue("pg_url")
    settings = make_settings(
        console=True,
        console_secret=SECRET,
        llm_max_retries=0,
        policy_file=write_policy(POLICY),
        **overrides,
    )
    server = Served(settings, clock, fake_llm).start()
    yield server
    server.stop()


@pytest.fixture
def context(browser: Browser) -> Iterator[BrowserContext]:
    made = browser.new_context(viewport={"width": 1280, "height": 800})
    yield made
    made.close()


def test_sign_in_see_the_overview_and_sign_out(served: Served, context: BrowserContext) -> None:
    # Data made through the bot, in two tenants: questions (one with a tool call the policy
    # refuses: an error), and a digest that ran.
    served.llm.tool_calls(("index_repo", {"source": "/tmp"}))
    served.llm.reply("I may not index that.")
    served.send("index /tmp please", tenant="acme", user="ada")
    served.llm.reply("Deploys run from CI.")
    served.send("how do deploys work?", tenant="acme", user="ada")
    served.send("what is this?", tenant="other", user="eve")
    assert served.send('/digest add "0 * * * *" activity', tenant="acme", channel="ops").ok
    served.clock.now += timedelta(minutes=40)  # past 10:00, the digest's period
    assert served.run(served.app.digests.run_due()) == ["posted"]

    page = context.new_page()
    link = served.link(tenant="acme", user="ada")
    page.goto(link)
    page.click("#signin")
    page.wait_for_url(served.url + "/console/")
    assert page.locator("h1").inner_text() == "Overview"
    assert "ada" in page.locator("header").inner_text()
    assert page.locator("#answers-day").inner_text() == "2"
    assert page.locator("#tool-calls-hour").inner_text() == "1"
    assert page.locator("#errors-hour").inner_text() == "1"
    assert page.locator("#questions-day").inner_text() == "2"  # not the other tenant's
    assert page.locator("#outbox-pending").inner_text() == "1"  # the digest, undelivered
    runs = page.locator("#digest-runs tbody tr")
    assert runs.count() == 1 and "posted" in runs.inner_text() and "ops" in runs.inner_text()
    assert "database" in page.locator("table").first.inner_text()

    # On a phone the page fits the screen: nothing scrolls sideways.
    page.set_viewport_size({"width": 390, "height": 800})
    assert page.evaluate("document.documentElement.scrollWidth <= window.innerWidth")

    page.click("text=Sign out")
    page.wait_for_url(re.compile(r".*/console/signin\?out$"))
    assert "You are signed out" in page.content()
    page.goto(served.url + "/console/")
    assert page.url.endswith("/console/signin")

    # The link worked once: used again (another browser, say), it is refused plainly.
    other = context.browser.new_context() if context.browser else None
    assert other is not None
    again = other.new_page()
    again.goto(link)
    again.click("#signin")
    assert "already used" in again.locator(".message").inner_text()
    other.close()


def test_expired_links_csrf_and_headers(served: Served, context: BrowserContext) -> None:
    page = context.new_page()
    stale = served.link(user="bob")
    served.clock.now += timedelta(minutes=6)
    page.goto(stale)
    page.click("#signin")
    assert "has expired" in page.locator(".message").inner_text()

    response = page.goto(served.link(user="bob"))
    assert response is not None
    headers = response.headers
    assert headers["x-frame-options"] == "DENY" and headers["referrer-policy"] == "no-referrer"
    assert "frame-ancestors 'none'" in headers["content-security-policy"]
    page.click("#signin")
    page.wait_for_url(served.url + "/console/")

    # A POST without the form's CSRF token, with the session cookie: refused.
    refused = context.request.post(served.url + "/console/signout", form={"x": "1"})
    assert refused.status == 403
    page.reload()
    assert page.locator("h1").inner_text() == "Overview"  # still signed in

    # A non-admin gets no link.
    reply = served.send("/console", user="mallory", roles=())
    assert "/console/signin/" not in reply.text
