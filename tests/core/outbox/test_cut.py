"""Notes for answers cut off by a dying process (`core.outbox.cut`), on both databases: due only
after the longest a request may take, withdrawn when the answer finishes, posted once when the
process that armed them died."""

from __future__ import annotations

from collections.abc import Callable
from datetime import timedelta
from typing import Any

from core import messages
from core.outbox import Outbox, OutboxMessage
from core.outbox.cut import CutNotes, Where
from tests.support.clocks import Clock

WHERE = Where("slack", "T1", "C1", "1700000000.000100", "T1:C1:1700000000.000100")


async def test_a_note_falls_due_only_after_the_deadline_and_once(
    open_db: Callable[[], Any], clock: Clock
) -> None:
    outbox = Outbox(open_db(), clock)
    notes = CutNotes(outbox, clock, after=timedelta(minutes=4))
    await notes.arm(WHERE)
    await notes.arm(WHERE)  # a second arm (a retried delivery) stores nothing new
    assert await outbox.claim("slack", "me") == []
    clock.advance(minutes=3, seconds=59)
    assert await outbox.claim("slack", "me") == []
    clock.advance(seconds=1)
    (item,) = await outbox.claim("slack", "survivor")
    assert item.message.text == messages.ANSWER_CUT_UNFINISHED
    assert (item.message.channel, item.message.thread) == ("C1", "1700000000.000100")
    await outbox.delivered(item, "ts-1")
    assert await outbox.claim("slack", "survivor") == []


async def test_a_finished_answer_withdraws_its_note(
    open_db: Callable[[], Any], clock: Clock
) -> None:
    outbox = Outbox(open_db(), clock)
    notes = CutNotes(outbox, clock, after=timedelta(minutes=4))
    await notes.arm(WHERE)
    await notes.disarm(WHERE)
    await notes.disarm(WHERE)  # twice is harmless
    clock.advance(hours=1)
    assert await outbox.claim("slack", "me") == []
    assert await outbox.backlog() == 0


async def test_cancel_leaves_a_message_being_delivered_alone(
    open_db: Callable[[], Any], clock: Clock
) -> None:
    outbox = Outbox(open_db(), clock)
    message = OutboxMessage(platform="slack", tenant="T1", channel="C1", text="x", key="k1")
    await outbox.enqueue(message)
    assert len(await outbox.claim("slack", "drainer", lease=timedelta(minutes=2))) == 1
    assert await outbox.cancel("k1") is False  # a drainer holds it
    clock.advance(minutes=3)  # that drainer died: its lease ran out
    assert await outbox.cancel("k1") is True
    assert await outbox.cancel("k1") is False
