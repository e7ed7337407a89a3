"""`Core.stream`: the answer's words as the model writes them, tool steps with safe labels,
then one `Finished` whose reply continues exactly what was shown, on every path (answers,
failures after the first words, commands, cancellation)."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Callable
from typing import Any

import pytest

from adapters.console.translate import ConsoleIdentity, to_request
from bot.app import App, build_app
from config.settings import Settings
from core.llm.client import Completion
from core.llm.testing import ScriptedModel
from core.streaming import Finished, ReplyEvent, TextDelta, ToolFinished, ToolStarted

Make = Callable[..., tuple[App, ScriptedModel]]


@pytest.fixture
async def streaming_bot(make_settings: Callable[..., Settings]) -> AsyncIterator[Make]:
    made: list[App] = []

    def make(model: ScriptedModel | None = None) -> tuple[App, ScriptedModel]:
        model = model or ScriptedModel()
        app = build_app(make_settings(), model=model)
        made.append(app)
        return app, model

    yield make
    for app in made:
        await app.aclose()


async def collect(app: App, text: str, thread: str = "t1") -> list[ReplyEvent]:
    request = to_request(text, ConsoleIdentity(user="alice", thread=thread))
    return [event async for event in app.core.stream(request)]


def shown(events: list[ReplyEvent]) -> str:
    return "".join(e.text for e in events if isinstance(e, TextDelta))


async def test_words_arrive_before_the_end_and_the_reply_continues_them(
    streaming_bot: Make,
) -> None:
    app, model = streaming_bot()
    model.reply("  The retry lives in `src/app.py`.\n\nIt backs off twice.  \n")
    events = await collect(app, "where is the retry?")
    deltas = [e for e in events if isinstance(e, TextDelta)]
    assert len(deltas) > 3  # word by word, not one block
    last = events[-1]
    assert isinstance(last, Finished) and sum(isinstance(e, Finished) for e in events) == 1
    assert shown(events) == last.streamed == last.reply.text
    assert last.reply.text == "The retry lives in `src/app.py`.\n\nIt backs off twice."
    assert last.remainder == ""


async def test_tool_steps_have_safe_labels_and_words_before_a_call_stay(
    streaming_bot: Make,
) -> None:
    app, model = streaming_bot()
    model.tool_calls(("current_time", {}), text="Let me look. ")
    model.tool_calls(("made_up_tool", {"x": "`rm -rf /`"}))
    model.reply("It is morning.")
    events = await collect(app, "what time is it now?")
    started = [e for e in events if isinstance(e, ToolStarted)]
    done = [e for e in events if isinstance(e, ToolFinished)]
    assert [e.label for e in started] == [
        "Running `current_time`",
        "Trying a tool that does not exist",
    ]
    assert [e.ok for e in done] == [True, False]
    assert [e.call_id for e in started] == [e.call_id for e in done]
    last = events[-1]
    assert isinstance(last, Finished)
    assert last.reply.text == "Let me look.\n\nIt is morning." == shown(events)
    # The thread keeps the final words as the answer (the first are in the tool-call message).
    history = await app.core.agent._history.load(  # type: ignore[union-attr]
        to_request("x", ConsoleIdentity(user="alice", thread="t1")).conversation
    )
    assert history.messages[-1] == {"role": "assistant", "content": "It is morning."}


async def test_a_failure_after_the_first_words_ends_them_with_a_clear_line(
    streaming_bot: Make,
) -> None:
    app, model = streaming_bot()
    model.tool_calls(("current_time", {}), text="Checking the clock.")
    model.fail("unreachable")
    events = await collect(app, "time?")
    last = events[-1]
    assert isinstance(last, Finished) and not last.reply.ok
    assert last.streamed == "Checking the clock."
    assert last.reply.text.startswith("Checking the clock.\n\n")
    assert "reach" in last.remainder.lower()


async def test_commands_and_refusals_finish_without_words(streaming_bot: Make) -> None:
    app, _ = streaming_bot()
    events = await collect(app, "/help")
    assert len(events) == 1 and isinstance(events[0], Finished)
    assert events[0].reply.ok and "/help" in events[0].reply.text


class HangingModel(ScriptedModel):
    """Writes its first words, then hangs (a provider that stalls mid-answer) until cancelled;
    later calls answer from the script as usual."""

    def __init__(self) -> None:
        super().__init__()
        self.hang = True
        self.cancelled = False

    async def complete(self, messages: Any, **kwargs: Any) -> Completion:
        on_text = kwargs.get("on_text")
        if not self.hang or on_text is None:
            return await super().complete(messages, **kwargs)
        self.hang = False
        await on_text("The first words")
        try:
            await asyncio.Event().wait()
        except asyncio.CancelledError:
            self.cancelled = True
            raise
        raise AssertionError("unreachable")


async def test_closing_the_stream_early_cancels_the_work(streaming_bot: Make) -> None:
    model = HangingModel()
    app, _ = streaming_bot(model)
    request = to_request("hello", ConsoleIdentity(user="alice", thread="t9"))
    stream = app.core.stream(request)
    first = await anext(stream)
    assert first == TextDelta("The first words")
    await stream.aclose()  # the adapter gave up (shutdown): no dangling task, no error
    assert model.cancelled  # the hanging model call was cancelled, not left running
    # The question was kept before the first word was shown, whatever happens after.
    assert app.core.agent is not None
    history = await app.core.agent._history.load(request.conversation)
    assert history.messages == [{"role": "user", "content": "hello"}]
    # The thread's lock was let go: the next request in the thread is answered.
    model.reply("again")
    events = await collect(app, "hello again", thread="t9")
    assert isinstance(events[-1], Finished) and events[-1].reply.text == "again"
