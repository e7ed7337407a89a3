"""Scale-out (issue 17): `threadline serve` and `threadline worker` processes — real processes
on real ports, started by `tests.support.processes.Cluster` — sharing one PostgreSQL database.

- The same Slack event delivered to both web processes, at once and as Slack's retries, is
  answered once; many distinct events, each delivered to both, are each answered once.
- Two workers splitting two Discord shards (DISCORD_SHARD_COUNT=2, DISCORD_SHARD_IDS=0 / 1)
  against the fake gateway, which routes a guild's events to shard (guild_id >> 22) % 2 as
  Discord does: a message in a guild of each shard is answered once, by its shard's process.
- A digest period due while two workers run posts once.
- A 👎 under one web process's answer clicked at the other, its reason sent back to the first:
  one rating in the shared database.
- A worker killed (SIGKILL) mid-request loses no stored row and causes no duplicate post.

PostgreSQL only (marked `postgres`; skipped when the test database does not answer): SQLite is
one process's store. There is no Qdrant server on the test machine, so each process has a data
dir (and an embedded vector store) of its own and no repository is indexed: nothing here reads
vectors, and a shared Qdrant server would change none of what is checked.
"""

from __future__ import annotations

import asyncio
import json
from collections import Counter
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any
from urllib.parse import urlencode

import psycopg
import pytest

from core.outbox import Outbox, OutboxMessage
from core.store.engine import Database
from tests.conftest import POLICY_ALL
from tests.support.fakes.discord_server import FakeDiscord, Posted
from tests.support.fakes.openai_server import FakeOpenAI, answer
from tests.support.fakes.slack_api import FakeSlack
from tests.support.fakes.slack_events import (
    SIGNING_SECRET,
    deliver_event,
    feedback_click,
    mention,
    new_ts,
    send,
    view_submission,
)
from tests.support.processes import Cluster, Proc, base_env

pytestmark = pytest.mark.postgres

TAKEN = "already taken; not answering twice"  # what a process logs when another one won


@pytest.fixture
def fake_slack() -> Iterator[FakeSlack]:
    fake = FakeSlack().start()
    yield fake
    fake.stop()


@pytest.fixture
def cluster(
    tmp_path: Path, pg_url: str, write_policy: Callable[[str], Path], fake_llm: FakeOpenAI
) -> Iterator[Cluster]:
    empty = tmp_path / "empty.toml"
    empty.write_text("")
    env = base_env(
        DATABASE_URL=pg_url,
        THREADLINE_POLICY=str(write_policy(POLICY_ALL)),
        THREADLINE_CONFIG=str(empty),
        THREADLINE_LOG_LEVEL="INFO",  # the "already taken" lines are what the tests count
        LLM_BASE_URL=fake_llm.url,
        LLM_MODEL="fake-model",
        LLM_MAX_RETRIES="0",
    )
    procs = Cluster(tmp_path / "procs", env)
    yield procs
    procs.stop_all()


def slack_settings(fake: FakeSlack) -> dict[str, str]:
    return {
        "SLACK_BOT_TOKEN": fake.bot_token,
        "SLACK_SIGNING_SECRET": SIGNING_SECRET,
        "SLACK_API_URL": fake.api_url,
    }


def start_webs(cluster: Cluster, fake: FakeSlack, n: int = 2) -> list[Proc]:
    webs = [cluster.serve(f"web-{i}", wait=False, **slack_settings(fake)) for i in range(n)]
    for web in webs:  # started together, waited for together
        cluster.wait_healthy(web)
    return webs


def replies_by_thread(fake: FakeSlack, channel: str) -> Counter[str]:
    return Counter(str(m.get("thread_ts")) for m in fake.posted(channel))


# -- Slack: one answer per event, whichever process gets it, however often ------------------------


def test_the_same_slack_event_at_both_web_processes_and_retried_is_answered_once(
    cluster: Cluster, fake_slack: FakeSlack
) -> None:
    webs = start_webs(cluster, fake_slack)
    urls = [f"{w.url}/slack/events" for w in webs]
    body = mention("why is the build red?", channel="CSAME", ts=new_ts())

    with ThreadPoolExecutor(len(urls)) as pool:  # both at the same moment
        acks = list(pool.map(lambda url: deliver_event(url, body), urls))
    # Slack's redeliveries (it saw no ack in time), one to each process, signed anew.
    acks += [deliver_event(url, body, retry=n) for n, url in enumerate(urls, start=1)]

    assert [a.status for a in acks] == [200] * 4
    # Every delivery was decided: one answered, three saw the claim of another.
    cluster.wait_until(
        lambda: cluster.logged(TAKEN) >= 3 and fake_slack.posted("CSAME"), "one reply, three skips"
    )
    assert cluster.logged(TAKEN) == 3
    assert replies_by_thread(fake_slack, "CSAME") == {body["event"]["ts"]: 1}
    assert cluster.errors_logged() == []


def test_many_events_each_delivered_to_both_web_processes_are_answered_once_each(
    cluster: Cluster, fake_slack: FakeSlack
) -> None:
    webs = start_webs(cluster, fake_slack)
    urls = [f"{w.url}/slack/events" for w in webs]
    bodies = [mention(f"question {i}", channel="CMANY", ts=new_ts()) for i in range(30)]
    # Each event goes to both processes at once, first to one, then to the other.
    jobs = [(url, b) for i, b in enumerate(bodies) for url in (urls if i % 2 else urls[::-1])]
    with ThreadPoolExecutor(8) as pool:
        acks = list(pool.map(lambda job: deliver_event(*job), jobs))

    assert {a.status for a in acks} == {200}
    cluster.wait_until(
        lambda: len(fake_slack.posted("CMANY")) >= 30 and cluster.logged(TAKEN) >= 30,
        "30 replies and 30 skips",
        timeout=120,
    )
    replies = replies_by_thread(fake_slack, "CMANY")
    assert replies == {b["event"]["ts"]: 1 for b in bodies}
    assert cluster.logged(TAKEN) == 30  # every second delivery saw the first one's claim
    assert cluster.errors_logged() == []


# -- Discord: shards split over two worker processes -------------------------------------------


def shard_llm(shard: int) -> FakeOpenAI:
    """A model endpoint of one worker process: its answers say which process wrote them."""
    llm = FakeOpenAI().start()
    llm.responder = lambda _request: answer(f"answered by the process of shard {shard}")
    return llm


def start_shard_workers(
    cluster: Cluster, fake: FakeDiscord, llms: list[FakeOpenAI], **env: str
) -> list[Proc]:
    return [
        cluster.worker(
            f"worker-{shard}",
            DISCORD_TOKEN=fake.token,
            DISCORD_API_URL=fake.api_url,
            DISCORD_SHARD_COUNT="2",
            DISCORD_SHARD_IDS=str(shard),
            LLM_BASE_URL=llms[shard].url,
            **env,
        )
        for shard in (0, 1)
    ]


async def discord_ready(cluster: Cluster, procs: list[Proc]) -> None:
    await cluster.until(
        lambda: all(cluster.logged("Discord: ready as", [p]) for p in procs),
        "the workers' Discord sessions",
        within=90,
    )


def two_shard_world(fake: FakeDiscord) -> dict[int, str]:
    """Shard -> a channel in a guild on that shard (the first guild lands on either)."""
    first = fake.guild_shard()
    _, other = fake.add_guild(shard=1 - first)
    return {first: fake.general, 1 - first: other}


def texts(posts: list[Posted]) -> list[str]:
    return [p.content for p in posts]


async def test_each_discord_shard_is_answered_once_by_the_process_that_runs_it(
    cluster: Cluster,
) -> None:
    fake = await FakeDiscord(shards=2).start()
    llms = [shard_llm(0), shard_llm(1)]
    try:
        channels = two_shard_world(fake)
        workers = start_shard_workers(cluster, fake, llms)
        await discord_ready(cluster, workers)
        assert sorted(i["shard"] for i in fake.identifies) == [[0, 2], [1, 2]]

        asked = {
            shard: await fake.post_message(fake.alice, channel, f"{fake.mention()} which shard?")
            for shard, channel in channels.items()
        }
        ids = [m["id"] for m in asked.values()]
        await cluster.until(lambda: all(fake.messages_in(i) for i in ids), "both answers")

        for shard, message in asked.items():
            thread = fake.messages_in(message["id"])
            assert texts(thread) == [f"answered by the process of shard {shard}"]
        assert len(fake.threads_opened) == 2
        assert [len(llm.requests) for llm in llms] == [1, 1]
        assert len(fake.syncs) == 1  # only the process running shard 0 syncs commands
        await asyncio.to_thread(cluster.stop_all)
        assert cluster.errors_logged() == []
    finally:
        await asyncio.to_thread(cluster.stop_all)
        await fake.stop()
        for llm in llms:
            llm.stop()


# -- digests: one post per period, however many workers run ------------------------------------


async def add_due_subscription(url: str, channel: str) -> int:
    """An hourly digest whose latest period began about two minutes ago (and whose next one is
    about an hour away), created before that period: due now for every worker."""
    from core.digest.store import DigestStore
    from core.store.models import DigestSubscription

    now = datetime.now(UTC)  # wall clock: the worker processes under test run on the real one
    due = (now - timedelta(minutes=2)).replace(second=0, microsecond=0)
    db = Database(url)
    try:
        await db.create_all()
        sub = await DigestStore(db, lambda: due - timedelta(minutes=2)).add(
            DigestSubscription(
                platform="slack",
                tenant="T1",
                channel=channel,
                created_by="U1",
                kind="activity",
                cron=f"{due.minute} * * * *",
                tz="UTC",
            )
        )
    finally:
        await db.dispose()
    assert sub.id is not None
    return sub.id


def rows(url: str, query: str, *args: Any) -> list[tuple[Any, ...]]:
    with psycopg.connect(url) as conn:
        return conn.execute(query, args).fetchall()


def test_a_rating_of_one_web_processs_answer_may_reach_the_other(
    cluster: Cluster, fake_slack: FakeSlack, fake_llm: FakeOpenAI, pg_url: str
) -> None:
    """The 👎 under an answer web-0 wrote is clicked at web-1, the form sent back to web-0:
    one rating, with its reason, in the shared database."""
    webs = start_webs(cluster, fake_slack)
    fake_llm.reply("Because of the cache.")
    deliver_event(f"{webs[0].url}/slack/events", mention("why?", channel="CFB", ts=new_ts()))

    def rated() -> list[dict[str, Any]]:
        return [
            m
            for m in fake_slack.posted("CFB")
            if any(b.get("type") == "context_actions" for b in m.get("blocks") or [])
        ]

    fake_slack.wait_for(lambda: bool(rated()), 30, "the answer with its buttons")
    click = feedback_click(rated()[0], "down", channel="CFB", user="U2")
    interact(f"{webs[1].url}/slack/events", click)
    fake_slack.wait_for(lambda: bool(fake_slack.views), 30, "the 👎 form")
    why: dict[str, dict[str, str | None]] = {"threadline_feedback_why": {"reason": "stale"}}
    interact(f"{webs[0].url}/slack/events", view_submission(fake_slack.views[0], why, user="U2"))
    fake_slack.wait_calls("chat.postEphemeral", 2, 30)  # thanked for the 👎, then the reason
    query = 'SELECT "user", value, reason FROM answer_ratings'
    assert rows(pg_url, query) == [("U2", "down", "stale")]


def interact(url: str, payload: dict[str, Any]) -> None:
    body = urlencode({"payload": json.dumps(payload)}).encode()
    assert send(url, body, "application/x-www-form-urlencoded").status == 200


async def test_a_digest_period_due_with_two_workers_running_posts_once(
    cluster: Cluster, fake_slack: FakeSlack, pg_url: str
) -> None:
    sub_id = await add_due_subscription(pg_url, "CDIGEST")
    workers = [cluster.worker(f"worker-{i}") for i in range(2)]
    start_webs(cluster, fake_slack)  # Slack's outbox is posted by the web processes

    await cluster.until(
        lambda: all(cluster.logged("digest schedule: 1 subscription", [w]) for w in workers),
        "both workers' digest schedules",
        within=90,
    )
    await cluster.until(lambda: fake_slack.posted("CDIGEST"), "the digest post")
    await cluster.until(
        lambda: (
            rows(pg_url, "SELECT state FROM outbox WHERE channel = 'CDIGEST'") == [("delivered",)]
        ),
        "the outbox record",
    )

    assert len(fake_slack.posted("CDIGEST")) == 1
    runs = rows(pg_url, "SELECT state FROM digest_runs WHERE subscription_id = %s", sub_id)
    assert runs == [("posted",)]
    await asyncio.to_thread(cluster.stop_all)
    assert cluster.errors_logged() == []


# -- a worker killed mid-request ----------------------------------------------------------------


async def test_a_worker_killed_mid_request_loses_no_row_and_posts_nothing_twice(
    cluster: Cluster, pg_url: str
) -> None:
    """What "taking over" means for each kind of work in flight when a worker dies:

    - an outbox message it was posting (a digest, a late reply): its lease expires (the test
      expires it rather than wait two minutes), another worker claims the row and posts with
      the same nonce, so Discord hands back the message the dead worker's request made, and
      nothing is posted twice;
    - the Discord message it was answering: Discord does not deliver a message again, and the
      message's claim is already recorded, so that one question stays unanswered (the person
      asks again). Its stored thread history — every earlier turn — is intact, and the
      restarted worker answers the next question in the thread with it.
    """
    fake = await FakeDiscord(shards=2).start()
    llms = [FakeOpenAI().start(), FakeOpenAI().start()]
    try:
        channels = two_shard_world(fake)
        held = fake.add_channel("announcements", fake.guild_of(channels[0]))
        doomed, other = start_shard_workers(cluster, fake, llms)
        await discord_ready(cluster, [doomed, other])

        # An earlier turn, answered and stored.
        llms[0].reply("The deploy runs at noon.")
        first = await fake.post_message(fake.alice, channels[0], f"{fake.mention()} deploy time?")
        thread = first["id"]
        await cluster.until(lambda: fake.messages_in(thread), "the first answer")
        history = rows(pg_url, "SELECT role, content FROM thread_messages ORDER BY id")
        assert history == [("user", "deploy time?"), ("assistant", "The deploy runs at noon.")]

        # The next question hangs in the model when the worker dies.
        llms[0].reply("never seen", delay=60)
        await fake.post_message(fake.alice, thread, "and on Fridays?")
        await asyncio.to_thread(llms[0].wait_for_requests, 2, 60)

        # A Discord outbox message the dead worker is posting: Discord holds the request.
        release = fake.hold_posts(held)
        await enqueue(pg_url, OutboxMessage("discord", fake.guild_id, held, "Nightly", key="k:1"))
        # The process holding the outbox lease dies, whichever of the two it is.
        victim = await holder_of(pg_url, "k:1", cluster, fake, held)
        cluster.kill(victim)
        if victim is not doomed:
            cluster.kill(doomed)  # and so does the one answering the question
        release.set()  # Discord finishes the request the dead process sent
        await cluster.until(lambda: fake.messages_in(held), "the held message")

        # A restarted worker (same shard) and the survivors take over.
        survivors = [p for p in (doomed, other) if not p.killed]
        restarted = cluster.worker(
            "worker-0-again",
            DISCORD_TOKEN=fake.token,
            DISCORD_API_URL=fake.api_url,
            DISCORD_SHARD_COUNT="2",
            DISCORD_SHARD_IDS="0",
            LLM_BASE_URL=llms[0].url,
        )
        if victim is other:
            survivors.append(
                cluster.worker(
                    "worker-1-again",
                    DISCORD_TOKEN=fake.token,
                    DISCORD_API_URL=fake.api_url,
                    DISCORD_SHARD_COUNT="2",
                    DISCORD_SHARD_IDS="1",
                    LLM_BASE_URL=llms[1].url,
                )
            )
        await discord_ready(cluster, [restarted, *survivors])
        expire_leases(pg_url)  # as two minutes passing would
        await cluster.until(
            lambda: rows(pg_url, "SELECT state FROM outbox WHERE key = 'k:1'") == [("delivered",)],
            "the outbox row taken over and recorded",
        )
        # Two requests reached Discord (the dead worker's and the taker's, with the same
        # nonce); one message exists.
        assert len(fake.calls_to("POST", rf"/channels/{held}/messages")) == 2
        assert texts(fake.messages_in(held)) == ["Nightly"]

        # The question in flight was not answered, by anyone; earlier turns are all there.
        assert texts(fake.messages_in(thread)) == ["The deploy runs at noon."]
        # The question in flight was kept when its request started; nothing else of that turn
        # (no tool call without its result, no half answer) was written.
        assert rows(pg_url, "SELECT role, content FROM thread_messages ORDER BY id") == [
            *history,
            ("user", "and on Fridays?"),
        ]
        llms[0].reply("Fridays too.")
        await fake.post_message(fake.alice, thread, f"{fake.mention()} and on Fridays?")
        await cluster.until(lambda: len(fake.messages_in(thread)) >= 2, "the next answer")
        assert texts(fake.messages_in(thread)) == ["The deploy runs at noon.", "Fridays too."]
        last = llms[0].requests[-1]["messages"]
        assert any(m.get("content") == "The deploy runs at noon." for m in last)
        await asyncio.to_thread(cluster.stop_all)
        assert cluster.errors_logged() == []
    finally:
        await asyncio.to_thread(cluster.stop_all)
        await fake.stop()
        for llm in llms:
            llm.stop()


async def enqueue(url: str, message: OutboxMessage) -> None:
    db = Database(url)
    try:
        assert await Outbox(db).enqueue(message)
    finally:
        await db.dispose()


async def holder_of(url: str, key: str, cluster: Cluster, fake: FakeDiscord, channel: str) -> Proc:
    """The process whose lease holds outbox row `key` once its post reached Discord."""
    await cluster.until(
        lambda: fake.calls_to("POST", rf"/channels/{channel}/messages"), "the outbox post"
    )
    [(owner,)] = rows(url, "SELECT lease_owner FROM outbox WHERE key = %s", key)
    # Lease owners are host:pid:random (core.outbox.owner_id).
    pid = int(str(owner).split(":")[1])
    return next(p for p in cluster.procs if p.pid == pid)


def expire_leases(url: str) -> None:
    with psycopg.connect(url) as conn:
        conn.execute(
            "UPDATE outbox SET lease_until = now() - interval '1 second' "
            "WHERE lease_until IS NOT NULL AND state = 'pending'"
        )
