"""What a page of turns is matched with, by time: an answer stores no text and no message id, and
the audit log's and usage's rows name a request, not a message.

- `answers` (with their ratings): recorded right after the turn's messages are stored, and a
  thread's requests run one at a time: each record goes to the latest answered turn stored no
  later than it.
- `audit_log`: each tool call's outcome and duration, by thread and request id; a request's
  calls go to the turn whose stored calls they are, in order and by time.
- `usage_records`: tokens by request id, so a turn's tokens are known only when its request id
  is (a turn that called tools).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from sqlalchemy import func, select
from sqlmodel import col
from sqlmodel import select as select_rows
from sqlmodel.ext.asyncio.session import AsyncSession

from core.feedback.store import decode_sources
from core.operator.conversations.rows import AnswerInfo, RatingRow, StoredTurn, aware
from core.store.models import Answer, AnswerRating, AuditEntry, UsageRecord


async def answers_of(
    s: AsyncSession,
    platform: str,
    tenant: str,
    channel: str,
    thread: str,
    turns: Sequence[StoredTurn],
    until: datetime | None,
) -> dict[int, AnswerInfo]:
    """The answer record of each answered turn (by index in `turns`), with its ratings."""
    if not turns:
        return {}
    a, r = Answer, AnswerRating
    # Read by the thread's index (platform, tenant, channel, thread), the page's time within.
    stmt = select_rows(a).where(
        col(a.platform) == platform,
        col(a.tenant) == tenant,
        col(a.channel) == channel,
        col(a.thread) == thread,
        col(a.created_at) >= turns[0].start,
    )
    if until is not None:
        stmt = stmt.where(col(a.created_at) <= until)
    records = list((await s.exec(stmt.order_by(col(a.created_at)))).all())
    if not records:
        return {}
    ratings: dict[str, list[RatingRow]] = {}
    found = await s.exec(
        select_rows(r)
        .where(col(r.answer_id).in_([x.id for x in records]))
        .order_by(col(r.updated_at), col(r.id))
    )
    for rating in found.all():
        ratings.setdefault(rating.answer_id, []).append(
            RatingRow(rating.user, rating.value, rating.reason, aware(rating.updated_at))
        )
    taken = match_answers([t.answered_at for t in turns], [aware(x.created_at) for x in records])
    return {
        turn: AnswerInfo(
            asked_by=records[i].user,
            model=records[i].model,
            skills=tuple(k for k in records[i].skills.split(",") if k),
            ratings=tuple(ratings.get(records[i].id, ())),
            sources=decode_sources(records[i].sources),
        )
        for i, turn in taken.items()
    }


def match_answers(answered: Sequence[datetime | None], made: Sequence[datetime]) -> dict[int, int]:
    """Answer records (by creation time, oldest first) to turns: each to the latest answered
    turn stored no later than it and not yet matched. Equal times (a clock too coarse to tell
    them apart) go in order. Returns {answer index: turn index}."""
    taken: dict[int, int] = {}
    used: set[int] = set()
    for i, at in enumerate(made):
        earlier = {j: t for j, t in enumerate(answered) if t is not None and t <= at}
        if not earlier:
            continue
        candidates = list(earlier)
        latest = max(earlier.values())
        free = [j for j in candidates if answered[j] == latest and j not in used]
        if not free:
            free = [j for j in candidates if j not in used][-1:]
        if free:
            used.add(free[0])
            taken[i] = free[0]
    return taken


@dataclass(frozen=True, slots=True)
class AuditedRequest:
    """One request's audit entries, oldest first; `at` is the first one's time."""

    request_id: str
    at: datetime
    entries: tuple[AuditEntry, ...]


async def audit_of(
    s: AsyncSession,
    platform: str,
    tenant: str,
    channel: str,
    thread: str,
    turns: Sequence[StoredTurn],
    until: datetime | None,
) -> list[AuditedRequest]:
    """The thread's tool calls in the page's time, grouped by request, oldest first."""
    if not any(t.calls for t in turns):
        return []
    e = AuditEntry
    stmt = select_rows(e).where(
        col(e.platform) == platform,
        col(e.tenant) == tenant,
        col(e.at) >= turns[0].start,
        col(e.channel) == channel,
        col(e.thread) == thread,
    )
    if until is not None:
        stmt = stmt.where(col(e.at) <= until)
    entries = (await s.exec(stmt.order_by(col(e.id)))).all()
    grouped: dict[str, list[AuditEntry]] = {}
    for entry in entries:
        grouped.setdefault(entry.request_id, []).append(entry)
    return [AuditedRequest(rid, aware(group[0].at), tuple(group)) for rid, group in grouped.items()]


def match_calls(
    turns: Sequence[StoredTurn], requests: Sequence[AuditedRequest]
) -> dict[int, AuditedRequest]:
    """Each request's audit entries to the turn that made those calls: in order, a turn whose
    time span holds the request's first entry and that asked for one of its tools. A request
    that fits no turn (a command's tool call, which the thread does not keep) is left out."""
    matched: dict[int, AuditedRequest] = {}
    next_turn = 0
    for request in requests:
        tools = {entry.tool for entry in request.entries}
        for j in range(next_turn, len(turns)):
            turn = turns[j]
            if turn.start <= request.at <= turn.end and tools & set(turn.calls):
                matched[j] = request
                next_turn = j + 1
                break
    return matched


async def tokens_of(
    connection: Any,
    platform: str,
    tenant: str,
    turns: Sequence[StoredTurn],
    calls: dict[int, AuditedRequest],
) -> dict[int, int]:
    """Tokens (prompt + completion) of each turn whose request is known, by turn index."""
    if not calls:
        return {}
    u = UsageRecord
    # Usage rows are indexed by tenant and day: the page's days narrow the scan.
    days = sorted(
        {t.start.strftime("%Y-%m-%d") for t in turns} | {turns[-1].end.strftime("%Y-%m-%d")}
    )
    stmt = (
        select(
            col(u.request_id),
            func.sum(col(u.prompt_tokens) + col(u.completion_tokens)),
        )
        .where(
            col(u.platform) == platform,
            col(u.tenant) == tenant,
            col(u.day) >= days[0],
            col(u.day) <= days[-1],
            col(u.request_id).in_([r.request_id for r in calls.values()]),
        )
        .group_by(col(u.request_id))
    )
    spent = {row[0]: int(row[1]) for row in (await connection.execute(stmt)).all()}
    return {
        turn: spent[request.request_id]
        for turn, request in calls.items()
        if request.request_id in spent
    }
