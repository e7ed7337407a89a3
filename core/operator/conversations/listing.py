"""The console's list of a tenant's conversations: threads newest activity first, keyset-paged,
filtered by channel, asker and dates, each with its turns, askers and ratings; and the channels
the filter offers."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from sqlalchemy import and_, case, func, select, text, tuple_
from sqlmodel import col

from core.operator.conversations.rows import aware
from core.store.engine import Database
from core.store.models import MAX_ROW_ID, Answer, AnswerRating, ThreadMessage

THREADS_PER_PAGE = 50
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


async def threads(
    db: Database,
    platform: str,
    tenant: str,
    where: ThreadFilter = ThreadFilter(),
    after: Cursor | None = None,
) -> ThreadPage:
    """A page of the tenant's threads matching `where`, newest activity first, after `after`."""
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
        # The threads they asked in, by the answers' (platform, tenant, user) index.
        asked = select(col(Answer.channel), col(Answer.thread)).where(
            col(Answer.platform) == platform,
            col(Answer.tenant) == tenant,
            col(Answer.user) == where.user,
        )
        stmt = stmt.where(tuple_(col(m.channel), col(m.thread)).in_(asked))
    if after is not None:
        stmt = stmt.having(last < after.last_id)
    stmt = stmt.order_by(last.desc()).limit(THREADS_PER_PAGE + 1)
    async with db.session() as s:
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


async def channels(db: Database, platform: str, tenant: str) -> list[str]:
    """The tenant's channels that have a conversation (for the filter's choices), at most
    `CHANNEL_CHOICES`. One index seek per channel (the next channel after the last one
    found), not a scan of every message: neither database skips through an index alone."""
    async with db.session() as s:
        connection = await s.connection()
        rows = await connection.execute(
            text(CHANNELS_SQL),
            {"platform": platform, "tenant": tenant, "limit": CHANNEL_CHOICES},
        )
        return [r[0] for r in rows.all()]


# --- the figures of a page of threads -------------------------------------------------------


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
