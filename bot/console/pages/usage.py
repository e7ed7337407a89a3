"""Usage and budgets: the tenant's tokens and requests per day by channel, user or model, with
a chart per series, the top spenders, today's daily budgets, and the same numbers as CSV."""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterable, Sequence
from typing import Any

from markupsafe import Markup
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import BaseRoute, Route

from bot.console.charts import Series, colour, stacked_bars
from bot.console.kit import Console, NavItem, Signed
from core.operator.usage import (
    BY_CHOICES,
    DEFAULT_DAYS,
    MAX_DAYS,
    PER_REQUEST_BUDGETS,
    Share,
    Totals,
    UsageQuery,
    UsageQueryError,
    UsageReader,
    UsageReport,
)

NAV = NavItem("Usage", "console:usage")
CHARTED = 5  # keys drawn in their own colour; the rest are summed as "others"
METRICS: tuple[tuple[str, str, str], ...] = (
    ("prompt", "Prompt tokens", "tokens"),
    ("completion", "Completion tokens", "tokens"),
    ("cached", "Cached prompt tokens", "tokens"),
    ("requests", "Requests (model calls)", "requests"),
)
CSV_HEADER = ("day", "{by}", "prompt_tokens", "completion_tokens", "cached_tokens", "requests")


def _legend(shares: Sequence[Share]) -> list[tuple[str, str]]:
    """(name, colour) of each charted key, then "others" when there are more."""
    legend = [(s.key or "(none)", colour(i)) for i, s in enumerate(shares[:CHARTED])]
    if len(shares) > CHARTED:
        legend.append((f"{len(shares) - CHARTED} others", colour(0, other=True)))
    return legend


def _charts(report: UsageReport) -> list[tuple[str, Markup]]:
    """(caption, chart) of each series."""
    shares = report.shares
    charted = list(shares[:CHARTED])
    others = shares[CHARTED:]
    legend = _legend(shares)
    charts = []
    for field, title, unit in METRICS:

        def values(per_day: Sequence[Totals], field: str = field) -> list[int]:
            return [int(getattr(t, field)) for t in per_day]

        series = [
            Series(name, values(s.per_day), paint)
            for (name, paint), s in zip(legend, charted, strict=False)
        ]
        if others:  # what the charted keys leave of each day's total
            rest = values(report.per_day)
            for charted_series in series:
                rest = [r - v for r, v in zip(rest, charted_series.values, strict=True)]
            series.append(Series(legend[-1][0], rest, legend[-1][1]))
        caption = f"{title} per day by {report.query.by}"
        charts.append((caption, stacked_bars(f"chart-{field}", caption, report.days, series, unit)))
    return charts


def routes(console: Console) -> list[BaseRoute]:
    app = console.app
    reader = UsageReader(app.db, app.clock, app.core.policy)

    def parse(request: Request) -> UsageQuery:
        return UsageQuery.parse(request.query_params.get("by"), request.query_params.get("days"))

    async def usage(request: Request, signed: Signed) -> Response:
        who = signed.identity
        context: dict[str, Any] = {
            "by_choices": BY_CHOICES,
            "max_days": MAX_DAYS,
            "by": request.query_params.get("by", "channel"),
            "days": request.query_params.get("days", str(DEFAULT_DAYS)),
            "per_request": PER_REQUEST_BUDGETS,
        }
        try:
            query = parse(request)
        except UsageQueryError as exc:
            return console.render(
                request, "usage.html", 400, signed=signed, problem=str(exc), **context
            )
        report = await reader.report(who.platform, who.tenant, query, daily_for=CHARTED)
        budgets = await reader.budgets(who.platform, who.tenant)
        context.update(by=query.by, days=str(query.days))
        return console.render(
            request,
            "usage.html",
            signed=signed,
            report=report,
            charts=_charts(report),
            legend=_legend(report.shares),
            budgets=budgets,
            csv_path=console.path(request, "console:usage_csv"),
            **context,
        )

    async def usage_csv(request: Request, signed: Signed) -> Response:
        who = signed.identity
        try:
            query = parse(request)
        except UsageQueryError as exc:
            return console.refuse(request, 400, "Usage export", str(exc))
        rows = await reader.rows(who.platform, who.tenant, query)

        async def lines() -> AsyncIterator[Iterable[object]]:
            for r in rows:
                t = r.totals
                yield (r.day, r.key, t.prompt, t.completion, t.cached, t.requests)

        header = [h.format(by=query.by) for h in CSV_HEADER]
        return console.csv(f"usage-{query.by}-{query.days}d.csv", header, lines())

    return [
        Route("/usage", console.page(usage), name="console:usage"),
        Route("/usage.csv", console.page(usage_csv), name="console:usage_csv"),
    ]
