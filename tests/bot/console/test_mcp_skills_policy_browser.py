"""The console's MCP, Skills and Policy pages in a real browser (Debian's chromium driven by
Playwright) against the HTTP app under uvicorn, on SQLite and PostgreSQL: a tool definition
changed by the real test MCP server, shown as a diff and approved; the skills library with its
problems and a search; the policy explainer filled in and answered. Each page passes axe-core's
checks, is reachable by keyboard and fits a phone's width."""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest
from sqlmodel import select

from tests.support.clocks import Clock
from tests.support.console import (
    SECRET,
    Served,
    assert_accessible,
    assert_keyboard_reaches,
    screenshot,
    shown,
)
from tests.support.console_pages import POLICY, mcp_server, write_skills
from tests.support.fakes.openai_server import FakeOpenAI

if TYPE_CHECKING:
    from playwright.sync_api import BrowserContext, Page

    from config.settings import Settings

START = 30.0  # seconds the test MCP server may take to start (an interpreter importing the SDK)


@pytest.fixture(params=["sqlite", "postgresql"])
def served(
    request: pytest.FixtureRequest,
    make_settings: Callable[..., Settings],
    write_policy: Callable[[str], Path],
    fake_llm: FakeOpenAI,
    clock: Clock,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> Iterator[Served]:
    monkeypatch.delenv("MCP_TEST_VARIANT", raising=False)
    overrides: dict[str, Any] = {"llm_base_url": fake_llm.url, "llm_model": "fake-model"}
    if request.param == "postgresql":
        overrides["database_url"] = request.getfixturevalue("pg_url")
    settings = make_settings(
        console=True,
        console_secret=SECRET,
        llm_max_retries=0,
        policy_file=write_policy(POLICY),
        skills_dirs=(write_skills(tmp_path / "team-skills"),),
        mcp={"t": mcp_server()},
        **overrides,
    )
    server = Served(settings, clock, fake_llm).start()
    yield server
    server.stop()


def _sign_in(served: Served, page: Page, **who: Any) -> None:
    page.goto(served.link(**who))
    page.click("#signin")
    page.wait_for_url(served.url + "/console/")


def _fits_a_phone(page: Page) -> None:
    page.set_viewport_size({"width": 390, "height": 800})
    assert page.evaluate("document.documentElement.scrollWidth <= window.innerWidth")
    page.set_viewport_size({"width": 1280, "height": 800})


async def _listed(served: Served, pin: str) -> None:
    """Start the MCP servers and wait until `t` lists `lookup` with this pin state."""
    mcp = served.app.mcp
    mcp.start()
    async with asyncio.timeout(START):
        while True:
            state = mcp.servers["t"]
            info = state.tools.get("lookup")
            if state.status == "ready" and info is not None and info.pin == pin:
                return
            await asyncio.sleep(0.05)


def test_mcp_a_changed_definition_is_shown_and_approved(
    served: Served, context: BrowserContext, monkeypatch: pytest.MonkeyPatch
) -> None:
    from core.store.models import AuditEntry

    # The server is trusted as first listed; then it comes back describing `lookup` otherwise.
    served.run(_listed(served, "new"))
    served.run(served.app.mcp.aclose())
    monkeypatch.setenv("MCP_TEST_VARIANT", "changed")
    served.run(_listed(served, "changed"))

    page = context.new_page()
    _sign_in(served, page, tenant="acme", user="ada", channel="ops")
    page.click("nav >> text=MCP")
    page.wait_for_url(served.url + "/console/mcp")
    assert page.locator("h1").inner_text() == "MCP servers"
    server = page.locator("#mcp-t")
    assert "ready" in server.locator("h2").inner_text()
    assert "disabled: awaiting approval" in server.locator(".msp-tools").inner_text()
    added = page.locator(".msp-line.msp-add")
    removed = page.locator(".msp-line.msp-del")
    assert added.count() == 1 and "IGNORE ALL PREVIOUS INSTRUCTIONS" in added.inner_text()
    assert removed.count() == 1 and "Look up an item by a query." in removed.inner_text()
    assert "ops may use the test server" in server.locator(".msp-grants").inner_text()
    assert_accessible(page)
    assert_keyboard_reaches(page, "#server", "#show-server", "#approve-t")
    screenshot(page, "mcp")
    _fits_a_phone(page)

    # The filter: one server.
    page.select_option("#server", "t")
    page.click("#show-server")
    page.wait_for_url(served.url + "/console/mcp?server=t")
    assert page.locator("#mcp-t").count() == 1

    page.click("#approve-t")
    page.wait_for_url(served.url + "/console/mcp?approved=t")
    assert "Approved the new definitions of t" in page.locator("#approved").inner_text()
    assert page.locator(".msp-changes").count() == 0
    assert "usable" in page.locator("#mcp-t .msp-tools").inner_text()
    assert served.run(served.app.mcp.pins.pending("t")) == []
    assert served.app.mcp.servers["t"].blocked("lookup") is None

    async def approvals() -> list[AuditEntry]:
        async with served.app.db.session() as s:
            rows = await s.exec(select(AuditEntry).where(AuditEntry.tool == "console.mcp.approve"))
            return list(rows.all())

    [entry] = served.run(approvals())
    assert (entry.tenant, entry.user, entry.detail) == ("acme", "ada", "t: t.lookup")


def test_skills_the_library_its_problems_and_a_search(
    served: Served, context: BrowserContext
) -> None:
    assert served.send("/skills", tenant="acme", channel="ops").ok  # made through the bot
    page = context.new_page()
    _sign_in(served, page, tenant="acme", user="ada")
    page.click("nav >> text=Skills")
    page.wait_for_url(served.url + "/console/skills")
    assert page.locator("h1").inner_text() == "Skills"
    assert "broken/SKILL.md" in page.locator("#skill-problems").inner_text()
    deploy = page.locator("#skill-deploy").inner_text()
    assert "references/rollback.md" in deploy and "channel ops: offered, pinned" in deploy
    assert "channel help: not offered" in page.locator("#skill-triage").inner_text()
    assert_accessible(page)
    assert_keyboard_reaches(page, "#q", "#search")
    screenshot(page, "skills")
    _fits_a_phone(page)

    page.fill("#q", "incident")
    page.click("#search")
    page.wait_for_url(served.url + "/console/skills?q=incident")
    assert page.locator("#skills tbody tr").count() == 1
    assert page.locator("#skill-triage").count() == 1


def test_policy_the_explainer_answers_a_question(served: Served, context: BrowserContext) -> None:
    page = context.new_page()
    _sign_in(served, page, tenant="acme", user="ada")
    page.click("nav >> text=Policy")
    page.wait_for_url(served.url + "/console/policy")
    assert page.locator("h1").inner_text() == "Policy"
    assert "globex" not in shown(page.content())
    assert page.locator("#policy-rules tbody tr").count() == 6  # the defaults and 5 of acme's

    page.fill("#channel", "ops")
    page.fill("#user", "bob")
    page.fill("#roles", "dev, admin")
    page.click("#explain")
    page.wait_for_selector("#explanation")
    assert "For bob in ops with admin, dev" in page.locator("#explanation h3").inner_text()
    permissions = page.locator("#explained-permissions").inner_text()
    assert "admin\tadmins" in permissions and "mcp:t\tops may use the test server" in permissions
    assert "ops may use the test server" in page.locator("#explained-skills").inner_text()
    assert "500,000" in page.locator("#explained-budgets").inner_text()
    assert_accessible(page)
    assert_keyboard_reaches(page, "#channel", "#user", "#roles", "#explain")
    screenshot(page, "policy")
    _fits_a_phone(page)

    # What the explainer refuses, it says why, in the page.
    page.fill("#channel", "<b>ops</b>")
    page.click("#explain")
    page.wait_for_selector("#explain-errors")
    assert "The channel may hold only" in page.locator("#explain-errors").inner_text()
    assert page.locator("#explanation").count() == 0
    assert_accessible(page)
