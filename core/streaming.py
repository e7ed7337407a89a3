"""Answers as they are written: the events core hands an adapter while it works on a request.

`Core.stream(request)` yields, in order:

- `TextDelta`: words of the answer as the model writes them (already normalized: the text of
  each model step without leading or trailing blank space, steps separated by a blank line);
- `ToolStarted` / `ToolFinished`: what the agent is doing, with a short label fit to show
  ("Searching code for `retry`"; never raw arguments, never secrets);
- `Status`: a status line from a long command (`/index`'s progress);
- `Finished`: the whole `Reply`, last.

The contract adapters rely on: `Finished.reply.text` starts with `Finished.streamed`, the text
of every `TextDelta` joined. An adapter that has shown the deltas only has to add the rest
(`remainder`): a failure's last line, notices, attachments. Nothing shown is ever taken back.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass, replace

from core.request import Reply


@dataclass(frozen=True, slots=True)
class TextDelta:
    text: str


@dataclass(frozen=True, slots=True)
class ToolStarted:
    call_id: str
    label: str


@dataclass(frozen=True, slots=True)
class ToolFinished:
    call_id: str
    label: str
    ok: bool


@dataclass(frozen=True, slots=True)
class Status:
    text: str


@dataclass(frozen=True, slots=True)
class Finished:
    reply: Reply
    streamed: str = ""  # the text the deltas carried; `reply.text` starts with it

    @property
    def remainder(self) -> str:
        """The reply's text after what was streamed (a failure's last line, or all of it)."""
        return self.reply.text[len(self.streamed) :]


ReplyEvent = TextDelta | ToolStarted | ToolFinished | Status | Finished
# Where core sends events while it works; a sink that raises is logged and ignored.
ReplySink = Callable[[ReplyEvent], Awaitable[None]]


def finished(reply: Reply, streamed: str) -> Finished:
    """The last event of a request whose deltas carried `streamed`. A reply that does not
    continue what was shown (the request failed after the first words, or was refused by a
    path that never saw them) gets the shown words in front, so nothing shown is contradicted
    or lost and the failure reads as the answer's last line."""
    if streamed and not reply.text.startswith(streamed):
        reply = replace(reply, text=f"{streamed}\n\n{reply.text}" if reply.text else streamed)
    return Finished(reply, streamed)
