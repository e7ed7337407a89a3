"""The console's conversations (core.operator.conversations) on SQLite and PostgreSQL: the
tenant's threads newest first, keyset-paged and filtered; a thread's turns with their answers,
ratings, tool calls and tokens; compaction; paging through a long thread."""

from __future__ import annotations

import json
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from typing import Any

from core.operator.conversations import Conversations
from core.operator.conversations.listing import THREADS_PER_PAGE, Cursor, ThreadFilter
from core.operator.conversations.matching import match_answers
from core.operator.conversations.turns import TURNS_PER_PAGE
from core.store.engine import Database
from core.store.models import (
    Answer,
    AnswerRating,
    AuditEntry,
    ThreadMessage,
    ThreadSummary,
    UsageRecord,
)

T0 = datetime(2026, 12, 3, 9, 0, tzinfo=UTC)
KEY: dict[str, Any] = {"platform": "slack", "tenant": "T1"}


def message(channel: str, thread: str, role: str, at: datetime, **kw: Any) -> ThreadMessage:
    return ThreadMessage(**KEY, channel=channel, thread=thread, role=role, at=at, **kw)


def answer(channel: str, thread: str, user: str, at: datetime, n: int, **kw: Any) -> Answer:
    return Answer(
        id=f"{n:032x}", **KEY, channel=channel, thread=thread, user=user, created_at=at, **kw
    )


async def seed(db: Database, *rows: Any) -> None:
    async with db.session() as s:
        for row in rows:
            s.add(row)
            await s.flush()  # ids in the order given


async def test_threads_newest_first_with_their_figures_and_filters(
    open_db: Callable[[], Database],
) -> None:
    db = open_db()
    await db.create_all()
    t = T0
    await seed(
        db,
        message("C1", "a", "user", t, content="first?"),
        message("C1", "a", "assistant", t, content="yes"),
        answer("C1", "a", "ada", t + timedelta(seconds=1), 1, model="m"),
        message("C2", "b", "user", t + timedelta(hours=1), content="second?"),
        message("C2", "b", "assistant", t + timedelta(hours=1), content="no"),
        answer("C2", "b", "bob", t + timedelta(hours=1, seconds=1), 2),
        message("C1", "a", "user", t + timedelta(hours=2), content="again?"),
        message("C1", "a", "assistant", t + timedelta(hours=2), content="sure"),
        answer("C1", "a", "cy", t + timedelta(hours=2, seconds=1), 3),
        # Another tenant's thread, newer than all: never listed.
        ThreadMessage(
            platform="slack",
            tenant="T2",
            channel="C1",
            thread="z",
            role="user",
            at=t + timedelta(days=1),
        ),
    )
    await seed(
        db,
        AnswerRating(answer_id=f"{1:032x}", **KEY, channel="C1", user="u1", value="up"),
        AnswerRating(answer_id=f"{3:032x}", **KEY, channel="C1", user="u1", value="down"),
        AnswerRating(answer_id=f"{3:032x}", **KEY, channel="C1", user="u2", value="down"),
    )
    talk = Conversations(db, lambda: T0)
    page = await talk.threads("slack", "T1")
    assert [(r.channel, r.thread, r.turns) for r in page.rows] == [("C1", "a", 2), ("C2", "b", 1)]
    first = page.rows[0]
    assert first.people == ("ada", "cy") and (first.up, first.down) == (1, 2)
    assert first.last_at == t + timedelta(hours=2) and page.next is None

    only_c2 = await talk.threads("slack", "T1", ThreadFilter(channel="C2"))
    assert [r.thread for r in only_c2.rows] == ["b"]
    by_bob = await talk.threads("slack", "T1", ThreadFilter(user="bob"))
    assert [r.thread for r in by_bob.rows] == ["b"]
    # In a range, a thread is ordered by its last message in the range.
    early = await talk.threads(
        "slack", "T1", ThreadFilter(since=t, until=t + timedelta(minutes=90))
    )
    assert [(r.thread, r.last_at) for r in early.rows] == [("b", t + timedelta(hours=1)), ("a", t)]
    assert (await talk.threads("slack", "T9")).rows == ()
    assert await talk.channels("slack", "T1") == ["C1", "C2"]


async def test_the_list_pages_by_keyset(open_db: Callable[[], Database]) -> None:
    db = open_db()
    await db.create_all()
    rows = [message("C1", f"t{i:03}", "user", T0 + timedelta(minutes=i)) for i in range(57)]
    await seed(db, *rows)
    talk = Conversations(db, lambda: T0)
    first = await talk.threads("slack", "T1")
    assert len(first.rows) == THREADS_PER_PAGE and first.next is not None
    cursor = Cursor.decode(first.next.encode())
    assert cursor == first.next
    second = await talk.threads("slack", "T1", after=cursor)
    seen = [r.thread for r in first.rows + second.rows]
    assert seen == [f"t{i:03}" for i in reversed(range(57))] and second.next is None
    # A message in an old thread makes it the newest: it moves to the first page.
    await seed(db, message("C1", "t000", "assistant", T0 + timedelta(hours=2)))
    assert (await talk.threads("slack", "T1")).rows[0].thread == "t000"
    for bad in ("", "!!", "-1", "1.5", "٣", str(2**40)):
        assert Cursor.decode(bad) is None


def call(name: str, call_id: str) -> str:
    return json.dumps(
        [{"id": call_id, "type": "function", "function": {"name": name, "arguments": "{}"}}]
    )


async def test_a_thread_with_answers_tool_calls_tokens_and_a_summary(
    open_db: Callable[[], Database],
) -> None:
    db = open_db()
    await db.create_all()
    t1, t2, t3 = T0, T0 + timedelta(minutes=5), T0 + timedelta(minutes=10)
    await seed(
        db,
        message("C1", "th", "user", t1, content="old question"),
        message("C1", "th", "assistant", t1, content="old answer"),
        message("C1", "th", "user", t2, content="grep it\n<script>x</script>"),
        message("C1", "th", "assistant", t2, content="", tool_calls=call("grep_code", "c1")),
        message("C1", "th", "tool", t2, content="3 hits", tool_call_id="c1"),
        message("C1", "th", "assistant", t2, content="", tool_calls=call("read_file", "c2")),
        message("C1", "th", "tool", t2, content="...", tool_call_id="c2"),
        message("C1", "th", "assistant", t2, content="found it"),
        message("C1", "th", "user", t3, content="failed turn"),
        answer("C1", "th", "ada", t1 + timedelta(seconds=1), 1, model="m1"),
        answer("C1", "th", "bob", t2 + timedelta(seconds=1), 2, model="m2", skills="triage,ops"),
        AuditEntry(
            **KEY,
            channel="C1",
            thread="th",
            user="bob",
            request_id="r2",
            tool="grep_code",
            outcome="ok",
            duration_ms=12,
            at=t2,
        ),
        AuditEntry(
            **KEY,
            channel="C1",
            thread="th",
            user="bob",
            request_id="r2",
            tool="read_file",
            outcome="denied",
            detail="outside the repo",
            duration_ms=1,
            at=t2,
        ),
        # A command's tool call in the same thread (not in its history): matched to no turn.
        AuditEntry(
            **KEY,
            channel="C1",
            thread="th",
            user="bob",
            request_id="r9",
            tool="index_repo",
            outcome="ok",
            at=t3,
        ),
        UsageRecord(
            **KEY,
            channel="C1",
            user="bob",
            request_id="r2",
            day="2026-12-03",
            provider="p",
            model="m2",
            prompt_tokens=100,
            completion_tokens=20,
            at=t2,
        ),
        UsageRecord(
            **KEY,
            channel="C1",
            user="bob",
            request_id="r2",
            day="2026-12-03",
            provider="p",
            model="m2",
            prompt_tokens=150,
            completion_tokens=30,
            at=t2,
        ),
        ThreadSummary(
            **KEY,
            channel="C1",
            thread="th",
            covers_through=2,
            summary="They asked an old question.",
            at=t2,
        ),
    )
    await seed(
        db,
        AnswerRating(
            answer_id=f"{2:032x}", **KEY, channel="C1", user="cy", value="down", reason="wrong file"
        ),
    )
    talk = Conversations(db, lambda: T0)
    view = await talk.thread("slack", "T1", "C1", "th")
    assert view is not None and view.total_turns == 3
    assert view.summary is not None and view.summary.covers_through == 2
    one, two, three = view.turns
    assert (one.number, one.compacted, two.compacted) == (1, True, False)
    assert one.answer is not None and one.answer.asked_by == "ada" and one.answer.model == "m1"
    assert [m.text for m in two.messages] == ["grep it\n<script>x</script>", "found it"]
    assert [(c.tool, c.outcome, c.duration_ms) for c in two.tool_calls] == [
        ("grep_code", "ok", 12),
        ("read_file", "denied", 1),
    ]
    assert two.tokens == 300
    assert two.answer is not None and two.answer.skills == ("triage", "ops")
    [rating] = two.answer.ratings
    assert (rating.user, rating.value, rating.reason) == ("cy", "down", "wrong file")
    assert three.answer is None and three.tool_calls == () and three.tokens is None
    assert (view.earlier, view.later, view.newest) == (None, None, None)

    # Another tenant's admin asks for it: it does not exist for them.
    assert await talk.thread("slack", "T2", "C1", "th") is None
    assert await talk.thread("slack", "T1", "C1", "nope") is None


async def test_a_long_thread_is_paged_by_turns(open_db: Callable[[], Database]) -> None:
    db = open_db()
    await db.create_all()
    turns = TURNS_PER_PAGE * 2 + 10
    rows = []
    for i in range(turns):
        at = T0 + timedelta(seconds=i)
        rows += [
            message("C1", "long", "user", at, content=f"q{i + 1}"),
            message("C1", "long", "assistant", at, content=f"a{i + 1}"),
        ]
    await seed(db, *rows)
    talk = Conversations(db, lambda: T0)
    first = await talk.thread("slack", "T1", "C1", "long")
    assert first is not None and first.total_turns == turns
    assert [t.number for t in first.turns] == list(range(1, TURNS_PER_PAGE + 1))
    assert first.earlier is None and first.later is not None and first.newest is not None
    second = await talk.thread("slack", "T1", "C1", "long", after=first.later)
    assert second is not None
    assert [t.number for t in second.turns] == list(
        range(TURNS_PER_PAGE + 1, 2 * TURNS_PER_PAGE + 1)
    )
    last = await talk.thread("slack", "T1", "C1", "long", before=first.newest)
    assert last is not None and last.later is None and last.newest is None
    assert [t.number for t in last.turns] == list(range(turns - TURNS_PER_PAGE + 1, turns + 1))
    back = await talk.thread("slack", "T1", "C1", "long", before=second.turns[0].messages[0].id)
    assert back is not None and [t.number for t in back.turns] == [t.number for t in first.turns]
    assert back.turns[0].messages[0].text == "q1"


def test_answers_match_the_latest_turn_answered_before_them() -> None:
    at = [T0, None, T0 + timedelta(minutes=1), T0 + timedelta(minutes=2)]
    # A turn with no record (feedback off then) takes none; equal times go in order.
    made = [T0 + timedelta(seconds=1), T0 + timedelta(minutes=2, seconds=1)]
    assert match_answers(at, made) == {0: 0, 1: 3}
    same = [T0, T0, T0]
    assert match_answers(same, [T0, T0, T0]) == {0: 0, 1: 1, 2: 2}
