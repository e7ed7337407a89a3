"""The console's overview figures for one tenant, read from what core already stores: the
thread history (questions asked, answers given), the audit log (tool calls and the ones that
failed or were refused), the outbox (messages waiting or given up on) and the digest runs."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from sqlalchemy import Select, func, select
from sqlmodel import col

from core.store.engine import Database

RECENT_RUNS = 10


@dataclass(frozen=True, slots=True)
class DigestRunRow:
    channel: str
    kind: str
    scheduled_for: datetime
    state: str
    detail: str


@dataclass(frozen=True, slots=True)
class OverviewFigures:
    questions_hour: int
    questions_day: int
    answers_hour: int
    answers_day: int
    tool_calls_hour: int
    errors_hour: int  # tool calls whose outcome was not "ok" (refused, invalid, failed)
    outbox_pending: int
    outbox_failed: int
    digest_runs: tuple[DigestRunRow, ...]


class Overview:
    def __init__(self, db: Database, clock: Callable[[], datetime]) -> None:
        self._db = db
        self._clock = clock

    async def figures(self, platform: str, tenant: str) -> OverviewFigures:
        from core.store.models import (
            AuditEntry,
            DigestRun,
            DigestSubscription,
            OutboxRow,
            ThreadMessage,
        )

        now = self._clock()
        hour, day = now - timedelta(hours=1), now - timedelta(days=1)

        def messages(role: str, since: datetime) -> Select[Any]:
            query = select(func.count()).where(
                col(ThreadMessage.platform) == platform,
                col(ThreadMessage.tenant) == tenant,
                col(ThreadMessage.role) == role,
                col(ThreadMessage.at) >= since,
            )
            if role == "assistant":  # a turn that only proposed tool calls is no answer yet
                query = query.where(col(ThreadMessage.tool_calls).is_(None))
            return query

        def audit(since: datetime, *, failed: bool) -> Select[Any]:
            query = select(func.count()).where(
                col(AuditEntry.platform) == platform,
                col(AuditEntry.tenant) == tenant,
                col(AuditEntry.at) >= since,
                col(AuditEntry.request_id) != "operator",  # console sign-ins are no tool calls
            )
            return query.where(col(AuditEntry.outcome) != "ok") if failed else query

        def outbox(state: str) -> Select[Any]:
            return select(func.count()).where(
                col(OutboxRow.platform) == platform,
                col(OutboxRow.tenant) == tenant,
                col(OutboxRow.state) == state,
            )

        counts = [
            messages("user", hour),
            messages("user", day),
            messages("assistant", hour),
            messages("assistant", day),
            audit(hour, failed=False),
            audit(hour, failed=True),
            outbox("pending"),
            outbox("failed"),
        ]
        runs = (
            select(
                col(DigestSubscription.channel),
                col(DigestSubscription.kind),
                col(DigestRun.scheduled_for),
                col(DigestRun.state),
                col(DigestRun.detail),
            )
            .join(DigestSubscription, col(DigestSubscription.id) == col(DigestRun.subscription_id))
            .where(
                col(DigestSubscription.platform) == platform,
                col(DigestSubscription.tenant) == tenant,
            )
            .order_by(col(DigestRun.scheduled_for).desc(), col(DigestRun.id).desc())
            .limit(RECENT_RUNS)
        )
        async with self._db.session() as s:
            connection = await s.connection()
            values = [int((await connection.execute(q)).scalar_one()) for q in counts]
            recent = (await connection.execute(runs)).all()
        (q_hour, q_day, a_hour, a_day, calls, errors, pending, failed) = values
        return OverviewFigures(
            questions_hour=q_hour,
            questions_day=q_day,
            answers_hour=a_hour,
            answers_day=a_day,
            tool_calls_hour=calls,
            errors_hour=errors,
            outbox_pending=pending,
            outbox_failed=failed,
            digest_runs=tuple(DigestRunRow(r[0], r[1], r[2], r[3], r[4]) for r in recent),
        )
