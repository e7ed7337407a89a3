"""The console's streamed answer: the final rendering is printed once, the words and tool
labels never read as rich markup."""

from __future__ import annotations

import io
from collections.abc import AsyncIterator

from rich.console import Console

from adapters.console.stream import AnswerView
from core.request import Reply
from core.streaming import Finished, ReplyEvent, TextDelta, ToolFinished, ToolStarted


async def events(items: list[ReplyEvent]) -> AsyncIterator[ReplyEvent]:
    for item in items:
        yield item


def run(items: list[ReplyEvent], *, terminal: bool) -> tuple[Reply, str]:
    import asyncio

    out = io.StringIO()
    console = Console(file=out, force_terminal=terminal, width=80, color_system=None)
    reply = asyncio.run(AnswerView(console).show(events(items)))
    return reply, out.getvalue()


STREAM: list[ReplyEvent] = [
    ToolStarted("c1", "Searching code for `[bold]retry[/]`"),
    ToolFinished("c1", "Searching code for `[bold]retry[/]`", True),
    TextDelta("The retry"),
    TextDelta(" is in **app.py** [/]."),
    Finished(Reply("The retry is in **app.py** [/]."), "The retry is in **app.py** [/]."),
]


def test_piped_output_gets_the_final_answer_once() -> None:
    reply, out = run(STREAM, terminal=False)
    assert reply.text.startswith("The retry")
    assert out.count("The retry is in app.py [/].") == 1
    assert "Searching" not in out  # progress is for terminals only


def test_a_terminal_sees_progress_and_then_the_final_answer() -> None:
    _, out = run(STREAM, terminal=True)
    assert "thinking…" in out and "The retry is in app.py [/]." in out


def test_tool_labels_are_shown_literally_never_as_markup() -> None:
    out = io.StringIO()
    console = Console(file=out, width=80, color_system=None)
    view = AnswerView(console)
    for event in STREAM[:1]:
        view._apply(event)
    console.print(view._render())
    assert "… Searching code for `[bold]retry[/]`" in out.getvalue()
