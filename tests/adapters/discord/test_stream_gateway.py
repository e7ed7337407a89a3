"""Streamed answers on Discord, end to end: the real discord.py client (through the real
composition root) against the fake Discord on 127.0.0.1.

Core's events are written by the test (`Script` stands in for `Core.stream`), so each step of
an answer happens exactly when the test says; one test runs the real core against the fake
model's streamed answer. Pacing runs on `ManualTime`, which the test moves on: no sleeps, no
wall clock. The fake Discord stamps edits with the same clock, so "at most one edit a second"
is checked on what Discord received.
"""

from __future__ import annotations

import asyncio
import functools
import itertools
from collections.abc import AsyncGenerator, Awaitable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, replace
from typing import Any

import pytest

from adapters.discord.translate import render
from adapters.pacing import Pacing, StreamCounts
from bot.app import App
from core import messages
from core.request import Reply, Request, Source
from core.streaming import Finished, ReplyEvent, Status, TextDelta, ToolFinished, ToolStarted
from tests.adapters.discord.test_discord import RunningBot, StartBot, fake_discord, start_bot, texts
from tests.support.fakes.discord_server import FakeDiscord, Posted
from tests.support.fakes.openai_server import FakeOpenAI

__all__ = ["fake_discord", "start_bot"]  # fixtures shared with test_discord


class ManualTime:
    """The pacing clock and sleep: time moves only when the test moves it."""

    def __init__(self) -> None:
        self.now = 0.0
        self._wakes: list[float] = []
        self._changed = asyncio.Condition()

    def clock(self) -> float:
        return self.now

    async def sleep(self, delay: float) -> None:
        wake = self.now + delay
        async with self._changed:
            self._wakes.append(wake)
            self._changed.notify_all()
            try:
                await self._changed.wait_for(lambda: self.now >= wake)
            finally:
                self._wakes.remove(wake)

    async def until_waiting(self) -> float:
        """Wait until something sleeps (the writer holding an edit back); returns when it
        wakes."""
        async with self._changed:
            await asyncio.wait_for(
                self._changed.wait_for(lambda: any(w > self.now for w in self._wakes)), 10
            )
            return min(w for w in self._wakes if w > self.now)

    async def advance(self, seconds: float) -> None:
        async with self._changed:
            self.now += seconds
            self._changed.notify_all()

    async def next(self) -> None:
        """Move on to the moment the next sleeper wakes."""
        wake = await self.until_waiting()
        await self.advance(wake - self.now)

    async def run_out(self, work: Awaitable[Any]) -> None:
        """Await `work`, moving time on whenever something in it sleeps."""
        task = asyncio.ensure_future(work)
        while not task.done():
            waiting = asyncio.create_task(self.until_waiting())
            await asyncio.wait({task, waiting}, return_when=asyncio.FIRST_COMPLETED)
            if waiting.done() and not waiting.cancelled() and waiting.exception() is None:
                await self.advance(waiting.result() - self.now)
            else:
                waiting.cancel()
                await asyncio.gather(waiting, return_exceptions=True)
        await task


class Answer:
    """One answer core is writing: the test sends its events."""

    def __init__(self, request: Request) -> None:
        self.request = request
        self.streamed = ""
        self.events: asyncio.Queue[ReplyEvent] = asyncio.Queue()

    def text(self, *pieces: str) -> None:
        for piece in pieces:
            self.streamed += piece
            self.events.put_nowait(TextDelta(piece))

    def status(self, text: str) -> None:
        self.events.put_nowait(Status(text))

    def tool(self, call_id: str, label: str) -> None:
        self.events.put_nowait(ToolStarted(call_id, label))

    def tool_done(self, call_id: str, label: str) -> None:
        self.events.put_nowait(ToolFinished(call_id, label, True))

    def finish(self, reply: Reply | None = None) -> Reply:
        reply = reply or Reply(self.streamed)
        self.events.put_nowait(Finished(reply, self.streamed))
        return reply


class Script:
    """`Core.stream`, written by the test: each event is yielded when the test sends it. The
    answer-writing methods act on the latest request's answer."""

    def __init__(self) -> None:
        self.answers: list[Answer] = []
        self.closed = 0  # streams closed (a finished answer, or cancelled work)
        self._asked = asyncio.Condition()

    def install(self, app: App) -> None:
        app.core.stream = self.stream  # type: ignore[method-assign]  # the test writes core's part

    async def stream(self, request: Request) -> AsyncGenerator[ReplyEvent]:
        answer = Answer(request)
        async with self._asked:
            self.answers.append(answer)
            self._asked.notify_all()
        try:
            while True:
                event = await answer.events.get()
                yield event
                if isinstance(event, Finished):
                    return
        finally:
            self.closed += 1

    async def asked(self, count: int = 1) -> None:
        async with self._asked:
            await asyncio.wait_for(self._asked.wait_for(lambda: len(self.answers) >= count), 10)

    @property
    def streamed(self) -> str:
        return self.answers[-1].streamed

    def text(self, *pieces: str) -> None:
        self.answers[-1].text(*pieces)

    def status(self, text: str) -> None:
        self.answers[-1].status(text)

    def tool(self, call_id: str, label: str) -> None:
        self.answers[-1].tool(call_id, label)

    def tool_done(self, call_id: str, label: str) -> None:
        self.answers[-1].tool_done(call_id, label)

    def finish(self, reply: Reply | None = None) -> Reply:
        return self.answers[-1].finish(reply)


@dataclass
class Streaming:
    bot: RunningBot
    fake: FakeDiscord
    script: Script
    time: ManualTime
    counts: StreamCounts

    async def ask(self, question: str) -> str:
        """Mention Threadline in #general; returns the thread its answer goes into."""
        fake = self.fake
        message = await fake.post_message(fake.alice, fake.general, f"{fake.mention()} {question}")
        await self.script.asked()
        return message["id"]

    async def done(self) -> None:
        await self.time.run_out(self.bot.adapter.idle())

    @contextmanager
    def ticking(self) -> Iterator[None]:
        """Time moves on by itself inside the block (the writer never waits for the test)."""

        async def tick() -> None:
            while True:
                await self.time.next()

        task = asyncio.get_running_loop().create_task(tick())
        try:
            yield
        finally:
            task.cancel()


@pytest.fixture
async def streaming(start_bot: StartBot, fake_discord: FakeDiscord) -> Streaming:
    script, time, counts = Script(), ManualTime(), StreamCounts()
    bot = await start_bot(setup=script.install)
    pacing = Pacing(edit_every=1.0, first_flush=0.0, clock=time.clock, sleep=time.sleep)
    bot.adapter.config = replace(bot.adapter.config, pacing=replace(pacing, counts=counts))
    fake_discord.edit_clock = time.clock
    return Streaming(bot, fake_discord, script, time, counts)


def gaps(posted: Posted) -> list[float]:
    """Seconds between a message's writes (its post, then each edit), as Discord got them."""
    times = [t for t in [posted.posted_at, *posted.edited_at] if t is not None]
    return [b - a for a, b in itertools.pairwise(times)]


def final_parts(reply: Reply) -> list[str]:
    return [o.text for o in render(reply, upload_limit=10_000_000)]


# -- one message, written as it comes ----------------------------------------------------------


async def test_a_streamed_answer_shows_its_first_words_at_once_and_ends_exactly(
    streaming: Streaming,
) -> None:
    s, fake = streaming, streaming.fake
    thread = await s.ask("how do retries work?")

    s.script.text("Retries back off")
    [message] = await fake.wait_for(lambda: fake.messages_in(thread))
    assert message.content == "Retries back off"  # at once: no time has passed
    assert thread in fake.typing  # "typing…" until then

    s.script.text(" exponentially, up to 5 times.")
    wake = await s.time.until_waiting()  # the edit is held back...
    assert wake == 1.0 and message.edits == []
    # Visible but unfinished: a note waits in the outbox in case this process dies.
    assert await s.bot.app.outbox.backlog("discord") == 1
    await s.time.advance(1.0)  # ...until a second after the post
    await fake.wait_for(lambda: message.edits)
    assert message.content == "Retries back off exponentially, up to 5 times."

    reply = s.script.finish(
        Reply(
            s.script.streamed,
            notices=("Based on the retry docs.",),
            sources=(Source("code", "docs/x"),),
        )
    )
    await s.done()

    assert texts(fake.messages_in(thread)) == final_parts(reply)  # what a plain post would be
    assert message.edited_at == [1.0, 2.0]  # the final edit kept the pace too
    assert s.counts.first_text == [0.0] and (s.counts.posts, s.counts.edits) == (1, 2)
    assert s.script.closed == 1
    assert await s.bot.app.outbox.backlog("discord") == 0  # finished: the note withdrawn
    assert fake.unhandled == []


async def test_tool_steps_show_as_a_status_line_that_the_final_text_drops(
    streaming: Streaming,
) -> None:
    s, fake = streaming, streaming.fake
    thread = await s.ask("where do we retry?")

    # The agent reports a step as a progress line, then the step itself: the step's own label
    # is what shows, before any words as the message itself.
    s.script.status("Working on it… running `search_code` (step 1)")
    s.script.tool("c1", "Searching code for `retry`")
    [message] = await fake.wait_for(lambda: fake.messages_in(thread))
    assert message.content == "_Searching code for `retry`…_"

    s.script.tool_done("c1", "Searching code for `retry`")
    s.script.text("Retries live in `client.py`.")
    await s.time.next()
    await fake.wait_for(lambda: len(message.edits) == 1)
    assert message.content == "Retries live in `client.py`."  # the same message, now the answer

    s.script.tool("c2", "Reading `client.py`")
    await s.time.next()
    await fake.wait_for(lambda: len(message.edits) == 2)
    assert message.content == "Retries live in `client.py`.\n\n_Reading `client.py`…_"

    s.script.tool_done("c2", "Reading `client.py`")
    s.script.text(" They back off up to 5 times.")
    reply = s.script.finish()
    await s.done()

    assert texts(fake.messages_in(thread)) == [reply.text]  # no status line left
    assert not any("Working on it" in c for p in fake.posts for c in [p.content, *p.edits])
    assert "Reading" not in message.content and len(fake.messages_in(thread)) == 1


def _long_answer() -> str:
    code = "\n".join(f"    step_{i} = run(batch={i}, retries=3)  # line {i}" for i in range(60))
    return (
        "Here is how the importer works.\n\n"
        + ("It reads rows in batches and validates each one. " * 20).strip()
        + "\n\nThe core loop:\n\n```python\ndef run():\n"
        + code
        + "\n```\n\n"
        + ("After that the results are written back and indexed. " * 14).strip()
    )


async def test_a_long_answer_continues_in_a_new_message_before_2000_characters(
    streaming: Streaming,
) -> None:
    s, fake = streaming, streaming.fake
    fake.limit_edits(1.0)  # Discord's answer to an edit sooner than that: 429
    answer = _long_answer()
    assert len(answer) > 3_000
    thread = await s.ask("explain the importer")

    with s.ticking():
        pieces = [answer[i : i + 40] for i in range(0, len(answer) - 200, 40)]
        for piece in pieces:
            s.script.text(piece)
            await asyncio.sleep(0)  # the writer reads each piece as it comes
        # Continued in a second message while the answer is still being written.
        await fake.wait_for(lambda: len(fake.messages_in(thread)) >= 2)
        s.script.text(answer[len(s.script.streamed) :])
        reply = s.script.finish()
        await s.bot.adapter.idle()

    parts = final_parts(reply)
    posted = fake.messages_in(thread)
    assert texts(posted) == parts and len(parts) >= 3
    assert all(len(p.content) <= 2_000 for p in fake.posts)
    # A message is continued in the next only once its text is final: never edited after.
    for earlier, later in itertools.pairwise(posted):
        assert later.posted_at is not None
        assert all(at <= later.posted_at for at in earlier.edited_at)
    # The code block was cut where it had to be: closed there, reopened with its language.
    assert any(
        a.endswith("\n```") and b.startswith("```python\n") for a, b in itertools.pairwise(parts)
    )
    lines = [ln for p in parts for ln in p.splitlines() if ln.startswith("    step_")]
    assert len(lines) == 60  # nothing lost or repeated at the cuts
    for message in posted:
        assert all(gap >= 1.0 for gap in gaps(message))
    assert fake.rate_limited == []  # paced under the limit: Discord never said 429


async def test_answers_sharing_a_busy_channel_share_its_edit_budget(
    streaming: Streaming,
) -> None:
    s, fake = streaming, streaming.fake
    fake.limit_channel_edits(5, 5.0)  # past that, Discord answers 429
    thread = await fake.add_thread("incident")
    for i in range(3):  # three questions at once in one thread: one channel for Discord
        await fake.post_message(fake.alice, thread, f"{fake.mention()} question {i}")
    await s.script.asked(3)
    answers = s.script.answers

    def shown_everywhere(words: str) -> bool:
        return sum(words in p.content for p in fake.messages_in(thread)) == len(answers)

    with s.ticking():
        for sentence in range(6):
            for n, answer in enumerate(answers):
                answer.text(f"Answer {n}, sentence {sentence}. ")
            # Each answer shows its new sentence before the next one is written.
            await fake.wait_for(functools.partial(shown_everywhere, f"sentence {sentence}."))
        replies = [a.finish() for a in answers]
        await s.bot.adapter.idle()

    posted = fake.messages_in(thread)
    assert sorted(texts(posted)) == sorted(t for r in replies for t in final_parts(r))
    assert fake.rate_limited == []  # together under the channel's limit
    stamps = sorted(t for p in posted for t in p.edited_at)
    assert all(b - a >= 5.0 for a, b in zip(stamps, stamps[5:], strict=False))
    assert all(len(p.edits) >= 2 for p in posted)  # each was still written as it came


# -- app commands ------------------------------------------------------------------------------


async def test_an_app_command_streams_through_its_deferred_response_and_follow_ups(
    streaming: Streaming,
) -> None:
    s, fake = streaming, streaming.fake
    state = await fake.slash(fake.alice, "ask", "explain the importer", option="question")
    await s.script.asked()

    s.script.text("Here is how")
    original = await fake.wait_for(lambda: state.visible)
    assert [p.content for p in original] == ["Here is how"]  # the deferred response, edited
    answer = _long_answer()
    rest = answer[len("Here is how") :]
    with s.ticking():  # past 2,000 characters: the answer continues in a follow-up
        s.script.text(rest[:2_400])
        await fake.wait_for(lambda: state.followups)
    s.script.text(rest[2_400:2_500])
    await s.time.next()
    await fake.wait_for(lambda: any(p.edits for p in state.followups))  # written as it comes
    with s.ticking():
        s.script.text(rest[2_500:])
        reply = s.script.finish()
        await s.bot.adapter.idle()

    assert texts(state.visible) == final_parts(reply) and len(state.visible) >= 2
    assert [p.kind for p in state.visible] == ["original"] + ["followup"] * (len(state.visible) - 1)
    assert not any(p.ephemeral for p in state.visible)
    assert state.original is not None and state.original.edits[0] == "Here is how"
    assert fake.unhandled == []


async def test_a_personal_answer_streams_privately(streaming: Streaming) -> None:
    s, fake = streaming, streaming.fake
    state = await fake.slash(fake.alice, "memory", "list", option="action")
    await s.script.asked()
    assert state.deferred_ephemeral  # Discord fixes visibility when the command is deferred

    s.script.text("You have saved:\n\n")
    await fake.wait_for(lambda: state.visible)
    with s.ticking():
        s.script.text("\n".join(f"- #{i} fact number {i} about the deploys" for i in range(80)))
        reply = s.script.finish(Reply(s.script.streamed, ephemeral=True))
        await s.bot.adapter.idle()

    assert texts(state.visible) == final_parts(reply) and len(state.visible) >= 2
    assert all(p.ephemeral for p in state.visible)


# -- when Discord refuses, and when the answer is cut ----------------------------------------


async def test_a_message_deleted_meanwhile_gets_the_final_answer_posted_once(
    streaming: Streaming,
) -> None:
    s, fake = streaming, streaming.fake
    thread = await s.ask("why?")
    s.script.text("Because the batch")
    [message] = await fake.wait_for(lambda: fake.messages_in(thread))
    message.deleted = True  # a moderator removed it

    s.script.text(" size is 10,000 rows.")
    reply = s.script.finish()
    await s.done()

    [final] = fake.messages_in(thread)
    assert final.content == reply.text and final.edits == []
    assert s.counts.refused_edits == 1
    assert len(fake.calls_to("POST", rf"/channels/{thread}/messages")) == 2


async def test_edits_refused_leave_what_is_shown_and_post_only_the_rest(
    streaming: Streaming,
) -> None:
    s, fake = streaming, streaming.fake
    thread = await s.ask("why?")
    s.script.text("Because the batch")
    [message] = await fake.wait_for(lambda: fake.messages_in(thread))
    fake.fail_next("PATCH", rf"/channels/{thread}/messages/\d+", 403, code=50001)

    s.script.text(" size is 10,000 rows.")
    await s.time.next()  # the live edit is refused
    await fake.wait_for(lambda: fake.calls_to("PATCH", rf"/channels/{thread}/messages/\d+"))
    s.script.text(" Lower it to 1,000.")
    reply = s.script.finish()
    await s.done()

    shown = texts(fake.messages_in(thread))
    assert shown == ["Because the batch", " size is 10,000 rows. Lower it to 1,000."]
    assert "".join(shown) == reply.text  # nothing repeated, nothing lost
    assert message.edits == []


async def test_the_rest_after_a_refused_edit_reopens_the_code_block_it_was_cut_in(
    streaming: Streaming,
) -> None:
    s, fake = streaming, streaming.fake
    thread = await s.ask("show me")
    s.script.text("Like this:\n\n```python\nx = 1\n")
    [message] = await fake.wait_for(lambda: fake.messages_in(thread))
    assert message.content == "Like this:\n\n```python\nx = 1\n```"  # closed for display
    fake.fail_next("PATCH", rf"/channels/{thread}/messages/\d+", 403, code=50001)

    s.script.text("y = 2\n```\n\nDone.")
    s.script.finish()
    await s.done()

    assert texts(fake.messages_in(thread)) == [
        "Like this:\n\n```python\nx = 1\n```",
        "```python\ny = 2\n```\n\nDone.",
    ]


async def test_an_edit_rate_limited_by_discord_is_retried_and_the_answer_ends_exactly(
    streaming: Streaming,
) -> None:
    s, fake = streaming, streaming.fake
    thread = await s.ask("rate limits?")
    s.script.text("First words")
    [message] = await fake.wait_for(lambda: fake.messages_in(thread))
    fake.rate_limit_next("PATCH", rf"/channels/{thread}/messages/\d+")

    s.script.text(", then the rest.")
    reply = s.script.finish()
    await s.done()

    assert message.content == reply.text and message.edits == [reply.text]
    assert len(fake.calls_to("PATCH", rf"/channels/{thread}/messages/\d+")) == 2  # 429, retry


async def test_a_cut_answer_ends_its_visible_message_with_the_note(
    streaming: Streaming,
) -> None:
    s, fake = streaming, streaming.fake
    thread = await s.ask("a long story")
    s.script.text("Once upon a time")
    [message] = await fake.wait_for(lambda: fake.messages_in(thread))
    s.script.text(", in a data centre far")

    cut = await s.bot.adapter.stop(0.0)  # shutdown: no grace left for the answer

    assert cut == 1 and s.script.closed == 1  # the work behind the stream was closed
    assert message.content == f"Once upon a time\n\n{messages.ANSWER_CUT}"
    assert len(fake.messages_in(thread)) == 1
    assert await s.bot.app.outbox.backlog("discord") == 0  # our own note said it


async def test_with_streaming_off_the_answer_is_posted_once_when_finished(
    streaming: Streaming,
) -> None:
    s, fake = streaming, streaming.fake
    s.bot.adapter.config = replace(s.bot.adapter.config, stream=False)
    thread = await s.ask("quietly")
    s.script.tool("c1", "Searching code for `retry`")
    s.script.text("All ", "at ", "once.")
    reply = s.script.finish()
    await s.done()

    [message] = fake.messages_in(thread)
    assert message.content == reply.text and message.edits == []
    assert len(fake.posts) == 1


# -- through the real core ---------------------------------------------------------------------


async def test_the_real_core_streams_the_models_answer_into_the_thread(
    start_bot: StartBot, fake_discord: FakeDiscord, fake_llm: FakeOpenAI
) -> None:
    fake = fake_discord
    bot = await start_bot()
    counts = StreamCounts()
    pacing = Pacing(edit_every=0.0, first_flush=0.0, counts=counts, channel_budget=None)
    bot.adapter.config = replace(bot.adapter.config, pacing=pacing)
    answer = _long_answer()
    fake_llm.reply(answer)

    message = await fake.post_message(fake.alice, fake.general, f"{fake.mention()} importer?")
    await fake.wait_for(lambda: fake.messages_in(message["id"]))
    await bot.adapter.idle()

    assert texts(fake.messages_in(message["id"])) == final_parts(Reply(answer))
    assert fake_llm.stream_requests == 1 and len(counts.first_text) == 1
