"""One conversation as the console's thread page shows it: a page of its turns (a turn starts at
a question and holds what the model did after it), each with its answer's record, tool calls and
tokens (`core.operator.conversations.matching`), and the summary compaction left."""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from datetime import datetime
from typing import Any

from sqlalchemy import case, func, select
from sqlmodel import col
from sqlmodel import select as select_rows

from core.operator.conversations.matching import (
    AuditedRequest,
    answers_of,
    audit_of,
    match_calls,
    tokens_of,
)
from core.operator.conversations.rows import (
    AnswerInfo,
    Said,
    StoredTurn,
    Summary,
    ThreadView,
    ToolCallRow,
    Turn,
    aware,
)
from core.store.engine import Database
from core.store.models import AuditEntry, ThreadMessage, ThreadSummary

TURNS_PER_PAGE = 50
# A turn of many tool steps could still make a page huge: a page stops after this many stored
# messages, mid-turn if it must (the next page goes on from there).
MESSAGES_PER_PAGE = 400
TEXT_CHARS = 20_000  # what a page shows of one message's text


async def thread_page(
    db: Database,
    platform: str,
    tenant: str,
    channel: str,
    thread: str,
    *,
    after: int | None = None,
    before: int | None = None,
) -> ThreadView | None:
    """A page of the thread's turns: from the start, after message `after` or the turns
    before message `before`. None when the tenant has no such thread: another tenant's
    thread is as unknown as one that never existed."""
    m = ThreadMessage
    conv = (
        col(m.platform) == platform,
        col(m.tenant) == tenant,
        col(m.channel) == channel,
        col(m.thread) == thread,
    )
    is_user = col(m.role) == "user"
    async with db.session() as s:
        connection = await s.connection()
        low, high, questions = (
            await connection.execute(
                select(
                    func.min(col(m.id)),
                    func.max(col(m.id)),
                    func.coalesce(func.sum(case((is_user, 1), else_=0)), 0),
                ).where(*conv)
            )
        ).one()
        if low is None:
            return None
        start, end = await _page_bounds(connection, conv, after, before)
        window = select_rows(m).where(*conv, col(m.id) >= start).order_by(col(m.id))
        if end is not None:
            window = window.where(col(m.id) < end)
        rows = list((await s.exec(window.limit(MESSAGES_PER_PAGE + 1))).all())
        if len(rows) > MESSAGES_PER_PAGE:
            rows = rows[:MESSAGES_PER_PAGE]
            end = _id(rows[-1]) + 1
        before_page = 0
        if rows:
            before_page = (
                await connection.execute(
                    select(func.count()).where(*conv, is_user, col(m.id) < rows[0].id)
                )
            ).scalar_one()
        turns = _split_turns(rows, int(before_page))
        summary_row = (
            await s.exec(
                select_rows(ThreadSummary)
                .where(
                    col(ThreadSummary.platform) == platform,
                    col(ThreadSummary.tenant) == tenant,
                    col(ThreadSummary.channel) == channel,
                    col(ThreadSummary.thread) == thread,
                )
                .order_by(col(ThreadSummary.id).desc())
                .limit(1)
            )
        ).first()
        until = await _next_start(connection, conv, end)
        answers = await answers_of(s, platform, tenant, channel, thread, turns, until)
        audit = await audit_of(s, platform, tenant, channel, thread, turns, until)
        calls = match_calls(turns, audit)
        tokens = await tokens_of(connection, platform, tenant, turns, calls)
    covers = summary_row.covers_through if summary_row is not None else 0
    summary = None
    if summary_row is not None:
        summary = Summary(summary_row.summary, covers, aware(summary_row.at))
    first_shown = _id(rows[0]) if rows else high + 1
    last_shown = _id(rows[-1]) if rows else high
    return ThreadView(
        channel=channel,
        thread=thread,
        turns=tuple(
            _view(t, answers.get(i), calls.get(i), tokens.get(i), covers)
            for i, t in enumerate(turns)
        ),
        total_turns=int(questions),
        summary=summary,
        earlier=first_shown if first_shown > low else None,
        later=last_shown if last_shown < high else None,
        newest=high + 1 if last_shown < high else None,
    )


async def _page_bounds(
    connection: Any, conv: Sequence[Any], after: int | None, before: int | None
) -> tuple[int, int | None]:
    """The page's message ids: [start, end), end None for "to the thread's last". A page
    starts at a question, so a turn is not cut in two unless it alone is too long."""
    m = ThreadMessage
    questions = select(col(m.id)).where(*conv, col(m.role) == "user")
    if before is not None:
        ids = (
            await connection.execute(
                questions.where(col(m.id) < before).order_by(col(m.id).desc()).limit(TURNS_PER_PAGE)
            )
        ).all()
        # Fewer than a page of questions before it: the page starts at the thread's start.
        start = ids[-1][0] if len(ids) == TURNS_PER_PAGE else 0
        return start, before
    start = (after or 0) + 1
    ids = (
        await connection.execute(
            questions.where(col(m.id) >= start).order_by(col(m.id)).limit(TURNS_PER_PAGE + 1)
        )
    ).all()
    end = ids[TURNS_PER_PAGE][0] if len(ids) > TURNS_PER_PAGE else None
    return start, end


async def _next_start(connection: Any, conv: Sequence[Any], end: int | None) -> datetime | None:
    """When the message after this page was stored (None: the page is the thread's end):
    later answers and tool calls belong to later pages."""
    if end is None:
        return None
    m = ThreadMessage
    at = (
        await connection.execute(
            select(col(m.at)).where(*conv, col(m.id) >= end).order_by(col(m.id)).limit(1)
        )
    ).scalar_one_or_none()
    return aware(at) if at is not None else None


def _id(row: ThreadMessage) -> int:
    assert row.id is not None  # read from the table
    return row.id


def _split_turns(rows: Sequence[ThreadMessage], questions_before: int) -> list[StoredTurn]:
    turns: list[StoredTurn] = []
    number = questions_before
    for row in rows:
        if row.role == "user":
            number += 1
            turns.append(StoredTurn(number))
        elif not turns:  # the page starts inside a turn (cut for length) or before any question
            turns.append(StoredTurn(number or None))
        turns[-1].rows.append(row)
        if row.tool_calls:
            turns[-1].calls += _call_names(row.tool_calls)
    return turns


def _call_names(stored: str) -> list[str]:
    try:
        calls = json.loads(stored)
    except ValueError:
        return []
    names = []
    for call in calls if isinstance(calls, list) else ():
        function = call.get("function") if isinstance(call, dict) else None
        if isinstance(function, dict) and isinstance(function.get("name"), str):
            names.append(function["name"])
    return names


def _view(
    turn: StoredTurn,
    answer: AnswerInfo | None,
    request: AuditedRequest | None,
    tokens: int | None,
    covers: int,
) -> Turn:
    said = tuple(
        Said(
            id=row.id or 0,
            role=row.role,
            at=aware(row.at),
            text=row.content[:TEXT_CHARS],
            cut=max(0, len(row.content) - TEXT_CHARS),
        )
        for row in turn.rows
        if row.role in ("user", "assistant") and row.content.strip()
    )
    return Turn(
        number=turn.number,
        at=turn.start,
        messages=said,
        tool_calls=_tool_rows(turn.calls, request.entries if request is not None else ()),
        answer=answer,
        tokens=tokens,
        compacted=(turn.rows[-1].id or 0) <= covers,
    )


def _tool_rows(names: Sequence[str], entries: Iterable[AuditEntry]) -> tuple[ToolCallRow, ...]:
    """The turn's calls in the order asked, each with the next audit entry of its tool."""
    left = list(entries)
    rows = []
    for name in names:
        entry = next((e for e in left if e.tool == name), None)
        if entry is None:
            rows.append(ToolCallRow(name, "not recorded", None, ""))
            continue
        left.remove(entry)
        rows.append(ToolCallRow(name, entry.outcome, entry.duration_ms, entry.detail))
    return tuple(rows)
