"""The Usage and Audit log pages in a real browser (Chromium, Playwright) against the served
bot, on SQLite and PostgreSQL, with data made through the bot and the fake model: questions
with known token counts, a tool call, console sign-ins. Filters, the CSV downloads (the pages'
one action: they change nothing), accessibility, keyboard, a phone's width, screenshots."""

from __future__ import annotations

import re
from datetime import timedelta
from typing import TYPE_CHECKING

from tests.support.console import Served, assert_accessible, assert_keyboard_reaches, screenshot

if TYPE_CHECKING:
    from playwright.sync_api import BrowserContext, Page


def fits_a_phone(page: Page) -> bool:
    page.set_viewport_size({"width": 390, "height": 800})
    fits = bool(page.evaluate("document.documentElement.scrollWidth <= window.innerWidth"))
    page.set_viewport_size({"width": 1280, "height": 800})
    return fits


def signed_in(served: Served, context: BrowserContext) -> Page:
    page = context.new_page()
    page.goto(served.link(tenant="acme", user="root"))
    page.click("#signin")
    page.wait_for_url(served.url + "/console/")
    return page


def test_usage_and_budgets(served: Served, context: BrowserContext) -> None:
    served.llm.reply("Deploys run from CI.", prompt_tokens=1200, completion_tokens=300)
    served.send("how do deploys work?", tenant="acme", channel="ops", user="ada")
    served.llm.reply("Use the runbook.", prompt_tokens=800, completion_tokens=100)
    served.send("and rollbacks?", tenant="acme", channel="dev", user="bob")
    served.clock.now -= timedelta(days=3)
    served.llm.reply("Yes.", prompt_tokens=400, completion_tokens=40)
    served.send("is it up?", tenant="acme", channel="ops", user="ada")
    served.clock.now += timedelta(days=3)
    served.llm.reply("No.", prompt_tokens=9999, completion_tokens=999)
    served.send("secret plans", tenant="other", channel="sales", user="mal")

    page = signed_in(served, context)
    page.click("nav.pages >> text=Usage")
    page.wait_for_url(served.url + "/console/usage")
    assert page.locator("h1").inner_text() == "Usage and budgets"
    assert page.locator("#total-prompt").inner_text() == "2,400"
    assert page.locator("#total-requests").inner_text() == "3"
    assert page.locator("svg[role=img]").count() == 4
    assert "mal" not in page.locator("main").inner_text()  # the other tenant's
    spenders = page.locator("#top-spenders tbody tr")
    assert spenders.count() == 2 and "ada" in spenders.nth(0).inner_text()
    assert page.locator("#budget-lines").inner_text().count("tokens_per_user_per_day") == 2
    assert_accessible(page)
    assert_keyboard_reaches(page, "#by", "#days", "#usage-filters button", "#usage-csv")
    assert fits_a_phone(page)
    screenshot(page, "usage")

    page.select_option("#by", "model")
    page.fill("#days", "2")
    page.click("#usage-filters button")
    page.wait_for_url(re.compile(r".*/console/usage\?by=model&days=2$"))
    assert page.locator("#total-prompt").inner_text() == "2,000"  # the third is 3 days old
    assert "fake-model" in page.locator("#usage-shares").inner_text()

    with page.expect_download() as download:
        page.click("#usage-csv")
    lines = download.value.path().read_text(encoding="utf-8").splitlines()
    assert lines[0] == "day,model,prompt_tokens,completion_tokens,cached_tokens,requests"
    assert len(lines) == 2 and lines[1].startswith("2026-12-03,fake-model,2000,400,")

    page.goto(served.url + "/console/usage?days=0")  # the field itself refuses 0 (min=1)
    assert "from 1 to 90" in page.locator("#problem").inner_text()


def test_audit_log(served: Served, context: BrowserContext) -> None:
    served.llm.tool_calls(("current_time", {}))
    served.llm.reply("It is 09:30.")
    served.send("what time is it?", tenant="acme", channel="ops", user="ada")
    served.send("what is this?", tenant="other", channel="ops", user="mal")
    served.clock.now += timedelta(minutes=1)

    page = signed_in(served, context)
    page.click("nav.pages >> text=Audit log")
    page.wait_for_url(served.url + "/console/audit")
    assert page.locator("h1").inner_text() == "Audit log"
    rows = page.locator("#audit-rows tbody tr")
    assert rows.count() == 2  # the tool call and this sign-in; not the other tenant's
    assert "console.sign_in" in rows.nth(0).inner_text()
    assert "current_time" in rows.nth(1).inner_text() and "ada" in rows.nth(1).inner_text()
    assert_accessible(page)
    assert_keyboard_reaches(page, "#from", "#user", "#outcome", "#audit-filters button")
    assert fits_a_phone(page)
    screenshot(page, "audit")

    page.fill("#user", "ada")
    page.click("#audit-filters button")
    page.wait_for_url(re.compile(r".*/console/audit\?.*user=ada"))
    assert rows.count() == 1 and "current_time" in rows.inner_text()

    with page.expect_download() as download:
        page.click("#audit-csv")
    lines = download.value.path().read_text(encoding="utf-8").splitlines()
    assert lines[0].startswith("at,id,request_id,channel") and len(lines) == 2
    assert ",ada,current_time,ok," in lines[1]

    page.fill("#from", "2026-12-04")
    page.fill("#to", "2026-12-03")
    page.click("#audit-filters button")
    assert "The From day is after the To day." in page.locator("#problem").inner_text()
