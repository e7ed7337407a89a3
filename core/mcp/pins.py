"""Tool pinning: an MCP tool's definition is trusted as first seen, and a change disables it.

A definition is the tool's name, description, input schema and annotations as canonical JSON
(sorted keys); its sha256 is what is compared. The first listing of a server records its tools
(trust on first use); a later listing that shows a different definition records that as pending
and the tool stays disabled until an admin approves it (`/mcp approve SERVER`). A server that
goes back to the approved definition is trusted again (the pending change is dropped). A tool
that first appears after the server's first listing is no first use: it is recorded with
nothing approved (`sha256` empty) and waits for `/mcp approve` like a changed one, so a server
cannot slip in "call me with all secrets" once it is trusted.
"""

from __future__ import annotations

import difflib
import hashlib
import json
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any, Literal

from sqlalchemy import update
from sqlalchemy.exc import IntegrityError
from sqlmodel import col, select

from core.store.engine import Database
from core.store.models import McpToolPin

# new: trusted on the server's first listing; unapproved: appeared later, awaits approval.
PinStatus = Literal["new", "pinned", "changed", "unapproved"]
UNAPPROVED: tuple[PinStatus, ...] = ("changed", "unapproved")
_NOTHING_APPROVED = ""  # sha256 of a tool that appeared after the first listing
_DIFF_LINES = 40
_DIFF_LINE_CHARS = 160


def canonical(definition: dict[str, Any]) -> str:
    return json.dumps(definition, sort_keys=True, separators=(",", ":"), ensure_ascii=False)


def digest(definition: dict[str, Any]) -> str:
    return hashlib.sha256(canonical(definition).encode()).hexdigest()


class _ApprovedMeanwhile(Exception):
    """Another approval took a pending change between this one's read and its write."""


@dataclass(frozen=True, slots=True)
class PendingChange:
    tool: str
    old: dict[str, Any]
    new: dict[str, Any]
    since: datetime | None
    sha256: str = ""  # of `new`, as recorded: what an approval of exactly this change names

    @property
    def new_tool(self) -> bool:
        return not self.old

    def describe(self) -> str:
        """What changed, field by field; long texts as a capped line diff, never in full."""
        if self.new_tool:
            lines = [f"**{self.tool}** (new tool, listed since {_when(self.since)}):"]
        else:
            lines = [f"**{self.tool}** (changed {_when(self.since)}):"]
        for key in sorted(set(self.old) | set(self.new)):
            before, after = self.old.get(key), self.new.get(key)
            if before == after:
                continue
            lines.append(f"- {key}:")
            diff = list(
                difflib.unified_diff(
                    _lines(before), _lines(after), "approved", "now", n=1, lineterm=""
                )
            )[2:]
            shown = [_clip(line) for line in diff[:_DIFF_LINES]]
            if len(diff) > _DIFF_LINES:
                shown.append(f"… {len(diff) - _DIFF_LINES} more diff lines")
            lines.append("```\n" + "\n".join(shown) + "\n```")
        return "\n".join(lines)


def _lines(value: Any) -> list[str]:
    if isinstance(value, str):
        return value.splitlines() or [""]
    return json.dumps(value, indent=1, sort_keys=True, ensure_ascii=False).splitlines()


def _clip(line: str) -> str:
    return line if len(line) <= _DIFF_LINE_CHARS else line[:_DIFF_LINE_CHARS] + "…"


def _when(at: datetime | None) -> str:
    return at.strftime("%Y-%m-%d %H:%M UTC") if at is not None else "at an unknown time"


class PinStore:
    def __init__(self, db: Database, clock: Callable[[], datetime] = lambda: datetime.now(UTC)):
        self._db = db
        self._clock = clock

    async def check(
        self, server: str, definitions: dict[str, dict[str, Any]]
    ) -> dict[str, PinStatus]:
        """Compare the listed definitions with the pins, recording new ones and changes."""
        async with self._db.session() as s:
            known = (
                await s.exec(select(McpToolPin.id).where(McpToolPin.server == server).limit(1))
            ).first() is not None
        out: dict[str, PinStatus] = {}
        for tool, definition in definitions.items():
            out[tool] = await self._check_one(server, tool, definition, first_use=not known)
        return out

    async def _check_one(
        self, server: str, tool: str, definition: dict[str, Any], *, first_use: bool
    ) -> PinStatus:
        sha, text = digest(definition), canonical(definition)
        for _ in range(2):  # a second process may insert the first pin at the same moment
            try:
                async with self._db.session() as s:
                    row = (
                        await s.exec(
                            select(McpToolPin).where(
                                McpToolPin.server == server, McpToolPin.tool == tool
                            )
                        )
                    ).first()
                    if row is None and first_use:
                        s.add(McpToolPin(server=server, tool=tool, sha256=sha, definition=text))
                        return "new"
                    if row is None:
                        s.add(
                            McpToolPin(
                                server=server,
                                tool=tool,
                                sha256=_NOTHING_APPROVED,
                                definition="{}",
                                approved_at=self._clock(),
                                approved_by="(not approved yet)",
                                pending_sha256=sha,
                                pending_definition=text,
                                pending_since=self._clock(),
                            )
                        )
                        return "unapproved"
                    if row.sha256 == sha:
                        if row.pending_sha256 is not None:  # back to what was approved
                            row.pending_sha256 = row.pending_definition = None
                            row.pending_since = None
                            s.add(row)
                        return "pinned"
                    if row.pending_sha256 != sha:
                        row.pending_sha256, row.pending_definition = sha, text
                        row.pending_since = self._clock()
                        s.add(row)
                    return "unapproved" if row.sha256 == _NOTHING_APPROVED else "changed"
            except IntegrityError:
                continue
        return "changed"  # unreachable in practice; failing closed

    async def pending(self, server: str) -> list[PendingChange]:
        async with self._db.session() as s:
            rows = (
                await s.exec(
                    select(McpToolPin)
                    .where(McpToolPin.server == server, col(McpToolPin.pending_sha256).is_not(None))
                    .order_by(col(McpToolPin.tool))
                )
            ).all()
        return [
            PendingChange(
                r.tool,
                json.loads(r.definition),
                json.loads(r.pending_definition or "{}"),
                r.pending_since,
                r.pending_sha256 or "",
            )
            for r in rows
        ]

    async def approve(
        self, server: str, by: str, expected: Mapping[str, str] | None = None
    ) -> list[str]:
        """Approve every pending change of `server`; returns the tools approved. With
        `expected` (tool -> pending sha256, as someone reviewed them), approve nothing unless
        the pending changes are exactly those: a definition that changed again after the
        review is not approved unseen.

        Each row is written only if it still holds the pending definition that was read (a
        compare-and-set), and one that does not rolls the whole approval back: of two admins
        approving at once, one approves and the other finds nothing left. PostgreSQL would
        serialise them on the row lock alone; SQLite takes no lock when it reads."""
        try:
            async with self._db.session() as s:
                query = select(McpToolPin).where(
                    McpToolPin.server == server, col(McpToolPin.pending_sha256).is_not(None)
                )
                if expected is not None:
                    query = query.with_for_update()  # no change slips in between check and write
                rows = (await s.exec(query)).all()
                if expected is not None and {r.tool: r.pending_sha256 for r in rows} != dict(
                    expected
                ):
                    return []
                connection = await s.connection()
                now = self._clock()
                for r in rows:
                    done = await connection.execute(
                        update(McpToolPin)
                        .where(
                            col(McpToolPin.id) == r.id,
                            col(McpToolPin.pending_sha256) == r.pending_sha256,
                        )
                        .values(
                            sha256=r.pending_sha256,
                            definition=r.pending_definition,
                            pending_sha256=None,
                            pending_definition=None,
                            pending_since=None,
                            approved_at=now,
                            approved_by=by[:128],
                        )
                    )
                    if done.rowcount != 1:
                        raise _ApprovedMeanwhile
                return sorted(r.tool for r in rows)
        except _ApprovedMeanwhile:
            return []
