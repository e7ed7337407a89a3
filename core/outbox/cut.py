"""A note for answers cut off by a dying process.

An answer written as it comes is visible before it is finished. If the process answering is
killed (OOM, SIGKILL, a lost machine), nobody is left to say that the words stop there. So an
adapter arms a note in the outbox when it starts showing an answer, due only after the longest
a request may take; it disarms the note when the answer is finished (or its own last word was
posted). A note still armed when it falls due was left by a process that died: another
process's outbox drainer posts it into the thread, once (the outbox's key).
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime, timedelta

from core import messages
from core.outbox.store import Outbox
from core.outbox.types import KEY_LIMIT, OutboxMessage

log = logging.getLogger(__name__)

KEY_PREFIX = "cut:"


@dataclass(frozen=True, slots=True)
class Where:
    """The thread an answer is being written into."""

    platform: str
    tenant: str
    channel: str
    thread: str | None
    key: str  # the answer's delivery key (unique per answered message)

    @property
    def note_key(self) -> str:
        return (KEY_PREFIX + self.key)[:KEY_LIMIT]


class CutNotes:
    def __init__(self, outbox: Outbox, clock: Callable[[], datetime], *, after: timedelta) -> None:
        """`after`: longer than any request may take (its deadline plus a margin)."""
        self._outbox = outbox
        self._clock = clock
        self._after = after

    async def arm(self, where: Where) -> None:
        """Best effort: an answer is never held up or failed by its safety note."""
        note = OutboxMessage(
            platform=where.platform,
            tenant=where.tenant,
            channel=where.channel,
            thread=where.thread,
            text=messages.ANSWER_CUT_UNFINISHED,
            key=where.note_key,
        )
        try:
            await self._outbox.enqueue(note, not_before=self._clock() + self._after)
        except Exception as exc:
            log.warning("could not arm the note for a cut answer: %s", type(exc).__name__)

    async def disarm(self, where: Where) -> None:
        try:
            await self._outbox.cancel(where.note_key)
        except Exception as exc:
            log.warning("could not disarm the note for a cut answer: %s", type(exc).__name__)
