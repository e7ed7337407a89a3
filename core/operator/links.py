"""Sign-in links to the operator console, and the sessions they open.

A link carries a random token; only its SHA-256 is stored, with whom it signs in (the verified
identity it was made for) and when it expires (5 minutes). Redeeming claims the row with a
conditional UPDATE, so a link signs in once, whichever process redeems it, however many try at
the same time. Only identities the policy gives `admin` get a link or redeem one, and a session
asks the policy again on every page: an admin removed from the policy is signed out at once.
"""

from __future__ import annotations

import hashlib
import secrets
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from enum import StrEnum
from typing import Any

from sqlalchemy import update
from sqlmodel import col, select

from core.errors import PermissionDenied
from core.policy import Identity, Policy
from core.store.engine import Database

LINK_LIFETIME = timedelta(minutes=5)
SESSION_LIFETIME = timedelta(hours=8)
ADMIN = "admin"
TOKEN_BYTES = 32


class Refused(StrEnum):
    """Why a link did not sign anybody in (the page says which)."""

    UNKNOWN = "unknown"
    USED = "used"
    EXPIRED = "expired"
    NOT_ADMIN = "not_admin"


@dataclass(frozen=True, slots=True)
class OperatorSession:
    """A signed-in operator: one tenant of one platform, until `until`."""

    id: int
    identity: Identity
    until: datetime

    @property
    def who(self) -> str:
        i = self.identity
        return f"{i.platform}:{i.tenant}:{i.user}"


def _digest(token: str) -> str:
    return hashlib.sha256(token.encode()).hexdigest()


def _aware(at: datetime) -> datetime:
    """SQLite hands timestamps back naive; they were stored as UTC."""
    return at if at.tzinfo is not None else at.replace(tzinfo=UTC)


class SignInLinks:
    def __init__(self, db: Database, policy: Policy, clock: Callable[[], datetime]) -> None:
        self._db = db
        self._policy = policy
        self._clock = clock

    def is_admin(self, who: Identity) -> bool:
        return ADMIN in self._policy.resolve(who).permissions

    async def issue(self, who: Identity) -> str:
        """A new single-use token for `who`; raises PermissionDenied for a non-admin."""
        from core.store.models import ConsoleLink

        if not self.is_admin(who):
            raise PermissionDenied(ADMIN)
        token = secrets.token_urlsafe(TOKEN_BYTES)
        now = self._clock()
        row = ConsoleLink(
            token_sha256=_digest(token),
            platform=who.platform,
            tenant=who.tenant,
            channel=who.channel,
            user=who.user,
            roles=",".join(sorted(who.roles))[:500],
            created_at=now,
            expires_at=now + LINK_LIFETIME,
        )
        async with self._db.session() as s:
            s.add(row)
        return token

    async def redeem(self, token: str) -> OperatorSession | Refused:
        """The session `token` opens, or why it opens none. Works once."""
        from core.store.models import ConsoleLink

        now = self._clock()
        async with self._db.session() as s:
            row = (
                await s.exec(select(ConsoleLink).where(ConsoleLink.token_sha256 == _digest(token)))
            ).first()
            if row is None:
                return Refused.UNKNOWN
            if row.redeemed_at is not None:
                return Refused.USED
            if _aware(row.expires_at) <= now:
                return Refused.EXPIRED
            who = _identity(row)
            if not self.is_admin(who):
                return Refused.NOT_ADMIN
            until = now + SESSION_LIFETIME
            claimed: Any = await s.exec(
                update(ConsoleLink)
                .where(col(ConsoleLink.id) == row.id, col(ConsoleLink.redeemed_at).is_(None))
                .values(redeemed_at=now, session_until=until)
            )
            if claimed.rowcount != 1:  # another request redeemed it first
                return Refused.USED
            assert row.id is not None
            return OperatorSession(row.id, who, until)

    async def session(self, session_id: int) -> OperatorSession | None:
        """The live session of that id: redeemed, not expired, not signed out, still admin."""
        from core.store.models import ConsoleLink

        async with self._db.session() as s:
            row = await s.get(ConsoleLink, session_id)
        if row is None or row.session_until is None or row.signed_out_at is not None:
            return None
        until = _aware(row.session_until)
        if until <= self._clock():
            return None
        who = _identity(row)
        if not self.is_admin(who):
            return None
        return OperatorSession(session_id, who, until)

    async def sign_out(self, session_id: int) -> None:
        from core.store.models import ConsoleLink

        async with self._db.session() as s:
            await s.exec(
                update(ConsoleLink)
                .where(col(ConsoleLink.id) == session_id, col(ConsoleLink.signed_out_at).is_(None))
                .values(signed_out_at=self._clock())
            )


def _identity(row: object) -> Identity:
    from core.store.models import ConsoleLink

    assert isinstance(row, ConsoleLink)
    roles = frozenset(r for r in row.roles.split(",") if r)
    return Identity(row.platform, row.tenant, row.channel, row.user, roles)
