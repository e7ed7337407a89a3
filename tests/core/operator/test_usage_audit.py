"""The console's usage and audit queries (core.operator.usage, core.operator.audit) on SQLite
and PostgreSQL: days and breakdowns of one tenant only, budgets against the policy's limits,
audit pages by keyset over ties of one instant, filters, and the export in batches."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace
from datetime import UTC, date, datetime, timedelta
from typing import Any

import pytest

from core.operator.audit import AuditFilter, AuditQueryError, AuditReader, Cursor
from core.operator.usage import UsageQuery, UsageQueryError, UsageReader
from core.policy import Identity, Policy
from tests.support.clocks import Clock

POLICY = Policy.from_dict(
    {
        "defaults": {"budgets": {"tokens_per_user_per_day": 1000}},
        "rules": [
            {
                "name": "ops",
                "match": {"channel": "ops"},
                "budgets": {"tokens_per_channel_per_day": 50},
            },
            {"name": "big", "match": {"roles": ["big"]}, "budgets": {"tokens_per_user_per_day": 9}},
            {
                "name": "elsewhere",
                "match": {"tenant": "B"},
                "budgets": {"tts_chars_per_user_per_day": 1},
            },
        ],
    }
)


async def add_usage(db: Any, clock: Clock, rows: list[tuple[int, str, str, str, str, int]]) -> None:
    """(days ago, tenant, channel, user, model, prompt tokens); completion is a tenth. Written
    as the bot writes them: each record with its additions to the daily roll-up."""
    from core.llm.usage import write_usage
    from core.quotas import utc_day
    from core.store.models import UsageRecord

    records = []
    for ago, tenant, channel, user, model, prompt in rows:
        at = clock.now - timedelta(days=ago)
        records.append(
            UsageRecord(
                at=at,
                day=utc_day(at),
                request_id="r",
                platform="slack",
                tenant=tenant,
                channel=channel,
                user=user,
                provider="p",
                model=model,
                prompt_tokens=prompt,
                completion_tokens=prompt // 10,
                cached_tokens=1,
            )
        )
    await write_usage(db, records)


async def test_usage_per_day_by_key_of_one_tenant(open_db: Callable[[], Any], clock: Clock) -> None:
    db = open_db()
    await add_usage(
        db,
        clock,
        [
            (0, "A", "ops", "ada", "m1", 100),
            (0, "A", "ops", "bob", "m2", 300),
            (1, "A", "dev", "ada", "m1", 50),
            (13, "A", "dev", "ada", "m1", 7),  # the first day of 14
            (14, "A", "dev", "ada", "m1", 1000),  # one day too old
            (0, "B", "ops", "eve", "m1", 5000),  # another tenant
        ],
    )
    reader = UsageReader(db, clock, POLICY)
    report = await reader.report("slack", "A", UsageQuery("channel", 14))
    assert report.days[0] == "2026-11-20" and report.days[-1] == "2026-12-03"
    assert len(report.days) == 14 == len(report.per_day)
    assert report.total.prompt == 457 and report.total.requests == 4
    assert [(s.key, s.totals.prompt) for s in report.shares] == [("ops", 400), ("dev", 57)]
    assert report.per_day[-1].prompt == 400 and report.per_day[0].prompt == 7
    assert [(s.key, s.totals.tokens) for s in report.spenders] == [("bob", 330), ("ada", 172)]
    by_model = await reader.report("slack", "A", UsageQuery("model", 1))
    assert [(s.key, s.totals.requests) for s in by_model.shares] == [("m2", 1), ("m1", 1)]
    rows = await reader.rows("slack", "A", UsageQuery("user", 2))
    assert [(r.day, r.key, r.totals.prompt) for r in rows] == [
        ("2026-12-02", "ada", 50),
        ("2026-12-03", "ada", 100),
        ("2026-12-03", "bob", 300),
    ]


async def test_the_daily_roll_up_adds_up_with_writers_on_two_engines(
    open_db: Callable[[], Any], clock: Clock
) -> None:
    # Two processes' engines adding to the same roll-up rows at once: no addition is lost, and
    # a write that fails leaves neither the record nor its sums.
    import asyncio

    from sqlalchemy import func, select
    from sqlalchemy.exc import IntegrityError
    from sqlmodel import col

    from core.llm.usage import write_usage
    from core.store.models import UsageRecord

    dbs = [open_db(), open_db()]
    users, models = ("ada", "bob", "cy"), ("m1", "m2")
    await asyncio.gather(
        *(
            add_usage(dbs[i % 2], clock, [(i % 3, "A", "ops", users[i % 3], models[i % 2], i + 1)])
            for i in range(30)
        )
    )
    # A record whose model is missing: its channel and user sums are written first, then its
    # model's sum (NOT NULL) fails, and the whole write with it.
    broken = UsageRecord(
        at=clock.now,
        day="2026-12-03",
        request_id="r",
        platform="slack",
        tenant="A",
        channel="ops",
        user="ada",
        provider="p",
        model="m1",
        prompt_tokens=1000,
    )
    setattr(broken, "model", None)  # noqa: B010  # what a buggy caller could pass
    with pytest.raises(IntegrityError):
        await write_usage(dbs[0], [broken])

    async with dbs[0].session() as s:
        calls, prompt = (
            await s.exec(select(func.count(), func.sum(col(UsageRecord.prompt_tokens))))
        ).one()
    assert (calls, prompt) == (30, sum(range(1, 31)))
    reader = UsageReader(dbs[1], clock, POLICY)
    for by in ("channel", "user", "model"):
        report = await reader.report("slack", "A", UsageQuery.parse(by, "3"))
        assert (report.total.requests, report.total.prompt) == (30, sum(range(1, 31)))
        assert report.total.completion == sum((i + 1) // 10 for i in range(30))
    by_user = await reader.report("slack", "A", UsageQuery("user", 3))
    assert {s.key: s.totals.requests for s in by_user.shares} == {"ada": 10, "bob": 10, "cy": 10}


@pytest.mark.parametrize(
    ("by", "days", "ok"),
    [
        (None, None, True),
        ("user", "90", True),
        ("tenant", None, False),
        (None, "0", False),
        (None, "91", False),
        (None, "1e3", False),
        (None, "٣", False),
        (None, " 7 ", True),
    ],
)
def test_usage_query_parsing(by: str | None, days: str | None, ok: bool) -> None:
    if ok:
        assert UsageQuery.parse(by, days).days in (14, 90, 7)
    else:
        with pytest.raises(UsageQueryError):
            UsageQuery.parse(by, days)


async def test_budgets_today_against_the_policys_limits(
    open_db: Callable[[], Any], clock: Clock
) -> None:
    from core.quotas import QuotaKey, QuotaLedger, QuotaLimit

    db = open_db()
    ledger = QuotaLedger(db, clock)
    await ledger.charge(
        [QuotaLimit(QuotaKey("slack", "A", "user", "ada", "tokens"), 1000, "")], 300
    )
    await ledger.charge(
        [QuotaLimit(QuotaKey("slack", "A", "channel", "ops", "tokens"), 50, "")], 40
    )
    await ledger.charge([QuotaLimit(QuotaKey("slack", "B", "user", "eve", "tokens"), 1000, "")], 9)
    clock.now -= timedelta(days=1)  # yesterday's counter is no part of today
    await ledger.charge([QuotaLimit(QuotaKey("slack", "A", "user", "old", "tokens"), 1000, "")], 5)
    clock.now += timedelta(days=1)
    report = await UsageReader(db, clock, POLICY).budgets("slack", "A")
    assert report.day == "2026-12-03" and report.defaults.tokens_per_user_per_day == 1000
    lines = {(line.scope, line.subject): line for line in report.lines}
    assert set(lines) == {("user", "ada"), ("channel", "ops")}
    ada, ops = lines["user", "ada"], lines["channel", "ops"]
    assert (ada.used, ada.limit, ada.remaining, ada.exact) == (300, 1000, 700, False)  # "big"
    assert (ops.used, ops.limit, ops.remaining, ops.percent, ops.exact) == (40, 50, 10, 80, True)
    assert report.role_rules == ("big",)


async def add_audit(db: Any, n: int, clock: Clock, tenant: str = "A", **fields: str) -> None:
    from core.tools.audit import AuditLog

    log = AuditLog(db, clock)
    for i in range(n):
        if i % 4 == 0:
            clock.now += timedelta(seconds=1)  # four entries share each instant
        who = Identity("slack", tenant, fields.get("channel", "c"), f"u{i}", frozenset())
        await log.record_action(who, fields.get("tool", "t"), outcome=fields.get("outcome", "ok"))


async def test_audit_pages_by_keyset_and_exports_in_batches(
    open_db: Callable[[], Any], clock: Clock
) -> None:
    db = open_db()
    await add_audit(db, 23, clock)
    await add_audit(db, 5, clock, tenant="B")
    reader = AuditReader(db)
    seen: list[str] = []
    wanted = AuditFilter()
    while True:
        page = await reader.page("slack", "A", wanted, size=5)
        seen += [r.user for r in page.rows]
        if page.next is None:
            break
        wanted = replace(wanted, before=Cursor.decode(page.next.encode()))
    assert seen == [f"u{i}" for i in reversed(range(23))]
    exported = [r.user async for r in reader.export("slack", "A", AuditFilter(), batch=4)]
    assert exported == seen
    assert [r.user async for r in reader.export("slack", "A", AuditFilter(), batch=23)] == seen


async def test_audit_filters(open_db: Callable[[], Any], clock: Clock) -> None:
    db = open_db()
    await add_audit(db, 3, clock, channel="ops", tool="read_file", outcome="refused")
    clock.now += timedelta(days=2)
    await add_audit(db, 2, clock, channel="dev", tool="console.sign_in")
    reader = AuditReader(db)

    async def users(**params: str) -> list[str]:
        page = await reader.page("slack", "A", AuditFilter.parse(params))
        return [r.user for r in page.rows]

    assert await users() == ["u1", "u0", "u2", "u1", "u0"]
    assert await users(outcome="refused") == ["u2", "u1", "u0"]
    assert await users(tool="console.sign_in", user="u1") == ["u1"]
    assert await users(channel="dev") == ["u1", "u0"]
    assert await users(**{"from": "2026-12-05"}) == ["u1", "u0"]
    assert await users(to="2026-12-03") == ["u2", "u1", "u0"]
    assert await users(**{"from": "2026-12-04", "to": "2026-12-04"}) == []
    operator = (await reader.page("slack", "A", AuditFilter())).rows[0]
    assert operator.is_operator_action and operator.at.tzinfo is not None


def test_audit_filter_parsing_and_cursors() -> None:
    at = datetime(2026, 12, 3, 9, 30, 0, 123456, tzinfo=UTC)
    assert Cursor.decode(Cursor(at, 42).encode()) == Cursor(at, 42)
    assert Cursor(at.replace(tzinfo=None), 1).encode() == Cursor(at, 1).encode()
    parsed = AuditFilter.parse({"from": "2026-12-01", "to": "2026-12-03", "user": " ada "})
    assert (parsed.start, parsed.end, parsed.user) == (date(2026, 12, 1), date(2026, 12, 3), "ada")
    assert parsed.params() == {"from": "2026-12-01", "to": "2026-12-03", "user": "ada"}
    for bad in (
        {"from": "2026-2-1"},
        {"to": "tomorrow"},
        {"before": "1,2,3"},
        {"before": "1,2147483648"},
        {"from": "2026-12-04", "to": "2026-12-03"},
        {"outcome": "x" * 129},
    ):
        with pytest.raises(AuditQueryError):
            AuditFilter.parse(bad)
