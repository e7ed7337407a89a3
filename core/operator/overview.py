"""The console's overview figures for one tenant, read from what core already stores: the
thread history (questions asked, answers given), the audit log (tool calls and the ones that
failed or were refused), the outbox (messages waiting or given up on) and the digest runs."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from sqlalchemy import and_, case, func, select
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

        def count(*conditions: Any) -> Any:
            return func.coalesce(func.sum(case((and_(*conditions), 1), else_=0)), 0)

        # One pass over each table's recent rows of the tenant (its index on platform, tenant
        # and time), every figure counted in the same scan.
        is_user = col(ThreadMessage.role) == "user"
        # A turn that only proposed tool calls is no answer yet.
        is_answer = and_(
            col(ThreadMessage.role) == "assistant", col(ThreadMessage.tool_calls).is_(None)
        )
        in_hour = col(ThreadMessage.at) >= hour
        messages = select(
            count(is_user, in_hour), count(is_user), count(is_answer, in_hour), count(is_answer)
        ).where(
            col(ThreadMessage.platform) == platform,
            col(ThreadMessage.tenant) == tenant,
            col(ThreadMessage.at) >= day,
        )
        audit = select(func.count(), count(col(AuditEntry.outcome) != "ok")).where(
            col(AuditEntry.platform) == platform,
            col(AuditEntry.tenant) == tenant,
            col(AuditEntry.at) >= hour,
            col(AuditEntry.request_id) != "operator",  # console sign-ins are no tool calls
        )
        outbox = select(
            count(col(OutboxRow.state) == "pending"), count(col(OutboxRow.state) == "failed")
        ).where(
            col(OutboxRow.platform) == platform,
            col(OutboxRow.tenant) == tenant,
            col(OutboxRow.state).in_(("pending", "failed")),
        )
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
            q_hour, q_day, a_hour, a_day = (await connection.execute(messages)).one()
            calls, errors = (await connection.execute(audit)).one()
            pending, failed = (await connection.execute(outbox)).one()
            recent = (await connection.execute(runs)).all()
        return OverviewFigures(
            questions_hour=int(q_hour),
            questions_day=int(q_day),
            answers_hour=int(a_hour),
            answers_day=int(a_day),
            tool_calls_hour=int(calls),
            errors_hour=int(errors),
            outbox_pending=int(pending),
            outbox_failed=int(failed),
            digest_runs=tuple(DigestRunRow(r[0], r[1], r[2], r[3], r[4]) for r in recent),
        )
