"""Confirmations in SQL (core/mcp/confirm.py, core/mcp/confirm_store.py) on SQLite and
PostgreSQL: who may answer, first answer wins, expiry, unknown ids, and the answer taken by
another process (its own `Database` handle and gate) than the one waiting to run the tool."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable
from dataclasses import dataclass, field

from pydantic import BaseModel
from sqlmodel import select

from core.mcp.confirm import ConfirmationGate, ConfirmationPrompt, outcome
from core.mcp.confirm_store import Confirmation, ConfirmationStore
from core.policy import Policy
from core.request import Request
from core.session import ToolSession, open_session
from core.store.engine import Database
from core.store.models import AuditEntry, McpConfirmation
from core.tools.audit import AuditLog
from core.tools.context import ToolContext
from core.tools.dispatcher import Dispatcher, ProposedCall, ToolOutcome
from core.tools.registry import Tool, ToolArgs, ToolRegistry
from tests.support.clocks import PINNED

POLICY = Policy.from_dict({"defaults": {"permissions": ["ask"]}})


class DeleteArgs(ToolArgs):
    item_id: int


@dataclass
class Process:
    """One process's view: its own database handle, gate and dispatcher."""

    db: Database
    gate: ConfirmationGate
    dispatcher: Dispatcher
    ran: list[int]


@dataclass
class Recorder:
    """A confirmer that only records what it was asked to show and what it was told closed."""

    asked: list[ConfirmationPrompt] = field(default_factory=list)
    closed_with: list[Confirmation] = field(default_factory=list)
    shown: asyncio.Event = field(default_factory=asyncio.Event)

    async def ask(self, prompt: ConfirmationPrompt) -> None:
        self.asked.append(prompt)
        self.shown.set()

    async def closed(self, prompt: ConfirmationPrompt, outcome: Confirmation) -> None:
        self.closed_with.append(outcome)


def _process(db: Database, timeout: float = 30.0) -> Process:
    ran: list[int] = []

    async def delete(_ctx: ToolContext, args: BaseModel) -> str:
        assert isinstance(args, DeleteArgs)
        ran.append(args.item_id)
        return f"deleted {args.item_id}"

    tool = Tool("delete_item", "Delete an item.", DeleteArgs, "ask", delete, confirm=True)
    gate = ConfirmationGate(ConfirmationStore(db), timeout=timeout, poll=0.05)
    dispatcher = Dispatcher(ToolRegistry([tool]), AuditLog(db), confirm=gate)
    return Process(db, gate, dispatcher, ran)


def _session(platform: str = "slack", tenant: str = "T1", user: str = "U-ALICE") -> ToolSession:
    request = Request(
        platform=platform, tenant=tenant, channel="C1", thread="th", user=user, roles=(), text="q"
    )
    return open_session(request, POLICY)


def _call(p: Process, session: ToolSession) -> asyncio.Task[ToolOutcome]:
    ctx = ToolContext(session=session, db=p.db)
    call = ProposedCall("c1", "delete_item", json.dumps({"item_id": 7}))
    return asyncio.create_task(p.dispatcher.dispatch(ctx, call))


async def _asked(recorder: Recorder) -> ConfirmationPrompt:
    async with asyncio.timeout(30):
        await recorder.shown.wait()
    return recorder.asked[-1]


async def _audit(db: Database) -> list[str]:
    async with db.session() as s:
        rows = (await s.exec(select(AuditEntry).order_by(AuditEntry.id))).all()  # type: ignore[arg-type]
    return [r.outcome for r in rows]


async def _row(db: Database, confirmation_id: str) -> McpConfirmation:
    async with db.session() as s:
        row = await s.get(McpConfirmation, confirmation_id)
    assert row is not None
    return row


async def test_confirmed_runs_the_tool_and_records_who_answered(
    open_db: Callable[[], Database],
) -> None:
    p = _process(open_db())
    recorder = Recorder()
    p.gate.register("slack", recorder)
    task = _call(p, _session())
    prompt = await _asked(recorder)
    assert len(prompt.id) >= 24  # unguessable
    answered = await p.gate.answer(prompt.id, "U-ALICE", True, platform="slack", tenant="T1")
    assert answered.status == "counted"
    outcome = await task
    assert outcome.ok and outcome.content.endswith("deleted 7") and p.ran == [7]
    row = await _row(p.db, prompt.id)
    assert (row.state, row.answered_by, row.user, row.tool) == (
        "confirmed",
        "U-ALICE",
        "U-ALICE",
        "delete_item",
    )
    assert row.answered_at is not None
    assert await _audit(p.db) == ["ok"]
    assert [c.state for c in recorder.closed_with] == ["confirmed"]


async def test_declined_is_refused_and_audited(open_db: Callable[[], Database]) -> None:
    p = _process(open_db())
    recorder = Recorder()
    p.gate.register("slack", recorder)
    task = _call(p, _session())
    prompt = await _asked(recorder)
    assert (await p.gate.answer(prompt.id, "U-ALICE", False)).status == "counted"
    outcome = await task
    assert outcome.code == "confirm_declined" and p.ran == []
    assert (await _row(p.db, prompt.id)).state == "declined"
    assert await _audit(p.db) == ["confirm_declined"]


async def test_timeout_expires_the_row_and_a_late_click_changes_nothing(
    open_db: Callable[[], Database],
) -> None:
    p = _process(open_db(), timeout=0.5)
    recorder = Recorder()
    p.gate.register("slack", recorder)
    outcome = await _call(p, _session())
    assert outcome.code == "confirm_timeout" and p.ran == []
    prompt = recorder.asked[0]
    assert [c.state for c in recorder.closed_with] == ["expired"]  # the buttons are retired
    late = await p.gate.answer(prompt.id, "U-ALICE", True, platform="slack", tenant="T1")
    assert late.status == "stale"
    assert late.confirmation is not None and late.confirmation.state == "expired"
    assert (await _row(p.db, prompt.id)).state == "expired"
    assert await _audit(p.db) == ["confirm_timeout", "confirm_stale"]


async def test_another_users_click_is_ignored_and_the_requester_can_still_confirm(
    open_db: Callable[[], Database],
) -> None:
    p = _process(open_db())
    recorder = Recorder()
    p.gate.register("slack", recorder)
    task = _call(p, _session())
    prompt = await _asked(recorder)
    other = await p.gate.answer(prompt.id, "U-MALLORY", True, platform="slack", tenant="T1")
    assert other.status == "ignored"
    assert (await _row(p.db, prompt.id)).state == "pending"
    assert not task.done()
    assert (await p.gate.answer(prompt.id, "U-ALICE", True)).status == "counted"
    assert (await task).ok and p.ran == [7]
    assert await _audit(p.db) == ["confirm_ignored", "ok"]


async def test_two_answers_racing_count_once(open_db: Callable[[], Database]) -> None:
    db = open_db()
    p = _process(db)
    recorder = Recorder()
    p.gate.register("slack", recorder)
    task = _call(p, _session())
    prompt = await _asked(recorder)
    # Two processes' stores (own handles) and this one, all at once: a double click, or a
    # yes and a no sent from two devices.
    stores = [ConfirmationStore(open_db()) for _ in range(3)]
    answers = await asyncio.gather(
        *(
            s.answer(prompt.id, user="U-ALICE", approve=n != 1)
            for n, s in enumerate([*stores, p.gate.store])
        )
    )
    assert sorted(a.status for a in answers) == ["counted", "stale", "stale", "stale"]
    winner = next(a for a in answers if a.counted)
    assert winner.confirmation is not None
    outcome = await task
    expected = "ok" if winner.confirmation.state == "confirmed" else "confirm_declined"
    assert outcome.code == expected
    assert p.ran == ([7] if expected == "ok" else [])
    assert sorted(await _audit(db)) == sorted([expected, *["confirm_stale"] * 3])


async def test_unknown_forged_and_other_tenant_ids_are_unknown(
    open_db: Callable[[], Database],
) -> None:
    p = _process(open_db())
    recorder = Recorder()
    p.gate.register("slack", recorder)
    task = _call(p, _session())
    prompt = await _asked(recorder)
    for bad in ["nope", "", "x" * 500, "'; DROP TABLE mcp_confirmations; --", prompt.id + "A"]:
        assert (await p.gate.answer(bad, "U-ALICE", True)).status == "unknown"
    # The same id clicked from another workspace, or another platform, opens nothing.
    assert (await p.gate.answer(prompt.id, "U-ALICE", True, tenant="T2")).status == "unknown"
    assert (await p.gate.answer(prompt.id, "U-ALICE", True, platform="discord")).status == (
        "unknown"
    )
    assert (await _row(p.db, prompt.id)).state == "pending"
    assert (await p.gate.answer(prompt.id, "U-ALICE", False)).counted
    assert (await task).code == "confirm_declined"


async def test_the_answer_taken_by_another_process_reaches_the_waiting_one(
    open_db: Callable[[], Database],
) -> None:
    waiting, clicked = _process(open_db()), _process(open_db())
    recorder = Recorder()
    waiting.gate.register("slack", recorder)
    task = _call(waiting, _session())
    prompt = await _asked(recorder)
    assert clicked.gate.pending() == [] and waiting.gate.pending() == [prompt]
    assert (await clicked.gate.answer(prompt.id, "U-MALLORY", True)).status == "ignored"
    answered = await clicked.gate.answer(prompt.id, "U-ALICE", True, platform="slack", tenant="T1")
    assert answered.counted
    outcome = await task  # noticed by polling the row
    assert outcome.ok and waiting.ran == [7] and clicked.ran == []
    assert await _audit(waiting.db) == ["confirm_ignored", "ok"]


async def test_a_prompt_that_cannot_be_shown_is_refused_and_expired(
    open_db: Callable[[], Database],
) -> None:
    p = _process(open_db())

    class Broken:
        async def ask(self, prompt: ConfirmationPrompt) -> None:
            self.id = prompt.id
            raise OSError("platform refused")

    broken = Broken()
    p.gate.register("slack", broken)
    outcome = await _call(p, _session())
    assert outcome.code == "confirm_unshown" and "could not be posted" in outcome.content
    assert (await _row(p.db, broken.id)).state == "expired"


async def test_a_request_that_gives_up_retires_its_prompt(
    open_db: Callable[[], Database],
) -> None:
    p = _process(open_db())
    recorder = Recorder()
    p.gate.register("slack", recorder)
    task = _call(p, _session())
    prompt = await _asked(recorder)
    task.cancel()  # the request's deadline
    await asyncio.gather(task, return_exceptions=True)
    assert (await _row(p.db, prompt.id)).state == "withdrawn"
    assert [c.state for c in recorder.closed_with] == ["withdrawn"]
    assert "request ended before an answer" in outcome(recorder.closed_with[0], str)
    assert (await p.gate.answer(prompt.id, "U-ALICE", True)).status == "stale"


async def test_confirmations_are_dropped_a_week_after_they_expire(
    open_db: Callable[[], Database],
) -> None:
    from datetime import datetime, timedelta

    from core.mcp.confirm_store import KEEP

    db = open_db()
    now = PINNED

    def prompt(n: int, at: datetime) -> ConfirmationPrompt:
        return ConfirmationPrompt(
            id=f"id-{n}",
            request_id="r",
            platform="slack",
            tenant="T1",
            channel="C1",
            thread="th",
            user="U-ALICE",
            tool="delete_item",
            arguments="{}",
            expires_at=at + timedelta(seconds=120),
        )

    await ConfirmationStore(db, lambda: now).create(prompt(1, now))
    later = now + KEEP
    await ConfirmationStore(db, lambda: later).create(prompt(2, later))
    assert await ConfirmationStore(db).get("id-1") is not None  # expired less than KEEP ago
    much_later = later + timedelta(minutes=5)
    await ConfirmationStore(db, lambda: much_later).create(prompt(3, much_later))
    assert await ConfirmationStore(db).get("id-1") is None
    assert await ConfirmationStore(db).get("id-2") is not None


async def test_an_answer_past_the_expiry_is_stale_even_before_the_waiter_noticed(
    open_db: Callable[[], Database],
) -> None:
    from datetime import timedelta

    db = open_db()
    now = PINNED
    prompt = ConfirmationPrompt(
        id="still-pending",
        request_id="r",
        platform="slack",
        tenant="T1",
        channel="C1",
        thread="th",
        user="U-ALICE",
        tool="delete_item",
        arguments="{}",
        expires_at=now + timedelta(seconds=60),
    )
    await ConfirmationStore(db, lambda: now).create(prompt)
    late = ConfirmationStore(db, lambda: now + timedelta(seconds=61))
    answered = await late.answer(prompt.id, user="U-ALICE", approve=True)
    assert answered.status == "stale"
    assert answered.confirmation is not None and answered.confirmation.state == "expired"
    on_time = ConfirmationStore(db, lambda: now + timedelta(seconds=59))
    assert (await on_time.answer(prompt.id, user="U-ALICE", approve=True)).status == "stale"
    assert await _audit(db) == ["confirm_stale", "confirm_stale"]
