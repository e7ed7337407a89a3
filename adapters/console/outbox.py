"""The console as a `ChatAdapter` (`threadline run` without chat tokens): outbox messages are
printed, a digest's files saved like a reply's. Printing cannot be taken back or looked up,
so a process that dies between printing and recording prints the message again on its next
start. The conversation itself is the REPL (`adapters.console.repl`), which answers in the
foreground: nothing is left in flight when it stops."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import TYPE_CHECKING, TextIO

from adapters.console.translate import PLATFORM, save_attachments
from core.request import Reply

if TYPE_CHECKING:
    from core.outbox import OutboxItem, OutboxMessage


def render_outbox(message: OutboxMessage) -> str:
    """The message as Markdown: its title as a heading, then the text."""
    parts = [f"## {message.title.strip()}"] if message.title else []
    if message.text.strip():
        parts.append(message.text.strip("\n"))
    return "\n\n".join(parts)


class ConsoleAdapter:
    platform = PLATFORM

    def __init__(self, attachments_dir: Path, out: TextIO | None = None) -> None:
        self._dir = attachments_dir
        self._out = out

    async def start(self) -> None:
        """The terminal is always there."""

    async def idle(self) -> None:
        """The REPL answers in the foreground: no answer runs in the background."""

    async def stop(self, grace: float) -> int:
        return 0

    async def deliver_outbox(self, item: OutboxItem) -> str:
        from rich.console import Console
        from rich.markdown import Markdown

        message = item.message
        console = Console(file=self._out or sys.stdout)
        console.print()
        console.print(f"[{message.channel}] from the outbox", style="dim")
        console.print(Markdown(render_outbox(message)))
        reply = Reply(message.text, attachments=message.attachments)
        for path in save_attachments(reply, self._dir):
            console.print(f"[attachment saved: {path}]", style="dim", markup=False)
        return f"console:{item.id}"
