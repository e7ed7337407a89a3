"""The console's usage and budgets page over HTTP: usage made through the bot (questions the
fake model answers with known token counts), the breakdowns, the charts, today's budgets, the
CSV export, bad filters, and tenant scoping."""

from __future__ import annotations

import csv
import io
import re
from collections.abc import AsyncIterator, Callable

import httpx
import pytest

from tests.conftest import BotHarness
from tests.support.clocks import Clock
from tests.support.console import WEB_SECRET, shown, sign_in
from tests.support.fakes.openai_server import FakeOpenAI


@pytest.fixture
def usage_bot(
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
async def client(usage_bot: BotHarness) -> AsyncIterator[httpx.AsyncClient]:
    from bot.server import create_http_app

    transport = httpx.ASGITransport(app=create_http_app(usage_bot.app))
    async with httpx.AsyncClient(transport=transport, base_url="http://testserver") as made:
        yield made


async def ask(bot: BotHarness, llm: FakeOpenAI, prompt: int, completion: int, **who: str) -> None:
    llm.reply("Done.", prompt_tokens=prompt, completion_tokens=completion)
    reply = await bot.send("what changed?", **who)
    assert reply.ok, reply.text


def figure(page: str, name: str) -> str:
    found = re.search(rf'id="{name}">([^<]*)<', page)
    assert found is not None, name
    return found.group(1)


async def test_usage_of_the_sessions_tenant_by_channel_user_and_model(
    client: httpx.AsyncClient, usage_bot: BotHarness, fake_llm: FakeOpenAI
) -> None:
    await ask(usage_bot, fake_llm, 1200, 300, tenant="acme", channel="ops", user="ada")
    await ask(usage_bot, fake_llm, 800, 100, tenant="acme", channel="dev", user="bob")
    await ask(usage_bot, fake_llm, 5000, 5000, tenant="beta", channel="sales", user="eve")
    await sign_in(client, usage_bot, tenant="acme", user="root")

    resp = await client.get("/console/usage")
    assert resp.status_code == 200
    page = resp.text
    assert "<h1>Usage and budgets</h1>" in page
    assert figure(page, "total-prompt") == "2,000"
    assert figure(page, "total-completion") == "400"
    assert figure(page, "total-requests") == "2"
    assert "eve" not in shown(page) and "sales" not in shown(page)  # the other tenant's
    shares = page.split('id="usage-shares"')[1].split("</table>")[0]
    assert shares.index(">ops<") < shares.index(">dev<")  # most tokens first
    spenders = page.split('id="top-spenders"')[1].split("</table>")[0]
    assert spenders.index(">ada<") < spenders.index(">bob<") and "1,500" in spenders
    # One chart per series, images with a name, nothing styled inline.
    assert page.count('role="img"') == 4 and "<title id=" in page
    assert "style=" not in page and "<script" not in page

    by_model = (await client.get("/console/usage?by=model&days=7")).text
    assert ">fake-model<" in by_model and "last 7 days" in by_model
    by_user = (await client.get("/console/usage?by=user&days=90")).text
    assert "last 90 days" in by_user and ">ada<" in by_user


async def test_todays_budgets_show_used_and_remaining(
    client: httpx.AsyncClient, usage_bot: BotHarness, fake_llm: FakeOpenAI
) -> None:
    await ask(usage_bot, fake_llm, 1200, 300, tenant="acme", channel="ops", user="ada")
    await sign_in(client, usage_bot, tenant="acme", user="root")
    page = (await client.get("/console/usage")).text
    lines = page.split('id="budget-lines"')[1].split("</table>")[0]
    rows = {
        re.sub(r"\s+", " ", re.sub("<[^>]+>", "|", row)).strip() for row in lines.split("<tr>")[2:]
    }
    # The test policy: 100,000 tokens per user, 1,000,000 per channel, a day.
    assert any("tokens_per_user_per_day" in r and "user ada" in r and "98,500" in r for r in rows)
    assert any("tokens_per_channel_per_day" in r and "channel ops" in r for r in rows)
    assert "4 tool calls and 4 model steps" in page  # per request: limits only


@pytest.mark.parametrize(
    ("query", "message"),
    [
        ("by=tenant", "Break down by one of channel, user, model"),
        ("days=0", "from 1 to 90"),
        ("days=91", "from 1 to 90"),
        ("days=abc", "from 1 to 90"),
        ("days=-3", "from 1 to 90"),
    ],
)
async def test_bad_filters_get_a_clear_message(
    client: httpx.AsyncClient, usage_bot: BotHarness, query: str, message: str
) -> None:
    await sign_in(client, usage_bot)
    resp = await client.get(f"/console/usage?{query}")
    assert resp.status_code == 400 and message in resp.text and 'id="problem"' in resp.text
    assert (await client.get(f"/console/usage.csv?{query}")).status_code == 400


async def test_the_csv_export_has_the_days_and_the_breakdown(
    client: httpx.AsyncClient, usage_bot: BotHarness, fake_llm: FakeOpenAI
) -> None:
    await ask(usage_bot, fake_llm, 1200, 300, tenant="acme", channel="=cmd()", user="ada")
    await ask(usage_bot, fake_llm, 5000, 5000, tenant="beta", channel="sales", user="eve")
    await sign_in(client, usage_bot, tenant="acme")
    resp = await client.get("/console/usage.csv?by=channel&days=3")
    assert resp.status_code == 200 and resp.headers["content-type"].startswith("text/csv")
    assert "usage-channel-3d.csv" in resp.headers["content-disposition"]
    rows = list(csv.reader(io.StringIO(resp.text)))
    assert rows[0] == [
        "day",
        "channel",
        "prompt_tokens",
        "completion_tokens",
        "cached_tokens",
        "requests",
    ]
    assert rows[1:] == [["2026-12-03", "'=cmd()", "1200", "300", "0", "1"]]  # no formula


async def test_without_a_session_and_names_as_text(
    client: httpx.AsyncClient, usage_bot: BotHarness, fake_llm: FakeOpenAI
) -> None:
    for path in ("/console/usage", "/console/usage.csv"):
        resp = await client.get(path)
        assert resp.status_code == 303 and resp.headers["location"] == "/console/signin"
    user, channel = "<script>alert(1)</script>", '"><img src=x onerror=alert(1)>'
    await ask(usage_bot, fake_llm, 10, 5, tenant="acme", channel=channel, user=user)
    await sign_in(client, usage_bot, tenant="acme")
    for by in ("channel", "user"):
        page = (await client.get(f"/console/usage?by={by}")).text
        assert "<script>" not in page and "<img" not in page
        assert "&lt;script&gt;alert(1)&lt;/script&gt;" in page
    assert "&#34;&gt;&lt;img src=x onerror=alert(1)&gt;" in page
    assert (await client.post("/console/usage")).status_code == 405  # nothing to change here
