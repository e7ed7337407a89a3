"""The Slack adapter end to end: the real app (composition root + slack-bolt) served by uvicorn
on a local port, Slack-signed requests over real HTTP, the real slack_sdk client talking to a
fake Slack Web API on 127.0.0.1, and the fake model. No mocks of bolt.

Waiting is on recorded calls or on the adapter finishing its scheduled work (`app.idle()`),
never on sleeps.
"""

from __future__ import annotations

import asyncio
import json
import logging
import signal
import time
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any
from urllib.parse import urlencode

import pytest

from core.commands import Command, CommandContext
from core.request import Attachment, Reply
from tests.bot.test_cli import cli_env, free_port, run_cli, spawn, wait_until
from tests.conftest import POLICY_ALL
from tests.support.fakes.openai_server import FakeOpenAI
from tests.support.fakes.slack_api import FakeSlack
from tests.support.fakes.slack_events import (
    SIGNING_SECRET,
    ServedApp,
    command,
    event_body,
    mention,
    message,
    new_ts,
    send,
)

__all__ = ["cli_env", "spawn"]  # fixtures shared with the CLI tests

StartApp = Callable[..., ServedApp]


@pytest.fixture
def fake_slack() -> Iterator[FakeSlack]:
    fake = FakeSlack().start()
    yield fake
    fake.stop()


@pytest.fixture
def serve_slack(
    make_settings: Callable[..., Any],
    write_policy: Callable[[str], Path],
    fake_slack: FakeSlack,
    fake_llm: FakeOpenAI,
) -> Iterator[StartApp]:
    started: list[ServedApp] = []

    def start(
        *,
        policy: str = POLICY_ALL,
        setup: Callable[[Any], None] | None = None,
        settings: dict[str, Any] | None = None,
        **tuning: float,
    ) -> ServedApp:
        configured = make_settings(
            **(settings or {}),
            policy_file=write_policy(policy),
            llm_base_url=fake_llm.url,
            llm_model="fake-model",
            llm_max_retries=0,
            slack_bot_token=fake_slack.bot_token,
            slack_signing_secret=SIGNING_SECRET,
            slack_api_url=fake_slack.api_url,
        )
        app = ServedApp(configured, setup=setup, **tuning).start()
        started.append(app)
        return app

    yield start
    for app in started:
        app.stop()


def texts(fake: FakeSlack, channel: str) -> list[str]:
    return [m["text"] for m in fake.posted(channel)]


def methods(fake: FakeSlack) -> list[str]:
    return [c.method for c in fake.calls()]


# -- mentions and threads -----------------------------------------------------------------------


def test_a_mention_gets_exactly_one_reply_in_the_thread_of_that_message(
    serve_slack: StartApp, fake_slack: FakeSlack, fake_llm: FakeOpenAI
) -> None:
    app = serve_slack()
    fake_llm.reply("Signatures are checked in `webhooks/verify.py`.")
    root = new_ts()

    resp = app.post_event(mention("where do we validate webhook signatures?", ts=root))
    assert resp.status == 200
    app.idle()

    (posted,) = fake_slack.posted("C1")
    assert posted["thread_ts"] == root  # in the thread, not at channel level
    assert posted["text"] == "Signatures are checked in `webhooks/verify.py`."
    reactions = [c for c in fake_slack.calls() if c.method.startswith("reactions.")]
    assert [(c.method, c.args["name"], c.args["timestamp"]) for c in reactions] == [
        ("reactions.add", "eyes", root),
        ("reactions.remove", "eyes", root),
    ]
    (request,) = fake_llm.requests
    assert request["messages"][-1] == {
        "role": "user",
        "content": "where do we validate webhook signatures?",  # without the bot mention
    }

    # A mention inside that thread is answered in the same thread and continues the conversation.
    fake_llm.reply("In `tests/test_verify.py`.")
    app.post_event(mention("and the tests?", ts=new_ts(), thread_ts=root))
    app.idle()
    assert [m["thread_ts"] for m in fake_slack.posted("C1")] == [root, root]
    history = [m["content"] for m in fake_llm.requests[1]["messages"] if m["role"] != "system"]
    assert history[-3:] == [
        "where do we validate webhook signatures?",
        "Signatures are checked in `webhooks/verify.py`.",
        "and the tests?",
    ]


def test_retries_and_concurrent_duplicate_deliveries_get_no_second_reply(
    serve_slack: StartApp, fake_slack: FakeSlack, fake_llm: FakeOpenAI
) -> None:
    app = serve_slack()
    fake_llm.reply("the one answer")
    body = mention("hello?")
    retry = {"X-Slack-Retry-Num": "1", "X-Slack-Retry-Reason": "http_timeout"}

    with ThreadPoolExecutor(4) as pool:
        results = list(pool.map(lambda h: app.post_event(body, headers=h), [{}, {}, retry, {}]))
    app.idle()

    assert [r.status for r in results] == [200, 200, 200, 200]
    assert texts(fake_slack, "C1") == ["the one answer"]
    assert len(fake_llm.requests) == 1  # the duplicates never reached core


def test_follow_ups_continue_without_a_mention_and_a_mention_pair_is_answered_once(
    serve_slack: StartApp, fake_slack: FakeSlack, fake_llm: FakeOpenAI
) -> None:
    app = serve_slack()
    root = new_ts()
    fake_llm.reply("first answer")
    app.post_event(mention("how do we deploy?", ts=root))
    app.idle()

    fake_llm.reply("second answer")
    app.post_event(message("and to staging?", thread_ts=root))  # no mention: a follow-up
    app.idle()

    # One mention in the thread arrives twice: as app_mention and as message (same ts).
    fake_llm.reply("third answer")
    ts = new_ts()
    pair = [
        mention("and to prod?", ts=ts, thread_ts=root),
        message(f"<@{FakeSlack.bot_user_id}> and to prod?", ts=ts, thread_ts=root),
    ]
    with ThreadPoolExecutor(2) as pool:
        assert [r.status for r in pool.map(app.post_event, pair)] == [200, 200]
    app.idle()

    # Chatter in a thread Threadline is not part of, and at channel level, is left alone.
    app.post_event(message("unrelated", thread_ts="1600000000.000001"))
    app.post_event(message("lunch?"))
    app.idle()

    assert texts(fake_slack, "C1") == ["first answer", "second answer", "third answer"]
    assert {m["thread_ts"] for m in fake_slack.posted("C1")} == {root}
    assert len(fake_llm.requests) == 3
    assert fake_llm.requests[2]["messages"][-1]["content"] == "and to prod?"


def test_direct_messages_are_answered_and_bot_messages_and_edits_are_ignored(
    serve_slack: StartApp, fake_slack: FakeSlack, fake_llm: FakeOpenAI
) -> None:
    app = serve_slack()
    ignored = [
        message("from another bot", channel="D1", channel_type="im", bot_id="B9", user=None),
        message("my own echo", channel="D1", channel_type="im", user=FakeSlack.bot_user_id),
        message("edited", channel="D1", channel_type="im", subtype="message_changed", user=None),
    ]
    for body in ignored:
        assert app.post_event(body).status == 200
    app.idle()
    assert methods(fake_slack) == ["auth.test"]
    assert fake_llm.requests == []

    fake_llm.reply("Hi in private.")
    dm = new_ts()
    app.post_event(message("hello", channel="D1", channel_type="im", ts=dm))
    app.idle()
    app.post_event(message("/help", channel="D1", channel_type="im"))
    app.idle()
    posted = fake_slack.posted("D1")
    assert posted[0]["text"] == "Hi in private."
    assert posted[0]["thread_ts"] == dm
    assert "Threadline" in posted[1]["text"]  # help is personal, and a DM already is
    assert fake_slack.calls("chat.postEphemeral") == []


def test_every_subscribed_event_type_and_interactivity_is_acknowledged(
    serve_slack: StartApp, fake_slack: FakeSlack
) -> None:
    app = serve_slack()
    other = event_body({"type": "reaction_added", "user": "U1", "reaction": "+1"})
    assert app.post_event(other).status == 200  # not 404, which Slack would retry
    check = app.post_event({"type": "url_verification", "challenge": "abc123", "token": "t"})
    assert (check.status, json.loads(check.body)) == (200, {"challenge": "abc123"})
    action = {
        "type": "block_actions",
        "team": {"id": "T1"},
        "user": {"id": "U1"},
        "actions": [{"action_id": "x", "block_id": "b", "type": "button"}],
        "trigger_id": "1.2",
    }
    form = urlencode({"payload": json.dumps(action)}).encode()
    assert send(app.events_url, form, "application/x-www-form-urlencoded").status == 200
    app.idle()
    assert methods(fake_slack) == ["auth.test"]


# -- verification ---------------------------------------------------------------------------------


def test_a_wrong_signature_or_an_old_timestamp_gets_401_and_no_api_call(
    serve_slack: StartApp,
    fake_slack: FakeSlack,
    fake_llm: FakeOpenAI,
    caplog: pytest.LogCaptureFixture,
) -> None:
    app = serve_slack()
    body = mention("the secret plan is BLUEBIRD")
    with caplog.at_level(logging.INFO):
        forged = app.post_event(body, secret="not-the-signing-secret")
        stale = app.post_event(body, timestamp=int(time.time()) - 360)  # wall clock: bolt's check
        app.idle()

    assert (forged.status, stale.status) == (401, 401)
    assert methods(fake_slack) == ["auth.test"]  # the start-up check only
    assert fake_llm.requests == []
    assert "Invalid request signature" in caplog.text  # it was logged...
    assert "BLUEBIRD" not in caplog.text  # ...without the body
    assert SIGNING_SECRET not in caplog.text


# -- slash commands -------------------------------------------------------------------------------


def test_a_slow_slash_command_is_acknowledged_in_time_and_answered_afterwards(
    serve_slack: StartApp, fake_slack: FakeSlack, fake_llm: FakeOpenAI
) -> None:
    app = serve_slack()
    fake_llm.reply("Deploys go through Helm.", delay=5.0)

    resp = app.post_command(command("ask how do we deploy?", channel="C5"))
    acked = time.monotonic()

    assert resp.status == 200
    assert resp.seconds < 3.0  # Slack's limit; the model is still thinking
    assert resp.body == ""
    (call,) = fake_slack.wait_calls("chat.postMessage", 1, timeout=30)
    assert call.at > acked  # the result arrived after the ack
    assert call.args["channel"] == "C5"
    assert "thread_ts" not in call.args  # a new message in the channel, starting a thread
    assert call.args["text"] == "<@U1> used `/threadline ask how do we deploy?`\n" + (
        "Deploys go through Helm."
    )
    assert fake_llm.requests[0]["messages"][-1]["content"] == "how do we deploy?"


def test_a_skill_runs_from_the_slash_command(
    serve_slack: StartApp, fake_slack: FakeSlack, fake_llm: FakeOpenAI, tmp_path: Path
) -> None:
    from tests.core.skills.test_skills import write_skill

    write_skill(tmp_path / "skills", "deploy-check", "Pre-deploy checks.", "DEPLOY-BODY")
    app = serve_slack(settings={"skills_dirs": [tmp_path / "skills"]})
    fake_llm.reply("Dashboards are green.")
    app.post_command(command("skill deploy-check v2 today", channel="C5"))
    (call,) = fake_slack.wait_calls("chat.postMessage", 1, timeout=30)
    assert call.args["text"].endswith("Dashboards are green.")
    sent = fake_llm.requests[0]["messages"]
    assert sent[-3]["content"] == "v2 today" and "DEPLOY-BODY" in sent[-1]["content"]
    app.post_command(command("skills", user="U2", channel="C2"))
    app.idle()
    (listing,) = fake_slack.calls("chat.postEphemeral")
    assert "`deploy-check`" in listing.args["text"]


def test_personal_command_results_are_ephemeral(
    serve_slack: StartApp, fake_slack: FakeSlack
) -> None:
    app = serve_slack()
    app.post_command(command("budget", user="U2", channel="C2"))
    app.idle()
    app.post_command(command("", user="U2", channel="C2"))  # `/threadline` alone: help
    app.idle()
    budget, help_ = fake_slack.calls("chat.postEphemeral")
    assert (budget.args["channel"], budget.args["user"]) == ("C2", "U2")
    assert "*Your budget today*" in budget.args["text"]
    assert "your daily token budget: 0 of 100,000 tokens" in budget.args["text"]
    assert "`/budget`" in help_.args["text"]
    assert fake_slack.calls("chat.postMessage") == []


def test_where_the_bot_is_not_a_member_the_response_url_is_used(
    serve_slack: StartApp, fake_slack: FakeSlack
) -> None:
    app = serve_slack()
    fake_slack.fail_next("chat.postEphemeral", error="channel_not_found")
    app.post_command(command("budget", response_url=fake_slack.response_url()))
    app.idle()
    (hook,) = fake_slack.calls("response_url")
    assert hook.args["response_type"] == "ephemeral"
    assert "Your budget today" in hook.args["text"]


# -- rendering and delivery ---------------------------------------------------------------------


def long_answer() -> str:
    blocks = ["## Where validation happens\n\nThe **webhook** layer checks signatures first."]
    for n in range(3):
        code = "".join(f"    check_{n}_{i}(payload)  # rule {i}\n" for i in range(95))
        blocks.append(f"Step {n}: see below.\n\n```python\ndef step_{n}(payload):\n{code}```")
    blocks.append("That is all.")
    text = "\n\n".join(blocks)
    assert 9_000 < len(text) < 11_000
    return text


def test_a_10000_character_answer_is_one_markdown_message(
    serve_slack: StartApp, fake_slack: FakeSlack, fake_llm: FakeOpenAI
) -> None:
    """Streamed answers are Markdown in messages of up to 12,000 characters (longer ones:
    tests/adapters/slack/test_stream_web.py)."""
    app = serve_slack()
    answer = long_answer()
    fake_llm.reply(answer)
    root = new_ts()
    app.post_event(mention("explain validation", ts=root))
    app.idle()
    assert fake_slack.shown("C1") == [answer]
    assert fake_slack.posted("C1")[0]["thread_ts"] == root


def test_a_10000_character_command_answer_with_code_blocks_is_split_correctly(
    serve_slack: StartApp, fake_slack: FakeSlack, fake_llm: FakeOpenAI
) -> None:
    app = serve_slack()
    answer = long_answer()
    fake_llm.reply(answer)
    app.post_command(command("ask explain validation"))
    app.idle()

    posted = fake_slack.posted("C1")
    root = posted[0]["ts"]
    assert posted[0]["text"].startswith("<@U1> used `/threadline ask explain validation`\n")
    posted[0] = {**posted[0], "text": posted[0]["text"].split("\n", 1)[1], "thread_ts": root}
    assert len(posted) >= 4
    for m in posted:
        assert m["thread_ts"] == root
        assert len(m["text"]) <= 3_000  # well under Slack's ~4,000 (and a section's 3,000)
        assert m["text"].count("```") % 2 == 0  # every part renders its code on its own
    assert posted[0]["text"].startswith("*Where validation happens*")
    assert posted[-1]["text"].endswith("That is all.")
    lines = [ln for m in posted for ln in m["text"].splitlines() if "check_" in ln]
    expected = [f"    check_{n}_{i}(payload)  # rule {i}" for n in range(3) for i in range(95)]
    assert lines == expected  # nothing lost, duplicated or reordered


def test_an_attachment_is_uploaded_into_the_thread(
    serve_slack: StartApp, fake_slack: FakeSlack
) -> None:
    """No core feature produces attachments yet (voice replies come later), so a small test
    command, registered through core's public command registry, returns a Reply with one:
    the request still goes mention -> core -> adapter -> files_upload_v2 for real."""
    png = b"\x89PNG\r\n\x1a\n" + bytes(range(256)) * 8

    async def chart(ctx: CommandContext, args: str) -> Reply:
        return Reply("Here is the chart.", attachments=(Attachment("image", "chart.png", png),))

    def setup(app: Any) -> None:
        app.core.commands.add(Command("chart", "/chart", "test: reply with a file", chart))

    app = serve_slack(setup=setup)
    root = new_ts()
    app.post_event(mention("/chart", ts=root))
    app.idle()

    assert texts(fake_slack, "C1") == ["Here is the chart."]
    (url_call,) = fake_slack.calls("files.getUploadURLExternal")
    assert (url_call.args["filename"], int(url_call.args["length"])) == ("chart.png", len(png))
    (complete,) = fake_slack.calls("files.completeUploadExternal")
    assert complete.args["channel_id"] == "C1"
    assert complete.args["thread_ts"] == root
    (uploaded,) = json.loads(complete.args["files"])
    assert fake_slack.upload(uploaded["id"]) == png


def test_a_rate_limited_post_is_retried_after_retry_after(
    serve_slack: StartApp, fake_slack: FakeSlack, fake_llm: FakeOpenAI
) -> None:
    app = serve_slack()
    fake_slack.fail_next("chat.startStream", status=429, headers={"Retry-After": "1"})
    fake_llm.reply("worth the wait")
    app.post_event(mention("hi"))
    app.idle()

    first, second = fake_slack.calls("chat.startStream")
    assert second.at - first.at >= 1.0  # honoured Retry-After
    assert texts(fake_slack, "C1") == ["worth the wait"]
    assert fake_slack.throttled == 1


def test_a_part_refused_as_too_long_is_uploaded_as_a_file_instead(
    serve_slack: StartApp, fake_slack: FakeSlack, fake_llm: FakeOpenAI
) -> None:
    app = serve_slack()  # a posted (not streamed) answer: a slash command's
    fake_slack.fail_next("chat.postMessage", error="msg_too_long")
    fake_llm.reply("A *dense* answer.")
    app.post_command(command("ask hi"))
    app.idle()

    assert fake_slack.posted("C1") == []  # no half answer
    (complete,) = fake_slack.calls("files.completeUploadExternal")
    assert complete.args["channel_id"] == "C1"
    assert "too long for a chat message" in complete.args["initial_comment"]
    (uploaded,) = json.loads(complete.args["files"])
    assert fake_slack.upload(uploaded["id"]) == b"A *dense* answer."


def test_a_lost_response_does_not_post_twice_and_a_retry_posts_only_missing_parts(
    serve_slack: StartApp, fake_slack: FakeSlack, fake_llm: FakeOpenAI
) -> None:
    app = serve_slack()
    # 1) The answer is posted but the response is lost: the thread is read back, not re-posted.
    fake_slack.drop_next("chat.postMessage")
    fake_llm.reply("posted exactly once")
    app.post_command(command("ask hi"))
    app.idle()
    (once,) = texts(fake_slack, "C1")
    assert once.endswith("\nposted exactly once")
    assert len(fake_slack.calls("chat.postMessage")) == 1  # not re-sent
    assert fake_slack.calls("conversations.history")  # read back instead

    # 2) A long answer whose second part fails transiently: the delivery is retried and posts
    # only the parts that are missing.
    fake_slack.fail_next("chat.postMessage", error="internal_error", status=500, after=1)
    fake_llm.reply(long_answer())
    app.post_command(command("ask long please", channel="C2"))
    app.idle()
    posted = texts(fake_slack, "C2")
    assert len(posted) == len(set(posted)) >= 4  # every part once
    to_c2 = [c for c in fake_slack.calls("chat.postMessage") if c.args["channel"] == "C2"]
    assert len(to_c2) == len(posted) + 1  # the failed part was the only one sent twice
    parts = [c.args["metadata"]["event_payload"]["part"] for c in to_c2]
    assert parts == [0, 1, *range(1, len(posted))]


def test_a_long_slash_command_shows_a_progress_line_in_the_channel(
    serve_slack: StartApp, fake_slack: FakeSlack
) -> None:
    """`/threadline index api` on a big repository: progress in the channel, then removed."""
    import asyncio

    async def slow(ctx: CommandContext, _args: str) -> Reply:
        assert ctx.progress is not None
        await ctx.progress("Indexing `api`: 10/100 files scanned…")
        await asyncio.sleep(0.5)
        return Reply("Indexed `api`.")

    def setup(app: Any) -> None:
        app.core.commands.add(Command("slow", "/slow", "test: long work", slow))

    app = serve_slack(setup=setup, progress_after=0.0, progress_interval=0.1)
    app.post_command(command("slow"))
    app.idle()

    progress = fake_slack.calls("chat.postMessage")[0]
    assert progress.args["text"] == "Indexing `api`: 10/100 files scanned…"
    assert progress.args["channel"] == "C1" and "thread_ts" not in progress.args
    (deleted,) = fake_slack.calls("chat.delete")
    assert deleted.at > progress.at
    assert texts(fake_slack, "C1")[-1].endswith("\nIndexed `api`.")  # under "<@U1> used …"
    assert "Indexing" not in " ".join(texts(fake_slack, "C1"))


# -- tenants and policy ---------------------------------------------------------------------------


def test_two_tenants_get_separate_sessions_and_memory(
    serve_slack: StartApp, fake_slack: FakeSlack, fake_llm: FakeOpenAI
) -> None:
    app = serve_slack()
    same_ts = new_ts()  # the same channel id and message ts in two workspaces
    fake_llm.reply("Noted: the codename is Bluebird.")
    app.post_event(mention("remember: the codename is Bluebird", team="T1", ts=same_ts))
    app.idle()
    fake_llm.reply("I know of no codename.")
    app.post_event(mention("what is the codename?", team="T2", ts=same_ts))
    app.idle()

    assert len(fake_llm.requests) == 2  # T2's identical channel+ts was not taken as a duplicate
    assert "Bluebird" not in json.dumps(fake_llm.requests[1]["messages"])

    app.post_command(command("save the runbook lives in Notion", team="T1"))
    app.idle()
    app.post_command(command("memory list", team="T2"))
    app.idle()
    app.post_command(command("memory list", team="T1"))
    app.idle()
    t2_list, t1_list = (c.args["text"] for c in fake_slack.calls("chat.postEphemeral"))
    assert "runbook" not in t2_list
    assert "runbook lives in Notion" in t1_list


READ_ONLY = (
    POLICY_ALL
    + """
[[rules]]
name = "read-only channel"
match = { platform = "slack", channel = "CRO" }
deny = ["memory.write", "ask"]
"""
)


def test_a_permission_denial_names_the_missing_permission(
    serve_slack: StartApp, fake_slack: FakeSlack, fake_llm: FakeOpenAI
) -> None:
    app = serve_slack(policy=READ_ONLY)
    root = new_ts()
    app.post_event(mention("summarize the incident", channel="CRO", ts=root))
    app.post_command(command("save we deploy on Fridays", channel="CRO"))
    app.idle()

    (in_thread,) = fake_slack.posted("CRO")
    assert in_thread["thread_ts"] == root  # the refusal is one message in the thread
    assert "`ask` permission" in in_thread["text"]
    (private,) = fake_slack.calls("chat.postEphemeral")
    assert "`memory.write` permission" in private.args["text"]
    assert fake_llm.requests == []


# -- processes: serve and run --------------------------------------------------------------


def slack_env(cli_env: dict[str, str], fake_slack: FakeSlack, **extra: str) -> dict[str, str]:
    return {
        **cli_env,
        "SLACK_BOT_TOKEN": fake_slack.bot_token,
        "SLACK_SIGNING_SECRET": SIGNING_SECRET,
        "SLACK_API_URL": fake_slack.api_url,
        **extra,
    }


@pytest.mark.parametrize(
    ("change", "expected"),
    [
        ({"SLACK_BOT_TOKEN": "xoxb-revoked-token"}, "auth.test answered invalid_auth"),
        ({"SLACK_SIGNING_SECRET": ""}, "SLACK_SIGNING_SECRET is empty"),
        ({"SLACK_API_URL": "http://127.0.0.1:1/api"}, "cannot reach the Slack Web API"),
        ({"SLACK_API_URL": "http://127.0.0.1:1"}, "must be the Web API base URL ending in /api/"),
    ],
)
def test_serve_refuses_to_start_with_a_broken_slack_setup(
    cli_env: dict[str, str],
    fake_slack: FakeSlack,
    tmp_path: Path,
    change: dict[str, str],
    expected: str,
) -> None:
    env = slack_env(cli_env, fake_slack, **change)
    proc = run_cli(env, tmp_path, "serve", "--port", str(free_port()))
    assert proc.returncode == 2, proc.stderr
    assert expected in proc.stderr
    assert "Traceback" not in proc.stderr
    assert "xoxb-revoked-token" not in proc.stderr


def test_serve_answers_signed_slack_traffic(
    cli_env: dict[str, str],
    fake_slack: FakeSlack,
    fake_llm: FakeOpenAI,
    spawn: Callable[..., Any],
) -> None:
    env = slack_env(
        cli_env, fake_slack, LLM_BASE_URL=fake_llm.url, LLM_MODEL="m", LLM_MAX_RETRIES="0"
    )
    port = free_port()
    proc, log = spawn(env, "serve", "--port", str(port))
    url = f"http://127.0.0.1:{port}/slack/events"
    fake_llm.reply("answered by `threadline serve`")
    root = new_ts()
    body = json.dumps(mention("hi", ts=root)).encode()

    def accepted() -> bool:
        try:
            return send(url, body, "application/json", timeout=2).status == 200
        except OSError:
            return False

    wait_until(accepted, proc, log, "the signed mention to be accepted")
    fake_slack.wait_calls("chat.stopStream", 1)
    assert fake_slack.posted("C1")[0]["thread_ts"] == root
    proc.send_signal(signal.SIGTERM)
    assert proc.wait(10) == 0, log.read_text()
    assert "Traceback" not in log.read_text()


def test_run_uses_socket_mode_when_an_app_token_is_set(
    cli_env: dict[str, str],
    fake_slack: FakeSlack,
    fake_llm: FakeOpenAI,
    spawn: Callable[..., Any],
) -> None:
    env = slack_env(
        cli_env,
        fake_slack,
        SLACK_APP_TOKEN=fake_slack.app_token,
        SLACK_SIGNING_SECRET="",
        LLM_BASE_URL=fake_llm.url,
        LLM_MODEL="m",
        LLM_MAX_RETRIES="0",
    )
    proc, log = spawn(env, "run")
    fake_llm.reply("answered over Socket Mode")
    root = new_ts()

    envelope = fake_slack.send_envelope("events_api", mention("hi", ts=root), timeout=20)
    assert fake_slack.wait_ack(envelope)["envelope_id"] == envelope
    fake_slack.wait_calls("chat.stopStream", 1)
    assert fake_slack.posted("C1")[0]["thread_ts"] == root
    assert fake_slack.posted("C1")[0]["text"] == "answered over Socket Mode"

    slash = fake_slack.send_envelope("slash_commands", command("budget"))
    fake_slack.wait_ack(slash)
    (budget,) = fake_slack.wait_calls("chat.postEphemeral", 1)
    assert "Your budget today" in budget.args["text"]

    proc.send_signal(signal.SIGTERM)
    assert proc.wait(10) == 0, log.read_text()
    assert "Traceback" not in log.read_text()


def test_graph_with_image_posts_the_text_and_uploads_the_picture_into_the_thread(
    serve_slack: StartApp, fake_slack: FakeSlack, make_settings: Callable[..., Any], tmp_path: Path
) -> None:
    from bot.app import build_app
    from core.code.walk import index_repo
    from tests.core.code.graph.test_graph import png_size
    from tests.core.code.graph.test_store import make

    async def index() -> None:
        built = build_app(make_settings())
        try:
            await index_repo(built.db, await built.repos.register(str(make(tmp_path / "api"))))
        finally:
            await built.aclose()

    asyncio.run(index())
    app = serve_slack()
    root = new_ts()
    app.post_event(mention("/graph helper --callers --image", ts=root))
    app.idle()

    (posted,) = fake_slack.posted("C1")
    assert posted["thread_ts"] == root
    assert posted["text"].startswith("`helper` — function in api: pkg/util.py:1")
    assert "Job.run (main.py:" in posted["text"]
    (url_call,) = fake_slack.calls("files.getUploadURLExternal")
    assert url_call.args["filename"] == "graph-helper.png"
    (complete,) = fake_slack.calls("files.completeUploadExternal")
    assert (complete.args["channel_id"], complete.args["thread_ts"]) == ("C1", root)
    (uploaded,) = json.loads(complete.args["files"])
    width, height = png_size(fake_slack.upload(uploaded["id"]))
    assert width >= 300 and height >= 150
