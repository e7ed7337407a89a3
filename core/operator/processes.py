"""Which long-running processes are up, and which chat platforms each has connected.

Every `serve`, `worker` and `run` process writes its own row of `process_beats` every
`BEAT_EVERY` (`bot.upkeep`) and deletes it when it stops; a process that died leaves its row,
which stops counting once it is `STALE_AFTER` old and is deleted a day later by whichever
process beats next. The rows are not tenant data: they name hosts, pids and platforms only.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta

from sqlalchemy import delete, update
from sqlmodel import col, select

from core.store.engine import Database

BEAT_EVERY = timedelta(seconds=15)
STALE_AFTER = timedelta(seconds=60)
FORGET_AFTER = timedelta(days=1)


@dataclass(frozen=True, slots=True)
class ProcessInfo:
    id: str
    command: str
    host: str
    pid: int
    started_at: datetime
    seen_at: datetime = field(default_factory=lambda: datetime.min.replace(tzinfo=UTC))
    platforms: Mapping[str, str] = field(default_factory=dict)  # platform -> "ok" or why not


def _aware(at: datetime) -> datetime:
    """SQLite hands timestamps back naive; they were stored as UTC."""
    return at if at.tzinfo is not None else at.replace(tzinfo=UTC)


def _platforms(text: str) -> dict[str, str]:
    try:
        value = json.loads(text)
    except ValueError:
        return {}
    if not isinstance(value, dict):
        return {}
    return {str(k): str(v) for k, v in value.items()}


class ProcessBoard:
    def __init__(self, db: Database, clock: Callable[[], datetime]) -> None:
        self._db = db
        self._clock = clock

    async def beat(self, me: ProcessInfo) -> None:
        """Record that `me` is alive now, with its platforms' states (one row per process:
        only that process writes it, so update-or-insert cannot race)."""
        from core.store.models import ProcessBeat

        now = self._clock()
        platforms = json.dumps(dict(me.platforms), sort_keys=True)
        async with self._db.session() as s:
            connection = await s.connection()
            done = await connection.execute(
                update(ProcessBeat)
                .where(col(ProcessBeat.id) == me.id)
                .values(seen_at=now, platforms=platforms)
            )
            if done.rowcount == 0:
                s.add(
                    ProcessBeat(
                        id=me.id,
                        command=me.command,
                        host=me.host[:255],
                        pid=me.pid,
                        started_at=me.started_at,
                        seen_at=now,
                        platforms=platforms,
                    )
                )
            await connection.execute(
                delete(ProcessBeat).where(col(ProcessBeat.seen_at) < now - FORGET_AFTER)
            )

    async def gone(self, process_id: str) -> None:
        from core.store.models import ProcessBeat

        async with self._db.session() as s:
            await (await s.connection()).execute(
                delete(ProcessBeat).where(col(ProcessBeat.id) == process_id)
            )

    async def live(self) -> list[ProcessInfo]:
        """The processes seen within `STALE_AFTER`, oldest first."""
        from core.store.models import ProcessBeat

        since = self._clock() - STALE_AFTER
        async with self._db.session() as s:
            rows = (
                await s.exec(
                    select(ProcessBeat)
                    .where(col(ProcessBeat.seen_at) >= since)
                    .order_by(col(ProcessBeat.started_at), col(ProcessBeat.id))
                )
            ).all()
        return [
            ProcessInfo(
                id=r.id,
                command=r.command,
                host=r.host,
                pid=r.pid,
                started_at=_aware(r.started_at),
                seen_at=_aware(r.seen_at),
                platforms=_platforms(r.platforms),
            )
            for r in rows
        ]


def platform_readiness(
    processes: list[ProcessInfo], configured: Mapping[str, bool]
) -> dict[str, str]:
    """Each chat platform's state over all live processes: "ok" when at least one has it
    connected, else why not. A platform shows when it is configured here or any process
    reports it."""
    names = {name for name, on in configured.items() if on}
    for process in processes:
        names.update(process.platforms)
    states: dict[str, str] = {}
    for name in sorted(names):
        reports = [p.platforms[name] for p in processes if name in p.platforms]
        connected = sum(1 for state in reports if state == "ok")
        if connected:
            states[name] = "ok"
        elif reports:
            states[name] = reports[0]
        else:
            states[name] = "not connected by any running process"
    return states
