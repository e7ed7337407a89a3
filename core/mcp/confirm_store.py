"""Pending confirmations in SQL (`mcp_confirmations`), so any process can take the answer.

Several web processes sit behind one load balancer: the Slack button click (or a Discord
component interaction after a worker restart) may reach a process other than the one waiting
to run the tool. Every state change is one conditional UPDATE of a still-pending row: the first
answer counts, exactly once, on SQLite and PostgreSQL alike; expiring is the same UPDATE, so an
answer and the timeout cannot both win. Audit rows for answers that change nothing (another
user's click, a late or second one) are written by the process that took the click, built from
the row: the requesting session may live in another process.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any, Literal

from sqlalchemy import delete, update

from core.store.engine import Database
from core.store.models import AuditEntry, McpConfirmation
from core.store.tables import table_of

State = Literal["pending", "confirmed", "declined", "expired", "withdrawn"]
# Ended without an answer: its time ran out ("expired"), or its request ended first
# ("withdrawn": a deadline, a shutdown). The process that asked shows either on the question.
UNANSWERED: tuple[State, ...] = ("expired", "withdrawn")
# counted: this answer decided it; ignored: someone other than the requesting user;
# stale: already decided or past its expiry; unknown: no such confirmation here.
Status = Literal["counted", "ignored", "stale", "unknown"]
PENDING: State = "pending"
_ID_CHARS = 64
# How long a settled confirmation is kept: a click on an older question finds nothing (its
# buttons were retired long before); the audit log keeps the record.
KEEP = timedelta(days=7)


@dataclass(frozen=True, slots=True)
class ConfirmationPrompt:
    """A question the gate (core/mcp/confirm.py) asks and stores here before showing it."""

    id: str
    request_id: str
    platform: str
    tenant: str
    channel: str
    thread: str
    user: str  # the requesting user: the only one whose answer counts
    tool: str  # as people see it: `tracker.close_issue`
    arguments: str  # every argument, long values shortened (core/mcp/arguments.py)
    expires_at: datetime
    # The full arguments (indented JSON, secrets redacted, bounded), for the platforms that can
    # show them folded away; wanted when the summary shortened or rewrote something.
    details: str = ""
    abridged: bool = False

    @property
    def text(self) -> str:
        return f"Run `{self.tool}` with {self.arguments}? It may change things outside Threadline."


@dataclass(frozen=True, slots=True)
class Confirmation:
    """A confirmation as the adapters render it (who asked, what, and how it ended)."""

    id: str
    request_id: str
    platform: str
    tenant: str
    channel: str
    thread: str
    user: str
    tool: str
    arguments: str
    expires_at: datetime
    state: State
    answered_by: str | None
    details: str | None = None  # the full arguments, when the question shortened them


@dataclass(frozen=True, slots=True)
class Answered:
    status: Status
    confirmation: Confirmation | None  # None when unknown

    @property
    def counted(self) -> bool:
        return self.status == "counted"


def _view(row: Any) -> Confirmation:
    return Confirmation(
        id=row.id,
        request_id=row.request_id,
        platform=row.platform,
        tenant=row.tenant,
        channel=row.channel,
        thread=row.thread,
        user=row.user,
        tool=row.tool,
        arguments=row.arguments,
        expires_at=_aware(row.expires_at),
        state=row.state,
        answered_by=row.answered_by,
        details=row.details,
    )


def _aware(at: datetime) -> datetime:
    # SQLite hands timestamps back without their zone; they were written in UTC.
    return at if at.tzinfo is not None else at.replace(tzinfo=UTC)


class ConfirmationStore:
    def __init__(
        self, db: Database, clock: Callable[[], datetime] = lambda: datetime.now(UTC)
    ) -> None:
        self._db = db
        self._clock = clock

    async def create(self, prompt: ConfirmationPrompt) -> None:
        row = McpConfirmation(
            id=prompt.id,
            request_id=prompt.request_id[:64],
            platform=prompt.platform,
            tenant=prompt.tenant[:128],
            channel=prompt.channel[:128],
            thread=prompt.thread[:128],
            user=prompt.user[:128],
            tool=prompt.tool[:128],
            # The column keeps what the settled message repeats; the question showed it all.
            arguments=_fit(prompt.arguments, 400),
            created_at=self._clock(),
            expires_at=prompt.expires_at,
            details=prompt.details if prompt.abridged and prompt.details else None,
        )
        t = table_of(McpConfirmation)
        old = delete(t).where(t.c.expires_at < self._clock() - KEEP)
        async with self._db.session() as s:
            await s.exec(old)
            s.add(row)

    async def get(self, confirmation_id: str) -> Confirmation | None:
        if not _plausible(confirmation_id):
            return None
        async with self._db.session() as s:
            row = await s.get(McpConfirmation, confirmation_id)
            return _view(row) if row is not None else None

    async def answer(
        self,
        confirmation_id: str,
        *,
        user: str,
        approve: bool,
        platform: str | None = None,
        tenant: str | None = None,
    ) -> Answered:
        """`user` answered (their identity verified by the adapter). A confirmation of another
        platform or tenant is unknown to this caller: ids never open another workspace's."""
        found = await self.get(confirmation_id)
        if found is None or (platform is not None and found.platform != platform):
            return Answered("unknown", None)
        if tenant is not None and found.tenant != tenant:
            return Answered("unknown", None)
        if user != found.user:
            await self._audit(found, "confirm_ignored", f"answer by another user ({user[:64]})")
            return Answered("ignored", found)
        now = self._clock()
        t = table_of(McpConfirmation)
        state: State = "confirmed" if approve else "declined"
        stmt = (
            update(t)
            .where(t.c.id == found.id, t.c.state == PENDING, t.c.expires_at > now)
            .values(state=state, answered_by=user[:128], answered_at=now)
            .returning(*t.c)
        )
        async with self._db.session() as s:
            row = (await s.exec(stmt)).first()
            if row is not None:
                return Answered("counted", _view(row))
        current = await self.get(found.id) or found
        what = "after it ended" if current.state in ("pending", *UNANSWERED) else "twice"
        await self._audit(current, "confirm_stale", f"answered {what} ({current.state})")
        if current.state == PENDING:  # past its time, its waiter not yet noticed
            current = await self.expire(found.id) or current
        return Answered("stale", current)

    async def expire(
        self, confirmation_id: str, *, state: State = "expired"
    ) -> Confirmation | None:
        """End it unanswered (`state`: one of UNANSWERED) if still pending; return it as it
        now stands (answered ones stay so)."""
        t = table_of(McpConfirmation)
        stmt = (
            update(t)
            .where(t.c.id == confirmation_id, t.c.state == PENDING)
            .values(state=state, answered_at=self._clock())
        )
        async with self._db.session() as s:
            await s.exec(stmt)
        return await self.get(confirmation_id)

    async def _audit(self, c: Confirmation, outcome: str, detail: str) -> None:
        entry = AuditEntry(
            at=self._clock(),
            request_id=c.request_id,
            platform=c.platform,
            tenant=c.tenant,
            channel=c.channel,
            thread=c.thread,
            user=c.user,
            tool=c.tool,
            outcome=outcome,
            detail=detail[:500],
            args_chars=len(c.arguments),
            args_sha256=hashlib.sha256(c.arguments.encode()).hexdigest(),
        )
        async with self._db.session() as s:
            s.add(entry)


def _fit(text: str, chars: int) -> str:
    return text if len(text) <= chars else text[: chars - 1] + "…"


def _plausible(confirmation_id: str) -> bool:
    """Ids are ours (token_urlsafe); anything else is not looked up at all."""
    return 0 < len(confirmation_id) <= _ID_CHARS and all(
        c.isascii() and (c.isalnum() or c in "-_") for c in confirmation_id
    )
