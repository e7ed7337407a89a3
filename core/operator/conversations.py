"""The console's conversations: a tenant's threads (newest activity first, keyset-paged) and one
thread's turns with what made each answer, read from what core already stores.

- `thread_messages`: the turns (a turn starts at a user message and holds what the model did
  after it); messages are kept after compaction, `thread_summaries` says which ones the model
  now sees only as a summary.
- `answers` and `answer_ratings`: who asked, the model, skills and sources of each answer, its
  👍/👎.
  An answer stores no text and no message id: it is matched to its turn by time (it is recorded
  right after the turn's messages are stored, and a thread's requests run one at a time).
- `audit_log`: each tool call's outcome and duration, by thread and request id; a request's
  calls are matched to the turn whose stored calls they are, in order and by time.
- `usage_records`: tokens by request id. They name no thread, so a turn's tokens are known only
  when its request id is (a turn that called tools); the list shows no tokens.

Sources (code lines and their links, memory scopes, skills) are known for answers stored since
migration 0010; older answers show none.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from sqlalchemy import and_, case, func, select, text, tuple_
from sqlmodel import col
from sqlmodel import select as select_rows
from sqlmodel.ext.asyncio.session import AsyncSession

from core.feedback.store import decode_sources
from core.request import Source
from core.store.engine import Database
from core.store.models import (
    MAX_ROW_ID,
    Answer,
    AnswerRating,
    AuditEntry,
    ThreadMessage,
    ThreadSummary,
    UsageRecord,
)

THREADS_PER_PAGE = 50
TURNS_PER_PAGE = 50
# A turn of many tool steps could still make a page huge: a page stops after this many stored
# messages, mid-turn if it must (the next page goes on from there).
MESSAGES_PER_PAGE = 400
TEXT_CHARS = 20_000  # what a page shows of one message's text
KEY_CHARS = 128  # channel and thread columns' width
CHANNEL_CHOICES = 500
CHANNELS_SQL = """
WITH RECURSIVE found(channel) AS (
  SELECT min(channel) FROM thread_messages WHERE platform = :platform AND tenant = :tenant
  UNION ALL
  SELECT (SELECT min(m.channel) FROM thread_messages AS m
          WHERE m.platform = :platform AND m.tenant = :tenant AND m.channel > found.channel)
  FROM found WHERE found.channel IS NOT NULL
)
SELECT channel FROM found WHERE channel IS NOT NULL LIMIT :limit
"""


def aware(at: datetime) -> datetime:
    """SQLite hands timestamps back naive; they were stored as UTC."""
    return at if at.tzinfo is not None else at.replace(tzinfo=UTC)


def valid_key(value: str) -> bool:
    """A channel or thread id as stored: 1-128 characters, none of them a control character."""
    return 0 < len(value) <= KEY_CHARS and all(c >= " " and c != "\x7f" for c in value)


# --- the list -------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class ThreadFilter:
    channel: str | None = None
    user: str | None = None  # who asked (a question that got an answer)
    since: datetime | None = None  # inclusive
    until: datetime | None = None  # exclusive


@dataclass(frozen=True, slots=True)
class Cursor:
    """Where a page of the list ends: the newest message id of its last thread. Ids grow as
    messages are stored, so "newest activity first" is "newest last message id first", and a
    thread's last id is unique: no ties to break."""

    last_id: int

    def encode(self) -> str:
        return str(self.last_id)

    @classmethod
    def decode(cls, text: str) -> Cursor | None:
        """None when `text` is not a cursor this module made."""
        if not (text.isascii() and text.isdigit()) or not 0 < int(text) <= MAX_ROW_ID + 1:
            return None
        return cls(int(text))


@dataclass(frozen=True, slots=True)
class ThreadRow:
    channel: str
    thread: str
    last_at: datetime  # the last message within the filter's dates
    turns: int  # questions asked in the whole thread
    people: tuple[str, ...]  # who asked, by name
    up: int
    down: int


@dataclass(frozen=True, slots=True)
class ThreadPage:
    rows: tuple[ThreadRow, ...]
    next: Cursor | None


# --- one thread -----------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class ToolCallRow:
    tool: str
    outcome: str  # the audit log's ("ok" or why not); "not recorded" when no entry matched
    duration_ms: int | None
    detail: str


@dataclass(frozen=True, slots=True)
class RatingRow:
    user: str
    value: str  # up | down
    reason: str | None
    at: datetime


@dataclass(frozen=True, slots=True)
class AnswerInfo:
    asked_by: str
    model: str
    skills: tuple[str, ...]
    ratings: tuple[RatingRow, ...]
    sources: tuple[Source, ...] = ()  # as stored: a link may be any string, check it to show it


@dataclass(frozen=True, slots=True)
class Said:
    """One message's text as the page shows it (capped)."""

    id: int
    role: str  # user | assistant
    at: datetime
    text: str
    cut: int  # characters left out


@dataclass(frozen=True, slots=True)
class Turn:
    number: int | None  # the question's place in the thread; None: messages before any question
    at: datetime
    messages: tuple[Said, ...]
    tool_calls: tuple[ToolCallRow, ...]
    answer: AnswerInfo | None
    tokens: int | None  # prompt + completion of the request, when its request id is known
    compacted: bool  # the model now sees this turn only through the summary


@dataclass(frozen=True, slots=True)
class Summary:
    text: str
    covers_through: int
    at: datetime


@dataclass(frozen=True, slots=True)
class ThreadView:
    channel: str
    thread: str
    turns: tuple[Turn, ...]
    total_turns: int
    summary: Summary | None
    earlier: int | None  # `before=` of the previous page
    later: int | None  # `after=` of the next page
    newest: int | None  # `before=` of the last page, when this is not it


@dataclass
class _Turn:
    """A turn being assembled from its stored messages."""

    number: int | None
    rows: list[ThreadMessage] = field(default_factory=list)
    calls: list[str] = field(default_factory=list)  # the tool names the model asked for

    @property
    def start(self) -> datetime:
        return aware(self.rows[0].at)

    @property
    def end(self) -> datetime:
        return aware(self.rows[-1].at)

    @property
    def answered_at(self) -> datetime | None:
        """When the turn's final answer was stored (None: it got none)."""
        last = self.rows[-1]
        if last.role == "assistant" and last.tool_calls is None and last.content.strip():
            return aware(last.at)
        return None


class Conversations:
    def __init__(self, db: Database, clock: Callable[[], datetime]) -> None:
        self._db = db
        self._clock = clock

    # --- the list ---------------------------------------------------------------------------

    async def threads(
        self,
        platform: str,
        tenant: str,
        where: ThreadFilter = ThreadFilter(),
        after: Cursor | None = None,
    ) -> ThreadPage:
        m = ThreadMessage
        # Without dates, the conversation index (platform, tenant, channel, thread, id) holds
        # all that is read: the scan never touches the messages' text. Dates read the rows in
        # the range through the (platform, tenant, at) index.
        last = func.max(col(m.id))
        stmt = (
            select(col(m.channel), col(m.thread), last, func.min(col(m.id)))
            .where(col(m.platform) == platform, col(m.tenant) == tenant)
            .group_by(col(m.channel), col(m.thread))
        )
        if where.channel is not None:
            stmt = stmt.where(col(m.channel) == where.channel)
        if where.since is not None:
            stmt = stmt.where(col(m.at) >= where.since)
        if where.until is not None:
            stmt = stmt.where(col(m.at) < where.until)
        if where.user is not None:
            asked = select(col(Answer.channel), col(Answer.thread)).where(
                col(Answer.platform) == platform,
                col(Answer.tenant) == tenant,
                col(Answer.user) == where.user,
            )
            stmt = stmt.where(tuple_(col(m.channel), col(m.thread)).in_(asked))
        if after is not None:
            stmt = stmt.having(last < after.last_id)
        stmt = stmt.order_by(last.desc()).limit(THREADS_PER_PAGE + 1)
        async with self._db.session() as s:
            connection = await s.connection()
            found = [
                (r[0], r[1], int(r[2] or 0), int(r[3] or 0))
                for r in (await connection.execute(stmt)).all()
            ]
            page = found[:THREADS_PER_PAGE]
            keys = [(channel, thread) for channel, thread, _, _ in page]
            times = await _times(connection, [i for row in page for i in row[2:]])
            turns = await _turn_counts(connection, platform, tenant, keys)
            # A thread's answers come after its first message: the page's earliest first
            # message bounds the scan of the tenant's answers by their time index.
            since = min((times[first] for _, _, _, first in page), default=None)
            people, votes = await _answer_figures(connection, platform, tenant, keys, since)
        rows = tuple(
            ThreadRow(
                channel=channel,
                thread=thread,
                last_at=times[last_id],
                turns=turns.get((channel, thread), 0),
                people=tuple(sorted(people.get((channel, thread), ()))),
                up=votes.get((channel, thread), (0, 0))[0],
                down=votes.get((channel, thread), (0, 0))[1],
            )
            for channel, thread, last_id, _ in page
        )
        more = len(found) > THREADS_PER_PAGE
        return ThreadPage(rows, Cursor(page[-1][2]) if more else None)

    async def channels(self, platform: str, tenant: str) -> list[str]:
        """The tenant's channels that have a conversation (for the filter's choices), at most
        `CHANNEL_CHOICES`. One index seek per channel (the next channel after the last one
        found), not a scan of every message: neither database skips through an index alone."""
        async with self._db.session() as s:
            connection = await s.connection()
            rows = await connection.execute(
                text(CHANNELS_SQL),
                {"platform": platform, "tenant": tenant, "limit": CHANNEL_CHOICES},
            )
            return [r[0] for r in rows.all()]

    # --- one thread -------------------------------------------------------------------------

    async def thread(
        self,
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
        async with self._db.session() as s:
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
            answers = await _answers(s, platform, tenant, channel, thread, turns, until)
            audit = await _audit(s, platform, tenant, channel, thread, turns, until)
            calls = _match_calls(turns, audit)
            tokens = await _tokens(connection, platform, tenant, turns, calls)
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


# --- the list's figures ---------------------------------------------------------------------


def _keyed(table: Any, keys: Sequence[tuple[str, str]]) -> Any:
    """`table`'s rows of these (channel, thread) pairs: channel IN and thread IN narrow by
    index, the pairs are checked by whoever reads the rows."""
    return and_(
        col(table.channel).in_({c for c, _ in keys}),
        col(table.thread).in_({t for _, t in keys}),
    )


async def _times(connection: Any, ids: Sequence[int]) -> dict[int, datetime]:
    if not ids:
        return {}
    m = ThreadMessage
    rows = (await connection.execute(select(col(m.id), col(m.at)).where(col(m.id).in_(ids)))).all()
    return {int(r[0]): aware(r[1]) for r in rows}


async def _turn_counts(
    connection: Any, platform: str, tenant: str, keys: Sequence[tuple[str, str]]
) -> dict[tuple[str, str], int]:
    if not keys:
        return {}
    m = ThreadMessage
    stmt = (
        select(col(m.channel), col(m.thread), func.count())
        .where(col(m.platform) == platform, col(m.tenant) == tenant, _keyed(m, keys))
        .where(col(m.role) == "user")
        .group_by(col(m.channel), col(m.thread))
    )
    wanted = set(keys)
    rows = (await connection.execute(stmt)).all()
    return {(r[0], r[1]): int(r[2]) for r in rows if (r[0], r[1]) in wanted}


async def _answer_figures(
    connection: Any,
    platform: str,
    tenant: str,
    keys: Sequence[tuple[str, str]],
    since: datetime | None,
) -> tuple[dict[tuple[str, str], set[str]], dict[tuple[str, str], tuple[int, int]]]:
    """Who asked in each thread, and its answers' 👍 and 👎."""
    if not keys or since is None:
        return {}, {}
    a, r = Answer, AnswerRating
    scope = (
        col(a.platform) == platform,
        col(a.tenant) == tenant,
        col(a.created_at) >= since,
        _keyed(a, keys),
    )
    asked = select(col(a.channel), col(a.thread), col(a.user)).where(*scope).distinct()
    rated = (
        select(
            col(a.channel),
            col(a.thread),
            func.coalesce(func.sum(case((col(r.value) == "up", 1), else_=0)), 0),
            func.coalesce(func.sum(case((col(r.value) == "down", 1), else_=0)), 0),
        )
        .join(r, col(r.answer_id) == col(a.id))
        .where(*scope)
        .group_by(col(a.channel), col(a.thread))
    )
    wanted = set(keys)
    people: dict[tuple[str, str], set[str]] = {}
    for channel, thread, user in (await connection.execute(asked)).all():
        if (channel, thread) in wanted:
            people.setdefault((channel, thread), set()).add(user)
    votes = {
        (row[0], row[1]): (int(row[2]), int(row[3]))
        for row in (await connection.execute(rated)).all()
        if (row[0], row[1]) in wanted
    }
    return people, votes


# --- one thread's page ----------------------------------------------------------------------


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


def _split_turns(rows: Sequence[ThreadMessage], questions_before: int) -> list[_Turn]:
    turns: list[_Turn] = []
    number = questions_before
    for row in rows:
        if row.role == "user":
            number += 1
            turns.append(_Turn(number))
        elif not turns:  # the page starts inside a turn (cut for length) or before any question
            turns.append(_Turn(number or None))
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


async def _answers(
    s: AsyncSession,
    platform: str,
    tenant: str,
    channel: str,
    thread: str,
    turns: Sequence[_Turn],
    until: datetime | None,
) -> dict[int, AnswerInfo]:
    """The answer record of each answered turn (by index in `turns`), with its ratings."""
    if not turns:
        return {}
    a, r = Answer, AnswerRating
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
    taken = _match_answers([t.answered_at for t in turns], [aware(x.created_at) for x in records])
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


def _match_answers(answered: Sequence[datetime | None], made: Sequence[datetime]) -> dict[int, int]:
    """Answer records (by creation time, oldest first) to turns: each to the latest answered
    turn stored no later than it and not yet matched. Equal times (a clock too coarse to tell
    them apart) go in order. Returns {answer index: turn index}."""
    taken: dict[int, int] = {}
    used: set[int] = set()
    for i, at in enumerate(made):
        candidates = [j for j, t in enumerate(answered) if t is not None and t <= at]
        if not candidates:
            continue
        latest = max(answered[j] for j in candidates)  # type: ignore[type-var]
        free = [j for j in candidates if answered[j] == latest and j not in used]
        if not free:
            free = [j for j in candidates if j not in used][-1:]
        if free:
            used.add(free[0])
            taken[i] = free[0]
    return taken


@dataclass(frozen=True, slots=True)
class _Request:
    request_id: str
    at: datetime
    entries: tuple[AuditEntry, ...]


async def _audit(
    s: AsyncSession,
    platform: str,
    tenant: str,
    channel: str,
    thread: str,
    turns: Sequence[_Turn],
    until: datetime | None,
) -> list[_Request]:
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
    return [_Request(rid, aware(group[0].at), tuple(group)) for rid, group in grouped.items()]


def _match_calls(turns: Sequence[_Turn], requests: Sequence[_Request]) -> dict[int, _Request]:
    """Each request's audit entries to the turn that made those calls: in order, a turn whose
    time span holds the request's first entry and that asked for one of its tools. A request
    that fits no turn (a command's tool call, which the thread does not keep) is left out."""
    matched: dict[int, _Request] = {}
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


async def _tokens(
    connection: Any,
    platform: str,
    tenant: str,
    turns: Sequence[_Turn],
    calls: dict[int, _Request],
) -> dict[int, int]:
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


def _view(
    turn: _Turn,
    answer: AnswerInfo | None,
    request: _Request | None,
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
