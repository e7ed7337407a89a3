"""The console's audit log page over HTTP: tool calls made through the bot and console actions,
newest first; filters; keyset pages; the streamed CSV; bad filters; tenant scoping."""

from __future__ import annotations

import csv
import io
import re
from collections.abc import AsyncIterator, Callable
from datetime import timedelta

import httpx
import pytest

from tests.conftest import BotHarness
from tests.support.clocks import Clock
from tests.support.console import WEB_SECRET, shown, sign_in
from tests.support.fakes.openai_server import FakeOpenAI

ROW = re.compile(r"<tr>\s*(<td class=\"ua-when\">.*?)</tr>", re.S)
OLDER = re.compile(r'<a href="([^"]+)" id="older"')


@pytest.fixture
def audit_bot(
    make_bot: Callable[..., BotHarness], clock: Clock, fake_llm: FakeOpenAI
) -> BotHarness:
    return make_bot(
        clock=clock,
        console=True,
        console_secret=WEB_SECRET,
        llm_base_url=fake_llm.url,
        llm_model="fake-model",
        llm_max_retries=0,
    )


@pytest.fixture
async def client(audit_bot: BotHarness) -> AsyncIterator[httpx.AsyncClient]:
    from bot.server import create_http_app

    transport = httpx.ASGITransport(app=create_http_app(audit_bot.app))
    async with httpx.AsyncClient(transport=transport, base_url="http://testserver") as made:
        yield made


def rows(page: str) -> list[str]:
    """Each table row as its cells' text joined by |."""
    return [
        "|".join(c.strip() for c in re.findall(r"<td[^>]*>(.*?)</td>", r, re.S))
        for r in ROW.findall(page)
    ]


async def refused_call(bot: BotHarness, llm: FakeOpenAI, **who: str) -> None:
    """A question whose model proposes a tool the bot does not have (audited: unknown_tool)."""
    llm.tool_calls(("index_repo", {"source": "/tmp"}))
    llm.reply("I may not index that.")
    assert (await bot.send("index /tmp please", **who)).ok


async def test_tool_calls_and_console_actions_newest_first(
    client: httpx.AsyncClient, audit_bot: BotHarness, fake_llm: FakeOpenAI, clock: Clock
) -> None:
    await refused_call(audit_bot, fake_llm, tenant="acme", channel="ops", user="ada")
    await refused_call(audit_bot, fake_llm, tenant="beta", channel="sales", user="zoe_beta")
    clock.now += timedelta(minutes=1)
    await sign_in(client, audit_bot, tenant="acme", user="root")
    page = (await client.get("/console/audit")).text
    assert "<h1>Audit log</h1>" in page
    found = rows(page)
    assert len(found) == 2
    assert found[0].startswith("2026-12-03 09:31:00|root|console|console.sign_in")
    assert "ua-tag" in found[0] and found[0].split("|")[4] == "ok"
    assert found[1].startswith("2026-12-03 09:30:00|ada|ops|index_repo|unknown_tool")
    assert "zoe_beta" not in shown(page) and "sales" not in shown(page)
    assert 'id="older"' not in page and 'id="newest"' not in page


@pytest.mark.parametrize(
    ("query", "expected"),
    [
        ("tool=console.sign_in", ["root"]),
        ("outcome=unknown_tool", ["ada"]),
        ("user=ada", ["ada"]),
        ("channel=ops", ["ada"]),
        ("user=ada&outcome=ok", []),
        ("from=2026-12-03&to=2026-12-03", ["root", "ada"]),
        ("from=2026-12-04", []),
        ("to=2026-12-02", []),
        ("user=+ada+", ["ada"]),  # spaces around a value are no part of it
    ],
)
async def test_filters(
    client: httpx.AsyncClient,
    audit_bot: BotHarness,
    fake_llm: FakeOpenAI,
    clock: Clock,
    query: str,
    expected: list[str],
) -> None:
    await refused_call(audit_bot, fake_llm, tenant="acme", channel="ops", user="ada")
    clock.now += timedelta(minutes=1)
    await sign_in(client, audit_bot, tenant="acme", user="root")
    page = (await client.get(f"/console/audit?{query}")).text
    assert [r.split("|")[1] for r in rows(page)] == expected
    if not expected:
        assert 'id="no-entries"' in page
    assert 'id="clear-filters"' in page


@pytest.mark.parametrize(
    ("query", "message"),
    [
        ("from=03-12-2026", "From must be a day written YYYY-MM-DD"),
        ("to=2026-13-01", "To must be a day written YYYY-MM-DD"),
        ("from=2026-12-04&to=2026-12-03", "The From day is after the To day."),
        ("user=" + "x" * 129, "longer than 128 characters"),
        ("before=abc", "page link is malformed"),
        ("before=1,99999999999", "page link is malformed"),
        ("before=999999999999999999,1", "page link is malformed"),
    ],
)
async def test_bad_filters_get_a_clear_message(
    client: httpx.AsyncClient, audit_bot: BotHarness, query: str, message: str
) -> None:
    await sign_in(client, audit_bot)
    resp = await client.get(f"/console/audit?{query}")
    assert resp.status_code == 400 and message in resp.text and 'id="problem"' in resp.text
    assert 'id="audit-filters"' in resp.text  # the form, to fix the value in
    if not query.startswith("before"):
        assert (await client.get(f"/console/audit.csv?{query}")).status_code == 400


async def test_pages_of_50_by_cursor_and_the_csv_export(
    client: httpx.AsyncClient, audit_bot: BotHarness, clock: Clock
) -> None:
    from core.policy import Identity
    from core.tools.audit import AuditLog

    log = AuditLog(audit_bot.app.db, audit_bot.app.clock)
    for i in range(119):  # three share each instant: the cursor must break ties by id
        clock.now += timedelta(seconds=1) if i % 3 == 0 else timedelta(0)
        who = Identity("console", "local", "=chan", f"u{i:03d}", frozenset())
        await log.record_action(who, "test.action", detail=f"n{i}")
    await sign_in(client, audit_bot)  # the 120th entry
    seen: list[str] = []
    path = "/console/audit?tool=test.action"
    pages = 0
    while path:
        page = (await client.get(path)).text
        pages += 1
        seen += [r.split("|")[1] for r in rows(page)]
        assert pages == 1 or 'id="newest"' in page
        more = OLDER.search(page)
        path = more.group(1).replace("&amp;", "&") if more else ""
        assert not more or "tool=test.action" in path
    assert pages == 3
    assert seen == [f"u{i:03d}" for i in reversed(range(119))]  # none twice, none missed

    resp = await client.get("/console/audit.csv?tool=test.action")
    assert resp.status_code == 200 and resp.headers["content-type"].startswith("text/csv")
    table = list(csv.reader(io.StringIO(resp.text)))
    assert table[0][:3] == ["at", "id", "request_id"]
    assert [r[5] for r in table[1:]] == seen
    assert {r[3] for r in table[1:]} == {"'=chan"}  # a formula-looking cell is quoted
    everything = list(csv.reader(io.StringIO((await client.get("/console/audit.csv")).text)))
    assert len(everything) == 1 + 120


async def test_without_a_session_another_tenant_and_names_as_text(
    client: httpx.AsyncClient, audit_bot: BotHarness, fake_llm: FakeOpenAI
) -> None:
    for path in ("/console/audit", "/console/audit.csv"):
        resp = await client.get(path)
        assert resp.status_code == 303 and resp.headers["location"] == "/console/signin"
    user, channel = "<script>alert(1)</script>", '"><img src=x onerror=alert(1)>'
    await refused_call(audit_bot, fake_llm, tenant="acme", channel=channel, user=user)
    await sign_in(client, audit_bot, tenant="other")
    assert rows((await client.get("/console/audit")).text) == [
        r for r in rows((await client.get("/console/audit")).text) if "alert" not in r
    ]
    assert "alert" not in (await client.get("/console/audit.csv")).text
    filtered = (await client.get("/console/audit", params={"user": user})).text
    assert 'id="no-entries"' in filtered and 'id="audit-rows"' not in filtered

    fresh = httpx.AsyncClient(transport=client._transport, base_url="http://testserver")
    async with fresh:
        await sign_in(fresh, audit_bot, tenant="acme")
        page = (await fresh.get("/console/audit")).text
    assert "<script>" not in page and "<img" not in page
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in page
    assert "&#34;&gt;&lt;img src=x onerror=alert(1)&gt;" in page
    assert (await client.post("/console/audit")).status_code == 405
