"""The audit log: one row per proposed tool call, whatever happened to it; and one per operator
action outside a conversation (a console sign-in or sign-out), with who did it."""

from __future__ import annotations

import hashlib
import logging
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime
from typing import TYPE_CHECKING

from core.policy import Identity
from core.session import ToolSession
from core.store.engine import Database

if TYPE_CHECKING:
    from core.store.models import AuditEntry

log = logging.getLogger(__name__)


@dataclass(frozen=True, slots=True)
class AuditEvent:
    tool: str
    outcome: str
    detail: str
    duration_ms: int
    raw_arguments: str


class AuditLog:
    def __init__(self, db: Database, clock: Callable[[], datetime] | None = None) -> None:
        """`clock`: when each entry happened (default: now, UTC); tests pin it."""
        self._db = db
        self._clock = clock

    async def record(self, session: ToolSession, event: AuditEvent) -> None:
        from core.store.models import AuditEntry

        who, conv = session.identity, session.conversation
        entry = AuditEntry(
            request_id=session.request_id,
            platform=who.platform,
            tenant=who.tenant,
            channel=who.channel,
            thread=conv.thread,
            user=who.user,
            tool=event.tool[:128],
            outcome=event.outcome,
            detail=event.detail[:500],
            duration_ms=event.duration_ms,
            args_chars=len(event.raw_arguments),
            args_sha256=hashlib.sha256(event.raw_arguments.encode()).hexdigest(),
        )
        await self._write(entry, event.tool)

    async def record_action(
        self, who: Identity, action: str, *, outcome: str = "ok", detail: str = ""
    ) -> None:
        """An operator's action outside a conversation (`console.sign_in`, ...): `tool` holds
        the action, the thread is empty, the request id says where it came from."""
        from core.store.models import AuditEntry

        entry = AuditEntry(
            request_id="operator",
            platform=who.platform,
            tenant=who.tenant,
            channel=who.channel,
            thread="",
            user=who.user,
            tool=action[:128],
            outcome=outcome[:32],
            detail=detail[:500],
            args_sha256=hashlib.sha256(b"").hexdigest(),
        )
        await self._write(entry, action)

    async def _write(self, entry: AuditEntry, what: str) -> None:
        if self._clock is not None:
            entry.at = self._clock()
        try:
            async with self._db.session() as s:
                s.add(entry)
        except Exception:
            # An audit failure must be loud, but it happens after the call was decided; the
            # request itself has already been handled.
            log.exception("could not write audit entry for %s", what)
