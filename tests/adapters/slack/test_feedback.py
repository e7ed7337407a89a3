"""👍/👎 under answers on Slack, end to end: the real app and slack-bolt served by uvicorn, the
fake model answering, the `feedback_buttons` block under the answer in the fake Slack, and
signed `block_actions` clicks and `view_submission` forms sent back over HTTP — to the process
that answered, or to a second web process on the same database.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

from sqlmodel import select

from adapters.slack.feedback import ACTION_ID, REASON_BLOCK, REASON_INPUT, REASON_VIEW
from bot.app import build_app, build_slack
from core.store.models import AnswerRating
from tests.adapters.slack.test_slack import fake_slack, serve_slack
from tests.adapters.slack.test_stream_web import answer_text
from tests.conftest import POLICY_ALL
from tests.support.fakes.openai_server import FakeOpenAI
from tests.support.fakes.slack_api import FakeSlack
from tests.support.fakes.slack_events import (
    ServedApp,
    command,
    feedback_click,
    mention,
    new_ts,
    view_submission,
)

__all__ = ["fake_slack", "serve_slack"]  # fixtures shared with the Slack tests

StartApp = Callable[..., ServedApp]
THANKS_UP = "Thanks for the 👍."
REFUSED = "That answer can no longer be rated."
NOTED = "Thanks, your reason is noted with your 👎."


def _buttons(message: dict[str, Any]) -> dict[str, str]:
    """The feedback buttons' values under a message, by rating."""
    for block in message.get("blocks") or []:
        if block.get("type") != "context_actions":
            continue
        for element in block["elements"]:
            if element["type"] == "feedback_buttons" and element["action_id"] == ACTION_ID:
                return {
                    "up": element["positive_button"]["value"],
                    "down": element["negative_button"]["value"],
                }
    return {}


def _answer(
    app: ServedApp, fake_slack: FakeSlack, fake_llm: FakeOpenAI, text: str
) -> dict[str, Any]:
    """Ask in C1; returns the answer's message (the one with the buttons), once written."""
    fake_llm.reply(text)
    root = new_ts()
    assert app.post_event(mention("why is the build red?", ts=root)).status == 200
    app.idle()
    rated = [m for m in fake_slack.posted("C1") if _buttons(m)]
    assert len(rated) == 1, fake_slack.posted("C1")
    assert rated[0]["thread_ts"] == root
    return rated[0]


def _ratings(app: ServedApp) -> list[tuple[str, str, str | None, str | None]]:
    async def read() -> list[tuple[str, str, str | None, str | None]]:
        async with app.app.db.session() as s:
            rows = (await s.exec(select(AnswerRating))).all()
        return [(r.user, r.value, r.reason, r.link) for r in rows]

    return list(app.run(read()))


def _count(app: ServedApp) -> int:
    return int(app.run(app.app.core.feedback.count("slack", "T1")))


def _ephemerals(fake_slack: FakeSlack) -> list[tuple[str, str, str]]:
    return [
        (c.args["channel"], c.args["user"], c.args["text"])
        for c in fake_slack.calls("chat.postEphemeral")
    ]


def test_an_answer_gets_the_buttons_and_a_click_is_stored_and_thanked(
    serve_slack: StartApp, fake_slack: FakeSlack, fake_llm: FakeOpenAI
) -> None:
    app = serve_slack()
    answer = _answer(app, fake_slack, fake_llm, "The linter fails on `api/auth.py`.")
    assert answer["text"] == "The linter fails on `api/auth.py`."  # streamed, then stopped
    buttons = _buttons(answer)
    answer_id = buttons["up"].removeprefix("up:")
    assert len(answer_id) == 32 and buttons["down"] == f"down:{answer_id}"

    resp = app.post_interaction(feedback_click(answer, "up", user="U2"))
    assert resp.status == 200 and resp.seconds < 3.0
    app.idle()
    assert _ephemerals(fake_slack) == [("C1", "U2", THANKS_UP)]
    thread_ts = answer["thread_ts"]
    link = (
        f"https://slack.com/archives/C1/p{answer['ts'].replace('.', '')}"
        f"?thread_ts={thread_ts}&cid=C1"
    )
    assert _ratings(app) == [("U2", "up", None, link)]
    assert fake_slack.calls("views.open") == []  # a 👍 asks nothing more


def test_commands_and_refusals_get_no_buttons(
    serve_slack: StartApp, fake_slack: FakeSlack, fake_llm: FakeOpenAI
) -> None:
    app = serve_slack()
    app.post_event(mention("/save the build uses make"))
    app.post_event(mention("/budget"))  # personal: posted privately, as blocks or not
    app.idle()
    assert fake_slack.posted("C1") and not any(_buttons(m) for m in fake_slack.posted("C1"))
    assert fake_slack.calls("chat.postEphemeral")
    assert all("blocks" not in c.args for c in fake_slack.calls("chat.postEphemeral"))


def test_an_answer_posted_whole_has_the_buttons_under_its_last_part(
    serve_slack: StartApp, fake_slack: FakeSlack, fake_llm: FakeOpenAI
) -> None:
    """A slash command's answer is posted (not streamed), split in parts: the buttons go
    under the last one, and a click there is rated like any other."""
    app = serve_slack()
    fake_llm.reply(("A long paragraph about retries. " * 40 + "\n\n") * 6 + "The end.")
    app.post_command(command("ask why do retries pile up?"))
    app.idle()
    posted = [m for m in fake_slack.posted("C1")]
    assert len(posted) >= 2
    assert [bool(_buttons(m)) for m in posted] == [False] * (len(posted) - 1) + [True]
    assert "The end." in json.dumps(posted[-1]["blocks"])
    app.post_interaction(feedback_click(posted[-1], "up", user="U3"))
    app.idle()
    assert [(u, v) for u, v, _, _ in _ratings(app)] == [("U3", "up")]


def test_changing_a_rating_three_times_keeps_one_row_with_the_last_value(
    serve_slack: StartApp, fake_slack: FakeSlack, fake_llm: FakeOpenAI
) -> None:
    app = serve_slack()
    answer = _answer(app, fake_slack, fake_llm, "Because of the cache.")
    for rating in ("up", "down", "up"):
        app.post_interaction(feedback_click(answer, rating, user="U2"))
        app.idle()
    assert [(u, v) for u, v, _, _ in _ratings(app)] == [("U2", "up")]
    assert [text for _, _, text in _ephemerals(fake_slack)] == [
        THANKS_UP,
        "Changed your rating to 👎. Thanks.",
        "Changed your rating to 👍. Thanks.",
    ]


def test_a_down_rating_opens_a_form_whose_reason_is_stored(
    serve_slack: StartApp, fake_slack: FakeSlack, fake_llm: FakeOpenAI
) -> None:
    app = serve_slack()
    answer = _answer(app, fake_slack, fake_llm, "Restart the runner.")
    click = feedback_click(answer, "down", user="U2")
    app.post_interaction(click)
    app.idle()
    # The 👎 counts at once (closing the form loses nothing), and the form asks why.
    assert [(u, v, r) for u, v, r, _ in _ratings(app)] == [("U2", "down", None)]
    (opened,) = fake_slack.calls("views.open")
    assert opened.args["trigger_id"] == click["trigger_id"]
    (view,) = fake_slack.views
    assert view["callback_id"] == REASON_VIEW
    assert view["blocks"][0]["element"]["max_length"] == 300
    assert view["blocks"][0]["optional"] is True
    assert "Thanks for the 👎" in _ephemerals(fake_slack)[0][2]

    why = "It was\nthe flaky test,\x07 not the runner"
    sent = app.post_interaction(
        view_submission(view, {REASON_BLOCK: {REASON_INPUT: why}}, user="U2")
    )
    assert sent.status == 200 and sent.body == ""  # an empty ack closes the form
    app.idle()
    assert [(u, v, r) for u, v, r, _ in _ratings(app)] == [
        ("U2", "down", "It was the flaky test, not the runner")
    ]
    assert _ephemerals(fake_slack)[1] == ("C1", "U2", NOTED)

    # Sent empty (the reason is optional), the earlier reason stays.
    app.post_interaction(view_submission(view, {REASON_BLOCK: {REASON_INPUT: None}}, user="U2"))
    app.idle()
    assert _ratings(app)[0][2] == "It was the flaky test, not the runner"


def test_a_second_web_process_takes_the_click(
    serve_slack: StartApp, fake_slack: FakeSlack, fake_llm: FakeOpenAI, database_url: str
) -> None:
    answering = serve_slack(settings={"database_url": database_url})
    other = serve_slack(settings={"database_url": database_url})
    answer = _answer(answering, fake_slack, fake_llm, "Because of the cache.")
    other.post_interaction(feedback_click(answer, "down", user="U2"))
    other.idle()
    (view,) = fake_slack.views
    other.post_interaction(
        view_submission(view, {REASON_BLOCK: {REASON_INPUT: "stale"}}, user="U2")
    )
    other.idle()
    assert [(u, v, r) for u, v, r, _ in _ratings(answering)] == [("U2", "down", "stale")]
    assert _count(answering) == 1
    assert _ephemerals(fake_slack)[0][:2] == ("C1", "U2")


def test_forged_ids_and_answers_from_another_channel_or_workspace_are_refused(
    serve_slack: StartApp, fake_slack: FakeSlack, fake_llm: FakeOpenAI
) -> None:
    app = serve_slack()
    answer = _answer(app, fake_slack, fake_llm, "Because of the cache.")
    answer_id = _buttons(answer)["up"].removeprefix("up:")
    clicks = [
        feedback_click(answer, "up", value="up:" + "0" * 32),  # an id nobody was given
        feedback_click(answer, "up", value="up:../../etc/passwd"),
        feedback_click(answer, "down", channel="C2"),  # the button seen from elsewhere
        feedback_click(answer, "up", team="T2"),  # another workspace
        feedback_click(answer, "up", value=f"meh:{answer_id}"),
    ]
    for click in clicks:
        app.post_interaction(click)
        app.idle()
    told = _ephemerals(fake_slack)
    assert [text for _, _, text in told[:4]] == [REFUSED] * 4
    assert told[2][0] == "C2"  # told where they clicked
    assert "👍 or 👎" in told[4][2]
    assert fake_slack.calls("views.open") == []  # a refused 👎 opens no form
    # A form whose metadata names another channel rates nothing there either.
    forged_view = {
        "type": "modal",
        "callback_id": REASON_VIEW,
        "private_metadata": json.dumps(
            {"answer": answer_id, "channel": "C2", "ts": answer["ts"], "thread_ts": None}
        ),
    }
    app.post_interaction(view_submission(forged_view, {REASON_BLOCK: {REASON_INPUT: "x"}}))
    app.idle()
    assert _ephemerals(fake_slack)[-1] == ("C2", "U1", REFUSED)
    assert _count(app) == 0 and _ratings(app) == []
    # A request signed with another secret never reaches the listener.
    forged = app.post_interaction(feedback_click(answer, "up"), secret="not-the-secret")
    assert forged.status == 401
    assert _count(app) == 0


def test_without_feedback_there_are_no_buttons(
    serve_slack: StartApp, fake_slack: FakeSlack, fake_llm: FakeOpenAI
) -> None:
    app = serve_slack(settings={"feedback": False})
    fake_llm.reply("Because of the cache.")
    app.post_event(mention("why?"))
    app.idle()
    assert fake_slack.posted("C1") and not any(_buttons(m) for m in fake_slack.posted("C1"))


async def test_clicks_and_the_form_work_over_socket_mode(
    make_settings: Callable[..., Any],
    write_policy: Callable[[str], Path],
    fake_slack: FakeSlack,
    fake_llm: FakeOpenAI,
) -> None:
    """`threadline run` with an app token: the click and the form arrive as `interactive`
    envelopes, acknowledged over the socket."""
    settings = make_settings(
        policy_file=write_policy(POLICY_ALL),
        llm_base_url=fake_llm.url,
        llm_model="fake-model",
        llm_max_retries=0,
        slack_bot_token=fake_slack.bot_token,
        slack_app_token=fake_slack.app_token,
        slack_api_url=fake_slack.api_url,
    )
    app = build_app(settings)
    await app.db.create_all()
    slack = build_slack(app, "socket")
    await slack.start()
    stop = asyncio.Event()
    serving = asyncio.create_task(slack.run_socket_mode(stop))
    try:
        fake_llm.reply("Because of the cache.")
        event = mention("why?", ts=new_ts())
        await asyncio.to_thread(fake_slack.send_envelope, "events_api", event, 20)
        answer = await asyncio.to_thread(
            fake_slack.wait_for,
            lambda: any(_buttons(m) for m in fake_slack.posted("C1")),
            30,
            "the answer's buttons",
        )
        assert answer
        (posted,) = [m for m in fake_slack.posted("C1") if _buttons(m)]
        click = feedback_click(posted, "down", user="U2")
        envelope = await asyncio.to_thread(fake_slack.send_envelope, "interactive", click)
        await asyncio.to_thread(fake_slack.wait_ack, envelope)
        async with asyncio.timeout(30):
            await slack.idle()
        (view,) = fake_slack.views
        form = view_submission(view, {REASON_BLOCK: {REASON_INPUT: "stale"}}, user="U2")
        envelope = await asyncio.to_thread(fake_slack.send_envelope, "interactive", form)
        await asyncio.to_thread(fake_slack.wait_ack, envelope)
        async with asyncio.timeout(30):
            await slack.idle()
        async with app.db.session() as s:
            rows = (await s.exec(select(AnswerRating))).all()
        assert [(r.user, r.value, r.reason) for r in rows] == [("U2", "down", "stale")]
        assert [text for _, _, text in _ephemerals(fake_slack)][-1] == NOTED
    finally:
        stop.set()
        await serving
        await slack.aclose()
        await app.aclose()


def test_with_edits_refused_the_buttons_go_under_the_rest_then_under_whole_answers(
    serve_slack: StartApp, fake_slack: FakeSlack, fake_llm: FakeOpenAI
) -> None:
    app = serve_slack(edit_interval=0.2)
    fake_slack.refuse_streaming()
    fake_slack.refuse_updates("cant_update_message")
    answer = answer_text()
    fake_llm.stream_rate = 40
    fake_llm.reply(answer)
    app.post_event(mention("where?"))
    app.idle()
    first, rest = fake_slack.posted("C1")
    assert not _buttons(first) and _buttons(rest)  # the answer's last message has them
    assert first["text"] + rest["text"] == answer

    fake_llm.reply("A whole answer.")
    app.post_event(mention("again?", channel="C2"))
    app.idle()
    (whole,) = fake_slack.posted("C2")  # posted whole (the workspace takes no edits)
    assert whole["text"] == "A whole answer." and _buttons(whole)
    app.post_interaction(feedback_click(whole, "up", channel="C2", user="U2"))
    app.idle()
    assert _ephemerals(fake_slack) == [("C2", "U2", THANKS_UP)]


def test_on_enterprise_grid_a_click_from_another_workspace_of_the_organization_counts(
    serve_slack: StartApp, fake_slack: FakeSlack, fake_llm: FakeOpenAI
) -> None:
    """The tenant is the organization: someone of another of its workspaces, in the same
    (shared) channel, rates the answer; a click naming no organization does not."""
    app = serve_slack()
    fake_llm.reply("Because of the cache.")
    app.post_event(mention("why?", team="T1", enterprise="E1"))
    app.idle()
    (answer,) = [m for m in fake_slack.posted("C1") if _buttons(m)]
    app.post_interaction(feedback_click(answer, "up", user="U7", team="T7", enterprise="E1"))
    app.post_interaction(feedback_click(answer, "up", user="U8", team="T1"))
    app.idle()
    told = {user: text for _, user, text in _ephemerals(fake_slack)}
    assert told == {"U7": THANKS_UP, "U8": REFUSED}
    assert int(app.run(app.app.core.feedback.count("slack", "E1"))) == 1


# -- the pure parts --------------------------------------------------------------------------------


def test_links_values_and_the_forms_metadata() -> None:
    from adapters.slack.feedback import feedback_blocks, message_link, parse_value, reason_view

    assert message_link("C1", "1700000000.000100") == (
        "https://slack.com/archives/C1/p1700000000000100"
    )
    assert message_link("C1", "1700000000.000200", "1700000000.000100") == (
        "https://slack.com/archives/C1/p1700000000000200?thread_ts=1700000000.000100&cid=C1"
    )
    assert message_link("C1/../x", "1.2") is None and message_link("C1", "now") is None
    assert parse_value("down:" + "a" * 32) == ("down", "a" * 32)
    assert parse_value("up:" + "b" * 500) == ("up", "b" * 64)  # cut; core refuses it
    assert parse_value("nonsense") == ("nonsense", "")
    assert feedback_blocks(None) == [] and feedback_blocks("") == []
    view = reason_view("c" * 32, "C1", "1.2", None)
    assert json.loads(view["private_metadata"]) == {
        "answer": "c" * 32,
        "channel": "C1",
        "ts": "1.2",
        "thread_ts": None,
    }


def test_a_form_whose_metadata_is_not_ours_rates_nothing() -> None:
    from adapters.slack.feedback import _where

    assert _where("not json") is None
    assert _where("[1, 2]") is None
    assert _where(json.dumps({"answer": "a", "channel": "c1", "ts": "1.2"})) is None  # channel
    assert _where(json.dumps({"answer": "a", "channel": "C1", "ts": "1.2", "thread_ts": 5})) is None
    assert _where(json.dumps({"answer": "a", "channel": "C1", "ts": "1.2"})) == (
        "a",
        "C1",
        "1.2",
        None,
    )
