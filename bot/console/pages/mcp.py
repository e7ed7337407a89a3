"""MCP servers: their state and tools, the policy's grants for them in the operator's tenant,
tool definitions that changed since approval (a diff, and Approve: `/mcp approve` from the
web), and the tenant's tool calls waiting for their user's confirmation."""

from __future__ import annotations

from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import BaseRoute, Route

from bot.console.kit import Console, NavItem, Signed
from core.operator.mcp import McpView

NAV = NavItem("MCP", "console:mcp")


def routes(console: Console) -> list[BaseRoute]:
    app = console.app
    view = McpView(app.mcp, app.core.policy, app.db, app.clock)

    async def show(
        request: Request, signed: Signed, *, status: int = 200, refused: str = ""
    ) -> Response:
        who = signed.identity
        chosen = request.query_params.get("server", "")
        error = refused
        if chosen and chosen not in app.mcp.servers:
            error, chosen, status = "No MCP server of that name is configured.", "", 400
        servers = await view.servers(who.platform, who.tenant)
        return console.render(
            request,
            "mcp.html",
            status,
            signed=signed,
            names=list(app.mcp.servers),
            approve_paths={
                name: console.path(request, "console:mcp-approve", server=name)
                for name in app.mcp.servers
            },
            chosen=chosen,
            servers=[s for s in servers if not chosen or s.name == chosen],
            confirmations=await view.confirmations(who.platform, who.tenant),
            may_approve=view.may_approve(who),
            approved=request.query_params.get("approved", "") if not refused else "",
            error=error,
        )

    async def mcp(request: Request, signed: Signed) -> Response:
        return await show(request, signed)

    async def approve(request: Request, signed: Signed, form: dict[str, str]) -> Response:
        server = str(request.path_params["server"])
        if server not in app.mcp.servers:
            return console.refuse(request, 404, "Not found", "No MCP server of that name.")
        outcome = await view.approve(signed.identity, server, form.get("changes", ""))
        if outcome.refused:
            await console.record(signed, "console.mcp.approve", f"{server}: refused")
            status = 403 if not view.may_approve(signed.identity) else 409
            return await show(request, signed, status=status, refused=outcome.refused)
        await console.record(
            signed, "console.mcp.approve", f"{server}: {', '.join(outcome.approved)}"
        )
        return console.redirect(request, "console:mcp", query=f"approved={server}")

    return [
        Route("/mcp", console.page(mcp), name="console:mcp"),
        Route(
            "/mcp/{server}/approve",
            console.action(approve),
            methods=["POST"],
            name="console:mcp-approve",
        ),
    ]
