"""Console sign-in links and sessions (core.operator.links), on SQLite and PostgreSQL: two
processes redeeming one link at once sign in once."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from datetime import timedelta
from typing import Any

import pytest

from core.errors import PermissionDenied
from core.operator.links import OperatorSession, Refused, SignInLinks
from core.policy import Identity, Policy
from tests.support.clocks import Clock

ADMINS = {"rules": [{"name": "admins", "match": {"roles": ["admin"]}, "grant": ["admin"]}]}
ADA = Identity("slack", "T1", "C1", "ada", frozenset({"admin"}))


def links(db: Any, clock: Clock, policy: dict[str, Any] = ADMINS) -> SignInLinks:
    return SignInLinks(db, Policy.from_dict(policy), clock)


async def test_two_processes_redeeming_one_link_sign_in_once(
    open_db: Callable[[], Any], clock: Clock
) -> None:
    first, second = links(open_db(), clock), links(open_db(), clock)
    token = await first.issue(ADA)
    outcomes = await asyncio.gather(*(p.redeem(token) for p in (first, second, first, second)))
    signed_in = [o for o in outcomes if isinstance(o, OperatorSession)]
    assert len(signed_in) == 1 and signed_in[0].identity == ADA
    assert sorted(o for o in outcomes if isinstance(o, Refused)) == [Refused.USED] * 3
    assert await second.session(signed_in[0].id) == signed_in[0]  # any process knows it


async def test_only_admins_get_links_and_keep_sessions(
    open_db: Callable[[], Any], clock: Clock
) -> None:
    db = open_db()
    with pytest.raises(PermissionDenied):
        await links(db, clock).issue(Identity("slack", "T1", "C1", "bob", frozenset()))
    token = await links(db, clock).issue(ADA)
    session = await links(db, clock).redeem(token)
    assert isinstance(session, OperatorSession)
    # The policy changed: Ada is no admin any more; her session opens nothing now.
    assert await links(db, clock, {"rules": []}).session(session.id) is None
    other = await links(db, clock).issue(ADA)
    assert await links(db, clock, {"rules": []}).redeem(other) is Refused.NOT_ADMIN


async def test_expiry_and_sign_out(open_db: Callable[[], Any], clock: Clock) -> None:
    service = links(open_db(), clock)
    late = await service.issue(ADA)
    clock.now += timedelta(minutes=5)
    assert await service.redeem(late) is Refused.EXPIRED
    assert await service.redeem("no-such-token") is Refused.UNKNOWN
    session = await service.redeem(await service.issue(ADA))
    assert isinstance(session, OperatorSession)
    assert session.until == clock.now + timedelta(hours=8)
    await service.sign_out(session.id)
    assert await service.session(session.id) is None
