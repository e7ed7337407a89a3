"""A mention inside a Slack thread brings the thread's earlier messages to the model: the real
app (slack-bolt behind uvicorn, signed events), the real slack_sdk client against the fake
Slack Web API (whose `conversations.replies` pages through the seeded thread and whose call log
shows what was asked), and the fake model.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import aiohttp
import pytest
from slack_sdk.web.async_client import AsyncWebClient

from adapters.slack.filters import BotIdentity
from adapters.slack.thread import ThreadCache
from adapters.slack.web import make_web_client
from core.agent.thread_context import HEADER
from tests.adapters.slack.test_slack import StartApp, fake_slack, serve_slack
from tests.support.fakes.openai_server import FakeOpenAI
from tests.support.fakes.slack_api import FakeSlack
from tests.support.fakes.slack_events import event_body, mention, message

__all__ = ["fake_slack", "serve_slack"]  # fixtures shared with the Slack tests

ROOT = "1700000000.000100"
FIRST = "1700000400.000000"  # the first mention
SECOND = "1700000600.000000"  # the second one, after two more messages
PEOPLE = {"U1": "alice", "U2": "bob"}  # U3 is unknown to users.info: shown by id
WORDS = "the staging queue keeps growing and nobody knows why " * 3


def context_of(sent: dict[str, Any]) -> str | None:
    found = [
        m["content"]
        for m in sent["messages"]
        if m["role"] == "user" and str(m["content"]).startswith(HEADER)
    ]
    return found[0] if found else None


def seed_thread(fake: FakeSlack, replies: int = 300) -> None:
    for user, name in PEOPLE.items():
        fake.set_user(user, name)
    fake.add_message("C1", "Deploys keep failing on main", user="U1", ts=ROOT, thread_ts=ROOT)
    for i in range(replies):
        fake.add_message(
            "C1",
            f"reply {i}: {WORDS}",
            user=f"U{i % 3 + 1}",
            ts=f"1700000{i + 100:03d}.000000",
            thread_ts=ROOT,
        )
    # The same thread_ts in another channel: never read.
    fake.add_message("C2", "secret from C2", user="U1", ts="1700000399.000000", thread_ts=ROOT)
    # The mention itself is in the thread, as Slack has it.
    fake.add_message(
        "C1", f"<@{fake.bot_user_id}> what is going on here?", ts=FIRST, thread_ts=ROOT
    )


def test_a_mention_in_a_long_thread_gives_the_model_its_newest_messages(
    serve_slack: StartApp, fake_slack: FakeSlack, fake_llm: FakeOpenAI
) -> None:
    seed_thread(fake_slack)
    app = serve_slack()
    fake_llm.reply("The queue is stuck.")

    app.post_event(mention("what is going on here?", ts=FIRST, thread_ts=ROOT))
    app.idle()

    replies = fake_slack.calls("conversations.replies")
    assert [(c.args["channel"], c.args["ts"], c.args.get("cursor")) for c in replies] == [
        ("C1", ROOT, None),
        ("C1", ROOT, "200"),  # paged with Slack's cursor
    ]
    assert sorted(c.args["user"] for c in fake_slack.calls("users.info")) == ["U1", "U2", "U3"]
    part = context_of(fake_llm.requests[0])
    assert part is not None
    kept = [
        int(line.split(":")[0][len("> reply ") :])
        for line in part.splitlines()
        if line.startswith("> reply ")
    ]
    assert kept == list(range(300 - len(kept), 300))  # the newest, oldest first
    assert 20 < len(kept) < 300
    assert f"({301 - len(kept)} earlier messages of the thread left out.)" in part  # + the root
    assert "alice wrote:" in part and "bob wrote:" in part and "U3 wrote:" in part
    assert "secret from C2" not in part and "what is going on here?" not in part
    assert "Deploys keep failing" not in part  # the oldest, cut
    assert fake_slack.shown("C1")[-1] == "The queue is stuck."


def test_a_second_mention_in_the_thread_reads_only_what_is_newer(
    serve_slack: StartApp, fake_slack: FakeSlack, fake_llm: FakeOpenAI
) -> None:
    seed_thread(fake_slack, replies=20)
    app = serve_slack()
    fake_llm.reply("The queue is stuck.")
    app.post_event(mention("what is going on here?", ts=FIRST, thread_ts=ROOT))
    app.idle()
    first_reads = len(fake_slack.calls("conversations.replies"))
    fake_slack.add_message(
        "C1", "I restarted the worker", user="U2", ts="1700000500.000001", thread_ts=ROOT
    )
    fake_slack.add_message("C1", "still growing", user="U1", ts="1700000500.000002", thread_ts=ROOT)
    fake_slack.add_message("C1", f"<@{fake_slack.bot_user_id}> and now?", ts=SECOND, thread_ts=ROOT)
    fake_llm.reply("Still stuck.")

    app.post_event(mention("and now?", ts=SECOND, thread_ts=ROOT))
    app.idle()

    later = fake_slack.calls("conversations.replies")[first_reads:]
    assert [(c.args["ts"], c.args.get("oldest")) for c in later] == [(ROOT, FIRST)]
    assert len(fake_slack.calls("users.info")) == 3  # names were cached
    part = context_of(fake_llm.requests[1])
    assert part is not None
    assert part.endswith("bob wrote:\n> I restarted the worker\n\nalice wrote:\n> still growing")
    assert "reply 0:" in part  # the cached messages are given too
    # Threadline's answer is in the history, as is the first question: not quoted again.
    assert "The queue is stuck." not in part and "what is going on here?" not in part
    conversation = [m["content"] for m in fake_llm.requests[1]["messages"][-3:]]
    assert conversation == ["what is going on here?", "The queue is stuck.", "and now?"]


def test_a_thread_that_cannot_be_read_still_gets_its_answer(
    serve_slack: StartApp, fake_slack: FakeSlack, fake_llm: FakeOpenAI
) -> None:
    seed_thread(fake_slack, replies=5)
    fake_slack.fail_next("conversations.replies", error="missing_scope")
    app = serve_slack()
    fake_llm.reply("Answered without it.")

    app.post_event(mention("what is going on here?", ts=FIRST, thread_ts=ROOT))
    app.idle()

    assert context_of(fake_llm.requests[0]) is None
    assert fake_slack.shown("C1")[-1] == "Answered without it."


def test_a_top_level_mention_reads_no_thread(
    serve_slack: StartApp, fake_slack: FakeSlack, fake_llm: FakeOpenAI
) -> None:
    app = serve_slack()
    fake_llm.reply("Hello.")
    app.post_event(mention("hi"))
    app.idle()
    assert fake_slack.calls("conversations.replies") == []
    assert context_of(fake_llm.requests[0]) is None


def test_edits_and_deletions_slack_reports_reach_the_cached_thread(
    serve_slack: StartApp, fake_slack: FakeSlack, fake_llm: FakeOpenAI
) -> None:
    seed_thread(fake_slack, replies=20)
    app = serve_slack()
    fake_llm.reply("The queue is stuck.")
    app.post_event(mention("what is going on here?", ts=FIRST, thread_ts=ROOT))
    app.idle()
    edited, deleted = "1700000119.000000", "1700000118.000000"  # replies 19 and 18
    changed = {
        "ts": edited,
        "user": "U2",
        "text": "reply 19: fixed it, ignore me",
        "thread_ts": ROOT,
    }
    app.post_event(
        event_body(
            {
                "type": "message",
                "subtype": "message_changed",
                "hidden": True,
                "channel": "C1",
                "channel_type": "channel",
                "ts": "1700000500.000009",
                "message": changed,
                "previous_message": {**changed, "text": "reply 19: old"},
            }
        )
    )
    app.post_event(
        event_body(
            {
                "type": "message",
                "subtype": "message_deleted",
                "hidden": True,
                "channel": "C1",
                "channel_type": "channel",
                "ts": "1700000500.000010",
                "deleted_ts": deleted,
                "previous_message": {"ts": deleted, "user": "U1", "text": "x", "thread_ts": ROOT},
            }
        )
    )
    fake_llm.reply("Fixed, then.")

    app.post_event(mention("and now?", ts=SECOND, thread_ts=ROOT))
    app.idle()

    part = context_of(fake_llm.requests[1])
    assert part is not None
    assert part.endswith("bob wrote:\n> reply 19: fixed it, ignore me")  # as it reads now
    assert "reply 18:" not in part and "reply 17:" in part
    assert len(fake_llm.requests) == 2  # the edit and the deletion were not questions


# -- the cache's bounds, with the real slack_sdk client ------------------------------------------


@pytest.fixture
async def client(fake_slack: FakeSlack) -> AsyncIterator[AsyncWebClient]:
    async with aiohttp.ClientSession() as session:
        yield make_web_client(fake_slack.bot_token, fake_slack.api_url, session)


def bot_of(fake: FakeSlack) -> BotIdentity:
    return BotIdentity(user_id=fake.bot_user_id, bot_id=fake.bot_id, team_id=fake.team_id)


async def test_a_read_is_bounded_in_pages_and_the_cache_in_messages(
    fake_slack: FakeSlack, client: AsyncWebClient
) -> None:
    for i in range(150):
        fake_slack.add_message("C1", f"m{i}", user="U1", ts=f"{1700000000 + i}.0", thread_ts=ROOT)
    cache = ThreadCache(client, bot_of(fake_slack), page_size=50, max_pages=2, max_messages=60)
    reader = cache.reader("T1", "C1", ROOT, "1800000000.0")

    first = await reader.earlier()
    assert [m.text for m in first] == [f"m{i}" for i in range(40, 100)]  # 2 pages, newest 60
    second = await reader.earlier()  # the rest, from the last message seen
    assert [m.text for m in second] == [f"m{i}" for i in range(90, 150)]
    calls = fake_slack.calls("conversations.replies")
    assert [c.args.get("oldest") for c in calls] == [None, None, "1700000099.0"]


async def test_threads_are_kept_per_tenant_channel_and_thread_the_least_recent_dropped(
    fake_slack: FakeSlack, client: AsyncWebClient
) -> None:
    for channel in ("C1", "C2", "C3"):
        fake_slack.add_message(channel, f"in {channel}", user="U1", ts=ROOT, thread_ts=ROOT)
    cache = ThreadCache(client, bot_of(fake_slack), max_threads=2)

    for channel in ("C1", "C2", "C1", "C3"):
        found = await cache.reader("T1", channel, ROOT, "1800000000.0").earlier()
        assert [m.text for m in found] == [f"in {channel}"]
    reads = [
        (c.args["channel"], c.args.get("oldest")) for c in fake_slack.calls("conversations.replies")
    ]
    assert reads == [("C1", None), ("C2", None), ("C1", ROOT), ("C3", None)]
    await cache.reader("T1", "C2", ROOT, "1800000000.0").earlier()  # C2 was dropped: read anew
    assert fake_slack.calls("conversations.replies")[-1].args.get("oldest") is None


def test_a_follow_up_in_a_thread_threadline_answers_works_as_before(
    serve_slack: StartApp, fake_slack: FakeSlack, fake_llm: FakeOpenAI
) -> None:
    app = serve_slack()
    fake_slack.add_message("C1", f"<@{fake_slack.bot_user_id}> what broke?", ts=ROOT)
    fake_llm.reply("The nightly deploy.")
    app.post_event(mention("what broke?", ts=ROOT))
    app.idle()
    fake_slack.add_message("C1", "and why?", ts=FIRST, thread_ts=ROOT)
    fake_llm.reply("A migration timed out.")

    app.post_event(message("and why?", ts=FIRST, thread_ts=ROOT))
    app.idle()

    sent = fake_llm.requests[1]
    assert len(fake_slack.calls("conversations.replies")) == 1  # read for the follow-up...
    assert context_of(sent) is None  # ... with nothing the thread's history does not hold
    conversation = [m["content"] for m in sent["messages"] if m["role"] != "system"]
    assert conversation[-3:] == ["what broke?", "The nightly deploy.", "and why?"]
    assert fake_slack.shown("C1")[-1] == "A migration timed out."


async def test_a_read_looks_up_at_most_fifty_authors(
    fake_slack: FakeSlack, client: AsyncWebClient
) -> None:
    for i in range(60):
        fake_slack.set_user(f"U{i:03d}", f"person{i}")
        fake_slack.add_message(
            "C1", f"m{i}", user=f"U{i:03d}", ts=f"{1700000000 + i}.0", thread_ts=ROOT
        )
    cache = ThreadCache(client, bot_of(fake_slack))

    found = await cache.reader("T1", "C1", ROOT, "1800000000.0").earlier()

    assert len(fake_slack.calls("users.info")) == 50
    assert [m.author for m in found[:2]] == ["person0", "person1"]
    assert [m.author for m in found[-2:]] == ["U058", "U059"]  # past the lookups: by id


async def test_the_cache_keeps_within_its_characters_the_thread_just_read_last_dropped(
    fake_slack: FakeSlack, client: AsyncWebClient
) -> None:
    for channel in ("C1", "C2", "C3"):
        fake_slack.add_message(channel, "x" * 400, user="U1", ts=ROOT, thread_ts=ROOT)
    cache = ThreadCache(client, bot_of(fake_slack), max_chars=1000)

    for channel in ("C1", "C2", "C3", "C2"):
        await cache.reader("T1", channel, ROOT, "1800000000.0").earlier()
    await cache.reader("T1", "C1", ROOT, "1800000000.0").earlier()  # was dropped: read anew

    reads = [
        (c.args["channel"], c.args.get("oldest")) for c in fake_slack.calls("conversations.replies")
    ]
    assert reads == [("C1", None), ("C2", None), ("C3", None), ("C2", ROOT), ("C1", None)]
