"""The Slack answer writer (`adapters.slack.stream`) on its own: a hand-made stream of core's
reply events, the real slack_sdk `AsyncWebClient` and its `chat_stream` helper, the fake Slack
Web API on 127.0.0.1. Time is a manual clock the test moves: pacing is checked exactly, never
by sleeping."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Iterator
from typing import Any

import aiohttp
import pytest

from adapters.pacing import ChannelBudget
from adapters.slack.stream import (
    LOADING_MESSAGES,
    THINKING,
    AnswerStream,
    Call,
    Pacing,
    Written,
)
from adapters.slack.stream_message import StreamTarget, Workspaces, fit
from adapters.slack.web import make_web_client
from core import messages
from core.request import Reply, Source
from core.streaming import Finished, ReplyEvent, Status, TextDelta, ToolFinished, ToolStarted
from tests.support.fakes.slack_api import FakeSlack, shown_text

THREAD = "1700000000.000100"


class ManualTime:
    """The writer's clock and sleep: sleeping waits until the test advances the clock."""

    def __init__(self) -> None:
        self.now = 0.0
        self._waiting: list[tuple[float, asyncio.Future[None]]] = []

    def clock(self) -> float:
        return self.now

    async def sleep(self, seconds: float) -> None:
        future: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        self._waiting.append((self.now + seconds, future))
        await future

    @property
    def sleepers(self) -> int:
        return sum(1 for _, f in self._waiting if not f.done())

    def advance(self, seconds: float) -> None:
        self.now += seconds
        for at, future in list(self._waiting):
            if at <= self.now + 1e-9:
                self._waiting.remove((at, future))
                if not future.done():
                    future.set_result(None)


class Script:
    """Core's side: the test puts events, the writer reads them as `core.stream` yields."""

    def __init__(self) -> None:
        self.queue: asyncio.Queue[ReplyEvent] = asyncio.Queue()
        self.text = ""

    def say(self, *pieces: str) -> None:
        for piece in pieces:
            self.text += piece
            self.queue.put_nowait(TextDelta(piece))

    def put(self, event: ReplyEvent) -> None:
        self.queue.put_nowait(event)

    def finish(self, extra: str = "", **reply: Any) -> None:
        self.queue.put_nowait(Finished(Reply(self.text + extra, **reply), self.text))

    async def events(self) -> AsyncIterator[ReplyEvent]:
        while True:
            event = await self.queue.get()
            yield event
            if isinstance(event, Finished):
                return


@pytest.fixture
def fake() -> Iterator[FakeSlack]:
    fake = FakeSlack().start()
    yield fake
    fake.stop()


class Harness:
    def __init__(self, fake: FakeSlack, session: aiohttp.ClientSession) -> None:
        self.fake = fake
        self.client = make_web_client(fake.bot_token, fake.api_url, session)
        self.time = ManualTime()
        self.workspaces = Workspaces()
        self.recorded: list[tuple[int, str]] = []

    def writer(self, *, tenant: str = "T1", channel: str = "C1", **options: Any) -> AnswerStream:
        async def record(part: int, ts: str) -> None:
            self.recorded.append((part, ts))

        pacing = options.pop(
            "pacing", Pacing(clock=self.time.clock, sleep=self.time.sleep, message_limit=12_000)
        )
        return AnswerStream(
            self.client,
            StreamTarget(tenant, channel, THREAD, tenant, "U1", f"{tenant}:{channel}:{THREAD}"),
            self.workspaces,
            record=record,
            pacing=pacing,
            **options,
        )

    async def calls(self, method: str, n: int) -> None:
        """Wait (on the fake's condition, off the loop) until `method` was called `n` times."""
        await asyncio.to_thread(self.fake.wait_calls, method, n, 10.0)

    async def settle(self) -> None:
        """Let the writer run until it waits for the clock or for events."""
        for _ in range(50):
            await asyncio.sleep(0)

    async def done(self, task: asyncio.Task[Written]) -> Written:
        """The writer's result, moving the clock on while it waits to keep its pace."""
        for _ in range(200):
            await self.settle()
            if task.done():
                break
            if self.time.sleepers:
                self.time.advance(1.0)
            else:
                await asyncio.wait([task], timeout=0.05)  # a Slack call in flight
        return await asyncio.wait_for(task, 10)

    def count(self, method: str) -> int:
        return len(self.fake.calls(method))


@pytest.fixture
async def h(fake: FakeSlack) -> AsyncIterator[Harness]:
    async with aiohttp.ClientSession() as session:
        yield Harness(fake, session)


def start(writer: AnswerStream, script: Script) -> asyncio.Task[Written]:
    return asyncio.create_task(writer.write(script.events()))


# -- native streaming ----------------------------------------------------------------------------


async def test_first_words_go_out_at_once_then_appends_are_batched_per_interval(
    h: Harness,
) -> None:
    script = Script()
    task = start(h.writer(), script)
    script.say("Signatures ")
    await h.calls("chat.startStream", 1)
    (stream,) = h.fake.streams("C1")
    assert stream["text"] == "Signatures " and stream["streaming"]  # before the end

    script.say("are ", "checked ", "in ")
    await h.settle()
    assert h.count("chat.appendStream") == 0  # waiting for its 250 ms
    h.time.advance(0.2)
    await h.settle()
    assert h.count("chat.appendStream") == 0
    h.time.advance(0.05)
    await h.calls("chat.appendStream", 1)  # the three pieces in one call
    assert h.fake.streams("C1")[0]["text"] == "Signatures are checked in "

    script.say("`verify.py`")
    url = "https://github.com/team/api/blob/abc/webhooks/verify.py#L12"
    script.finish(".", notices=("A notice.",), sources=(Source("code", "verify.py:12", url),))
    written = await h.done(task)
    assert written.shown and written.rest == ""
    (stream,) = h.fake.streams("C1")
    assert stream["text"] == "Signatures are checked in `verify.py`.\n\n_A notice._"
    # The sources: a context block under the text, with the stream's last call.
    context = {"type": "mrkdwn", "text": f"Sources: <{url}|verify.py:12>"}
    assert stream["blocks"] == [{"type": "context", "elements": [context]}]
    assert not stream["streaming"]
    assert [m for m in h.fake.posted("C1")] == [stream]  # one message
    assert h.count("chat.appendStream") == 1 and h.count("chat.stopStream") == 1
    assert h.recorded == [(0, stream["ts"])]
    start_call = h.fake.calls("chat.startStream")[0].args
    assert start_call["thread_ts"] == THREAD
    assert (start_call["recipient_team_id"], start_call["recipient_user_id"]) == ("T1", "U1")
    assert start_call["task_display_mode"] == "timeline"
    stop = h.fake.calls("chat.stopStream")[0].args
    assert stop["metadata"]["event_payload"] == {"delivery": f"T1:C1:{THREAD}", "part": 0}


async def test_tool_steps_are_task_updates_with_their_labels(h: Harness) -> None:
    script = Script()
    task = start(h.writer(), script)
    script.put(ToolStarted("call_1", "Searching code for `retry`"))
    await h.calls("chat.startStream", 1)  # the step shows before any text
    script.put(ToolFinished("call_1", "Searching code for `retry`", ok=True))
    script.put(ToolStarted("call_2", "Reading `api/retry.py`"))
    script.put(ToolFinished("call_2", "Reading `api/retry.py`", ok=False))
    await h.settle()
    h.time.advance(0.25)
    await h.calls("chat.appendStream", 1)
    script.say("Retries are in `api/retry.py`.")
    script.finish()
    await h.done(task)

    (stream,) = h.fake.streams("C1")
    assert stream["tasks"] == {
        "call_1": [
            ("Searching code for `retry`", "in_progress"),
            ("Searching code for `retry`", "complete"),
        ],
        "call_2": [("Reading `api/retry.py`", "error")],  # started and failed within one batch
    }
    assert stream["text"] == "Retries are in `api/retry.py`."


async def test_assistant_status_until_the_first_words_and_a_refusal_is_remembered(
    h: Harness,
) -> None:
    script = Script()
    task = start(h.writer(), script)
    await h.calls("assistant.threads.setStatus", 1)
    script.put(Status("Indexing `api`: 10/100 files"))
    await h.calls("assistant.threads.setStatus", 2)
    script.say("Done.")
    script.finish()
    await h.done(task)
    first, second = (c.args for c in h.fake.calls("assistant.threads.setStatus"))
    assert (first["channel_id"], first["thread_ts"], first["status"]) == ("C1", THREAD, THINKING)
    assert first["loading_messages"] == list(LOADING_MESSAGES)
    assert second["status"] == "Indexing `api`: 10/100 files"

    h.fake.refuse_status("not_allowed")
    for _ in range(2):
        script = Script()
        task = start(h.writer(), script)
        script.say("Hi.")
        script.finish()
        await h.done(task)
    assert h.count("assistant.threads.setStatus") == 3  # refused once, not asked again
    assert h.workspaces.no_status == {"T1"}


async def test_a_reply_with_nothing_streamed_is_left_to_the_caller(h: Harness) -> None:
    script = Script()
    task = start(h.writer(assistant_status=False), script)
    script.finish("Your budget today: ...", ephemeral=True)
    written = await h.done(task)
    assert not written.shown and written.final.reply.text == "Your budget today: ..."
    assert h.fake.calls() == []

    script = Script()
    task = start(h.writer(), script)
    script.finish("Only for you.", ephemeral=True)
    await h.done(task)
    # A personal reply does not clear the status the way a message in the thread does.
    statuses = [c.args["status"] for c in h.fake.calls("assistant.threads.setStatus")]
    assert statuses == [THINKING, ""]


# -- fallbacks -----------------------------------------------------------------------------------


async def test_streaming_refused_posts_and_edits_at_most_once_a_second_and_is_remembered(
    h: Harness,
) -> None:
    h.fake.refuse_streaming(team="T1", error="feature_not_enabled")
    script = Script()
    task = start(h.writer(assistant_status=False), script)
    script.say("First words")
    await h.calls("chat.postMessage", 1)
    assert shown_text(h.fake.posted("C1")[0]) == "First words"
    for piece in [" and", " more", " words"]:
        script.say(piece)
        await h.settle()
        h.time.advance(0.25)
        await h.settle()
    assert h.count("chat.update") == 0  # 0.75 s since the post
    h.time.advance(0.25)
    await h.calls("chat.update", 1)
    script.say(".")
    script.finish()
    paced_at = h.time.now
    written = await h.done(task)
    assert h.time.now >= paced_at + 1.0  # the final edit kept the pace too
    assert written.shown and written.rest == ""
    (message,) = h.fake.posted("C1")
    assert shown_text(message) == "First words and more words."
    assert message["blocks"] == [{"type": "markdown", "text": "First words and more words."}]
    assert message["text"] == "First words and more words."  # the mrkdwn notification text
    assert h.count("chat.update") == 2  # one paced edit, the final one
    assert h.workspaces.no_stream == {"T1"}
    assert h.recorded == [(0, message["ts"])]

    # The workspace's next answer does not try streaming again; another workspace does.
    for tenant in ("T1", "T2"):
        script = Script()
        task = start(h.writer(tenant=tenant, channel=f"C{tenant}", assistant_status=False), script)
        script.say("again")
        script.finish()
        await h.done(task)
    assert len(h.fake.calls("chat.startStream")) == 2  # the refused one, and T2's
    assert h.fake.streams("CT2")[0]["text"] == "again"
    assert shown_text(h.fake.posted("CT1")[0]) == "again"


async def test_a_stream_that_expires_midway_is_completed_by_editing_its_message(
    h: Harness,
) -> None:
    h.fake.expire_streams_after(1)
    script = Script()
    task = start(h.writer(assistant_status=False), script)
    script.say("One. ")
    await h.calls("chat.startStream", 1)
    script.say("Two. ")
    await h.settle()
    h.time.advance(0.25)
    await h.calls("chat.appendStream", 1)
    script.say("Three. ")
    await h.settle()
    h.time.advance(0.25)
    await h.calls("chat.appendStream", 2)  # refused: the stream expired
    await h.calls("chat.update", 1)  # the same message, edited to the whole text so far
    assert shown_text(h.fake.posted("C1")[0]) == "One. Two. Three. "
    script.say("Four.")
    script.finish()
    written = await h.done(task)

    assert written.shown and written.rest == ""
    (message,) = h.fake.posted("C1")  # no second message
    assert shown_text(message) == "One. Two. Three. Four."
    assert h.count("chat.postMessage") == 0
    assert h.count("chat.stopStream") == 0  # edits from the break on
    assert h.workspaces.no_stream == set()  # an expired stream says nothing about the workspace


async def test_edits_refused_leave_the_rest_to_post_once_and_the_workspace_posts_whole(
    h: Harness,
) -> None:
    h.fake.refuse_streaming()
    h.fake.refuse_updates("cant_update_message")
    script = Script()
    task = start(h.writer(assistant_status=False), script)
    script.say("The first words")
    await h.calls("chat.postMessage", 1)
    script.say(", then the rest.")
    await h.settle()
    h.time.advance(1.0)
    await h.calls("chat.update", 1)  # refused
    script.finish()
    written = await h.done(task)
    assert written.shown
    assert written.rest == ", then the rest."  # shown + rest = the answer, nothing twice
    assert shown_text(h.fake.posted("C1")[0]) == "The first words"
    assert h.count("chat.update") == 1  # not tried again
    assert h.workspaces.no_edits == {"T1"}

    script = Script()
    writer = h.writer(assistant_status=False)
    assert writer.mode == "post"
    task = start(writer, script)
    script.say("A whole answer.")
    script.finish()
    written = await h.done(task)
    assert not written.shown  # the caller posts it once
    assert h.count("chat.postMessage") == 1


# -- cancellation and long answers ---------------------------------------------------------------


async def test_a_cut_answer_ends_its_message_with_the_note(h: Harness) -> None:
    script = Script()
    task = start(h.writer(assistant_status=False), script)
    script.say("The deploy runs in three steps: first")
    await h.calls("chat.startStream", 1)
    script.say(" the")
    await h.settle()
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await h.done(task)
    (message,) = h.fake.posted("C1")
    assert message["text"] == (
        f"The deploy runs in three steps: first the\n\n_{messages.ANSWER_CUT}_"
    )
    assert not message["streaming"]


async def test_a_cut_before_any_words_posts_the_note_alone(h: Harness) -> None:
    script = Script()
    task = start(h.writer(assistant_status=False), script)
    await h.settle()
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await h.done(task)
    assert [m["text"] for m in h.fake.posted("C1")] == [messages.ANSWER_CUT]


def long_text() -> str:
    code = "".join(f"    step_{i}()\n" for i in range(30))
    return (
        "Intro paragraph one.\n\nParagraph two is here.\n\n"
        f"```python\ndef run():\n{code}```\n\nClosing words after the code."
    )


async def test_a_long_answer_continues_in_further_messages_at_boundaries(h: Harness) -> None:
    pacing = Pacing(clock=h.time.clock, sleep=h.time.sleep, message_limit=200)
    script = Script()
    task = start(h.writer(assistant_status=False, pacing=pacing), script)
    text = long_text()
    for i in range(0, len(text), 40):
        script.say(text[i : i + 40])
        await h.settle()
        h.time.advance(0.25)
        await h.settle()
    script.finish()
    written = await h.done(task)
    assert written.shown and written.rest == ""

    streams = h.fake.streams("C1")
    assert len(streams) >= 3
    assert [part for part, _ in h.recorded] == list(range(len(streams)))
    for s in streams:
        assert len(s["text"]) <= 200 and not s["streaming"]
        assert s["text"].count("```") % 2 == 0  # each message renders its code on its own
    assert streams[0]["text"].startswith("Intro paragraph one.")
    assert streams[-1]["text"].endswith("Closing words after the code.")
    lines = [ln for s in streams for ln in s["text"].splitlines() if "step_" in ln]
    assert lines == [f"    step_{i}()" for i in range(30)]  # nothing lost or repeated


@pytest.mark.parametrize(
    ("written", "add", "limit"),
    [
        ("a" * 50, "b" * 20, 100),
        ("para one\n\n", "para two " * 20, 100),
        ("```py\nx = 1\n", "y = 2\n" * 30, 100),
        ("x" * 95, "\n\nmore words here", 100),
    ],
)
def test_fit_keeps_each_message_in_its_limit_and_loses_nothing(
    written: str, add: str, limit: int
) -> None:
    keep, rest = fit(written, add, limit)
    if rest is None:
        assert keep == add and len(written + add) <= limit
        return
    assert len(written + keep) <= limit
    assert _no_fences(keep + rest) == _no_fences(add)


def _no_fences(text: str) -> str:
    return text.replace("```py\n", "").replace("```\n", "").replace("\n```", "")


async def test_an_edited_message_shows_the_running_step_until_the_text_replaces_it(
    h: Harness,
) -> None:
    script = Script()
    task = start(h.writer(assistant_status=False, native=False), script)
    script.put(ToolStarted("call_1", "Searching code for `retry`"))
    await h.calls("chat.postMessage", 1)
    assert h.fake.shown("C1") == ["_Searching code for `retry`…_"]
    script.put(ToolFinished("call_1", "Searching code for `retry`", ok=True))
    script.say("Retries live in `api/retry.py`.")
    script.finish()
    await h.done(task)
    assert h.fake.shown("C1") == ["Retries live in `api/retry.py`."]  # the step line is gone
    assert h.fake.calls("chat.startStream") == []


def test_a_channel_budget_hands_out_slots_shared_by_all_answers_there() -> None:
    budget = ChannelBudget.per_second(4)
    appends: tuple[str, str, Call] = ("T1", "C1", "append")
    assert [budget.reserve(appends, 0.0) for _ in range(3)] == [0.0, 0.25, 0.5]
    assert budget.reserve(("T1", "C1", "start"), 0.0) == 0.0  # first words: not behind appends
    assert budget.reserve(("T1", "C2", "append"), 0.0) == 0.0  # another channel has its own
    assert budget.reserve(appends, 2.0) == 2.0  # a quiet channel: at once


async def test_answers_in_one_channel_share_its_budget(h: Harness) -> None:
    budget = ChannelBudget.per_second(4)
    first, second = Script(), Script()
    tasks = [
        start(h.writer(assistant_status=False, budget=budget), script) for script in (first, second)
    ]
    first.say("First answer.")
    await h.calls("chat.startStream", 1)
    second.say("Second answer.")
    await h.settle()
    assert h.count("chat.startStream") == 1  # its slot is 250 ms later
    h.time.advance(0.25)
    await h.calls("chat.startStream", 2)
    first.finish()
    second.finish()
    for task in tasks:
        await h.done(task)
    assert sorted(h.fake.shown("C1")) == ["First answer.", "Second answer."]


async def test_a_lost_append_is_not_repeated_the_message_is_edited_to_the_text(
    h: Harness,
) -> None:
    """The connection breaks after Slack appended: re-sending would show the words twice."""
    h.fake.drop_next("chat.appendStream")
    script = Script()
    task = start(h.writer(assistant_status=False), script)
    script.say("One. ")
    await h.calls("chat.startStream", 1)
    script.say("Two. ")
    await h.settle()
    h.time.advance(0.25)
    await h.calls("chat.update", 1)
    script.say("Three.")
    script.finish()
    written = await h.done(task)
    assert written.shown and written.rest == ""
    assert len(h.fake.calls("chat.appendStream")) == 1  # not retried
    assert h.fake.shown("C1") == ["One. Two. Three."]


def test_a_streamed_answer_is_read_aloud_from_its_markdown_not_its_notification_text() -> None:
    from adapters.slack.translate import read_aloud_request

    event = {"type": "reaction_added", "user": "U1", "reaction": "speaker", "item_user": "UBOT"}
    event["item"] = {"type": "message", "channel": "C1", "ts": "2.0"}  # type: ignore[assignment]
    body: Any = {"type": "event_callback", "team_id": "T1", "event_id": "Ev1", "event": event}
    whole = "A long answer with `a < b` in it. " * 200
    message: Any = {
        "ts": "2.0",
        "thread_ts": "1.0",
        "text": "A long answer with `a &lt; b` in it.\n…",  # the start only, for notifications
        "blocks": [{"type": "markdown", "text": whole}],
    }
    assert read_aloud_request(body, message).text == f"/tts {whole.strip()}"


async def test_a_lost_response_to_the_first_post_finds_the_message_instead_of_posting_again(
    h: Harness,
) -> None:
    h.fake.refuse_streaming()
    h.fake.drop_next("chat.postMessage")  # posted, but the answer never arrives
    script = Script()
    task = start(h.writer(assistant_status=False), script)
    script.say("First words")
    await h.calls("conversations.replies", 1)
    script.say(", more.")
    script.finish()
    written = await h.done(task)
    assert written.shown and written.rest == ""
    assert h.fake.shown("C1") == ["First words, more."]  # one message, edited
    assert len(h.fake.calls("chat.postMessage")) == 1
    (message,) = h.fake.posted("C1")
    assert h.recorded == [(0, message["ts"])]


async def test_without_the_assistant_status_a_long_command_reports_to_the_progress_line(
    h: Harness,
) -> None:
    lines: list[str] = []

    async def progress(text: str) -> None:
        lines.append(text)

    script = Script()
    task = start(h.writer(assistant_status=False, status_line=progress), script)
    script.put(Status("Indexing `api`: 10/100 files"))
    script.finish("Indexed `api`.")
    written = await h.done(task)
    assert lines == ["Indexing `api`: 10/100 files"]
    assert written.shown
    (post,) = h.fake.calls("chat.postMessage")  # a reply with nothing streamed: posted once
    assert post.args["blocks"] == [{"type": "markdown", "text": "Indexed `api`."}]
    assert h.fake.calls("chat.startStream") == h.fake.calls("chat.update") == []


def test_a_message_full_in_the_middle_of_a_code_line_ends_with_that_line() -> None:
    # Words went out before the message's end came near, ending mid-line ("    ste"); the
    # next message must not start with the rest of that line, unindented and cut.
    written = (
        "Intro.\n\n```python\ndef run():\n"
        + "".join(f"    step_{i}()\n" for i in range(8))
        + "    ste"
    )
    add = "p_8()\n" + "".join(f"    step_{i}()\n" for i in range(9, 20))
    keep, rest = fit(written, add, 200)
    assert rest is not None
    assert keep.startswith("p_8()\n") and keep.endswith("```\n")  # the line, then the closer
    assert rest.startswith("```python\n    step_9()\n")  # reopened at a whole line
    assert len(written + keep) <= 200


async def test_model_text_never_forms_a_slack_control_sequence(h: Harness) -> None:
    # A prompt-injected model tries to ping the channel, a user and a user group, one of them
    # split across two deltas; a tool label carries one too (from the model's arguments).
    script = Script()
    task = start(h.writer(), script)
    script.put(ToolStarted("call_1", "Searching code for `<!here>`"))
    script.say("Attention <", "!channel> and <@U0123> and <!subteam^S1>; a < b stays.")
    script.finish(" <!everyone>")
    await h.done(task)

    (stream,) = h.fake.streams("C1")
    shown = stream["text"]
    for sequence in ("<!channel>", "<@U0123>", "<!subteam^S1>", "<!everyone>"):
        assert sequence not in shown
        assert sequence.replace("<", "<\u200b") in shown  # reads the same
    assert "a < b stays." in shown
    titles = [title for steps in stream["tasks"].values() for title, _ in steps]
    assert titles and all("<!here>" not in title for title in titles)
