"""The operator console's sign-in and overview in a real browser: Debian's chromium (`make
test` installs it; nothing is downloaded) driven by Playwright, against the real HTTP app served
by uvicorn on 127.0.0.1, with data made through the bot. One browser per module, a fresh context
per test (fixtures: tests/bot/console/conftest.py). test_web.py covers the details (cookies,
headers, CSRF) without a browser."""

from __future__ import annotations

import re
from datetime import timedelta
from typing import TYPE_CHECKING

from tests.support.console import Served, assert_accessible, assert_keyboard_reaches, screenshot

if TYPE_CHECKING:
    from playwright.sync_api import BrowserContext


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
    assert_accessible(page)
    assert_keyboard_reaches(page, "nav a >> nth=0", "header button")
    screenshot(page, "overview")

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
