"""Which Slack events are requests to Threadline: small checks, in order, each testable alone.

Everything here is pure. The one check that needs state (is this a thread Threadline answers
in?) is done by the app through `core.events` after these pass.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from adapters.slack.translate import ANSWERABLE_SUBTYPES

if TYPE_CHECKING:
    from adapters.slack.payloads import MessageEvent


@dataclass(frozen=True, slots=True)
class BotIdentity:
    """Who Threadline is in Slack, from `auth.test` at start-up."""

    user_id: str
    bot_id: str | None
    team_id: str
    enterprise_id: str | None = None


def from_a_bot(event: MessageEvent, bot: BotIdentity) -> bool:
    """Bots (Threadline itself included, whose echo can arrive before its post returns)."""
    return (
        bool(event.get("bot_id"))
        or event.get("subtype") == "bot_message"
        or event.get("user") == bot.user_id
    )


def not_a_new_message(event: MessageEvent) -> bool:
    """Edits, deletions, joins and other subtypes are not requests."""
    subtype = event.get("subtype")
    return (subtype is not None and subtype not in ANSWERABLE_SUBTYPES) or not event.get("user")


def is_direct(event: MessageEvent) -> bool:
    return event.get("channel_type") in ("im", "app_home")


def needs_a_thread_check(event: MessageEvent) -> bool:
    """A `message` in a channel is ours only as a follow-up in a thread Threadline answers in
    (a mention in it also arrives as `app_mention`); top-level channel chatter never is."""
    return event["type"] == "message" and not is_direct(event)


def skip_reason(event: MessageEvent, bot: BotIdentity) -> str | None:
    """Why this event is not a request (None: it may be one)."""
    if from_a_bot(event, bot):
        return "from a bot"
    if not_a_new_message(event):
        return f"message subtype {event.get('subtype')}"
    if needs_a_thread_check(event) and not event.get("thread_ts"):
        return "top-level channel message without a mention"
    return None
