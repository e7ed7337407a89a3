"""Streamed answers on Slack end to end: the real app (core streaming from the fake model,
slack-bolt behind uvicorn, Slack-signed events) writing into the fake Slack Web API through
the real slack_sdk client and its `chat_stream` helper. No mocks.

Waiting is on recorded calls or on the adapter finishing its work (`app.idle()`). The fake
model writes at a set rate so an answer is still being written while the test looks; the
spacing of Slack calls is read from the fake's own receive times.
"""

from __future__ import annotations

from itertools import pairwise
from statistics import median
from typing import Any

import pytest

from core import messages
from tests.adapters.slack.test_slack import StartApp, fake_slack, serve_slack
from tests.support.fakes.openai_server import FakeOpenAI
from tests.support.fakes.slack_api import FakeSlack, shown_text
from tests.support.fakes.slack_events import mention, new_ts, retry_headers

__all__ = ["fake_slack", "serve_slack"]  # fixtures shared with the Slack tests

STREAM_METHODS = ("chat.startStream", "chat.appendStream", "chat.stopStream")


def answer_text(sentences: int = 12) -> str:
    return " ".join(f"Sentence {i} says where `check_{i}` runs." for i in range(sentences))


def posted_parts(app: Any, key: str) -> dict[int, str]:
    return dict(app.run(app.app.core.events.posted("slack", key)))


def spacing(calls: list[Any]) -> list[float]:
    return [b.at - a.at for a, b in pairwise(calls)]


def wait_for_stream(fake: FakeSlack, channel: str = "C1") -> dict[str, Any]:
    fake.wait_for(lambda: any(m["text"] for m in fake.streams(channel)), 15, "streamed words")
    return fake.streams(channel)[0]


def test_a_mention_is_streamed_into_its_thread_as_one_message(
    serve_slack: StartApp, fake_slack: FakeSlack, fake_llm: FakeOpenAI
) -> None:
    app = serve_slack()
    answer = answer_text()
    fake_llm.stream_rate = 40  # pieces of ~4 characters a second: ~3 s for the answer
    fake_llm.reply(answer)
    root = new_ts()
    app.post_event(mention("where do the checks run?", ts=root))

    early = wait_for_stream(fake_slack)
    assert early["streaming"] and early["thread_ts"] == root
    assert answer.startswith(early["text"]) and len(early["text"]) < len(answer)  # before the end
    fake_slack.wait_calls("chat.appendStream", 1)  # (a call after the start was recorded)
    # Visible and unfinished: a note is armed in case this process dies now.
    assert app.run(app.app.outbox.backlog()) == 1
    app.idle()

    (message,) = fake_slack.posted("C1")  # one message, no progress line, no second post
    assert message["text"] == answer and not message["streaming"]
    assert fake_slack.calls("chat.postMessage") == []
    assert posted_parts(app, f"T1:C1:{root}") == {0: message["ts"]}  # recorded: exactly once
    calls = [c for c in fake_slack.calls() if c.method in STREAM_METHODS]
    appends = [c for c in calls if c.method == "chat.appendStream"]
    assert len(appends) >= 2  # batched, not one call per piece (~100 pieces) ...
    assert len(calls) <= (calls[-1].at - calls[0].at) / 0.25 + 3
    # ... at most about one call per 250 ms. The fake stamps arrival, not sending: on a loaded
    # machine one call may arrive late and the next on time, so single gaps can be shorter.
    assert median(spacing(appends)) >= 0.2
    start = calls[0].args
    assert (start["recipient_team_id"], start["recipient_user_id"]) == ("T1", "U1")
    status = fake_slack.calls("assistant.threads.setStatus")[0]
    assert status.at < calls[0].at and status.args["status"] == "is thinking…"
    assert app.run(app.app.outbox.backlog()) == 0  # the cut-answer note was withdrawn


def test_tool_steps_are_shown_as_task_updates_instead_of_a_progress_line(
    serve_slack: StartApp, fake_slack: FakeSlack, fake_llm: FakeOpenAI
) -> None:
    app = serve_slack(progress_after=0.0)
    fake_llm.tool_calls(("current_time", {}))
    fake_llm.reply("It is noon.")
    app.post_event(mention("what time is it?"))
    app.idle()

    (message,) = fake_slack.posted("C1")
    assert message["text"] == "It is noon."
    assert message["task_display_mode"] == "timeline"
    (steps,) = message["tasks"].values()
    assert [status for _, status in steps] == ["in_progress", "complete"]
    assert {title for title, _ in steps} == {"Running `current_time`"}
    assert fake_slack.calls("chat.postMessage") == fake_slack.calls("chat.delete") == []


def test_streaming_refused_edits_one_message_at_most_once_a_second_and_is_remembered(
    serve_slack: StartApp, fake_slack: FakeSlack, fake_llm: FakeOpenAI
) -> None:
    app = serve_slack()
    fake_slack.refuse_streaming(team="T1", error="feature_not_enabled")
    answer = answer_text()
    fake_llm.stream_rate = 40
    fake_llm.reply(answer)
    app.post_event(mention("where?"))
    app.idle()

    (message,) = fake_slack.posted("C1")
    assert shown_text(message) == answer
    # (Then the 👍/👎 of an answer people may rate: tests/adapters/slack/test_feedback.py.)
    assert message["blocks"][:1] == [{"type": "markdown", "text": answer}]
    assert [b["type"] for b in message["blocks"][1:]] == ["context_actions"]
    (post,) = fake_slack.calls("chat.postMessage")
    edits = fake_slack.calls("chat.update")
    assert len(edits) >= 2
    assert min(spacing([post, *edits])) >= 0.8  # one write a second (arrival times jitter)

    fake_llm.reply("Again, edited.")
    app.post_event(mention("again?"))
    app.idle()
    assert len(fake_slack.calls("chat.startStream")) == 1  # not asked again in T1
    assert shown_text(fake_slack.posted("C1")[-1]) == "Again, edited."


def test_a_stream_that_expires_midway_is_completed_by_editing_its_message(
    serve_slack: StartApp, fake_slack: FakeSlack, fake_llm: FakeOpenAI
) -> None:
    app = serve_slack()
    fake_slack.expire_streams_after(2)
    answer = answer_text()
    fake_llm.stream_rate = 40
    fake_llm.reply(answer)
    app.post_event(mention("where?"))
    app.idle()

    (message,) = fake_slack.posted("C1")  # the same message, completed: nothing twice
    assert shown_text(message) == answer
    refused = fake_slack.calls("chat.appendStream")[2:]
    assert refused and fake_slack.calls("chat.update")
    assert fake_slack.calls("chat.postMessage") == []


def test_edits_refused_post_what_is_missing_once_then_whole_answers(
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

    first, rest = fake_slack.shown("C1")
    assert first + rest == answer  # what was shown, then the rest once: no loss, no repeat
    assert len(fake_slack.calls("chat.update")) == 1  # refused once, not tried again

    fake_llm.reply("A whole answer.")
    app.post_event(mention("again?", channel="C2"))
    app.idle()
    (whole,) = fake_slack.posted("C2")  # posted once, finished
    assert whole["text"] == "A whole answer."
    assert len(fake_slack.calls("chat.update")) == 1


def test_a_slack_retry_during_a_stream_opens_no_second_stream(
    serve_slack: StartApp, fake_slack: FakeSlack, fake_llm: FakeOpenAI
) -> None:
    app = serve_slack()
    answer = answer_text()
    fake_llm.stream_rate = 40
    fake_llm.reply(answer)
    body = mention("where?")
    app.post_event(body)
    wait_for_stream(fake_slack)
    for attempt in (1, 2):  # Slack delivers the same event again while the answer streams
        assert app.post_event(body, headers=retry_headers(attempt)).status == 200
    app.idle()

    (message,) = fake_slack.posted("C1")
    assert message["text"] == answer
    assert len(fake_slack.calls("chat.startStream")) == 1
    assert len(fake_llm.requests) == 1


def test_an_answer_cut_by_shutdown_ends_its_message_with_the_note(
    serve_slack: StartApp, fake_slack: FakeSlack, fake_llm: FakeOpenAI
) -> None:
    app = serve_slack()
    answer = answer_text(40)
    fake_llm.stream_rate = 20
    fake_llm.reply(answer)
    app.post_event(mention("where?"))
    wait_for_stream(fake_slack)
    assert app.run(app.slack.stop(0.0)) == 1  # shutdown's grace is over: the answer is cut

    (message,) = fake_slack.posted("C1")
    shown, note = message["text"].rsplit("\n\n", 1)
    assert note == f"_{messages.ANSWER_CUT}_" and not message["streaming"]
    assert answer.startswith(shown) and shown  # the words shown stay, then the note
    assert app.run(app.app.outbox.backlog()) == 0  # our own note went out: none armed


@pytest.mark.parametrize("native", [True, False])
def test_an_answer_longer_than_a_message_continues_at_a_boundary(
    serve_slack: StartApp, fake_slack: FakeSlack, fake_llm: FakeOpenAI, native: bool
) -> None:
    app = serve_slack(settings={"slack_stream": native}, edit_interval=0.05)
    blocks = []
    for n in range(5):
        code = "".join(f"    check_{n}_{i}(payload)  # rule {i}\n" for i in range(90))
        blocks.append(f"Step {n}: see below.\n\n```python\ndef step_{n}(payload):\n{code}```")
    answer = "\n\n".join([*blocks, "That is all."])
    assert 15_000 < len(answer) < 20_000
    fake_llm.reply(answer)
    root = new_ts()
    app.post_event(mention("explain", ts=root))
    app.idle()

    texts = fake_slack.shown("C1")
    assert len(texts) == 2
    assert all(len(t) <= 12_000 and t.count("```") % 2 == 0 for t in texts)
    assert texts[-1].endswith("That is all.")
    lines = [ln for t in texts for ln in t.splitlines() if "check_" in ln]
    assert lines == [f"    check_{n}_{i}(payload)  # rule {i}" for n in range(5) for i in range(90)]
    parts = posted_parts(app, f"T1:C1:{root}")
    assert sorted(parts) == [0, 1]
    assert len(fake_slack.calls("chat.startStream")) == (2 if native else 0)
