"""The console's Conversations page over HTTP (in-process), with conversations made through the
bot and the fake model: the list and its filters, a thread's turns, tool calls, sources and
ratings, the audited view, tenant scoping, bad input, and hostile text rendered as text."""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from datetime import timedelta
from pathlib import Path
from typing import Any
from urllib.parse import quote

import httpx
import pytest

from core.request import Rating
from tests.conftest import BotHarness
from tests.support.clocks import Clock
from tests.support.code_repo import git, make_repo
from tests.support.console import WEB_SECRET, sign_in
from tests.support.fakes.openai_server import FakeOpenAI

HOSTILE = '<script>alert(1)</script> "><img src=x onerror=alert(2)>'


@pytest.fixture
def bot(make_bot: Callable[..., BotHarness], clock: Clock, fake_llm: FakeOpenAI) -> BotHarness:
    return make_bot(
        clock=clock,
        console=True,
        console_secret=WEB_SECRET,
        llm_base_url=fake_llm.url,
        llm_model="fake-model",
        llm_max_retries=0,
    )


@pytest.fixture
async def web(bot: BotHarness) -> AsyncIterator[httpx.AsyncClient]:
    from bot.server import create_http_app

    transport = httpx.ASGITransport(app=create_http_app(bot.app))
    async with httpx.AsyncClient(transport=transport, base_url="http://testserver") as client:
        yield client


async def ask(
    bot: BotHarness, llm: FakeOpenAI, clock: Clock, text: str, answer: str, **who: Any
) -> Any:
    llm.reply(answer)
    reply = await bot.send(text, **who)
    assert reply.ok, reply.text
    clock.now += timedelta(minutes=1)  # answers are told apart from turns by time
    return reply


async def test_the_list_the_filters_and_a_thread_with_its_tool_calls_and_ratings(
    web: httpx.AsyncClient, bot: BotHarness, fake_llm: FakeOpenAI, clock: Clock
) -> None:
    await ask(
        bot,
        fake_llm,
        clock,
        "how do deploys work?",
        "From CI.",
        channel="ops",
        thread="d1",
        user="ada",
    )
    fake_llm.tool_calls(("current_time", {}))
    fake_llm.reply("It is 09:31.\nSecond line.")
    timed = await bot.send("what time is it?", channel="ops", thread="d1", user="bob")
    assert timed.ok and timed.answer_id is not None
    clock.now += timedelta(minutes=1)
    await bot.core.rate(
        Rating("console", "local", "ops", "cy", timed.answer_id, "down", reason="wrong zone")
    )
    await ask(bot, fake_llm, clock, "hello?", "Hi.", channel="dev", thread="x9", user="eve")
    await ask(
        bot, fake_llm, clock, "secret plans", "No.", tenant="other", channel="ops", thread="o1"
    )

    await sign_in(web, bot, user="root")
    page = await web.get("/console/conversations")
    assert page.status_code == 200 and "<h1>Conversations</h1>" in page.text
    body = page.text
    assert body.index('href="/console/conversations/dev/x9"') < body.index(
        'href="/console/conversations/ops/d1"'
    )  # newest activity first
    assert "ada, bob" in body and "o1" not in body and "secret plans" not in body

    only_ops = (await web.get("/console/conversations", params={"channel": "ops"})).text
    assert "/ops/d1" in only_ops and "/dev/x9" not in only_ops
    by_eve = (await web.get("/console/conversations", params={"user": "eve"})).text
    assert "/dev/x9" in by_eve and "/ops/d1" not in by_eve
    today = clock.now.strftime("%Y-%m-%d")
    assert "/ops/d1" in (await web.get("/console/conversations", params={"from": today})).text
    yesterday = (clock.now - timedelta(days=1)).strftime("%Y-%m-%d")
    none = (await web.get("/console/conversations", params={"to": yesterday})).text
    assert "/ops/d1" not in none and "matches this filter" in none

    thread = await web.get("/console/conversations/ops/d1")
    assert thread.status_code == 200
    text = thread.text
    # The nav marks Conversations as the current page, on a thread's page too, and only it.
    current = '<a href="/console/conversations" aria-current="page">Conversations</a>'
    assert current in text and current in body and text.count('aria-current="page"') == 1
    assert "how do deploys work?" in text and "It is 09:31.\nSecond line." in text
    assert "current_time" in text and "fake-model" in text and "wrong zone" in text
    assert text.index("how do deploys work?") < text.index("what time is it?")
    assert "Turn 2" in text and "Rated down (not helpful)" in text
    assert "Summary of the compacted turns" not in text

    # The thread grew too long and its first turn was summarized (as compaction stores it).
    from core.memory.history import HistoryStore
    from core.request import ConversationKey

    conv = ConversationKey("console", "local", "ops", "d1")
    await HistoryStore(bot.app.db, clock).save_summary(
        conv, "Ada asked <b>how</b> deploys work.", 2
    )
    compacted = (await web.get("/console/conversations/ops/d1")).text
    assert "Summary of the compacted turns" in compacted
    assert "Ada asked &lt;b&gt;how&lt;/b&gt; deploys work." in compacted
    assert compacted.count("cv-tag") == 1  # turn 1 (messages 1 and 2) only

    from sqlmodel import col, select

    from core.store.models import AuditEntry

    async with bot.app.db.session() as s:
        views = (
            await s.exec(select(AuditEntry).where(col(AuditEntry.tool) == "console.view_thread"))
        ).all()
    assert [(v.user, v.detail) for v in views] == [("root", "channel=ops thread=d1")] * 2


def pushed_repo(base: Path) -> tuple[Path, str]:
    """The sample repository committed, its HEAD on a GitHub remote's branch: code sources
    link to the forge at that commit."""
    root = make_repo(base, "api")
    git(root, "init", "-q", "-b", "main")
    git(root, "add", "-A")
    git(root, "commit", "-q", "-m", "sample")
    git(root, "remote", "add", "origin", "https://github.com/team/api.git")
    git(root, "update-ref", "refs/remotes/origin/main", "HEAD")
    return root, git(root, "rev-parse", "HEAD")


async def test_a_thread_shows_each_answers_sources_and_links_only_to_web_pages(
    web: httpx.AsyncClient, bot: BotHarness, fake_llm: FakeOpenAI, clock: Clock, tmp_path: Path
) -> None:
    from core.code.walk import index_repo

    root, commit = pushed_repo(tmp_path / "src")
    await index_repo(bot.app.db, await bot.app.repos.register(str(root)))
    fake_llm.tool_calls(
        ("read_file", {"repo": "api", "path": "src/app.py", "start_line": 1, "end_line": 5})
    )
    reply = await ask(
        bot, fake_llm, clock, "where do we retry?", "In src/app.py.", channel="ops", thread="s1"
    )
    link = f"https://github.com/team/api/blob/{commit}/src/app.py#L1-L5"
    assert [(s.label, s.url) for s in reply.sources] == [("src/app.py:1-5", link)]
    assert (await bot.send("/save We deploy with Helm charts", channel="ops", thread="s1")).ok
    await ask(
        bot, fake_llm, clock, "how do we deploy?", "With Helm charts.", channel="ops", thread="s1"
    )

    await sign_in(web, bot)
    page = await web.get("/console/conversations/ops/s1")
    assert page.status_code == 200
    text = page.text
    assert f'<a class="cv-id" href="{link}" rel="noopener noreferrer">src/app.py:1-5</a>' in text
    assert "channel memory" in text
    # Under their own answers: the code before the second question, the memory after it.
    assert text.index("src/app.py:1-5") < text.index("how do we deploy?")
    assert text.index("how do we deploy?") < text.index("channel memory")

    # A stored link that is not a web page's, and markup in a label, show as text.
    import json

    from sqlmodel import col, select

    from core.store.models import Answer

    hostile = [
        {"kind": "code", "label": "evil.py:1", "url": "javascript:alert(1)"},
        {"kind": "code", "label": "tab.py:1", "url": "java\tscript:alert(2)"},
        {"kind": "code", "label": HOSTILE, "url": "data:text/html,<script>alert(3)</script>"},
    ]
    async with bot.app.db.session() as s:
        answer = (await s.exec(select(Answer).where(col(Answer.thread) == "s1"))).first()
        assert answer is not None
        answer.sources = json.dumps(hostile)
        s.add(answer)
    text = (await web.get("/console/conversations/ops/s1")).text
    assert "evil.py:1" in text and "tab.py:1" in text
    assert "javascript:" not in text and "data:text" not in text
    assert "<script>" not in text and "<img" not in text


async def test_unknown_and_other_tenants_threads_read_the_same(
    web: httpx.AsyncClient, bot: BotHarness, fake_llm: FakeOpenAI, clock: Clock
) -> None:
    await ask(bot, fake_llm, clock, "theirs", "ok", tenant="other", channel="ops", thread="o1")
    await sign_in(web, bot, tenant="local")
    theirs = await web.get("/console/conversations/ops/o1")
    unknown = await web.get("/console/conversations/ops/zz")
    assert theirs.status_code == unknown.status_code == 404
    assert theirs.text == unknown.text and "theirs" not in theirs.text
    for path in (
        "/console/conversations/a/b/c",
        "/console/conversations/only",
        "/console/conversations/%00/x",
    ):
        assert (await web.get(path)).status_code == 404
    bad = await web.get("/console/conversations/ops/o1", params={"after": "-1"})
    assert bad.status_code == 400 and "not valid" in bad.text


async def test_bad_filters_say_what_is_wrong(web: httpx.AsyncClient, bot: BotHarness) -> None:
    await sign_in(web, bot)
    for params, words in [
        ({"from": "yesterday"}, "From must be a date"),
        ({"from": "2026-12-05", "to": "2026-12-01"}, "on or before"),
        ({"after": "garbage!"}, "not valid"),
        ({"channel": "x" * 129}, "at most 128"),
    ]:
        resp = await web.get("/console/conversations", params=params)
        assert resp.status_code == 400 and words in resp.text, params


async def test_ids_with_slashes_and_hostile_text_render_as_text(
    web: httpx.AsyncClient, bot: BotHarness, fake_llm: FakeOpenAI, clock: Clock
) -> None:
    await ask(bot, fake_llm, clock, HOSTILE, HOSTILE, channel="a/b", thread='t"<x>', user=HOSTILE)
    await sign_in(web, bot)
    listing = (await web.get("/console/conversations")).text
    assert "<script>" not in listing and "<img" not in listing
    href = "/console/conversations/a%2Fb/t%22%3Cx%3E"
    assert f'href="{href}"' in listing and "&lt;script&gt;" in listing  # the asker's name
    thread = await web.get(href)
    assert thread.status_code == 200
    assert "<script>" not in thread.text and "<img" not in thread.text
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in thread.text

    # A channel and a thread named with markup: in the filter's choices, the table, the page.
    await ask(bot, fake_llm, clock, "q", "a", channel=HOSTILE, thread=HOSTILE)
    listing = (await web.get("/console/conversations")).text
    assert "<script>" not in listing and "<img" not in listing
    assert listing.count("&lt;img src=x onerror=alert(2)&gt;") >= 3  # option, thread, channel
    page = await web.get(
        f"/console/conversations/{quote(HOSTILE, safe='')}/{quote(HOSTILE, safe='')}"
    )
    assert page.status_code == 200 and "<script>" not in page.text and "<img" not in page.text


async def test_sign_in_and_admin_only(
    web: httpx.AsyncClient, bot: BotHarness, fake_llm: FakeOpenAI, clock: Clock
) -> None:
    await ask(bot, fake_llm, clock, "q", "a", channel="ops", thread="d1")
    for path in ("/console/conversations", "/console/conversations/ops/d1"):
        resp = await web.get(path)
        assert resp.status_code == 303 and resp.headers["location"] == "/console/signin"
    # A non-admin gets no link, so no session: nothing to open.
    reply = await bot.send("/console", roles=[])
    assert "/console/signin/" not in reply.text
