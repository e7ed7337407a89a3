"""Digests see exactly what their owner may see (roles, denies, the current policy), each kind
checks the permissions its data needs, and what `/digest add` stores is checked first: its
lengths, its time zone, its repository (issue 23, second round)."""

from __future__ import annotations

import subprocess
from collections.abc import AsyncIterator, Callable
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from sqlmodel import select

from bot.app import App, build_app
from core.request import Reply, Request
from core.store.models import DigestSubscription, OutboxRow
from tests.conftest import POLICY_ALL

START = datetime(2026, 3, 2, 10, 0, 30, tzinfo=UTC)  # a Monday

MANAGERS = (
    POLICY_ALL
    + """
[[rules]]
name = "digest managers"
match = { roles = ["lead"] }
grant = ["digest.manage"]
"""
)
GUESTS_SEE_NO_REPOS = (
    MANAGERS
    + """
[[rules]]
name = "guests"
match = { roles = ["guest"] }
repos = []
"""
)


class Clock:
    def __init__(self, now: datetime) -> None:
        self.now = now

    def __call__(self) -> datetime:
        return self.now


@pytest.fixture
def clock() -> Clock:
    return Clock(START)


@pytest.fixture
async def make_app(
    make_settings: Callable[..., Any], write_policy: Callable[[str], Path], clock: Clock
) -> AsyncIterator[Callable[..., App]]:
    """Apps on one data dir: a second one is the bot restarted (say, with a new policy)."""
    apps: list[App] = []

    def make(policy: str = MANAGERS, **overrides: Any) -> App:
        app = build_app(make_settings(policy_file=write_policy(policy), **overrides), clock=clock)
        apps.append(app)
        return app

    yield make
    for app in apps:
        await app.aclose()


async def send(
    app: App,
    text: str,
    *,
    channel: str = "C1",
    user: str = "U1",
    roles: tuple[str, ...] = ("lead",),
) -> Reply:
    return await app.core.handle(Request("slack", "T1", channel, "th", user, text, roles))


async def posted(app: App) -> list[OutboxRow]:
    async with app.db.session() as s:
        return list((await s.exec(select(OutboxRow).order_by(OutboxRow.id))).all())  # type: ignore[arg-type]


async def subscriptions(app: App) -> list[DigestSubscription]:
    return await app.digests.store.all()


def _git(root: Path, *args: str, when: str | None = None) -> None:
    env = {"GIT_AUTHOR_NAME": "Ada", "GIT_AUTHOR_EMAIL": "ada@example.invalid"}
    env |= {"GIT_COMMITTER_NAME": "Ada", "GIT_COMMITTER_EMAIL": "ada@example.invalid"}
    if when:
        env |= {"GIT_AUTHOR_DATE": when, "GIT_COMMITTER_DATE": when}
    subprocess.run(["git", "-C", str(root), *args], check=True, capture_output=True, env=env)


def secret_repo(tmp_path: Path, clock: Clock) -> Path:
    """A git checkout with one commit of half an hour ago."""
    repo = tmp_path / "secretrepo"
    repo.mkdir()
    _git(repo, "init", "-q")
    (repo / "plan.md").write_text("x")
    _git(repo, "add", ".")
    when = (clock.now - timedelta(minutes=30)).isoformat()
    _git(repo, "commit", "-qm", "SECRET merger plan", when=when)
    return repo


# -- 1. a digest runs with its owner's roles, under the current policy ---------------------------


async def test_a_digest_sees_only_what_its_owners_roles_may_see(
    make_app: Callable[..., App], clock: Clock, tmp_path: Path
) -> None:
    app = make_app(GUESTS_SEE_NO_REPOS)
    await app.repos.register(str(secret_repo(tmp_path, clock)), "secretrepo")
    guest = ("lead", "guest")
    refused = await send(app, "/digest add hourly repo-changes --repo secretrepo", roles=guest)
    assert not refused.ok and "no repository `secretrepo`" in refused.text
    assert (await send(app, "/digest add hourly repo-changes", roles=guest)).ok
    [sub] = await subscriptions(app)
    assert sub.roles == '["guest","lead"]'  # what the platform verified, kept for the runs
    preview = await send(app, "/digest run 1", roles=guest)
    assert preview.ok and "SECRET" not in preview.text and "Nothing new" in preview.text
    # Whoever runs it later, the digest reads as its owner: a lead without the guest role
    # previewing it sees no more than the guest who added it.
    assert "SECRET" not in (await send(app, "/digest run 1", user="U2")).text
    clock.now = START.replace(hour=11, minute=0, second=5)
    assert await app.digests.run_due() == ["posted"]
    [row] = await posted(app)
    assert "SECRET" not in row.text


async def test_the_current_policy_decides_at_run_time(
    make_app: Callable[..., App], clock: Clock, tmp_path: Path
) -> None:
    app = make_app(MANAGERS)
    await app.repos.register(str(secret_repo(tmp_path, clock)), "secretrepo")
    assert (await send(app, "/digest add hourly repo-changes", roles=("lead", "guest"))).ok
    assert "SECRET merger plan" in (await send(app, "/digest run 1")).text  # allowed so far
    # The policy changes (the bot restarts with the new file): guests may read no repository.
    later = make_app(GUESTS_SEE_NO_REPOS)
    preview = await send(later, "/digest run 1")
    assert preview.ok and "SECRET" not in preview.text
    clock.now = START.replace(hour=11, minute=0, second=5)
    assert await later.digests.run_due() == ["posted"]
    assert all("SECRET" not in row.text for row in await posted(later))


# -- 2. every kind checks the permissions its data needs, when added and when run ---------------

NO_MEMORY_IN_C2 = """
[[rules]]
name = "C2 reads no memory"
match = { channel = ["C2"] }
deny = ["memory.read"]
"""
NO_CODE_IN_C2 = """
[[rules]]
name = "C2 reads no code"
match = { channel = ["C2"] }
deny = ["code.read"]
"""


@pytest.mark.parametrize(
    ("policy", "kind", "permission"),
    [(NO_MEMORY_IN_C2, "memory", "memory.read"), (NO_CODE_IN_C2, "repo-changes", "code.read")],
)
async def test_a_kind_is_refused_where_its_data_may_not_be_read(
    make_app: Callable[..., App], policy: str, kind: str, permission: str
) -> None:
    app = make_app(MANAGERS + policy)
    refused = await send(app, f"/digest add hourly {kind}", channel="C2")
    assert not refused.ok
    assert f"A `{kind}` digest needs the `{permission}` permission" in refused.text
    assert await subscriptions(app) == []  # nothing half-written
    assert (await send(app, f"/digest add hourly {kind}", channel="C1")).ok  # allowed there


async def test_a_memory_digest_whose_owner_lost_memory_read_says_so_instead(
    make_app: Callable[..., App], clock: Clock
) -> None:
    app = make_app(MANAGERS)
    assert (await send(app, "/save PRIVATE launch date is May 4", channel="C2")).ok
    assert (await send(app, "/digest add hourly memory", channel="C2")).ok
    assert "PRIVATE launch date" in (await send(app, "/digest run 1", channel="C2")).text
    later = make_app(MANAGERS + NO_MEMORY_IN_C2)  # the policy now denies memory.read in C2
    assert not (await send(later, "/memory list", channel="C2")).ok
    preview = await send(later, "/digest run 1", channel="C2")
    assert "PRIVATE" not in preview.text
    assert "may no longer read what it lists here (`memory.read`)" in preview.text
    clock.now = START.replace(hour=11, minute=0, second=5)
    assert await later.digests.run_due() == ["posted"]
    [row] = await posted(later)
    assert "PRIVATE" not in row.text and "(`memory.read`)" in row.text
    [run] = await later.digests.store.runs(1)
    assert run.state == "posted" and "memory.read" in run.detail


# -- 14. what /digest stores is checked against its columns first --------------------------------


@pytest.mark.parametrize(
    ("command", "message"),
    [
        (
            '/digest add "' + "0," * 3000 + '0 9 * * *" activity',
            "The schedule is 6,009 characters long; at most 128 fit.",
        ),
        (
            "/digest add daily repo-changes --repo " + "r" * 200,
            "The repository name is 200 characters long; at most 128 fit.",
        ),
        (
            "/digest add daily activity --tz " + "Europe/" * 20,
            "The time zone is 140 characters long; at most 64 fit.",
        ),
    ],
)
async def test_overlong_values_are_refused_before_storing(
    make_app: Callable[..., App], database_url: str, command: str, message: str
) -> None:
    app = make_app(database_url=database_url)
    reply = await send(app, command)
    assert not reply.ok and message in reply.text, reply.text
    assert "went wrong" not in reply.text
    assert await subscriptions(app) == []


async def test_overlong_ids_of_the_platform_are_refused_before_storing(
    make_app: Callable[..., App], database_url: str
) -> None:
    app = make_app(database_url=database_url)
    admin = ("lead", "admin")
    long_user = "U" * 129
    # Core refuses an identity longer than the tables hold before any command runs.
    reply = await send(app, "/digest add daily activity", user=long_user)
    assert not reply.ok and "129 characters long" in reply.text
    zone = await send(app, "/digest timezone Europe/Paris", user=long_user, roles=admin)
    assert not zone.ok and "129 characters long" in zone.text
    assert await subscriptions(app) == []
    assert "UTC (not set)" in (await send(app, "/digest timezone", roles=admin)).text


# -- 16. real IANA zones only; repositories only as the registry names them ----------------------


@pytest.mark.parametrize("name", ["localtime", "Factory", "posixrules", "../Europe/Paris"])
async def test_zones_that_are_not_iana_names_are_refused(
    make_app: Callable[..., App], name: str
) -> None:
    app = make_app()
    added = await send(app, f"/digest add daily activity --tz {name}")
    assert not added.ok and "unknown time zone" in added.text
    admin = ("lead", "admin")
    tenant = await send(app, f"/digest timezone {name}", roles=admin)
    assert not tenant.ok and "unknown time zone" in tenant.text
    assert await subscriptions(app) == []
    assert (await send(app, "/digest add daily activity --tz Europe/Paris")).ok


@pytest.mark.parametrize("name", ["../x", "api/../../etc", "/srv/api", "nosuchrepo", "API"])
async def test_repos_are_only_the_registrys_names(
    make_app: Callable[..., App], clock: Clock, tmp_path: Path, name: str
) -> None:
    app = make_app()
    await app.repos.register(str(secret_repo(tmp_path, clock)), "api")
    refused = await send(app, f"/digest add daily repo-changes --repo {name}")
    assert not refused.ok and "There is no repository" in refused.text
    assert await subscriptions(app) == []
    assert (await send(app, "/digest add daily repo-changes --repo api")).ok
