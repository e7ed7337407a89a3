"""The policy as loaded (read-only: the policy stays a file under version control) and its
explainer: for someone of the operator's tenant, which permissions, budgets, model, skills and
MCP grants apply, and which rule gave each."""

from __future__ import annotations

from pathlib import PurePath

from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import BaseRoute, Route

from bot.console.kit import Console, NavItem, Signed
from core.operator.policy import ExplainForm, PolicyView

NAV = NavItem("Policy", "console:policy")
MAX_QUERY = 2048  # the explainer's query string: three short fields


def routes(console: Console) -> list[BaseRoute]:
    view = PolicyView(console.app.core.policy)

    async def policy(request: Request, signed: Signed) -> Response:
        who = signed.identity
        asked = "channel" in request.query_params or "user" in request.query_params
        if len(request.url.query) > MAX_QUERY:
            form = ExplainForm("", "", "", ("The question is too long.",))
        elif asked:
            q = request.query_params
            form = view.read_form(q.get("channel", ""), q.get("user", ""), q.get("roles", ""))
        else:  # the operator themself, as a start
            form = ExplainForm(who.channel, who.user, ", ".join(sorted(who.roles)))
        explained = None
        if asked and not form.errors:
            explained = view.explain(who.platform, who.tenant, form)
        return console.render(
            request,
            "policy.html",
            status=400 if form.errors else 200,
            signed=signed,
            rules=view.rules(who.platform, who.tenant),
            policy_file=PurePath(console.app.core.policy.source).name,
            form=form,
            explained=explained,
        )

    return [Route("/policy", console.page(policy), name="console:policy")]
