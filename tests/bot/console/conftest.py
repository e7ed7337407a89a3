"""Fixtures of the console's tests: the HTTP app in-process (`web`, `console_bot`), and for the
browser tests one Chromium per module (`browser`), a server per test on SQLite and PostgreSQL
(`served`) and a fresh browser context (`context`)."""

from __future__ import annotations

import os
import shutil
from collections.abc import AsyncIterator, Callable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

import httpx
import pytest

from tests.conftest import BotHarness
from tests.support.clocks import Clock
from tests.support.console import POLICY, SECRET, WEB_SECRET, Served
from tests.support.fakes.openai_server import FakeOpenAI

if TYPE_CHECKING:
    from playwright.sync_api import Browser, BrowserContext

    from config.settings import Settings

CHROMIUM = os.environ.get("THREADLINE_TEST_CHROMIUM") or shutil.which("chromium")


@pytest.fixture
def console_bot(make_bot: Callable[..., BotHarness], clock: Clock) -> BotHarness:
    return make_bot(clock=clock, console=True, console_secret=WEB_SECRET)


@pytest.fixture
async def web(console_bot: BotHarness) -> AsyncIterator[httpx.AsyncClient]:
    from bot.server import create_http_app

    transport = httpx.ASGITransport(app=create_http_app(console_bot.app))
    async with httpx.AsyncClient(transport=transport, base_url="http://testserver") as client:
        yield client


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
