"""Thread history in the database, in the chat-completions message shape.

A thread is its stored messages plus, once it has been compacted, the newest summary: loading
returns the summary (as a user message and a short assistant acknowledgement) followed by the
messages after the last one it covers. Summaries persist, so a thread is summarized once, not
on every request.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any, cast

from core.chat import calls_of, text_of
from core.request import ConversationKey
from core.store.engine import Database

if TYPE_CHECKING:
    from core.chat import AssistantMessage, Message

SUMMARY_PREFIX = "[Summary of the earlier conversation in this thread]\n"
SUMMARY_ACK = "Understood. I will continue from that summary."


def summary_messages(summary: str) -> list[Message]:
    return [
        {"role": "user", "content": SUMMARY_PREFIX + summary},
        {"role": "assistant", "content": SUMMARY_ACK},
    ]


def is_summary(message: Message) -> bool:
    return message["role"] == "user" and text_of(message).startswith(SUMMARY_PREFIX)


@dataclass
class ThreadHistory:
    """`messages` as the model will see them; `ids[i]` is the stored id of `messages[i]`
    (None for the synthetic summary pair)."""

    messages: list[Message] = field(default_factory=list)
    ids: list[int | None] = field(default_factory=list)

    def last_stored_id(self, upto: int) -> int | None:
        """The newest stored message among the first `upto` messages."""
        stored = [i for i in self.ids[:upto] if i is not None]
        return max(stored) if stored else None


class HistoryStore:
    def __init__(
        self, db: Database, clock: Callable[[], datetime] = lambda: datetime.now(UTC)
    ) -> None:
        self._db = db
        self._clock = clock  # stamps messages: the activity digest selects them by period

    async def load(self, conv: ConversationKey) -> ThreadHistory:
        from sqlmodel import col, select

        from core.store.models import ThreadMessage, ThreadSummary

        async with self._db.session() as s:
            summary = (
                await s.exec(
                    select(ThreadSummary)
                    .where(*_conv_filter(ThreadSummary, conv))
                    .order_by(col(ThreadSummary.id).desc())
                    .limit(1)
                )
            ).first()
            stmt = select(ThreadMessage).where(*_conv_filter(ThreadMessage, conv))
            if summary is not None:
                stmt = stmt.where(col(ThreadMessage.id) > summary.covers_through)
            rows = (await s.exec(stmt.order_by(col(ThreadMessage.id)))).all()
        history = ThreadHistory()
        if summary is not None:
            history.messages += summary_messages(summary.summary)
            history.ids += [None, None]
        # A cut that left tool results without their call would break the protocol.
        first_user = next((i for i, r in enumerate(rows) if r.role == "user"), len(rows))
        for message, row_id in repair_protocol(
            [(_to_message(row), row.id) for row in rows[first_user:]]
        ):
            history.messages.append(message)
            history.ids.append(row_id)
        return history

    async def append(self, conv: ConversationKey, messages: Sequence[Message]) -> None:
        """Store one request's messages in a single transaction: all of them or none."""
        from core.store.models import ThreadMessage

        if not messages:
            return
        now = self._clock()
        async with self._db.session() as s:
            for m in messages:
                s.add(
                    ThreadMessage(
                        at=now,
                        platform=conv.platform,
                        tenant=conv.tenant,
                        channel=conv.channel,
                        thread=conv.thread,
                        role=m["role"],
                        content=text_of(m),
                        tool_calls=json.dumps(calls_of(m)) if calls_of(m) else None,
                        tool_call_id=m["tool_call_id"] if m["role"] == "tool" else None,
                    )
                )

    async def save_summary(self, conv: ConversationKey, summary: str, covers_through: int) -> None:
        from core.store.models import ThreadSummary

        async with self._db.session() as s:
            s.add(
                ThreadSummary(
                    platform=conv.platform,
                    tenant=conv.tenant,
                    channel=conv.channel,
                    thread=conv.thread,
                    covers_through=covers_through,
                    summary=summary,
                )
            )


def repair_protocol(
    pairs: Sequence[tuple[Message, int | None]],
) -> list[tuple[Message, int | None]]:
    """The stored messages with every tool result answering a call right before it, and
    every call answered. Threads stored before tool-call ids were checked at the model
    boundary can hold calls with empty or repeated ids, whose results lost their link on
    reload; sent as they are, every later prompt is refused (HTTP 400). Orphan results are
    dropped, unanswered calls removed from their message, and an assistant message left with
    nothing in it goes too."""
    out: list[tuple[Message, int | None]] = []
    pending: dict[str, None] = {}  # ids of the open assistant message's calls not yet answered
    answered: set[str] = set()
    open_at: int | None = None  # index in `out` of the assistant message being answered

    def close() -> None:
        nonlocal open_at
        if open_at is None:
            return
        message, row_id = out[open_at]
        calls = [c for c in calls_of(message) if c["id"] in answered]
        fixed: AssistantMessage = {"role": "assistant", "content": text_of(message)}
        if calls:
            fixed["tool_calls"] = calls
        if calls or text_of(fixed).strip():
            out[open_at] = (fixed, row_id)
        else:
            del out[open_at]
        open_at = None
        pending.clear()
        answered.clear()

    for message, row_id in pairs:
        if message["role"] == "tool":
            call_id = message.get("tool_call_id")
            if call_id in pending and call_id not in answered:
                answered.add(call_id)
                out.append((message, row_id))
            continue
        close()
        if message["role"] == "assistant" and message.get("tool_calls"):
            ids = [c.get("id") for c in message["tool_calls"]]
            unique = [i for i in ids if isinstance(i, str) and i and ids.count(i) == 1]
            message = {
                **message,
                "tool_calls": [c for c in message["tool_calls"] if c.get("id") in unique],
            }
            pending.update(dict.fromkeys(unique))
            open_at = len(out)
        out.append((message, row_id))
    close()
    return out


def _conv_filter(table: Any, conv: ConversationKey) -> list[Any]:
    from sqlmodel import col

    return [
        col(table.platform) == conv.platform,
        col(table.tenant) == conv.tenant,
        col(table.channel) == conv.channel,
        col(table.thread) == conv.thread,
    ]


def _to_message(row: Any) -> Message:
    message: dict[str, Any] = {"role": row.role, "content": row.content}
    if row.tool_calls:
        message["tool_calls"] = json.loads(row.tool_calls)
    if row.tool_call_id:
        message["tool_call_id"] = row.tool_call_id
    # Stored by `append` from messages of these shapes, so they are read back as such.
    return cast("Message", message)
