"""The Conversations page in a real browser (Chromium, Playwright) against the served bot, on
SQLite and PostgreSQL, with conversations made through the bot and the fake model: the list,
a channel filter, a thread with its turns, tool call and rating, `<script>` shown as text;
accessibility, keyboard, a phone's width, screenshots."""

from __future__ import annotations

import re
from datetime import timedelta
from typing import TYPE_CHECKING

from core.request import Rating
from tests.support.console import Served, assert_accessible, assert_keyboard_reaches, screenshot

if TYPE_CHECKING:
    from playwright.sync_api import BrowserContext, Dialog, Page

HOSTILE = '<script>alert(1)</script> "><img src=x onerror=alert(2)>'


def fits_a_phone(page: Page) -> bool:
    page.set_viewport_size({"width": 390, "height": 800})
    fits = bool(page.evaluate("document.documentElement.scrollWidth <= window.innerWidth"))
    page.set_viewport_size({"width": 1280, "height": 800})
    return fits


def test_list_filter_open_a_thread(served: Served, context: BrowserContext) -> None:
    served.llm.reply("Deploys run from CI.")
    served.send("how do deploys work?", tenant="acme", channel="ops", thread="d1", user="ada")
    served.clock.now += timedelta(minutes=1)
    served.llm.tool_calls(("current_time", {}))
    served.llm.reply(f"It is 09:31.\n{HOSTILE}")
    timed = served.send(f"time?\n{HOSTILE}", tenant="acme", channel="ops", thread="d1", user="bob")
    assert timed.ok and timed.answer_id is not None
    served.clock.now += timedelta(minutes=1)
    rated = Rating("console", "acme", "ops", "cy", timed.answer_id, "down", reason="wrong zone")
    assert served.run(served.app.core.rate(rated)).ok
    served.llm.reply("Hi.")
    served.send("hello?", tenant="acme", channel="dev", thread="x9", user="eve")
    served.llm.reply("No.")
    served.send("secret plans", tenant="other", channel="ops", thread="o1", user="mal")

    page = context.new_page()
    dialogs: list[str] = []

    def dialog(shown: Dialog) -> None:  # an alert() would mean the text ran as script
        dialogs.append(shown.message)
        shown.dismiss()

    page.on("dialog", dialog)
    page.goto(served.link(tenant="acme", user="root"))
    page.click("#signin")
    page.wait_for_url(served.url + "/console/")
    page.click("nav.pages >> text=Conversations")
    page.wait_for_url(served.url + "/console/conversations")
    assert page.locator("h1").inner_text() == "Conversations"
    rows = page.locator("#threads tbody tr")
    assert rows.count() == 2  # not the other tenant's
    assert "x9" in rows.nth(0).inner_text() and "d1" in rows.nth(1).inner_text()
    assert "ada, bob" in rows.nth(1).inner_text()
    assert_accessible(page)
    assert_keyboard_reaches(page, "#cv-channel", "#cv-user", "#threads a >> nth=0")
    assert fits_a_phone(page)
    screenshot(page, "conversations")

    page.select_option("#cv-channel", "ops")
    page.click("text=Show")
    page.wait_for_url(re.compile(r".*/console/conversations\?channel=ops(&|$)"))
    assert rows.count() == 1 and "d1" in rows.inner_text()

    page.click("#threads a >> text=d1")
    page.wait_for_url(served.url + "/console/conversations/ops/d1")
    turns = page.locator("article.cv-turn")
    assert turns.count() == 2
    second = turns.nth(1)
    assert "Turn 2" in second.locator("h2").inner_text()
    assert "current_time" in second.locator("table.cv-calls").inner_text()
    assert "ok" in second.locator("table.cv-calls").inner_text()
    assert "wrong zone" in second.locator(".cv-ratings").inner_text()
    # The hostile text is shown as it was written, line breaks kept, and runs nothing.
    said = second.locator(".cv-assistant .cv-text").inner_text()
    assert said == f"It is 09:31.\n{HOSTILE}"
    assert HOSTILE in second.locator(".cv-user .cv-text").inner_text()
    assert page.locator("main img").count() == 0 and dialogs == []
    assert_accessible(page)
    assert_keyboard_reaches(page, "main a >> text=All conversations")
    assert fits_a_phone(page)
    screenshot(page, "conversation")
