"""The console's digests page over HTTP: subscriptions made through the bot, grouped by channel
with the next run in their zone; the filters; pause, resume and run now (audited, scoped to the
tenant, CSRF-checked); names rendered as text."""

from __future__ import annotations

import re
from collections.abc import Callable
from datetime import timedelta
from pathlib import Path

import httpx
import pytest

from tests.conftest import BotHarness
from tests.support.clocks import Clock
from tests.support.console import POLICY, WEB_SECRET, shown, sign_in


@pytest.fixture
def console_bot(
    make_bot: Callable[..., BotHarness], clock: Clock, write_policy: Callable[[str], Path]
) -> BotHarness:
    """The console's bot with the console tests' policy: admins may add digests."""
    return make_bot(
        clock=clock, console=True, console_secret=WEB_SECRET, policy_file=write_policy(POLICY)
    )


async def _audit(bot: BotHarness) -> list[tuple[str, str, str]]:
    from sqlmodel import col, select

    from core.store.models import AuditEntry

    async with bot.app.db.session() as s:
        rows = (
            await s.exec(
                select(AuditEntry)
                .where(col(AuditEntry.tool).like("console.digest%"))
                .order_by(col(AuditEntry.id))
            )
        ).all()
    return [(r.tool, r.tenant, r.detail or "") for r in rows]


async def _digest_id(bot: BotHarness, text: str, **who: object) -> int:
    reply = await bot.send(text, roles=["admin"], **who)
    assert reply.ok, reply.text
    found = re.search(r"Digest #(\d+) added", reply.text)
    assert found is not None
    return int(found.group(1))


async def test_lists_the_tenants_digests_by_channel_with_the_next_run_in_their_zone(
    web: httpx.AsyncClient, console_bot: BotHarness
) -> None:
    a = await _digest_id(
        console_bot, "/digest add daily activity --tz Europe/Berlin", tenant="acme", channel="ops"
    )
    weekdays = '/digest add "30 8 * * 1-5" activity --skip-empty'
    b = await _digest_id(console_bot, weekdays, tenant="acme", channel="dev")
    hidden = await _digest_id(console_bot, "/digest add hourly activity", tenant="beta")
    await sign_in(web, console_bot, tenant="acme")
    page = (await web.get("/console/digests")).text
    assert "Channel ops" in page and "Channel dev" in page
    assert page.index("Channel dev") < page.index("Channel ops")
    # 09:30 UTC on the pinned day: Berlin's 09:00 is past, so tomorrow 09:00 CET.
    row_a = page[page.index(f'id="digest-{a}"') :]
    assert "Europe/Berlin" in row_a and re.search(r"\w{3} \d\d \w{3} 09:00 CET", row_a)
    row_b = page[page.index(f'id="digest-{b}"') :]
    assert "skips empty periods" in row_b and "08:30 UTC" in row_b
    assert f'id="digest-{hidden}"' not in page and "beta" not in shown(page)

    only_dev = (await web.get("/console/digests", params={"channel": "dev"})).text
    assert "Channel dev" in only_dev and "Channel ops" not in only_dev
    assert "No digest matches" in (await web.get("/console/digests?state=paused")).text
    bad = await web.get("/console/digests?state=<script>")
    assert bad.status_code == 400 and "<script>" not in bad.text


async def test_pause_resume_and_run_now_are_audited_and_run_once(
    web: httpx.AsyncClient, console_bot: BotHarness, clock: Clock
) -> None:
    sub = await _digest_id(console_bot, "/digest add hourly activity", tenant="acme", channel="ops")
    csrf = await sign_in(web, console_bot, tenant="acme", user="ada")
    form = {"csrf_token": csrf}

    resp = await web.post(f"/console/digests/{sub}/pause", data=form)
    assert resp.status_code == 303
    page = (await web.get(resp.headers["location"])).text
    assert f"Digest #{sub} paused" in page and f'id="resume-{sub}"' in page
    assert (await console_bot.app.digests.store.get(sub)).paused
    # The scheduler leaves a paused digest alone.
    clock.now += timedelta(minutes=40)
    assert await console_bot.app.digests.run_due() == []

    resp = await web.post(f"/console/digests/{sub}/resume", data=form)
    assert f"Digest #{sub} resumed" in (await web.get(resp.headers["location"])).text

    # Run now: once, however often it is clicked within the minute.
    first = await web.post(f"/console/digests/{sub}/run", data=form)
    assert "done=posted" in first.headers["location"]
    second = await web.post(f"/console/digests/{sub}/run", data=form)
    assert "done=taken" in second.headers["location"]
    page = (await web.get("/console/digests")).text
    assert page.count("(run now)") == 1 and "posted" in page
    runs = await console_bot.app.digests.store.runs(sub)
    assert [(r.state, r.scheduled_for.second) for r in runs] == [("posted", 30)]
    # ... and the scheduled period still runs, on its own key.
    assert await console_bot.app.digests.run_due() == ["posted"]

    assert await _audit(console_bot) == [
        ("console.digest_pause", "acme", f"digest #{sub} (activity) in ops"),
        ("console.digest_resume", "acme", f"digest #{sub} (activity) in ops"),
        ("console.digest_run", "acme", f"digest #{sub} (activity) in ops: posted"),
        ("console.digest_run", "acme", f"digest #{sub} (activity) in ops: taken"),
    ]


async def test_another_tenants_digest_reads_as_unknown_and_csrf_is_needed(
    web: httpx.AsyncClient, console_bot: BotHarness
) -> None:
    theirs = await _digest_id(console_bot, "/digest add daily activity", tenant="beta")
    csrf = await sign_in(web, console_bot, tenant="acme")
    other = await web.post(f"/console/digests/{theirs}/pause", data={"csrf_token": csrf})
    unknown = await web.post("/console/digests/999999/pause", data={"csrf_token": csrf})
    assert other.status_code == unknown.status_code == 404
    assert f"There is no digest #{theirs} in this tenant." in other.text
    assert "There is no digest #999999 in this tenant." in unknown.text
    assert not (await console_bot.app.digests.store.get(theirs)).paused
    bad_verb = await web.post(f"/console/digests/{theirs}/remove", data={"csrf_token": csrf})
    assert bad_verb.status_code == 404
    no_token = await web.post(f"/console/digests/{theirs}/run", data={})
    assert no_token.status_code == 403
    assert await console_bot.app.digests.store.runs(theirs) == []
    assert await _audit(console_bot) == []


async def test_without_a_session_the_page_and_actions_go_to_sign_in(
    web: httpx.AsyncClient,
) -> None:
    for resp in (
        await web.get("/console/digests"),
        await web.post("/console/digests/1/run", data={"csrf_token": "x"}),
    ):
        assert resp.status_code == 303 and resp.headers["location"] == "/console/signin"


async def test_channel_names_render_as_text(
    web: httpx.AsyncClient, console_bot: BotHarness
) -> None:
    for channel in ("<script>alert(1)</script>", '"><img src=x onerror=alert(1)>'):
        await _digest_id(console_bot, "/digest add daily activity", tenant="acme", channel=channel)
    await sign_in(web, console_bot, tenant="acme")
    page = (await web.get("/console/digests")).text
    assert "<script>alert" not in page and "<img" not in page
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in page
    assert "&#34;&gt;&lt;img src=x onerror=alert(1)&gt;" in page
