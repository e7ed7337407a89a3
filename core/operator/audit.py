"""The console's audit log page for one tenant: the audit log's rows (tool calls, and operator
actions such as console sign-ins, whose request id is "operator"), newest first, filtered by
day range, user, channel, tool and outcome.

Paging is by keyset, never OFFSET: a page ends at a row's (at, id) and the next one starts
strictly before it, so the thousandth page costs what the first does. The CSV export reads the
same way in batches, so its memory stays flat however many rows match.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from dataclasses import dataclass, replace
from datetime import UTC, date, datetime, time, timedelta
from typing import Any

from sqlalchemy import and_, or_, select
from sqlmodel import col

from core.store.engine import Database

PAGE_SIZE = 50
EXPORT_BATCH = 2000
MAX_TEXT = 128  # the columns' length: a longer value cannot match
OPERATOR_REQUEST = "operator"  # AuditLog.record_action's request id


class AuditQueryError(ValueError):
    """A filter value the page cannot use; the message says which and why."""


@dataclass(frozen=True, slots=True)
class Cursor:
    """Where a page ended: the next page holds the rows strictly older than this one."""

    at: datetime
    id: int

    def encode(self) -> str:
        delta = _aware(self.at) - _EPOCH
        micros = (delta.days * 86_400 + delta.seconds) * 1_000_000 + delta.microseconds
        return f"{micros},{self.id}"

    @classmethod
    def decode(cls, text: str) -> Cursor:
        from core.store.models import MAX_ROW_ID

        micros, comma, row = text.partition(",")
        if not comma or not _digits(micros, 17) or not _digits(row, 10) or int(row) > MAX_ROW_ID:
            raise AuditQueryError("That page link is malformed; start again from the first page.")
        try:
            at = _EPOCH + timedelta(microseconds=int(micros))
        except OverflowError:
            raise AuditQueryError("That page link is out of range.") from None
        return cls(at, int(row))


_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)


def _digits(text: str, most: int) -> bool:
    return text.isascii() and text.isdecimal() and 0 < len(text) <= most


def _aware(at: datetime) -> datetime:
    """SQLite hands timestamps back naive; they were stored as UTC."""
    return at if at.tzinfo is not None else at.replace(tzinfo=UTC)


@dataclass(frozen=True, slots=True)
class AuditFilter:
    start: date | None = None  # first UTC day, inclusive
    end: date | None = None  # last UTC day, inclusive
    user: str = ""
    channel: str = ""
    tool: str = ""
    outcome: str = ""
    before: Cursor | None = None

    @classmethod
    def parse(cls, params: dict[str, str]) -> AuditFilter:
        """From the query string (`from`, `to`, `user`, `channel`, `tool`, `outcome`,
        `before`); empty values filter nothing. Raises AuditQueryError naming the bad one."""
        start, end = _day(params.get("from"), "From"), _day(params.get("to"), "To")
        if start is not None and end is not None and start > end:
            raise AuditQueryError("The From day is after the To day.")
        texts = {}
        for name in ("user", "channel", "tool", "outcome"):
            value = (params.get(name) or "").strip()
            if len(value) > MAX_TEXT:
                raise AuditQueryError(f"The {name} filter is longer than {MAX_TEXT} characters.")
            texts[name] = value
        cursor = (params.get("before") or "").strip()
        return cls(start, end, before=Cursor.decode(cursor) if cursor else None, **texts)

    def params(self) -> dict[str, str]:
        """The filter as query-string values (without the cursor), for links."""
        return {
            k: v
            for k, v in {
                "from": self.start.isoformat() if self.start else "",
                "to": self.end.isoformat() if self.end else "",
                "user": self.user,
                "channel": self.channel,
                "tool": self.tool,
                "outcome": self.outcome,
            }.items()
            if v
        }


def _day(value: str | None, label: str) -> date | None:
    text = (value or "").strip()
    if not text:
        return None
    try:
        if len(text) != 10:
            raise ValueError(text)
        return date.fromisoformat(text)
    except ValueError:
        message = f"{label} must be a day written YYYY-MM-DD, like 2026-12-03."
        raise AuditQueryError(message) from None


@dataclass(frozen=True, slots=True)
class AuditRow:
    id: int
    at: datetime
    request_id: str
    channel: str
    thread: str
    user: str
    tool: str
    outcome: str
    detail: str
    duration_ms: int
    args_chars: int

    @property
    def is_operator_action(self) -> bool:
        return self.request_id == OPERATOR_REQUEST

    @property
    def cursor(self) -> Cursor:
        return Cursor(self.at, self.id)


@dataclass(frozen=True, slots=True)
class AuditPage:
    rows: tuple[AuditRow, ...]
    next: Cursor | None  # None: this is the last page


CSV_HEADER = (
    "at",
    "id",
    "request_id",
    "channel",
    "thread",
    "user",
    "tool",
    "outcome",
    "detail",
    "duration_ms",
    "args_chars",
)


class AuditReader:
    def __init__(self, db: Database) -> None:
        self._db = db

    def _select(self, platform: str, tenant: str, wanted: AuditFilter, limit: int) -> Any:
        from core.store.models import AuditEntry

        at, row_id = col(AuditEntry.at), col(AuditEntry.id)
        where = [col(AuditEntry.platform) == platform, col(AuditEntry.tenant) == tenant]
        if wanted.start is not None:
            where.append(at >= datetime.combine(wanted.start, time(), UTC))
        if wanted.end is not None:
            where.append(at < datetime.combine(wanted.end + timedelta(days=1), time(), UTC))
        for name in ("user", "channel", "tool", "outcome"):
            value = getattr(wanted, name)
            if value:
                where.append(col(getattr(AuditEntry, name)) == value)
        if wanted.before is not None:
            b = wanted.before
            # `at <= b.at` alone is an index range; the OR then drops the ties already shown.
            where.append(at <= b.at)
            where.append(or_(at < b.at, and_(at == b.at, row_id < b.id)))
        return (
            select(
                row_id,
                at,
                col(AuditEntry.request_id),
                col(AuditEntry.channel),
                col(AuditEntry.thread),
                col(AuditEntry.user),
                col(AuditEntry.tool),
                col(AuditEntry.outcome),
                col(AuditEntry.detail),
                col(AuditEntry.duration_ms),
                col(AuditEntry.args_chars),
            )
            .where(*where)
            .order_by(at.desc(), row_id.desc())
            .limit(limit)
        )

    async def _fetch(
        self, platform: str, tenant: str, wanted: AuditFilter, limit: int
    ) -> list[AuditRow]:
        stmt = self._select(platform, tenant, wanted, limit)
        async with self._db.session() as s:
            connection = await s.connection()
            found = (await connection.execute(stmt)).all()
        return [
            AuditRow(r[0], _aware(r[1]), r[2], r[3], r[4], r[5], r[6], r[7], r[8], r[9], r[10])
            for r in found
        ]

    async def page(
        self, platform: str, tenant: str, wanted: AuditFilter, size: int = PAGE_SIZE
    ) -> AuditPage:
        """One page, newest first, starting before `wanted.before`; one row more is read to
        know whether another page follows."""
        rows = await self._fetch(platform, tenant, wanted, size + 1)
        more = len(rows) > size
        rows = rows[:size]
        return AuditPage(tuple(rows), rows[-1].cursor if more and rows else None)

    async def export(
        self, platform: str, tenant: str, wanted: AuditFilter, batch: int = EXPORT_BATCH
    ) -> AsyncIterator[AuditRow]:
        """Every matching row, newest first, read `batch` at a time by keyset (each batch in
        its own short transaction: a long download holds no connection between batches)."""
        current = wanted
        while True:
            rows = await self._fetch(platform, tenant, current, batch)
            for row in rows:
                yield row
            if len(rows) < batch:
                return
            current = replace(current, before=rows[-1].cursor)
