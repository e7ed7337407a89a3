"""The audit log: the tenant's tool calls and operator actions, newest first, filtered, 50 a
page by keyset cursor (`before=<at,id>`), and the same rows streamed as CSV."""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterable
from urllib.parse import urlencode

from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import BaseRoute, Route

from bot.console.kit import Console, NavItem, Signed
from core.operator.audit import (
    CSV_HEADER,
    AuditFilter,
    AuditQueryError,
    AuditReader,
)

NAV = NavItem("Audit log", "console:audit")
FIELDS = ("from", "to", "user", "channel", "tool", "outcome")


def routes(console: Console) -> list[BaseRoute]:
    reader = AuditReader(console.app.db)

    def params(request: Request) -> dict[str, str]:
        return {k: request.query_params.get(k, "") for k in (*FIELDS, "before")}

    async def audit(request: Request, signed: Signed) -> Response:
        who = signed.identity
        given = params(request)
        base = console.path(request, "console:audit")
        try:
            wanted = AuditFilter.parse(given)
        except AuditQueryError as exc:
            return console.render(
                request, "audit.html", 400, signed=signed, form=given, problem=str(exc)
            )
        page = await reader.page(who.platform, who.tenant, wanted)
        query = wanted.params()
        next_link = (
            f"{base}?{urlencode({**query, 'before': page.next.encode()})}"
            if page.next is not None
            else None
        )
        return console.render(
            request,
            "audit.html",
            signed=signed,
            form=given,
            page=page,
            filtered=bool(query),
            paged=wanted.before is not None,
            first_link=f"{base}?{urlencode(query)}" if query else base,
            clear_link=base,
            next_link=next_link,
            csv_link=f"{console.path(request, 'console:audit_csv')}?{urlencode(query)}",
        )

    async def audit_csv(request: Request, signed: Signed) -> Response:
        who = signed.identity
        try:
            wanted = AuditFilter.parse({k: v for k, v in params(request).items() if k != "before"})
        except AuditQueryError as exc:
            return console.refuse(request, 400, "Audit log export", str(exc))

        async def rows() -> AsyncIterator[Iterable[object]]:
            async for r in reader.export(who.platform, who.tenant, wanted):
                yield (
                    r.at.isoformat(),
                    r.id,
                    r.request_id,
                    r.channel,
                    r.thread,
                    r.user,
                    r.tool,
                    r.outcome,
                    r.detail,
                    r.duration_ms,
                    r.args_chars,
                )

        return console.csv("audit-log.csv", CSV_HEADER, rows())

    return [
        Route("/audit", console.page(audit), name="console:audit"),
        Route("/audit.csv", console.page(audit_csv), name="console:audit_csv"),
    ]
