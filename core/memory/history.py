"""Thread history in the database, in the chat-completions message shape.

Loading keeps the most recent user turns and always cuts on a user-message boundary, so an
assistant message with `tool_calls` is never separated from its tool results.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from core.request import ConversationKey
from core.store.engine import Database

DEFAULT_MAX_USER_TURNS = 20


def keep_recent_turns(messages: list[dict[str, Any]], max_user_turns: int) -> list[dict[str, Any]]:
    if max_user_turns <= 0:  # messages[positions[-0]:] would keep everything
        return []
    user_positions = [i for i, m in enumerate(messages) if m["role"] == "user"]
    if len(user_positions) <= max_user_turns:
        # Drop anything before the first user message: an orphan tail of an older cut.
        return messages[user_positions[0] :] if user_positions else []
    return messages[user_positions[-max_user_turns] :]


class HistoryStore:
    def __init__(self, db: Database, max_user_turns: int = DEFAULT_MAX_USER_TURNS) -> None:
        self._db = db
        self._max_user_turns = max_user_turns

    async def load(self, conv: ConversationKey) -> list[dict[str, Any]]:
        from sqlmodel import col, select

        from core.store.models import ThreadMessage

        stmt = (
            select(ThreadMessage)
            .where(
                col(ThreadMessage.platform) == conv.platform,
                col(ThreadMessage.tenant) == conv.tenant,
                col(ThreadMessage.channel) == conv.channel,
                col(ThreadMessage.thread) == conv.thread,
            )
            .order_by(col(ThreadMessage.id))
        )
        async with self._db.session() as s:
            rows = (await s.exec(stmt)).all()
        return keep_recent_turns([_to_message(r) for r in rows], self._max_user_turns)

    async def append(self, conv: ConversationKey, messages: Sequence[dict[str, Any]]) -> None:
        """Store one request's messages in a single transaction: all of them or none."""
        from core.store.models import ThreadMessage

        async with self._db.session() as s:
            for m in messages:
                s.add(
                    ThreadMessage(
                        platform=conv.platform,
                        tenant=conv.tenant,
                        channel=conv.channel,
                        thread=conv.thread,
                        role=m["role"],
                        content=m.get("content") or "",
                        tool_calls=json.dumps(m["tool_calls"]) if m.get("tool_calls") else None,
                        tool_call_id=m.get("tool_call_id"),
                    )
                )


def _to_message(row: Any) -> dict[str, Any]:
    message: dict[str, Any] = {"role": row.role, "content": row.content}
    if row.tool_calls:
        message["tool_calls"] = json.loads(row.tool_calls)
    if row.tool_call_id:
        message["tool_call_id"] = row.tool_call_id
    return message
