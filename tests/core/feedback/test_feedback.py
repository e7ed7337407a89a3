"""Ratings of answers (issue 26 §4), core side: the store on both databases, a rating from
another channel or tenant refused, the last click winning, `/feedback`, the `feedback` digest
and the metric — through the whole bot on the console adapter with the fake model."""

from __future__ import annotations

from collections.abc import Callable
from datetime import timedelta
from typing import Any

import pytest

from core.errors import Refusal
from core.feedback.store import (
    MAX_SOURCES,
    REASON_CHARS,
    SOURCE_LABEL_CHARS,
    FeedbackStore,
    decode_sources,
)
from core.policy import Identity, Policy
from core.request import Rating, Request, Source
from core.session import ToolSession, open_session
from core.store.engine import Database
from tests.conftest import POLICY_ALL, BotHarness
from tests.support.clocks import Clock
from tests.support.fakes.openai_server import FakeOpenAI

MakeBot = Callable[..., BotHarness]


def asker(channel: str = "C1", tenant: str = "T1", thread: str = "th1") -> ToolSession:
    policy = Policy.from_dict({"defaults": {"permissions": ["ask"]}})
    return open_session(Request("slack", tenant, channel, thread, "U1", "why?"), policy)


def rater(user: str, channel: str = "C1", tenant: str = "T1") -> Identity:
    return Identity("slack", tenant, channel, user, frozenset())


@pytest.fixture
async def store(open_db: Callable[[], Database], clock: Clock) -> FeedbackStore:
    return FeedbackStore(open_db(), clock)


async def test_the_last_click_wins_and_one_row_per_person(store: FeedbackStore) -> None:
    answer = await store.record(asker(), model="m1", skills=["triage"], tools=["grep_code"])
    first = await store.rate(rater("U2"), answer, "up")
    assert (first.value, first.previous, first.model) == ("up", None, "m1")
    second = await store.rate(rater("U2"), answer, "down", reason="wrong file")
    third = await store.rate(rater("U2"), answer, "up")
    assert (second.previous, third.previous) == ("up", "down")
    await store.rate(rater("U3"), answer, "down")
    assert await store.count("slack", "T1") == 2
    [channel] = await store.tallies("slack", "T1", store_epoch(), "channel")
    assert (channel.key, channel.up, channel.down) == ("C1", 1, 1)
    [skill] = await store.tallies("slack", "T1", store_epoch(), "skill")
    assert skill.key == "triage"


async def test_an_answers_sources_are_stored_capped_and_without_credentials(
    store: FeedbackStore, open_db: Callable[[], Database]
) -> None:
    from core.store.models import Answer

    link = "https://github.com/team/api/blob/abc/src/app.py#L1-L5"
    sources = [
        Source("code", "src/app.py:1-5", link),
        Source("memory", "channel memory"),
        Source("code", "x" * 1000, "https://token:x@git.example/a"),  # credentials: no link
        Source("code", "long.py:1", "https://git.example/" + "a" * 3000),  # too long: no link
        *(Source("skill", f"s{i} skill") for i in range(30)),
    ]
    answer_id = await store.record(asker(), model="m1", sources=sources)
    async with open_db().session() as s:
        answer = await s.get(Answer, answer_id)
    assert answer is not None
    kept = decode_sources(answer.sources)
    assert len(kept) == MAX_SOURCES
    assert kept[:2] == (Source("code", "src/app.py:1-5", link), Source("memory", "channel memory"))
    assert len(kept[2].label) == SOURCE_LABEL_CHARS and kept[2].url is None
    assert kept[3] == Source("code", "long.py:1")
    assert "token" not in answer.sources

    # No sources, and what an older or damaged row holds, read as none.
    bare = await store.record(asker(), model="m1")
    async with open_db().session() as s:
        assert (await s.get(Answer, bare)).sources == "[]"  # type: ignore[union-attr]
    for stored in ("", "not json", "{}", '[1, {"kind": "web", "label": "x"}, {"kind": "code"}]'):
        assert decode_sources(stored) == ()


def store_epoch() -> Any:
    from datetime import UTC, datetime

    return datetime(2000, 1, 1, tzinfo=UTC)


async def test_an_answer_from_another_channel_or_tenant_is_not_rated(
    store: FeedbackStore,
) -> None:
    answer = await store.record(asker(), model="m1")
    for outsider in (rater("U2", channel="C2"), rater("U2", tenant="T2")):
        with pytest.raises(Refusal) as refused:
            await store.rate(outsider, answer, "down")
        assert "can no longer be rated" in str(refused.value)
    for forged in ("0" * 32, "../../etc", "", answer.upper()):
        with pytest.raises(Refusal):
            await store.rate(rater("U2"), forged, "up")
    with pytest.raises(Refusal):
        await store.rate(rater("U2"), answer, "meh")
    assert await store.count("slack", "T1") == 0


async def test_a_reason_is_one_clean_line_kept_with_a_down_rating_only(
    store: FeedbackStore, clock: Clock
) -> None:
    answer = await store.record(asker(), model="m1")
    start = clock.now - timedelta(seconds=1)
    hostile = "wrong\nfile\x00\u202e <!channel> " + "x" * 1000
    await store.rate(rater("U2"), answer, "down", reason=hostile, link="https://x.test/a")
    [down] = await store.down_rated("slack", "T1", "C1", start, clock.now)
    assert down.reason is not None and "\n" not in down.reason and "\x00" not in down.reason
    assert "\u202e" not in down.reason and len(down.reason) <= REASON_CHARS
    assert down.link == "https://x.test/a"
    await store.rate(rater("U2"), answer, "down")  # clicked again: the reason stays
    [again] = await store.down_rated("slack", "T1", "C1", start, clock.now)
    assert again.reason == down.reason
    await store.rate(rater("U2"), answer, "up", reason="ignored")
    assert await store.down_rated("slack", "T1", "C1", start, clock.now) == []


# -- through the whole bot ------------------------------------------------------------------


def llm(fake: FakeOpenAI) -> dict[str, Any]:
    return {"llm_base_url": fake.url, "llm_model": "fake-model", "llm_max_retries": 0}


def rating(answer_id: str, value: str, user: str = "bob", **kw: Any) -> Rating:
    return Rating("console", "local", "console", user, answer_id, value, **kw)


async def test_answers_carry_an_id_people_rate_and_admins_see(
    make_bot: MakeBot, fake_llm: FakeOpenAI, clock: Clock
) -> None:
    bot = make_bot(clock=clock, **llm(fake_llm))
    fake_llm.reply("Restart the worker.")
    reply = await bot.send("how do I fix the stuck queue?")
    assert reply.ok and reply.answer_id is not None
    assert (await bot.send("/budget")).answer_id is None  # commands are not rated

    for value in ("up", "down", "up", "down"):  # changed three times
        thanks = await bot.core.rate(rating(reply.answer_id, value, reason="stale advice"))
        assert thanks.ok and thanks.ephemeral
    assert "Changed your rating to 👎" in thanks.text
    noted = await bot.core.rate(rating(reply.answer_id, "down", reason="and slow"))
    assert noted.text == "Thanks, your reason is noted with your 👎."  # the 👎 form sent back
    await bot.core.rate(rating(reply.answer_id, "up", user="carol"))
    outsider = await bot.core.rate(
        Rating("console", "local", "elsewhere", "mallory", reply.answer_id, "down")
    )
    assert not outsider.ok and "can no longer be rated" in outsider.text

    denied = await bot.send("/feedback")
    assert not denied.ok and "admin" in denied.text
    shown = await bot.send("/feedback 30", roles=["admin"])
    assert shown.ok and shown.ephemeral
    assert "👍 1 · 👎 1" in shown.text and "`fake-model`" in shown.text
    bad = await bot.send("/feedback 400", roles=["admin"])
    assert not bad.ok and "1 to 90" in bad.text

    metrics = bot.app.metrics.render()[0].decode()
    assert (
        'threadline_answer_feedback_total{model="fake-model",platform="console",value="down"} 3.0'
        in metrics
    )


async def test_the_feedback_digest_lists_down_rated_answers_with_reasons(
    make_bot: MakeBot, fake_llm: FakeOpenAI, clock: Clock, write_policy: Callable[[str], Any]
) -> None:
    # Everyone may manage digests here; the feedback kind still needs an admin.
    policy = write_policy(POLICY_ALL.replace('"tts"]', '"tts", "digest.manage"]', 1))
    bot = make_bot(clock=clock, policy_file=policy, **llm(fake_llm))
    fake_llm.reply("Use the blue button.")
    reply = await bot.send("how do I deploy?")
    assert reply.answer_id is not None
    link = "https://chat.example/archives/C1/p1"
    why = "there is no blue button"
    await bot.core.rate(rating(reply.answer_id, "down", reason=why, link=link))
    added = await bot.send("/digest add daily feedback", roles=["admin"])
    assert added.ok, added.text
    [sub] = await bot.app.digests.store.all()
    fake_llm.reply("One answer was rated down: the blue button does not exist.")
    digest = await bot.app.digests.build(sub, clock.now - timedelta(days=1), clock.now)
    # With a model configured the digest is its summary of the listed material.
    assert "the blue button does not exist" in digest.text
    material = fake_llm.requests[-1]["messages"][-1]["content"]
    assert "1 👎 on 1 answer(s)." in material
    assert f"[an answer]({link})" in material and "there is no blue button" in material
    refused = await bot.send("/digest add weekly feedback")
    assert not refused.ok and "admin" in refused.text


async def test_without_feedback_answers_have_no_buttons(
    make_bot: MakeBot, fake_llm: FakeOpenAI
) -> None:
    bot = make_bot(feedback=False, **llm(fake_llm))
    fake_llm.reply("Fine.")
    reply = await bot.send("status?")
    assert reply.ok and reply.answer_id is None
    off = await bot.core.rate(rating("a" * 32, "up"))
    assert not off.ok and "not recorded" in off.text
    assert (await bot.send("/feedback", roles=["admin"])).text.startswith("Unknown")
