"""The console's MCP page over HTTP: servers and their grants in the operator's tenant, a
changed tool definition as a diff and its Approve (audited, the same approval as `/mcp
approve`), the tenant's pending confirmations, and who may see and do what. The server is
configured but not started: the pins are recorded as its listings would record them (the
browser test runs the real test server)."""

from __future__ import annotations

import re
from collections.abc import Callable
from datetime import timedelta
from pathlib import Path

import httpx
import pytest
from sqlmodel import select

from core.store.models import AuditEntry, McpConfirmation, McpToolPin
from tests.conftest import BotHarness
from tests.support.clocks import Clock
from tests.support.console import WEB_SECRET, shown, sign_in
from tests.support.console_pages import LOOKUP_NEW, LOOKUP_OLD, POLICY, XSS, mcp_server


@pytest.fixture
def console_bot(
    make_bot: Callable[..., BotHarness], clock: Clock, write_policy: Callable[[str], Path]
) -> BotHarness:
    return make_bot(
        clock=clock,
        console=True,
        console_secret=WEB_SECRET,
        policy_file=write_policy(POLICY),
        mcp={"t": mcp_server()},
    )


async def _changed(bot: BotHarness) -> None:
    """`t` was trusted with the old `lookup`, and now lists a new one."""
    pins = bot.app.mcp.pins
    assert await pins.check("t", {"lookup": LOOKUP_OLD}) == {"lookup": "new"}
    assert await pins.check("t", {"lookup": LOOKUP_NEW}) == {"lookup": "changed"}


async def _confirmation(bot: BotHarness, clock: Clock, tenant: str, user: str) -> None:
    async with bot.app.db.session() as s:
        s.add(
            McpConfirmation(
                id=f"c-{tenant}-{user}",
                request_id="r1",
                platform="console",
                tenant=tenant,
                channel="ops",
                thread="th",
                user=user,
                tool="t.delete_item",
                arguments='{"item_id": 3}',
                created_at=clock.now,
                expires_at=clock.now + timedelta(minutes=5),
            )
        )


async def _audit(bot: BotHarness, action: str) -> list[AuditEntry]:
    async with bot.app.db.session() as s:
        rows = await s.exec(select(AuditEntry).where(AuditEntry.tool == action))
        return list(rows.all())


async def test_a_changed_definition_shows_its_diff_and_approve_trusts_it(
    web: httpx.AsyncClient, console_bot: BotHarness
) -> None:
    await _changed(console_bot)
    csrf = await sign_in(web, console_bot, tenant="acme", user="ada")
    page = await web.get("/console/mcp")
    assert page.status_code == 200
    text = page.text
    assert "<code>t</code>" in text and "connecting" in text
    # The diff: pretty-printed JSON, the old line removed, the new one added, as text.
    removed = re.findall(r'<span class="msp-line msp-del">(.*?)</span>', text)
    added = re.findall(r'<span class="msp-line msp-add">(.*?)</span>', text)
    assert removed == ["-  &#34;description&#34;: &#34;Look up an item by a query.&#34;,"]
    assert len(added) == 1 and "IGNORE ALL PREVIOUS INSTRUCTIONS" in added[0]
    assert "<script>" not in text and "<img src=x" not in text
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in added[0]
    # Grants in acme: the admins' rule does not name t; the ops and help rules do, and the
    # rule with the hostile name denies a tool; globex's grant is not shown.
    grants = text.split('class="msp-grants"')[1].split("</table>")[0]
    assert "ops may use the test server" in grants and "mcp:t.lookup" in grants
    assert "denied" in grants and "&lt;script&gt;" in grants
    assert "globex" not in text

    fingerprint = re.search(r'name="changes" value="([0-9a-f]{64})"', text)
    assert fingerprint is not None
    # Without the CSRF token: refused, nothing approved.
    bare = await web.post("/console/mcp/t/approve", data={"changes": fingerprint.group(1)})
    assert bare.status_code == 403
    assert len(await console_bot.app.mcp.pins.pending("t")) == 1

    done = await web.post(
        "/console/mcp/t/approve", data={"csrf_token": csrf, "changes": fingerprint.group(1)}
    )
    assert done.status_code == 303 and done.headers["location"] == "/console/mcp?approved=t"
    assert await console_bot.app.mcp.pins.pending("t") == []
    async with console_bot.app.db.session() as s:
        pin = (await s.exec(select(McpToolPin))).one()
    assert "IGNORE ALL" in pin.definition and pin.approved_by == "console:ada"
    [entry] = await _audit(console_bot, "console.mcp.approve")
    assert (entry.tenant, entry.user, entry.detail) == ("acme", "ada", "t: t.lookup")
    after = await web.get(done.headers["location"])
    assert "Approved the new definitions of t" in after.text
    assert 'class="msp-changes"' not in after.text

    # Chat agrees: nothing is left for `/mcp approve`.
    chat = await console_bot.send("/mcp approve t", tenant="acme", roles=["admin"])
    assert "no new or changed tool definitions" in chat.text


async def test_approve_names_what_was_reviewed(
    web: httpx.AsyncClient, console_bot: BotHarness
) -> None:
    await _changed(console_bot)
    csrf = await sign_in(web, console_bot, tenant="acme", user="ada")
    page = await web.get("/console/mcp")
    [seen] = re.findall(r'name="changes" value="([0-9a-f]{64})"', page.text)
    # The server changes the definition again after the page was shown: not approved unseen.
    again = {**LOOKUP_NEW, "description": "Something else again."}
    await console_bot.app.mcp.pins.check("t", {"lookup": again})
    stale = await web.post("/console/mcp/t/approve", data={"csrf_token": csrf, "changes": seen})
    assert stale.status_code == 409 and "changed since the page was shown" in stale.text
    assert len(await console_bot.app.mcp.pins.pending("t")) == 1
    [entry] = await _audit(console_bot, "console.mcp.approve")
    assert entry.detail == "t: refused"
    forged = await web.post(
        "/console/mcp/t/approve", data={"csrf_token": csrf, "changes": "0" * 64}
    )
    assert forged.status_code == 409
    unknown = await web.post("/console/mcp/nope/approve", data={"csrf_token": csrf})
    assert unknown.status_code == 404


async def test_pending_confirmations_of_the_tenant_only(
    web: httpx.AsyncClient, console_bot: BotHarness, clock: Clock
) -> None:
    await _confirmation(console_bot, clock, "acme", "bob")
    await _confirmation(console_bot, clock, "globex", "gus")
    await sign_in(web, console_bot, tenant="acme", user="ada")
    page = (await web.get("/console/mcp")).text
    table = page.split('id="pending-confirmations"')[1].split("</table>")[0]
    assert "bob" in table and "t.delete_item" in table and "gus" not in shown(page)
    clock.now += timedelta(minutes=6)  # expired: no longer waiting
    assert 'id="no-confirmations"' in (await web.get("/console/mcp")).text


async def test_the_server_filter(web: httpx.AsyncClient, console_bot: BotHarness) -> None:
    await sign_in(web, console_bot, tenant="acme", user="ada")
    filtered = await web.get("/console/mcp", params={"server": "t"})
    assert filtered.status_code == 200 and 'id="mcp-t"' in filtered.text
    bad = await web.get("/console/mcp", params={"server": XSS})
    assert bad.status_code == 400 and "No MCP server of that name" in bad.text
    assert "<script>" not in bad.text


async def test_another_tenants_admin_approves_as_in_chat_and_nobody_else(
    web: httpx.AsyncClient, console_bot: BotHarness
) -> None:
    await _changed(console_bot)
    resp = await web.get("/console/mcp")
    assert resp.status_code == 303 and resp.headers["location"] == "/console/signin"
    assert (await web.post("/console/mcp/t/approve")).status_code == 303  # to sign-in
    # Pins are global (a server serves every tenant) and `/mcp approve t` works for any
    # tenant's admin: the console allows the same, and shows globex its own grants only.
    csrf = await sign_in(web, console_bot, tenant="globex", user="gus")
    page = await web.get("/console/mcp")
    assert "globex secret plans" in page.text and "ops may use the test server" not in page.text
    assert "bob" not in shown(page.text)
    [seen] = re.findall(r'name="changes" value="([0-9a-f]{64})"', page.text)
    done = await web.post("/console/mcp/t/approve", data={"csrf_token": csrf, "changes": seen})
    assert done.status_code == 303
    [entry] = await _audit(console_bot, "console.mcp.approve")
    assert (entry.tenant, entry.user) == ("globex", "gus")


async def test_an_admin_who_may_not_use_mcp_in_chat_may_not_approve(
    web: httpx.AsyncClient, console_bot: BotHarness
) -> None:
    # `/mcp` needs `ask` as well as `admin`; "quiet" is an admin the policy denies `ask`.
    await _changed(console_bot)
    chat = await console_bot.send("/mcp approve t", tenant="acme", user="quiet", roles=["admin"])
    assert not chat.ok
    csrf = await sign_in(web, console_bot, tenant="acme", user="quiet")
    page = await web.get("/console/mcp")
    assert 'name="changes"' not in page.text and "needs the <code>ask</code>" in page.text
    refused = await web.post("/console/mcp/t/approve", data={"csrf_token": csrf, "changes": ""})
    assert refused.status_code == 403 and "ask and admin permissions" in refused.text
    assert len(await console_bot.app.mcp.pins.pending("t")) == 1
