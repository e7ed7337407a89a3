"""The operator console over HTTP, without a browser: settings, links, cookies, CSRF, headers,
rate limits and tenant scoping (test_browser.py drives a real browser)."""

from __future__ import annotations

import re
from collections.abc import Callable
from datetime import timedelta
from pathlib import Path

import httpx
import pytest

from config.settings import Settings
from core.errors import ConfigError
from tests.conftest import POLICY_ALL, BotHarness
from tests.support.clocks import Clock
from tests.support.console import CSRF, WEB_SECRET, link_for, shown, sign_in, signin_post
from tests.support.fakes.openai_server import FakeOpenAI

LINK = re.compile(r"http://127\.0\.0\.1:8080(/console/signin/[A-Za-z0-9_-]+)")


def test_console_on_without_a_secret_stops_start_up(
    make_settings: Callable[..., Settings],
) -> None:
    with pytest.raises(ConfigError, match="THREADLINE_CONSOLE_SECRET"):
        make_settings(console=True)
    with pytest.raises(ConfigError, match="at least 32"):
        make_settings(console=True, console_secret="short")
    assert make_settings().console is False


async def test_console_is_not_served_when_off(make_bot: Callable[..., BotHarness]) -> None:
    from bot.server import create_http_app

    bot = make_bot()
    transport = httpx.ASGITransport(app=create_http_app(bot.app))
    async with httpx.AsyncClient(transport=transport, base_url="http://testserver") as client:
        assert (await client.get("/console/")).status_code == 404
    assert "/console" not in (await bot.send("/help", roles=["admin"])).text


async def test_a_link_signs_in_once_and_sets_a_strict_cookie(
    web: httpx.AsyncClient, console_bot: BotHarness
) -> None:
    path = await link_for(console_bot, user="ada")
    form = await web.get(path)  # a GET (a link preview) does not spend the link
    assert form.status_code == 200 and 'id="signin"' in form.text
    resp = await signin_post(web, path)
    assert resp.status_code == 303 and resp.headers["location"] == "/console/"
    [cookie] = [c.lower() for c in resp.headers.get_list("set-cookie") if "signin=" not in c]
    assert "httponly" in cookie and "samesite=strict" in cookie and "path=/console" in cookie
    assert "max-age=28800" in cookie and "secure" not in cookie  # plain HTTP here
    page = await web.get("/console/")
    assert page.status_code == 200 and "Overview" in page.text and "ada" in page.text

    other = httpx.AsyncClient(transport=web._transport, base_url="http://testserver")
    again = await signin_post(other, path)
    assert again.status_code == 403 and "already used" in again.text


async def test_the_sign_in_form_needs_its_csrf_token_and_cookie(
    web: httpx.AsyncClient, console_bot: BotHarness
) -> None:
    path = await link_for(console_bot, user="ada")
    # Another site posting the link (no form token, no cookie of ours): refused, link unspent.
    bare = await web.post(path)
    assert bare.status_code == 403 and "not opened in this browser" in bare.text
    form = await web.get(path)
    [token] = CSRF.findall(form.text)
    set_cookie = form.headers["set-cookie"].lower()
    assert "samesite=strict" in set_cookie and "httponly" in set_cookie
    # The token without the cookie it belongs to (a forged form elsewhere) is refused too.
    other = httpx.AsyncClient(transport=web._transport, base_url="http://testserver")
    assert (await other.post(path, data={"csrf_token": token})).status_code == 403
    assert (await web.post(path, data={"csrf_token": token + "x"})).status_code == 403
    assert (await web.post(path, data={"csrf_token": token})).status_code == 303


async def test_an_expired_link_is_refused(
    web: httpx.AsyncClient, console_bot: BotHarness, clock: Clock
) -> None:
    path = await link_for(console_bot)
    clock.now += timedelta(minutes=5, seconds=1)
    resp = await signin_post(web, path)
    assert resp.status_code == 403 and "has expired" in resp.text
    assert "threadline_console" not in resp.headers.get("set-cookie", "")


async def test_unknown_links_and_pages_without_a_session(web: httpx.AsyncClient) -> None:
    assert (await web.post("/console/signin/nope")).status_code == 403
    resp = await web.get("/console/")
    assert resp.status_code == 303 and resp.headers["location"] == "/console/signin"
    forged = await web.get("/console/", headers={"cookie": "threadline_console=eyJzaWQiOjF9.x"})
    assert forged.status_code == 303


async def test_a_non_admin_gets_no_link(console_bot: BotHarness) -> None:
    reply = await console_bot.send("/console", roles=[])
    assert "/console/signin/" not in reply.text and "admin" in reply.text


async def test_sign_out_needs_the_csrf_token_and_ends_the_session(
    web: httpx.AsyncClient, console_bot: BotHarness
) -> None:
    csrf = await sign_in(web, console_bot)
    cookie = web.cookies.get("threadline_console")
    assert (await web.post("/console/signout")).status_code == 403
    assert (await web.post("/console/signout", data={"csrf_token": "wrong"})).status_code == 403
    assert (await web.get("/console/")).status_code == 200  # still signed in
    out = await web.post("/console/signout", data={"csrf_token": csrf})
    assert out.status_code == 303 and out.headers["location"] == "/console/signin?out"
    # The old cookie, replayed, opens nothing: the session is over in SQL, not just forgotten.
    assert "threadline_console" not in web.cookies
    replay = await web.get("/console/", headers={"cookie": f"threadline_console={cookie}"})
    assert replay.status_code == 303


async def test_every_console_response_carries_the_security_headers(
    web: httpx.AsyncClient, console_bot: BotHarness
) -> None:
    await sign_in(web, console_bot)
    for resp in [
        await web.get("/console/"),
        await web.get("/console/signin"),
        await web.post("/console/signin/nope"),
        await web.get("/console/static/console.css"),
        await web.post("/console/signout"),
    ]:
        h = resp.headers
        assert "default-src 'self'" in h["content-security-policy"]
        assert "frame-ancestors 'none'" in h["content-security-policy"]
        assert "unsafe-inline" not in h["content-security-policy"]
        assert h["x-frame-options"] == "DENY"
        assert h["referrer-policy"] == "no-referrer"
        assert h["x-content-type-options"] == "nosniff"
    assert "<script" not in (await web.get("/console/")).text


async def test_sign_ins_and_sign_outs_are_audited(
    web: httpx.AsyncClient, console_bot: BotHarness
) -> None:
    from sqlmodel import select

    from core.store.models import AuditEntry

    csrf = await sign_in(web, console_bot, user="grace", tenant="acme")
    await web.post("/console/signout", data={"csrf_token": csrf})
    async with console_bot.app.db.session() as s:
        rows = (await s.exec(select(AuditEntry).order_by(AuditEntry.id))).all()  # type: ignore[arg-type]
    assert [(r.tool, r.user, r.tenant, r.outcome) for r in rows] == [
        ("console.sign_in", "grace", "acme", "ok"),
        ("console.sign_out", "grace", "acme", "ok"),
    ]


async def test_the_overview_counts_only_the_sessions_tenant(
    web: httpx.AsyncClient, console_bot: BotHarness
) -> None:
    for _ in range(3):
        await console_bot.send("/help", tenant="beta")
    await console_bot.send("/memory", tenant="alpha")
    await sign_in(web, console_bot, tenant="alpha")
    page = (await web.get("/console/")).text
    assert "Activity in alpha" in page and "beta" not in shown(page)


async def test_sign_in_attempts_are_rate_limited(web: httpx.AsyncClient, clock: Clock) -> None:
    codes = [(await web.post("/console/signin/nope")).status_code for _ in range(11)]
    assert codes[:10] == [403] * 10 and codes[10] == 429
    clock.now += timedelta(minutes=1)
    assert (await web.post("/console/signin/nope")).status_code == 403


async def test_the_cookie_is_secure_over_https(console_bot: BotHarness) -> None:
    from bot.server import create_http_app

    transport = httpx.ASGITransport(app=create_http_app(console_bot.app))
    async with httpx.AsyncClient(transport=transport, base_url="https://testserver") as client:
        resp = await signin_post(client, await link_for(console_bot))
    assert resp.status_code == 303
    assert all("secure" in c.lower() for c in resp.headers.get_list("set-cookie"))


async def test_threadline_console_link_prints_a_link_for_admins_only(
    console_bot: BotHarness,
    make_bot: Callable[..., BotHarness],
    web: httpx.AsyncClient,
    capsys: pytest.CaptureFixture[str],
) -> None:
    import argparse

    from bot.operator_cli import console_command

    def args(user: str, *roles: str) -> argparse.Namespace:
        return argparse.Namespace(user=user, channel="", role=list(roles))

    assert await console_command(console_bot.app, args("console:local:root", "admin")) == 0
    url = capsys.readouterr().out.strip()
    found = LINK.fullmatch(url)
    assert found is not None
    assert (await signin_post(web, found.group(1))).status_code == 303  # it signs in

    assert await console_command(console_bot.app, args("slack:T1:U1")) == 1
    assert "does not have `admin`" in capsys.readouterr().err
    assert await console_command(console_bot.app, args("slack-T1-U1", "admin")) == 2
    assert await console_command(make_bot().app, args("console:local:root", "admin")) == 2
    assert "the console is off" in capsys.readouterr().err


async def test_names_render_as_text(web: httpx.AsyncClient, console_bot: BotHarness) -> None:
    user, tenant = "<script>alert(1)</script>", '"><img src=x onerror=alert(1)>'
    await sign_in(web, console_bot, user=user, tenant=tenant)
    page = (await web.get("/console/")).text
    assert "<script>" not in page and "<img" not in page
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in page
    assert "&#34;&gt;&lt;img src=x onerror=alert(1)&gt;" in page


async def test_a_session_ends_after_8_hours(
    web: httpx.AsyncClient, console_bot: BotHarness, clock: Clock
) -> None:
    await sign_in(web, console_bot)
    clock.now += timedelta(hours=8) - timedelta(seconds=1)
    assert (await web.get("/console/")).status_code == 200
    clock.now += timedelta(seconds=1)
    assert (await web.get("/console/")).status_code == 303


async def test_pages_are_rate_limited_per_session(
    web: httpx.AsyncClient, console_bot: BotHarness, clock: Clock
) -> None:
    await sign_in(web, console_bot)  # one page already
    codes = [(await web.get("/console/")).status_code for _ in range(120)]
    assert codes[:119] == [200] * 119 and codes[119] == 429
    clock.now += timedelta(minutes=1)
    assert (await web.get("/console/")).status_code == 200


async def test_the_overview_shows_each_mcp_servers_state(
    make_bot: Callable[..., BotHarness], clock: Clock
) -> None:
    from bot.server import create_http_app

    bot = make_bot(
        clock=clock,
        console=True,
        console_secret=WEB_SECRET,
        mcp={"tickets": {"url": "http://127.0.0.1:9/mcp"}},
    )
    bot.app.mcp.servers["tickets"].status = "failed"
    bot.app.mcp.servers["tickets"].reason = "connection refused"
    transport = httpx.ASGITransport(app=create_http_app(bot.app))
    async with httpx.AsyncClient(transport=transport, base_url="http://testserver") as client:
        await sign_in(client, bot)
        page = (await client.get("/console/")).text
    assert "MCP server tickets" in page and "failed: connection refused" in page


async def test_the_overview_lists_live_processes_and_each_chat_platforms_state(
    make_bot: Callable[..., BotHarness], clock: Clock
) -> None:
    from bot.server import create_http_app
    from core.operator.processes import ProcessBoard, ProcessInfo

    bot = make_bot(clock=clock, console=True, console_secret=WEB_SECRET, discord_token="x.y.z")
    board = ProcessBoard(bot.app.db, clock)
    web = ProcessInfo("a", "serve", '"><img src=x onerror=alert(1)>', 11, clock.now)
    await board.beat(web)
    transport = httpx.ASGITransport(app=create_http_app(bot.app))
    async with httpx.AsyncClient(transport=transport, base_url="http://testserver") as client:
        await sign_in(client, bot)
        page = (await client.get("/console/")).text
        # Discord is configured but no process has it connected; Slack is not configured.
        assert 'Discord</td><td class="bad">not connected by any running process' in page
        assert "Slack" not in shown(page)
        assert "&#34;&gt;&lt;img src=x onerror=alert(1)&gt;" in page and "<img src" not in page
        await board.beat(
            ProcessInfo("b", "worker", "w1", 12, clock.now, platforms={"discord": "ok"})
        )
        clock.now += timedelta(seconds=6)  # past the readiness cache
        page = (await client.get("/console/")).text
    assert 'Discord</td><td class="ok">ok' in page
    assert page.count("<td>serve</td>") == 1 and page.count("<td>worker</td>") == 1


async def test_the_overview_names_each_model_endpoints_state(
    make_bot: Callable[..., BotHarness],
    clock: Clock,
    fake_llm: FakeOpenAI,
    write_policy: Callable[[str], Path],
) -> None:
    from bot.server import create_http_app

    policy = POLICY_ALL + '\n[[rules]]\nmatch = { channel = "incidents" }\nmodel = "strong"\n'
    policy += '\n[[rules]]\nmatch = { roles = ["admin"] }\ngrant = ["admin"]\n'
    bot = make_bot(
        clock=clock,
        console=True,
        console_secret=WEB_SECRET,
        policy_file=write_policy(policy),
        llm_base_url=fake_llm.url,
        llm_model="fake-model",
        llm_max_retries=0,
        # A second endpoint nothing listens on: the default one stays "ok" beside it.
        providers={"strong": {"base_url": "http://127.0.0.1:9/v1", "model": "big-model"}},
    )
    transport = httpx.ASGITransport(app=create_http_app(bot.app))
    async with httpx.AsyncClient(transport=transport, base_url="http://testserver") as client:
        await sign_in(client, bot)
        page = (await client.get("/console/")).text
    assert 'model default (fake-model)</td><td class="ok">ok' in page
    assert (
        'model strong (big-model)</td><td class="bad">the model endpoint cannot be reached' in page
    )
