"""The overview: readiness of each part, the tenant's activity, recent digest runs."""

from __future__ import annotations

from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import BaseRoute, Route

from bot.console.kit import Console, NavItem, Signed
from bot.readiness import ReadinessProbe
from core.operator.overview import Overview
from core.operator.processes import ProcessBoard, platform_readiness

NAV = NavItem("Overview", "console:home")


def routes(console: Console) -> list[BaseRoute]:
    app = console.app
    overview = Overview(app.db, app.clock)
    probe = ReadinessProbe(app)
    board = ProcessBoard(app.db, app.clock)
    configured = {
        "slack": app.settings.slack_bot_token is not None,
        "discord": app.settings.discord_token is not None,
    }

    async def home(request: Request, signed: Signed) -> Response:
        who = signed.identity
        ready = await probe.check()
        parts = dict(ready.checks)  # what /readyz checks, then each MCP server's state
        if len(probe.model_states) > 1:  # several endpoints: each on its own line
            parts.pop("model", None)
            parts.update({f"model {name}": state for name, state in probe.model_states.items()})
        processes = await board.live()
        for platform, state in platform_readiness(processes, configured).items():
            parts[platform.capitalize()] = state
        for name, server in app.mcp.servers.items():
            state = "ok" if server.status == "ready" else server.status
            parts[f"MCP server {name}"] = f"{state}: {server.reason}" if server.reason else state
        figures = await overview.figures(who.platform, who.tenant)
        return console.render(
            request,
            "overview.html",
            signed=signed,
            readiness=ready,
            parts=parts,
            figures=figures,
            processes=processes,
        )

    return [Route("/", console.page(home), name="console:home")]
