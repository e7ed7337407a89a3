"""Scheduled digests end to end on the real composition root: `/digest` commands, periods run
through a controllable clock, exactly-once claims between "processes" (separate database
engines) on SQLite and PostgreSQL, catch-up after downtime, the three kinds and the outbox."""

from __future__ import annotations

import asyncio
import itertools
import logging
import signal
import subprocess
import sys
from collections.abc import AsyncIterator, Callable
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from sqlmodel import select

from bot.app import App, build_app
from core.digest.runner import DigestRunner, OutboxSink, standalone_runner
from core.digest.store import DigestStore
from core.policy import Policy
from core.request import Request
from core.store.models import DigestRun, OutboxRow
from tests.conftest import POLICY_ALL
from tests.support.clocks import Clock, at_every_instant
from tests.support.fakes.openai_server import FakeOpenAI
from tests.support.paths import ROOT_DIR

MANAGERS = (
    POLICY_ALL
    + """
[[rules]]
name = "digest managers"
match = { roles = ["lead"] }
grant = ["digest.manage"]
"""
)


@pytest.fixture
async def make_app(
    make_settings: Callable[..., Any], write_policy: Callable[[str], Path], clock: Clock
) -> AsyncIterator[Callable[..., App]]:
    apps: list[App] = []

    def make(**overrides: Any) -> App:
        overrides.setdefault("policy_file", write_policy(MANAGERS))
        app = build_app(make_settings(**overrides), clock=clock)
        apps.append(app)
        return app

    yield make
    for app in apps:
        await app.aclose()


async def send(app: App, text: str, *, channel: str = "C1", user: str = "U1", lead: bool = True):  # type: ignore[no-untyped-def]
    roles = ("lead",) if lead else ()
    return await app.core.handle(Request("slack", "T1", channel, "th", user, text, roles))


async def posted(app: App) -> list[OutboxRow]:
    async with app.db.session() as s:
        return list((await s.exec(select(OutboxRow).order_by(OutboxRow.id))).all())  # type: ignore[arg-type]


def second_worker(app: App, clock: Clock, owner: str, db: Any = None) -> DigestRunner:
    """Another process's runner: its own database engine on the same database."""
    return standalone_runner(
        db or app.db,
        policy=Policy.load(app.settings.policy_file),
        repos=app.repos,
        owner=owner,
        clock=clock,
    )


# -- commands ----------------------------------------------------------------------------------


async def test_add_list_pause_resume_remove(make_app: Callable[..., App], clock: Clock) -> None:
    app = make_app()
    added = await send(app, '/digest add "0 9 * * 1-5" activity --tz Europe/Berlin --skip-empty')
    assert added.ok, added.text
    assert "Digest #1 added" in added.text and "Europe/Berlin" in added.text
    assert "skips empty periods" in added.text and "Next:" in added.text
    weekly = await send(app, "/digest add weekly memory")
    assert weekly.ok and "`memory`, weekly, UTC" in weekly.text
    listed = await send(app, "/digest list", lead=False)  # listing needs only `ask`
    assert listed.ok and "#1 `activity`" in listed.text and "#2 `memory`, weekly" in listed.text
    assert "next " in listed.text
    assert (await send(app, "/digest pause 1")).ok
    assert "#1 `activity`" in (await send(app, "/digest list")).text
    assert "paused" in (await send(app, "/digest list")).text
    assert (await send(app, "/digest resume #1")).ok
    assert "paused" not in (await send(app, "/digest list")).text
    assert (await send(app, "/digest remove 2")).ok
    assert "#2" not in (await send(app, "/digest list")).text


async def test_permissions_and_channel_scoping(make_app: Callable[..., App]) -> None:
    app = make_app()
    refused = await send(app, "/digest add daily activity", lead=False)
    assert not refused.ok and "digest.manage" in refused.text
    assert (await send(app, "/digest add daily activity")).ok
    other = await send(app, "/digest remove 1", channel="C2")
    assert not other.ok and "no digest #1 in this channel" in other.text
    assert "No digests in this channel" in (await send(app, "/digest list", channel="C2")).text
    denied = await send(app, "/digest timezone Europe/Paris")
    assert not denied.ok and "admin" in denied.text


@pytest.mark.parametrize(
    ("command", "message"),
    [
        ("/digest add daily weather", "Unknown kind `weather`"),
        ('/digest add "0 9 * *" activity', "5 cron fields"),
        ("/digest add daily activity --tz Mars/Base", "unknown time zone"),
        ('/digest add "* * * * *" activity', "every 5 minutes"),
        ("/digest add daily activity --frob", "Unknown option `--frob`"),
        ("/digest add daily activity --repo api", "applies to repo-changes"),
        ("/digest add daily", "Give a schedule and a kind"),
        ('/digest add "0 9 * * 1 activity', "Unbalanced quotes"),
        ("/digest remove x", "needs the digest's number"),
        ("/digest explode", "Usage"),
    ],
)
async def test_bad_commands_say_what_is_wrong(
    make_app: Callable[..., App], command: str, message: str
) -> None:
    reply = await send(make_app(), command)
    assert not reply.ok and message in reply.text


async def test_curly_quotes_and_the_tenant_time_zone(make_app: Callable[..., App]) -> None:
    app = make_app()
    admin = ("lead", "admin")
    set_tz = await app.core.handle(
        Request("slack", "T1", "C1", "th", "U1", "/digest timezone Asia/Tokyo", admin)
    )
    assert set_tz.ok and "Asia/Tokyo" in set_tz.text
    added = await send(app, "/digest add “30 8 * * 1-5” activity")  # a phone's quotes
    assert added.ok and "Asia/Tokyo" in added.text and "`30 8 * * 1-5`" in added.text


async def test_subscriptions_survive_a_restart(make_app: Callable[..., App]) -> None:
    app = make_app()
    assert (await send(app, "/digest add daily activity")).ok
    again = make_app()
    assert "#1 `activity`, daily" in (await send(again, "/digest list")).text


# -- running -----------------------------------------------------------------------------------


@at_every_instant
async def test_each_period_posts_once(make_app: Callable[..., App], clock: Clock) -> None:
    app = make_app()
    assert (await send(app, '/digest add "*/30 * * * *" activity')).ok
    start = clock.now
    first = app.digests.store  # same store the commands used
    sub = (await first.all())[0]
    fire = app.digests  # the app's runner
    due = [t async for t in _fires(sub, start, 3)]
    for t in due:
        clock.now = t + timedelta(seconds=5)
        assert await fire.run_due() == ["posted"]
        assert await fire.run_due() == []  # the same period again: nothing
    rows = await posted(app)
    assert len(rows) == 3
    assert all(r.title and r.title.startswith("Activity digest") for r in rows)
    assert "Nothing new in this period." in rows[0].text
    assert "No language model" not in rows[0].text  # empty: nothing to summarize


async def first_period(app: App, clock: Clock, spec: str) -> tuple[Any, datetime]:
    """Add a digest (`/digest add SPEC`) and move the clock just past its first run."""
    assert (await send(app, f"/digest add {spec}")).ok
    sub = (await app.digests.store.all())[-1]
    [due] = [t async for t in _fires(sub, clock.now, 1)]
    clock.now = due + timedelta(seconds=1)
    return sub, due


async def _fires(sub: Any, start: datetime, n: int):  # type: ignore[no-untyped-def]
    from core.digest.runner import schedule_of

    at = start
    for _ in range(n):
        at = schedule_of(sub).next_after(at)
        yield at


async def test_two_workers_post_exactly_once_per_period(
    make_app: Callable[..., App], clock: Clock, open_db: Callable[[], Any], database_url: str
) -> None:
    app = make_app(database_url=database_url)
    assert (await send(app, '/digest add "*/5 * * * *" activity')).ok
    sub = (await app.digests.store.all())[0]
    workers = [second_worker(app, clock, f"worker-{i}", open_db()) for i in range(2)]
    periods = [t async for t in _fires(sub, clock.now, 12)]
    for t in periods:
        clock.now = t + timedelta(seconds=1)
        results = await asyncio.gather(*(w.run_due() for w in workers))
        assert sorted(r for rs in results for r in rs) == ["posted", "taken"] or sorted(
            r for rs in results for r in rs
        ) == ["posted"]
    rows = await posted(app)
    assert len(rows) == 12 and len({r.key for r in rows}) == 12
    async with app.db.session() as s:
        runs = (await s.exec(select(DigestRun))).all()
    assert len(runs) == 12 and {r.state for r in runs} == {"posted"}


@at_every_instant
async def test_a_dead_workers_claim_is_taken_over_after_its_lease(
    make_app: Callable[..., App], clock: Clock
) -> None:
    app = make_app()
    sub, due = await first_period(app, clock, '"*/30 * * * *" activity')
    dead = second_worker(app, clock, "dead")
    assert await dead.store.claim(sub.id or 0, due, "dead") is not None  # then it dies
    live = second_worker(app, clock, "live")
    assert await live.run_due() == []  # the lease still holds
    clock.now = due + timedelta(minutes=6)
    assert await live.run_due() == ["posted"]
    assert await live.run_due() == []
    assert len(await posted(app)) == 1
    run = (await app.digests.store.runs(sub.id or 0))[0]
    assert run.claimed_by == "live" and run.attempts == 2 and run.state == "posted"


@at_every_instant
async def test_a_crash_after_enqueueing_does_not_post_twice(
    make_app: Callable[..., App], clock: Clock
) -> None:
    app = make_app()
    sub, due = await first_period(app, clock, '"*/30 * * * *" activity')
    crashed = second_worker(app, clock, "crashed")
    claim = await crashed.store.claim(sub.id or 0, due, "crashed")
    assert claim is not None
    digest = await crashed.build(sub, due - timedelta(minutes=30), due)
    key = f"digest:{sub.id}:{due.astimezone(UTC).isoformat()}"
    await OutboxSink(app.outbox).post(sub, digest.title, digest.text, key)  # then it dies
    clock.now = due + timedelta(minutes=6)
    assert await app.digests.run_due() == ["posted"]
    assert len(await posted(app)) == 1


@at_every_instant
async def test_catch_up_once_within_grace_and_skip_older(
    make_app: Callable[..., App], clock: Clock, caplog: pytest.LogCaptureFixture
) -> None:
    app = make_app()
    caplog.set_level(logging.WARNING, logger="core.digest.runner")
    assert (await send(app, '/digest add "0 * * * *" activity')).ok
    assert (await send(app, "/digest add daily memory")).ok
    hourly, daily = await app.digests.store.all()
    fires = [t async for t in _fires(hourly, clock.now, 6)]
    clock.now = fires[0] + timedelta(minutes=40)  # down at the fire time, back within grace
    assert await app.digests.run_due() == ["posted"]
    clock.now = fires[4] + timedelta(minutes=30)  # down for three periods
    assert await app.digests.run_due() == ["posted"]  # the latest, once; not a burst of four
    assert "3 earlier period(s) were missed" in caplog.text
    assert len(await posted(app)) == 2
    [day] = [t async for t in _fires(daily, clock.now, 1)]
    clock.now = day + timedelta(hours=3)  # beyond the grace period: skipped and logged
    outcomes = await app.digests.run_due()
    assert "skipped" in outcomes
    assert "beyond the 1:00:00 grace period" in caplog.text
    assert "skipped" not in await app.digests.run_due()
    assert len(await posted(app)) == 2 + outcomes.count("posted")


BERLIN_DIGESTS = {
    "hourly activity --tz Europe/Berlin": timedelta(hours=1),  # Berlin's offsets are whole hours
    '"30 2 * * *" activity --tz Europe/Berlin': None,  # 02:30: missing in spring, twice in autumn
    "daily activity --tz Europe/Berlin": None,
    "daily activity": timedelta(days=1),
}


@at_every_instant
async def test_each_period_starts_where_the_last_one_ended(
    make_app: Callable[..., App], clock: Clock
) -> None:
    """Run the scheduler's pass every 20 minutes for a day around the instant (a period
    boundary, the year's last second, a daylight-saving change): every digest posts once per
    run, and its periods follow each other with nothing counted twice and nothing lost."""
    from zoneinfo import ZoneInfo

    app = make_app()
    instant = clock.now
    clock.now = instant - timedelta(hours=12)
    for spec in BERLIN_DIGESTS:
        assert (await send(app, f"/digest add {spec}")).ok
    periods: dict[int, list[tuple[datetime, datetime]]] = {}
    build = app.digests.build

    async def recording(sub: Any, start: datetime, end: datetime) -> Any:
        periods.setdefault(sub.id, []).append((start, end))
        return await build(sub, start, end)

    app.digests.build = recording  # type: ignore[method-assign]
    outcomes: list[str] = []
    while clock.now < instant + timedelta(hours=14):
        clock.advance(minutes=20)
        outcomes += await app.digests.run_due()
    assert outcomes and set(outcomes) == {"posted"}
    berlin = ZoneInfo("Europe/Berlin")
    for sub_id, step in zip(sorted(periods), BERLIN_DIGESTS.values(), strict=True):
        runs = periods[sub_id]
        for (_, end), (start, _) in itertools.pairwise(runs):
            assert start == end  # no gap, no overlap
        ends = [end for _, end in runs]
        assert ends == sorted(set(ends))
        if step is not None:  # two hours where the wall clock repeats one: each time runs once
            assert all(
                b - a == step
                or a.astimezone(berlin).utcoffset() != b.astimezone(berlin).utcoffset()
                for a, b in itertools.pairwise(ends)
            )
        else:  # once a local day, 23 to 25 hours apart
            assert len({e.astimezone(berlin).date() for e in ends}) == len(ends)
            assert all(
                timedelta(hours=23) <= b - a <= timedelta(hours=25)
                for a, b in itertools.pairwise(ends)
            )
    assert len(await posted(app)) == len(outcomes)


@at_every_instant
async def test_skip_empty_posts_nothing(make_app: Callable[..., App], clock: Clock) -> None:
    app = make_app()
    await first_period(app, clock, '"*/30 * * * *" memory --skip-empty')
    assert await app.digests.run_due() == ["empty"]
    assert await posted(app) == []


@at_every_instant
async def test_paused_digests_do_not_run(make_app: Callable[..., App], clock: Clock) -> None:
    app = make_app()
    assert (await send(app, '/digest add "*/30 * * * *" activity')).ok
    assert (await send(app, "/digest pause 1")).ok
    clock.now += timedelta(hours=1)
    assert await app.digests.run_due() == []


# -- content -----------------------------------------------------------------------------------


@at_every_instant
async def test_activity_without_a_model_is_a_structured_list(
    make_app: Callable[..., App], clock: Clock
) -> None:
    app = make_app()
    from core.memory.history import HistoryStore
    from core.request import ConversationKey

    history = HistoryStore(app.db, clock)
    clock.advance(seconds=30)  # the preview, 30 s later, covers at least its last minute
    conv = ConversationKey("slack", "T1", "C1", "t-answered")
    await history.append(
        conv,
        [
            {"role": "user", "content": "how do we deploy the api?"},
            {"role": "assistant", "content": "With Helm, see deploy/README."},
        ],
    )
    await history.append(
        ConversationKey("slack", "T1", "C1", "t-open"),
        [{"role": "user", "content": "why is the importer slow?"}],
    )
    await history.append(
        ConversationKey("slack", "T1", "C9", "elsewhere"),
        [{"role": "user", "content": "OTHER CHANNEL QUESTION"}],
    )
    sub_reply = await send(app, '/digest add "*/30 * * * *" activity')
    assert sub_reply.ok
    clock.advance(seconds=30)
    preview = await send(app, "/digest run 1")
    assert preview.ok and "Preview" in preview.text
    text = preview.text
    assert "2 question(s) in 2 thread(s); 1 answered, 1 thread(s) look still open." in text
    assert "why is the importer slow? — *no answer yet*" in text
    assert "how do we deploy the api?" in text
    assert "OTHER CHANNEL" not in text
    assert "No language model is configured, so this is the plain list." in text
    assert await posted(app) == []  # a preview is not posted


@at_every_instant
async def test_a_model_summarizes_on_the_channel_budget(
    make_app: Callable[..., App], clock: Clock, fake_llm: FakeOpenAI
) -> None:
    app = make_app(llm_base_url=fake_llm.url, llm_model="fake-model", llm_max_retries=0)
    assert (await send(app, "/save we deploy on Tuesdays")).ok
    fake_llm.reply("One fact was saved: deploys happen on Tuesdays.", prompt_tokens=300)
    assert (await send(app, "/digest add daily memory")).ok
    clock.now += timedelta(minutes=1)
    preview = await send(app, "/digest run 1")
    assert "deploys happen on Tuesdays" in preview.text
    sent = fake_llm.requests[-1]["messages"]
    assert "we deploy on Tuesdays" in sent[-1]["content"]
    budget = await send(app, "/budget")
    assert "this channel's daily token budget: 3" in budget.text  # 300 prompt + the answer


def _git(root: Path, *args: str, when: str | None = None) -> None:
    env = {"GIT_AUTHOR_NAME": "Ada", "GIT_AUTHOR_EMAIL": "ada@example.invalid"}
    env |= {"GIT_COMMITTER_NAME": "Ada", "GIT_COMMITTER_EMAIL": "ada@example.invalid"}
    if when:
        env |= {"GIT_AUTHOR_DATE": when, "GIT_COMMITTER_DATE": when}
    subprocess.run(["git", "-C", str(root), *args], check=True, capture_output=True, env=env)


@at_every_instant
async def test_repo_changes_groups_commits_by_area(
    make_app: Callable[..., App], clock: Clock, tmp_path: Path
) -> None:
    repo = tmp_path / "api"
    (repo / "billing").mkdir(parents=True)
    (repo / "docs").mkdir()
    _git(repo, "init", "-q")
    _git(repo, "remote", "add", "origin", "git@github.com:acme/api.git")
    # The preview runs a minute from now and covers at least its own last minute, whatever
    # the hour; ten days back is before any daily period.
    preview_at = clock.now + timedelta(minutes=1)
    old = (clock.now - timedelta(days=10)).isoformat()
    recent = (preview_at - timedelta(seconds=30)).isoformat()
    (repo / "docs" / "a.md").write_text("a")
    _git(repo, "add", ".")
    _git(repo, "commit", "-qm", "Old docs change", when=old)
    (repo / "billing" / "pay.py").write_text("x = 1")
    _git(repo, "add", ".")
    _git(repo, "commit", "-qm", "Retry failed card payments", when=recent)
    app = make_app()
    await app.repos.register(str(repo), "api")
    assert (await send(app, "/digest add daily repo-changes --repo api")).ok
    clock.now = preview_at
    text = (await send(app, "/digest run 1")).text
    assert "**api**: 1 commit(s) by Ada" in text
    assert "- `billing` (1)" in text and "Retry failed card payments — Ada" in text
    assert "https://github.com/acme/api/commit/" in text
    assert "Old docs change" not in text


async def test_the_scheduler_follows_sql(make_app: Callable[..., App], clock: Clock) -> None:
    from core.digest.runner import schedule_of
    from core.digest.scheduler import DigestScheduler, ScheduleTrigger

    app = make_app()
    scheduler = DigestScheduler(app.digests, every=3600)
    await scheduler.start()
    try:
        assert scheduler.job_ids() == []
        assert (await send(app, "/digest add weekdays activity --tz Europe/Berlin")).ok
        clock.now += timedelta(seconds=1)  # another process's change, seen at the next pass
        assert await scheduler.sync() is True
        assert scheduler.job_ids() == ["digest-#1"]
        assert await scheduler.sync() is False  # nothing changed: nothing rebuilt
        assert (await send(app, "/digest pause 1")).ok
        clock.now += timedelta(seconds=1)
        assert await scheduler.sync() is True and scheduler.job_ids() == []
    finally:
        await scheduler.stop()
    sub = (await app.digests.store.all())[0]
    trigger = ScheduleTrigger(schedule_of(sub))
    friday = datetime(2026, 3, 27, 12, tzinfo=UTC)
    first = trigger.get_next_fire_time(None, friday)
    assert first == datetime(2026, 3, 30, 7, tzinfo=UTC)  # Monday 09:00 CEST
    assert trigger.get_next_fire_time(first, first) == datetime(2026, 3, 31, 7, tzinfo=UTC)


# -- real processes on one PostgreSQL ----------------------------------------------------------


def _worker(url: str, owner: str, times: list[datetime], *, hang: bool = False) -> Any:
    args = [sys.executable, "-m", "tests.support.digest_worker", url, owner]
    args += [t.isoformat() for t in times] + (["--hang"] if hang else [])
    root = ROOT_DIR
    return subprocess.Popen(
        args, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=root
    )


async def _subscription(url: str, clock: Clock) -> Any:
    from core.store.engine import Database
    from core.store.models import DigestSubscription

    db = Database(url)
    await db.create_all()
    sub = await DigestStore(db, clock).add(
        DigestSubscription(
            platform="slack",
            tenant="T1",
            channel="C1",
            created_by="U1",
            kind="activity",
            cron="*/5 * * * *",
            tz="UTC",
        )
    )
    return db, sub


@pytest.mark.postgres
async def test_two_worker_processes_post_once_even_when_one_is_killed(
    pg_url: str, clock: Clock
) -> None:
    db, sub = await _subscription(pg_url, clock)
    try:
        periods = [t async for t in _fires(sub, clock.now, 10)]
        times = [t + timedelta(seconds=1) for t in periods]
        procs = [_worker(pg_url, f"proc-{i}", times) for i in range(2)]
        outputs = [await asyncio.to_thread(p.communicate, timeout=120) for p in procs]
        assert all(p.returncode == 0 for p in procs), [o[1][-2000:] for o in outputs]
        lines = [line for out, _err in outputs for line in out.splitlines()]
        assert sum(line.endswith(" posted") for line in lines) == 10
        # The first worker claims the next period and is killed while it runs.
        nxt = schedule_of_sub(sub).next_after(periods[-1])
        hung = _worker(pg_url, "doomed", [nxt + timedelta(seconds=1)], hang=True)
        assert hung.stdout is not None
        assert (await asyncio.to_thread(hung.stdout.readline)).strip() == "hanging"
        hung.send_signal(signal.SIGKILL)
        await asyncio.to_thread(hung.communicate, timeout=30)  # reaps it, closes its pipes
        early = _worker(pg_url, "early", [nxt + timedelta(seconds=30)])
        out, _ = await asyncio.to_thread(early.communicate, timeout=60)
        assert out.strip() == ""  # the dead worker's lease still holds: nothing to do
        late = _worker(pg_url, "late", [nxt + timedelta(minutes=3)])
        out, _ = await asyncio.to_thread(late.communicate, timeout=60)
        assert out.strip().endswith(" posted")
        async with db.session() as s:
            rows = (await s.exec(select(OutboxRow))).all()
            runs = (await s.exec(select(DigestRun))).all()
        assert len(rows) == 11 and len({r.key for r in rows}) == 11
        taken = [r for r in runs if r.claimed_by == "late"]
        assert len(taken) == 1 and taken[0].attempts == 2
    finally:
        await db.dispose()


def schedule_of_sub(sub: Any) -> Any:
    from core.digest.runner import schedule_of

    return schedule_of(sub)


@at_every_instant
async def test_voice_digests_carry_audio_or_say_why_not(
    make_app: Callable[..., App], clock: Clock
) -> None:
    from core.errors import Refusal
    from core.request import Attachment
    from core.session import ToolSession

    app = make_app()
    app.digests.speak = None  # a process without voice replies set up
    refused = await send(app, "/digest add daily activity --voice")
    assert not refused.ok and "not set up here" in refused.text
    spoken: list[str] = []

    async def speak(
        session: ToolSession, text: str, title: str
    ) -> tuple[Attachment, tuple[str, ...]]:
        if "refuse" in spoken:
            raise Refusal("your daily voice (TTS) budget is used up")
        spoken.append(text)
        return Attachment("audio", "digest.ogg", b"OggS", "audio/ogg"), ()

    app.digests.speak = speak
    sub, due = await first_period(app, clock, '"*/30 * * * *" activity --voice')
    assert sub.voice
    assert await app.digests.run_due() == ["posted"]
    [row] = await posted(app)
    assert spoken and spoken[0].startswith("Activity digest")
    assert "digest.ogg" in (row.attachments or "")
    spoken.append("refuse")
    clock.now = due + timedelta(minutes=30, seconds=1)
    assert await app.digests.run_due() == ["posted"]
    second = (await posted(app))[-1]
    assert "No audio: your daily voice (TTS) budget is used up" in second.text
    assert not second.attachments or "digest.ogg" not in second.attachments


async def test_an_id_no_row_can_have_is_just_not_there(make_app: Callable[..., App]) -> None:
    app = make_app()
    for raw in ("99999999999999999999999", "2147483648", "0"):
        reply = await send(app, f"/digest remove {raw}")
        assert not reply.ok and f"no digest #{int(raw)} in this channel" in reply.text
