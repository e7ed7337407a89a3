"""The console's Digests and Repositories pages in a real browser (Debian's chromium, driven by
Playwright) against the real HTTP app, on SQLite and PostgreSQL, with data made through the bot:
digests paused, resumed and run now; a small repository re-indexed while its progress page
refreshes itself to the end. test_digests.py and test_repositories.py cover the details."""

from __future__ import annotations

import asyncio
import re
from pathlib import Path
from typing import TYPE_CHECKING, Any

from tests.support.code_repo import write
from tests.support.console import (
    Served,
    assert_accessible,
    assert_keyboard_reaches,
    screenshot,
    shown,
)

if TYPE_CHECKING:
    from playwright.sync_api import BrowserContext, Page


def signed_in(served: Served, context: BrowserContext, **who: Any) -> Page:
    page = context.new_page()
    page.goto(served.link(**who))
    page.click("#signin")
    page.wait_for_url(served.url + "/console/")
    return page


def fits_a_phone(page: Page) -> None:
    page.set_viewport_size({"width": 390, "height": 800})
    assert page.evaluate("document.documentElement.scrollWidth <= window.innerWidth")
    page.set_viewport_size({"width": 1280, "height": 800})


def added(served: Served, text: str, **who: Any) -> int:
    reply = served.send(text, **who)
    found = re.search(r"Digest #(\d+) added", reply.text)
    assert found is not None, reply.text
    return int(found.group(1))


def test_digests_pause_resume_and_run_now(served: Served, context: BrowserContext) -> None:
    ops = added(served, "/digest add hourly activity --skip-empty", tenant="acme", channel="ops")
    dev = added(
        served, "/digest add daily activity --tz Europe/Berlin", tenant="acme", channel="dev"
    )
    added(served, "/digest add hourly activity", tenant="other", channel="theirs")
    page = signed_in(served, context, tenant="acme", user="ada")
    page.click("nav >> text=Digests")
    assert page.locator("h1").inner_text() == "Digests"
    assert page.locator(f"#digest-{ops}").count() == page.locator(f"#digest-{dev}").count() == 1
    assert "theirs" not in shown(page.content())
    assert "10:00 UTC" in page.locator(f"#digest-{ops} .next").inner_text()
    assert "CET" in page.locator(f"#digest-{dev} .next").inner_text()

    # The channel filter.
    page.select_option("#f-channel", "ops")
    page.click("#digest-filter button")
    page.wait_for_url(re.compile(r".*[?&]channel=ops(&|$)"))  # the page the GET form loads
    assert page.locator(f"#digest-{dev}").count() == 0

    page.click(f"#pause-{ops}")
    assert f"Digest #{ops} paused" in page.locator("#notice").inner_text()
    assert page.locator(f"#digest-{ops} .next").inner_text().strip() == "paused"
    page.click(f"#resume-{ops}")
    assert f"Digest #{ops} resumed" in page.locator("#notice").inner_text()
    page.click(f"#run-{ops}")
    assert "nothing happened in the period" in page.locator("#notice").inner_text()
    runs = page.locator(f"#digest-{ops} .runs").inner_text()
    assert "(run now)" in runs and "empty" in runs

    assert_accessible(page)
    assert_keyboard_reaches(page, "#f-channel", f"#pause-{ops}", f"#run-{ops}")
    screenshot(page, "digests")
    fits_a_phone(page)


def test_repositories_reindex_with_live_progress(
    served: Served, context: BrowserContext, tmp_path: Path
) -> None:
    root = tmp_path / "api"
    write(root, "src/app.py", "def handler(event):\n    return helper(event)\n")
    write(root, "src/helper.py", "def helper(event):\n    return event\n")
    write(root, "README.md", "# api\n")
    served.run(served.app.repos.register(str(root), "api"))

    # The indexer waits for the test at its start, so the running page can be looked at.
    release = asyncio.Event()
    index = served.app.indexer.index

    async def held(repo: Any, **kwargs: Any) -> Any:
        await release.wait()
        return await index(repo, **kwargs)

    async def go() -> None:
        release.set()

    served.app.indexer.index = held  # type: ignore[method-assign]
    page = signed_in(served, context, tenant="acme", user="ada")
    page.click("nav >> text=Repositories")
    assert page.locator("h1").inner_text() == "Repositories"
    assert "never" in page.locator("#repo-api").inner_text()

    # The name filter.
    # A GET form: count on the page it loads, not on the one it leaves (count() does not wait).
    page.fill("#f-q", "zzz")
    page.click("#repo-filter button")
    page.wait_for_url(re.compile(r".*/console/repositories\?q=zzz$"))
    assert page.locator("#repo-api").count() == 0
    page.fill("#f-q", "ap")
    page.click("#repo-filter button")
    page.wait_for_url(re.compile(r".*/console/repositories\?q=ap$"))
    assert page.locator("#repo-api").count() == 1
    assert_accessible(page)
    assert_keyboard_reaches(page, "#f-q", "#reindex-api")
    screenshot(page, "repositories")
    fits_a_phone(page)

    page.click("#reindex-api")
    page.wait_for_url(served.url + "/console/repositories/api")
    assert page.locator('meta[http-equiv="refresh"]').count() == 1
    assert "Starting" in page.locator("#progress").inner_text()
    assert page.locator("#reindex").count() == 0
    served.run(go())
    # The page refreshes itself (no script) until the run is over.
    page.wait_for_selector("#outcome", timeout=30_000)
    assert page.locator('meta[http-equiv="refresh"]').count() == 0
    outcome = page.locator("#outcome").inner_text()
    assert outcome.startswith("Indexed api: 3 files — 3 added"), outcome
    assert page.locator("#files").inner_text() == "3"
    assert_accessible(page)
    assert_keyboard_reaches(page, "#reindex")
    screenshot(page, "repository-reindexed")
    fits_a_phone(page)
