"""The console's repositories page over HTTP: the index state of the repositories the admin's
policy lets them read, a re-index in the background (audited, one at a time per repository)
whose progress page refreshes itself until it ends, errors shown plainly, tenant scoping."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.conftest import BotHarness
from tests.support.clocks import Clock
from tests.support.code_repo import write
from tests.support.console import WEB_SECRET, shown, sign_in

# Admins of beta read only the repository `web`; everyone else reads them all.
POLICY = """
[defaults]
permissions = ["ask", "code.read"]
[[rules]]
name = "admins"
match = { roles = ["admin"] }
grant = ["admin"]
[[rules]]
name = "beta reads web"
match = { tenant = "beta" }
repos = ["web"]
"""
REFRESH = 'http-equiv="refresh"'


@pytest.fixture
def console_bot(
    make_bot: Callable[..., BotHarness], clock: Clock, write_policy: Callable[[str], Path]
) -> BotHarness:
    return make_bot(
        clock=clock, console=True, console_secret=WEB_SECRET, policy_file=write_policy(POLICY)
    )


def small_repo(base: Path, name: str) -> Path:
    """A handful of files: what the tests index."""
    root = base / name
    write(root, "src/app.py", "def handler(event):\n    return helper(event)\n\n\n")
    write(root, "src/helper.py", "def helper(event):\n    return event\n")
    write(root, "README.md", f"# {name}\n\nA small repository.\n")
    return root


async def until_done(web: httpx.AsyncClient, name: str) -> str:
    """The repository's page once its re-index is over (the page stops refreshing)."""
    for _ in range(200):
        page = await web.get(f"/console/repositories/{name}")
        assert page.status_code == 200
        if REFRESH not in page.text:
            return page.text
        await asyncio.sleep(0.1)
    raise AssertionError("the re-index did not finish")


async def _audit(bot: BotHarness) -> list[tuple[str, str, str]]:
    from sqlmodel import col, select

    from core.store.models import AuditEntry

    async with bot.app.db.session() as s:
        rows = (
            await s.exec(
                select(AuditEntry)
                .where(col(AuditEntry.tool) == "console.repo_reindex")
                .order_by(col(AuditEntry.id))
            )
        ).all()
    return [(r.user, r.tenant, r.detail or "") for r in rows]


async def test_reindex_runs_in_the_background_with_progress_once_at_a_time(
    web: httpx.AsyncClient, console_bot: BotHarness, tmp_path: Path
) -> None:
    app = console_bot.app
    await app.repos.register(str(small_repo(tmp_path, "api")), "api")
    csrf = await sign_in(web, console_bot, tenant="acme", user="ada")
    page = (await web.get("/console/repositories")).text
    assert 'id="repo-api"' in page and "never" in page and "none since start-up" in page

    # Hold the indexer at its start, to see the run in progress and a second one refused.
    release = asyncio.Event()
    index = app.indexer.index

    async def held(repo: Any, **kwargs: Any) -> Any:
        await release.wait()
        return await index(repo, **kwargs)

    app.indexer.index = held
    resp = await web.post("/console/repositories/api/reindex", data={"csrf_token": csrf})
    assert resp.status_code == 303 and resp.headers["location"] == "/console/repositories/api"
    running = (await web.get(resp.headers["location"])).text
    assert f'<meta {REFRESH} content="2">' in running and "Starting" in running
    assert 'id="reindex"' not in running and "Stop refreshing" in running
    assert REFRESH not in (await web.get("/console/repositories/api?refresh=off")).text
    again = await web.post("/console/repositories/api/reindex", data={"csrf_token": csrf})
    assert again.headers["location"] == "/console/repositories/api?busy=1"
    assert "is being re-indexed already" in (await web.get(again.headers["location"])).text
    assert "running: checkout" in (await web.get("/console/repositories")).text

    release.set()
    done = await until_done(web, "api")
    assert "Indexed api: 3 files — 3 added, 0 changed, 0 removed, 0 unchanged" in done
    assert 'id="reindex"' in done and "Took " in done
    listing = (await web.get("/console/repositories")).text
    row = listing[listing.index('id="repo-api"') :]
    assert '<td class="num">3</td>' in row and "done</span> in" in row
    assert "never" not in row.split("</tr>")[0]
    assert await _audit(console_bot) == [("ada", "acme", "repository api")]


async def test_a_failed_reindex_says_why(
    web: httpx.AsyncClient, console_bot: BotHarness, tmp_path: Path
) -> None:
    from core.code.repos import RepoError

    app = console_bot.app
    await app.repos.register(str(small_repo(tmp_path, "api")), "api")

    async def unreachable(_repo: Any) -> None:  # a clone whose origin is gone, say
        raise RepoError("git fetch failed: could not read from remote <origin>")

    app.repos.update_checkout = unreachable
    csrf = await sign_in(web, console_bot, tenant="acme")
    await web.post("/console/repositories/api/reindex", data={"csrf_token": csrf})
    done = await until_done(web, "api")
    assert 'class="bad" id="outcome"' in done and "Failed after" in done
    assert "Re-indexing failed: git fetch failed: could not read from remote &lt;origin&gt;" in done

    async def broken(_repo: Any, **_kwargs: Any) -> Any:
        raise RuntimeError("a bug, with a path /srv/secret in it")

    app.repos.update_checkout = lambda _repo: asyncio.sleep(0)
    app.indexer.index = broken
    await web.post("/console/repositories/api/reindex", data={"csrf_token": csrf})
    done = await until_done(web, "api")
    assert "the details are in the server log" in done and "/srv/secret" not in done


async def test_only_the_repositories_the_policy_lets_the_admin_read(
    web: httpx.AsyncClient, console_bot: BotHarness, tmp_path: Path
) -> None:
    for name in ("api", "web"):
        await console_bot.app.repos.register(str(small_repo(tmp_path, name)), name)
    csrf = await sign_in(web, console_bot, tenant="beta")
    page = (await web.get("/console/repositories")).text
    assert 'id="repo-web"' in page and "api" not in shown(page)
    hidden = await web.post("/console/repositories/api/reindex", data={"csrf_token": csrf})
    unknown = await web.post("/console/repositories/nope/reindex", data={"csrf_token": csrf})
    assert hidden.status_code == unknown.status_code == 404
    assert "There is no repository &#39;api&#39; here." in hidden.text
    assert "There is no repository &#39;nope&#39; here." in unknown.text
    assert (await web.get("/console/repositories/api")).status_code == 404
    no_token = await web.post("/console/repositories/web/reindex", data={})
    assert no_token.status_code == 403
    assert await _audit(console_bot) == []
    filtered = (await web.get("/console/repositories?q=zzz")).text
    assert 'id="repo-web"' not in filtered and "containing" in filtered


async def test_without_a_session_the_pages_and_the_action_go_to_sign_in(
    web: httpx.AsyncClient,
) -> None:
    for resp in (
        await web.get("/console/repositories"),
        await web.get("/console/repositories/api"),
        await web.post("/console/repositories/api/reindex", data={"csrf_token": "x"}),
    ):
        assert resp.status_code == 303 and resp.headers["location"] == "/console/signin"


async def test_a_hostile_filter_renders_as_text(
    web: httpx.AsyncClient, console_bot: BotHarness
) -> None:
    await sign_in(web, console_bot, tenant="acme")
    page = (await web.get("/console/repositories", params={"q": '"><img onerror=x>'})).text
    assert "<img" not in page and "&#34;&gt;&lt;img onerror=x&gt;" in page
    bad = await web.get("/console/repositories/<script>")
    assert bad.status_code == 404 and "<script>" not in bad.text
