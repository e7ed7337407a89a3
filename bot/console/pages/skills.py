"""The skills library: each skill with its references, the problems found on load, and where
the policy offers it in the operator's tenant. Read-only (skills are folders on disk; `/skills
reload` or their modification reloads them)."""

from __future__ import annotations

from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import BaseRoute, Route

from bot.console.kit import Console, NavItem, Signed
from core.operator.skills import SkillsView

NAV = NavItem("Skills", "console:skills")
MAX_SEARCH = 64


def routes(console: Console) -> list[BaseRoute]:
    app = console.app
    view = SkillsView(app.skills.library, app.core.policy)

    async def skills(request: Request, signed: Signed) -> Response:
        who = signed.identity
        search = request.query_params.get("q", "").strip()
        if len(search) > MAX_SEARCH:
            return console.render(
                request,
                "skills.html",
                400,
                signed=signed,
                library=None,
                search=search[:MAX_SEARCH],
                error=f"Search for at most {MAX_SEARCH} characters.",
            )
        await app.skills.ready()  # loads the library on first use (in a thread)
        library = view.page(who.platform, who.tenant, search)
        return console.render(
            request, "skills.html", signed=signed, library=library, search=search, error=""
        )

    return [Route("/skills", console.page(skills), name="console:skills")]
