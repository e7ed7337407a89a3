"""Repositories: each repository the admin may see with its index state, and a re-index that
runs in the background with a progress page that refreshes itself (no script) until it ends."""

from __future__ import annotations

from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import BaseRoute, Route

from bot.console.kit import Console, NavItem, Signed
from core.code.repos import NAME_RE
from core.operator.repositories import AlreadyIndexing, Reindexer, RepoBoard

NAV = NavItem("Repositories", "console:repositories")
REFRESH_SECONDS = 2


def routes(console: Console) -> list[BaseRoute]:
    app = console.app
    board = RepoBoard(app.db, app.repos, app.core.policy)
    jobs = Reindexer(app.repos, app.indexer, app.clock)

    def unknown(request: Request, name: str) -> Response:
        # The same words whether it does not exist or the policy hides it.
        return console.refuse(
            request, 404, "No such repository", f"There is no repository {name[:64]!r} here."
        )

    async def repositories(request: Request, signed: Signed) -> Response:
        name_has = request.query_params.get("q", "")
        if len(name_has) > 64:
            return console.refuse(
                request, 400, "Bad filter", "A repository name has at most 64 characters."
            )
        return console.render(
            request,
            "repositories.html",
            signed=signed,
            rows=await board.rows(signed.identity, jobs, name_has=name_has),
            q=name_has,
            # Routing's url_for walks every route: once per page, not once per row.
            base=console.path(request, "console:repositories"),
        )

    async def repository(request: Request, signed: Signed) -> Response:
        name: str = request.path_params["name"]
        if not NAME_RE.match(name) or await board.find(signed.identity, name) is None:
            return unknown(request, name)
        progress = jobs.progress(name)
        still = request.query_params.get("refresh") == "off"
        rows = await board.rows(signed.identity, name_has=name, with_commit=True)
        return console.render(
            request,
            "repository.html",
            signed=signed,
            repo=next((r for r in rows if r.name == name), None),
            repo_name=name,
            progress=progress,
            refresh=REFRESH_SECONDS if progress and progress.running and not still else None,
            busy=request.query_params.get("busy") == "1",
            reindex_path=console.path(request, "console:repository-reindex", name=name),
            here=console.path(request, "console:repository", name=name),
            list_path=console.path(request, "console:repositories"),
        )

    async def reindex(request: Request, signed: Signed, _form: dict[str, str]) -> Response:
        name: str = request.path_params["name"]
        repo = await board.find(signed.identity, name) if NAME_RE.match(name) else None
        if repo is None:
            return unknown(request, name)
        try:
            jobs.start(repo, signed.session.who)
        except AlreadyIndexing:
            return console.redirect(request, "console:repository", "busy=1", name=name)
        await console.record(signed, "console.repo_reindex", f"repository {name}")
        return console.redirect(request, "console:repository", name=name)

    return [
        Route("/repositories", console.page(repositories), name="console:repositories"),
        Route("/repositories/{name}", console.page(repository), name="console:repository"),
        Route(
            "/repositories/{name}/reindex",
            console.action(reindex),
            methods=["POST"],
            name="console:repository-reindex",
        ),
    ]
