"""The console's usage page for one tenant: tokens and requests per UTC day from the daily
roll-up of the usage records (`usage_daily`, one row per day and channel, user or model); the
top spenders; and today's daily budgets (the quota counters) beside the limits the policy
gives them."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, date, datetime, timedelta
from typing import Any, Literal, get_args

from sqlalchemy import func, select
from sqlmodel import col

from core.policy import Budgets, Identity, Policy, Rule
from core.store.engine import Database

By = Literal["channel", "user", "model"]
BY_CHOICES: tuple[By, ...] = get_args(By)
DEFAULT_DAYS = 14
MAX_DAYS = 90
TOP_SPENDERS = 10
MAX_COUNTERS = 200  # today's budget counters shown, the most used first


class UsageQueryError(ValueError):
    """A filter value the page cannot use; the message says which and why."""


@dataclass(frozen=True, slots=True)
class UsageQuery:
    by: By = "channel"
    days: int = DEFAULT_DAYS

    @classmethod
    def parse(cls, by: str | None, days: str | None) -> UsageQuery:
        """From the query string; an empty or missing value is the default."""
        asked = (by or "").strip() or "channel"
        chosen = next((choice for choice in BY_CHOICES if choice == asked), None)
        if chosen is None:
            raise UsageQueryError(f"Break down by one of {', '.join(BY_CHOICES)}, not {asked!r}.")
        text = (days or "").strip()
        count = DEFAULT_DAYS
        if text:
            if not (text.isascii() and text.isdecimal()) or len(text) > 3:
                raise UsageQueryError(f"Days must be a whole number from 1 to {MAX_DAYS}.")
            count = int(text)
            if not 1 <= count <= MAX_DAYS:
                raise UsageQueryError(f"Days must be a whole number from 1 to {MAX_DAYS}.")
        return cls(by=chosen, days=count)


@dataclass(frozen=True, slots=True)
class Totals:
    prompt: int = 0
    completion: int = 0
    cached: int = 0
    requests: int = 0

    @property
    def tokens(self) -> int:
        """What a budget counts: prompt and completion tokens (cached ones are part of prompt)."""
        return self.prompt + self.completion

    def __add__(self, other: Totals) -> Totals:
        return Totals(
            self.prompt + other.prompt,
            self.completion + other.completion,
            self.cached + other.cached,
            self.requests + other.requests,
        )


@dataclass(frozen=True, slots=True)
class UsageRow:
    """One day of one channel, user or model."""

    day: str
    key: str
    totals: Totals


@dataclass(frozen=True, slots=True)
class Share:
    """One channel, user or model over the whole range, with its daily totals."""

    key: str
    totals: Totals
    per_day: tuple[Totals, ...]  # aligned with UsageReport.days; empty past `daily_for`


@dataclass(frozen=True, slots=True)
class UsageReport:
    query: UsageQuery
    days: tuple[str, ...]  # every day of the range, oldest first, empty ones included
    per_day: tuple[Totals, ...]  # the tenant's totals, aligned with `days`
    shares: tuple[Share, ...]  # by the chosen breakdown, most tokens first
    spenders: tuple[Share, ...]  # users, most tokens first (per_day left empty)
    total: Totals


@dataclass(frozen=True, slots=True)
class BudgetLine:
    """One daily counter of today: whose, which budget, used (and held by requests in
    flight) against the limit the policy gives."""

    scope: str  # "user" | "channel"
    subject: str
    metric: str  # "tokens" | "tts_chars"
    budget: str  # the policy's name for it, e.g. tokens_per_user_per_day
    used: int
    reserved: int
    limit: int
    exact: bool  # False: rules matching roles (or the other of channel/user) may change it

    @property
    def remaining(self) -> int:
        return max(0, self.limit - self.used - self.reserved)

    @property
    def percent(self) -> int:
        if self.limit <= 0:
            return 100
        return min(100, round(100 * (self.used + self.reserved) / self.limit))


@dataclass(frozen=True, slots=True)
class BudgetReport:
    day: str
    defaults: Budgets  # what the policy gives the tenant when no channel/user/role rule applies
    lines: tuple[BudgetLine, ...]
    more: int  # counters of today not listed (past MAX_COUNTERS)
    role_rules: tuple[str, ...]  # rules of this tenant that match on roles (limits vary)


# The daily budgets and the quota counters that spend them (core.session.ToolSession).
DAILY_BUDGETS: dict[tuple[str, str], str] = {
    ("user", "tokens"): "tokens_per_user_per_day",
    ("channel", "tokens"): "tokens_per_channel_per_day",
    ("user", "tts_chars"): "tts_chars_per_user_per_day",
}
PER_REQUEST_BUDGETS = ("tool_calls_per_request", "iterations_per_request")


def _total(counts: list[list[int]]) -> Totals:
    return Totals(*(sum(c[j] for c in counts) for j in range(4)))


def _day_range(today: date, days: int) -> tuple[str, ...]:
    first = today - timedelta(days=days - 1)
    return tuple((first + timedelta(days=i)).isoformat() for i in range(days))


class UsageReader:
    def __init__(self, db: Database, clock: Callable[[], datetime], policy: Policy) -> None:
        self._db = db
        self._clock = clock
        self._policy = policy

    def today(self) -> date:
        return self._clock().astimezone(UTC).date()

    def _grouped(self, platform: str, tenant: str, by: str, days: tuple[str, ...]) -> Any:
        """Per day and key over the days: the roll-up's rows, one walk of its primary key."""
        from core.store.models import UsageDay

        day = col(UsageDay.day)
        return (
            select(
                day,
                col(UsageDay.subject),
                col(UsageDay.prompt_tokens),
                col(UsageDay.completion_tokens),
                col(UsageDay.cached_tokens),
                col(UsageDay.requests),
            )
            .where(
                col(UsageDay.platform) == platform,
                col(UsageDay.tenant) == tenant,
                col(UsageDay.breakdown) == by,
                day >= days[0],
                day <= days[-1],
            )
            .order_by(day, col(UsageDay.subject))
        )

    async def rows(self, platform: str, tenant: str, query: UsageQuery) -> list[UsageRow]:
        """Per day and key, oldest day first (the CSV export's rows)."""
        days = _day_range(self.today(), query.days)
        async with self._db.session() as s:
            connection = await s.connection()
            found = (
                await connection.execute(self._grouped(platform, tenant, query.by, days))
            ).all()
        return [
            UsageRow(r[0], r[1], Totals(int(r[2]), int(r[3]), int(r[4]), int(r[5]))) for r in found
        ]

    async def report(
        self, platform: str, tenant: str, query: UsageQuery, *, daily_for: int = 5
    ) -> UsageReport:
        """The days' totals, every key's total, and the daily series of the `daily_for` keys
        with the most tokens (a chart's; the others' `per_day` is left empty)."""
        days = _day_range(self.today(), query.days)
        async with self._db.session() as s:
            connection = await s.connection()
            found = (
                await connection.execute(self._grouped(platform, tenant, query.by, days))
            ).all()
            top = (
                None
                if query.by == "user"
                else (await connection.execute(self._spenders(platform, tenant, days))).all()
            )
        # Plain lists of four counts while adding up, and a key's days only where it has any:
        # 90 days by 60 users is 5,400 rows, and objects per row cost more than the query.
        index = {d: i for i, d in enumerate(days)}
        per_day = [[0, 0, 0, 0] for _ in days]
        totals: dict[str, list[int]] = {}
        daily: dict[str, dict[int, tuple[int, int, int, int]]] = {}
        for day, key, prompt, completion, cached, requests in found:
            counts = (int(prompt), int(completion), int(cached), int(requests))
            i = index[day]
            on_day, of_key = per_day[i], totals.get(key)
            if of_key is None:
                of_key = totals[key] = [0, 0, 0, 0]
                daily[key] = {}
            for j in range(4):
                on_day[j] += counts[j]
                of_key[j] += counts[j]
            daily[key][i] = counts  # one row per day and key: nothing to add up
        ranked = sorted(totals, key=lambda k: (-(totals[k][0] + totals[k][1]), k))
        none = (0, 0, 0, 0)
        shares = [
            Share(
                key,
                Totals(*totals[key]),
                tuple(Totals(*daily[key].get(i, none)) for i in range(len(days)))
                if rank < daily_for
                else (),
            )
            for rank, key in enumerate(ranked)
        ]
        if top is None:
            spenders = [Share(s.key, s.totals, ()) for s in shares[:TOP_SPENDERS]]
        else:
            spenders = [
                Share(r[0], Totals(int(r[1]), int(r[2]), int(r[3]), int(r[4])), ()) for r in top
            ]
        return UsageReport(
            query=query,
            days=days,
            per_day=tuple(Totals(*c) for c in per_day),
            shares=tuple(shares),
            spenders=tuple(spenders),
            total=_total(per_day),
        )

    def _spenders(self, platform: str, tenant: str, days: tuple[str, ...]) -> Any:
        from core.store.models import UsageDay

        prompt = func.sum(col(UsageDay.prompt_tokens))
        completion = func.sum(col(UsageDay.completion_tokens))
        return (
            select(
                col(UsageDay.subject),
                prompt,
                completion,
                func.sum(col(UsageDay.cached_tokens)),
                func.sum(col(UsageDay.requests)),
            )
            .where(
                col(UsageDay.platform) == platform,
                col(UsageDay.tenant) == tenant,
                col(UsageDay.breakdown) == "user",
                col(UsageDay.day) >= days[0],
                col(UsageDay.day) <= days[-1],
            )
            .group_by(col(UsageDay.subject))
            .order_by((prompt + completion).desc(), col(UsageDay.subject))
            .limit(TOP_SPENDERS)
        )

    async def budgets(self, platform: str, tenant: str) -> BudgetReport:
        """Today's counters of the tenant, each with the limit the policy gives it."""
        from core.store.models import QuotaUsage

        day = self.today().isoformat()
        known = [
            (col(QuotaUsage.scope) == scope) & (col(QuotaUsage.metric) == metric)
            for scope, metric in DAILY_BUDGETS
        ]
        where = (
            col(QuotaUsage.platform) == platform,
            col(QuotaUsage.tenant) == tenant,
            col(QuotaUsage.day) == day,
        )
        stmt = (
            select(
                col(QuotaUsage.scope),
                col(QuotaUsage.subject),
                col(QuotaUsage.metric),
                col(QuotaUsage.used),
                col(QuotaUsage.reserved),
            )
            .where(*where)
            .where(known[0] | known[1] | known[2])
            .order_by(
                (col(QuotaUsage.used) + col(QuotaUsage.reserved)).desc(),
                col(QuotaUsage.scope),
                col(QuotaUsage.subject),
                col(QuotaUsage.metric),
            )
            .limit(MAX_COUNTERS + 1)
        )
        async with self._db.session() as s:
            connection = await s.connection()
            found = (await connection.execute(stmt)).all()
            more = 0
            if len(found) > MAX_COUNTERS:
                counted = select(func.count()).select_from(QuotaUsage).where(*where)
                more = int((await connection.execute(counted)).scalar_one()) - MAX_COUNTERS
        lines = tuple(
            self._line(platform, tenant, r[0], r[1], r[2], int(r[3]), int(r[4]))
            for r in found[:MAX_COUNTERS]
        )
        return BudgetReport(
            day=day,
            defaults=self._policy.resolve(Identity(platform, tenant, "", "", frozenset())).budgets,
            lines=lines,
            more=max(0, more),
            role_rules=self._role_rules(platform, tenant),
        )

    def _line(
        self,
        platform: str,
        tenant: str,
        scope: str,
        subject: str,
        metric: str,
        used: int,
        reserved: int,
    ) -> BudgetLine:
        # A request's limits are resolved for its whole identity (channel, user and roles),
        # and a counter records only one of channel or user: the limit shown is the one for
        # that subject alone, without roles.
        who = Identity(
            platform,
            tenant,
            channel=subject if scope == "channel" else "",
            user=subject if scope == "user" else "",
            roles=frozenset(),
        )
        budget = DAILY_BUDGETS[(scope, metric)]
        limit = int(getattr(self._policy.resolve(who).budgets, budget))
        return BudgetLine(
            scope=scope,
            subject=subject,
            metric=metric,
            budget=budget,
            used=used,
            reserved=reserved,
            limit=limit,
            exact=not self._varies(platform, tenant, scope, budget),
        )

    def _rules_setting(self, platform: str, tenant: str, budget: str) -> list[Rule]:
        return [
            rule
            for rule in self._policy.document.rules
            if getattr(rule.budgets, budget) is not None
            and (rule.match.platform is None or platform in rule.match.platform)
            and (rule.match.tenant is None or tenant in rule.match.tenant)
        ]

    def _varies(self, platform: str, tenant: str, scope: str, budget: str) -> bool:
        """Whether a rule setting this budget matches on something the counter does not
        record (roles; the channel of a user's counter; the user of a channel's)."""
        other = "channel" if scope == "user" else "user"
        for rule in self._rules_setting(platform, tenant, budget):
            match = rule.match
            if match.roles is not None or getattr(match, other) is not None:
                return True
        return False

    def _role_rules(self, platform: str, tenant: str) -> tuple[str, ...]:
        names: list[str] = []
        for i, rule in enumerate(self._policy.document.rules):
            sets_daily = any(getattr(rule.budgets, b) is not None for b in DAILY_BUDGETS.values())
            m = rule.match
            if (
                sets_daily
                and m.roles is not None
                and (m.platform is None or platform in m.platform)
                and (m.tenant is None or tenant in m.tenant)
            ):
                names.append(rule.name or f"rule #{i + 1}")
        return tuple(names)
