"""The answer in the terminal as it is written: Markdown re-rendered as words arrive, what
the agent is doing on a dim line under it, and the final reply rendered exactly once more in
place (rich's `Live`). Piped output (not a terminal) gets only the final rendering."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import TYPE_CHECKING

from core.streaming import Finished, ReplyEvent, Status, TextDelta, ToolFinished, ToolStarted

if TYPE_CHECKING:
    from rich.console import Console, RenderableType

    from core.request import Reply

REFRESH_PER_SECOND = 8  # rendering Markdown is not free; the eye does not need more


class AnswerView:
    def __init__(self, console: Console) -> None:
        self._console = console
        self._text = ""
        self._steps: dict[str, str] = {}  # running tool calls: id -> label
        self._status = "thinking…"

    async def show(self, events: AsyncIterator[ReplyEvent]) -> Reply:
        from rich.live import Live

        with Live(
            self._render(),
            console=self._console,
            refresh_per_second=REFRESH_PER_SECOND,
            transient=False,
        ) as live:
            async for event in events:
                if isinstance(event, Finished):
                    live.update(self._final(event.reply), refresh=True)
                    return event.reply
                self._apply(event)
                live.update(self._render())
        raise RuntimeError("the reply stream ended without its reply")

    def _apply(self, event: ReplyEvent) -> None:
        if isinstance(event, TextDelta):
            self._text += event.text
            self._status = ""
        elif isinstance(event, ToolStarted):
            self._steps[event.call_id] = event.label
        elif isinstance(event, ToolFinished):
            self._steps.pop(event.call_id, None)
        elif isinstance(event, Status):
            self._status = event.text

    def _render(self) -> RenderableType:
        from rich.console import Group
        from rich.markdown import Markdown
        from rich.text import Text

        line = "; ".join(self._steps.values()) or self._status
        parts: list[RenderableType] = []
        if self._text:
            parts.append(Markdown(self._text))
        if line:
            # The labels are built from the model's arguments: plain text, never markup.
            parts.append(Text(f"… {line}", style="dim"))
        return Group(*parts)

    @staticmethod
    def _final(reply: Reply) -> RenderableType:
        from rich.markdown import Markdown

        return Markdown(reply.text, style="default" if reply.ok else "red")
