"""What the console's conversations modules share: one thread's turns as the page shows them
(`ThreadView` and its parts), the turn being assembled from stored messages (`StoredTurn`), and
the checks of stored keys and times."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import UTC, datetime

from core.request import Source
from core.store.models import ThreadMessage

KEY_CHARS = 128  # channel and thread columns' width


def aware(at: datetime) -> datetime:
    """SQLite hands timestamps back naive; they were stored as UTC."""
    return at if at.tzinfo is not None else at.replace(tzinfo=UTC)


def valid_key(value: str) -> bool:
    """A channel or thread id as stored: 1-128 characters, none of them a control character."""
    return 0 < len(value) <= KEY_CHARS and all(c >= " " and c != "\x7f" for c in value)


@dataclass(frozen=True, slots=True)
class ToolCallRow:
    tool: str
    outcome: str  # the audit log's ("ok" or why not); "not recorded" when no entry matched
    duration_ms: int | None
    detail: str


@dataclass(frozen=True, slots=True)
class RatingRow:
    user: str
    value: str  # up | down
    reason: str | None
    at: datetime


@dataclass(frozen=True, slots=True)
class AnswerInfo:
    asked_by: str
    model: str
    skills: tuple[str, ...]
    ratings: tuple[RatingRow, ...]
    sources: tuple[Source, ...] = ()  # as stored: a link may be any string, check it to show it


@dataclass(frozen=True, slots=True)
class Said:
    """One message's text as the page shows it (capped)."""

    id: int
    role: str  # user | assistant
    at: datetime
    text: str
    cut: int  # characters left out


@dataclass(frozen=True, slots=True)
class Turn:
    number: int | None  # the question's place in the thread; None: messages before any question
    at: datetime
    messages: tuple[Said, ...]
    tool_calls: tuple[ToolCallRow, ...]
    answer: AnswerInfo | None
    tokens: int | None  # prompt + completion of the request, when its request id is known
    compacted: bool  # the model now sees this turn only through the summary


@dataclass(frozen=True, slots=True)
class Summary:
    text: str
    covers_through: int
    at: datetime


@dataclass(frozen=True, slots=True)
class ThreadView:
    channel: str
    thread: str
    turns: tuple[Turn, ...]
    total_turns: int
    summary: Summary | None
    earlier: int | None  # `before=` of the previous page
    later: int | None  # `after=` of the next page
    newest: int | None  # `before=` of the last page, when this is not it


@dataclass
class StoredTurn:
    """A turn being assembled from its stored messages."""

    number: int | None
    rows: list[ThreadMessage] = field(default_factory=list)
    calls: list[str] = field(default_factory=list)  # the tool names the model asked for

    @property
    def start(self) -> datetime:
        return aware(self.rows[0].at)

    @property
    def end(self) -> datetime:
        return aware(self.rows[-1].at)

    @property
    def answered_at(self) -> datetime | None:
        """When the turn's final answer was stored (None: it got none)."""
        last = self.rows[-1]
        if last.role == "assistant" and last.tool_calls is None and last.content.strip():
            return aware(last.at)
        return None
