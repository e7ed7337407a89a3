"""👍/👎 under Threadline's answers on Slack: a `context_actions` block with Slack's
`feedback_buttons` under the last message of every answer core gave an `answer_id`, and the
clicks turned into `core.Rating`s.

Who rated comes only from the signed interaction (`user.id`, `team` / `enterprise`) and where
from the click's container (the channel of the message clicked); the button's value carries
nothing but `up:<answer id>` or `down:<answer id>`, and core refuses an id that is not an
answer given in that channel. Ratings are stored in the database, so any web process may take
the click. A 👎 also opens a small form (`views.open`) asking why; its submission carries the
answer id and the channel in the view's `private_metadata` (set here, returned by Slack), and
core checks them again against the submitting user's workspace.
"""

from __future__ import annotations

import json
import logging
import re
from typing import TYPE_CHECKING, Any

from adapters.slack.errors import error_code
from adapters.slack.translate import PLATFORM
from core.feedback.store import REASON_CHARS
from core.request import Rating

if TYPE_CHECKING:
    from slack_sdk.web.async_client import AsyncWebClient

    from adapters.slack.payloads import BlockActions, ViewSubmission
    from core.service import Core

log = logging.getLogger("threadline.slack")

ACTION_ID = "threadline_feedback"
REASON_VIEW = "threadline_feedback_reason"  # the form's callback_id
REASON_BLOCK, REASON_INPUT = "threadline_feedback_why", "reason"
_TS = re.compile(r"^\d{1,12}\.\d{1,9}$")
_CHANNEL = re.compile(r"^[A-Z0-9]{1,32}$")
_ID_CHARS = 64  # more than an answer id ever has: a longer value is cut, and core refuses it


def feedback_blocks(answer_id: str | None) -> list[dict[str, Any]]:
    """The 👍/👎 block for an answer; none for a reply nobody may rate."""
    if not answer_id:
        return []
    return [
        {
            "type": "context_actions",
            "elements": [
                {
                    "type": "feedback_buttons",
                    "action_id": ACTION_ID,
                    "positive_button": {
                        "text": {"type": "plain_text", "text": "👍"},
                        "accessibility_label": "This answer helped",
                        "value": f"up:{answer_id}",
                    },
                    "negative_button": {
                        "text": {"type": "plain_text", "text": "👎"},
                        "accessibility_label": "This answer did not help",
                        "value": f"down:{answer_id}",
                    },
                }
            ],
        }
    ]


def parse_value(value: str) -> tuple[str, str]:
    """(rating, answer id) from a button's value, cut to size; core judges both."""
    rating, _, answer_id = value.partition(":")
    return rating[:8], answer_id[:_ID_CHARS]


def message_link(channel: str, ts: str, thread_ts: str | None = None) -> str | None:
    """Slack's permalink form for a message (a reply in a thread names its thread)."""
    if not _CHANNEL.match(channel) or not _TS.match(ts):
        return None
    link = f"https://slack.com/archives/{channel}/p{ts.replace('.', '')}"
    if thread_ts and thread_ts != ts and _TS.match(thread_ts):
        link += f"?thread_ts={thread_ts}&cid={channel}"
    return link


def tenant_of(body: BlockActions | ViewSubmission) -> str:
    """As for events: the enterprise on Enterprise Grid, else the workspace."""
    enterprise = body.get("enterprise")
    return (enterprise["id"] if enterprise else None) or body["team"]["id"]


def reason_view(answer_id: str, channel: str, ts: str, thread_ts: str | None) -> dict[str, Any]:
    """The form a 👎 opens: one optional line saying why."""
    where = {"answer": answer_id, "channel": channel, "ts": ts, "thread_ts": thread_ts}
    return {
        "type": "modal",
        "callback_id": REASON_VIEW,
        "private_metadata": json.dumps(where),
        "title": {"type": "plain_text", "text": "What went wrong?"},
        "submit": {"type": "plain_text", "text": "Send"},
        "close": {"type": "plain_text", "text": "Skip"},
        "blocks": [
            {
                "type": "input",
                "block_id": REASON_BLOCK,
                "optional": True,
                "label": {"type": "plain_text", "text": "Why was this answer not helpful?"},
                "hint": {
                    "type": "plain_text",
                    "text": "Optional. The people who look after Threadline read it.",
                },
                "element": {
                    "type": "plain_text_input",
                    "action_id": REASON_INPUT,
                    "max_length": REASON_CHARS,
                    "placeholder": {"type": "plain_text", "text": "Wrong file, outdated, …"},
                },
            }
        ],
    }


def _where(metadata: str) -> tuple[str, str, str, str | None] | None:
    """(answer id, channel, ts, thread ts) from a submitted form's private_metadata."""
    try:
        where = json.loads(metadata)
    except ValueError:
        return None
    if not isinstance(where, dict):
        return None
    answer, channel, ts = where.get("answer"), where.get("channel"), where.get("ts")
    thread_ts = where.get("thread_ts")
    if not (isinstance(answer, str) and isinstance(channel, str) and isinstance(ts, str)):
        return None
    if not _CHANNEL.match(channel) or not _TS.match(ts):
        return None
    if thread_ts is not None and not (isinstance(thread_ts, str) and _TS.match(thread_ts)):
        return None
    return answer[:_ID_CHARS], channel, ts, thread_ts


class SlackFeedback:
    """Takes 👍/👎 clicks and the 👎 form's submissions (each already acknowledged)."""

    def __init__(self, client: AsyncWebClient, core: Core) -> None:
        self._client = client
        self._core = core

    async def click(self, body: BlockActions) -> None:
        action = body["actions"][0]
        value, answer_id = parse_value(str(action.get("value") or ""))
        user = body["user"]["id"]
        container = body.get("container") or {}
        where = body.get("channel")
        channel = container.get("channel_id") or (where["id"] if where else "")
        ts = container.get("message_ts", "")
        thread_ts = container.get("thread_ts")
        reply = await self._core.rate(
            Rating(
                PLATFORM,
                tenant_of(body),
                channel,
                user,
                answer_id,
                value,
                link=message_link(channel, ts, thread_ts),
            )
        )
        trigger = body.get("trigger_id")
        if reply.ok and value == "down" and trigger:
            # The 👎 counts already; the form only adds a reason (Skip loses nothing).
            await self._ask_why(trigger, answer_id, channel, ts, thread_ts)
        await self._tell(channel, user, thread_ts, reply.text)

    async def submit(self, body: ViewSubmission) -> None:
        view = body["view"]
        where = _where(view.get("private_metadata") or "")
        if where is None:
            log.warning("Slack: a feedback form came back without its answer; ignored")
            return
        answer_id, channel, ts, thread_ts = where
        values = (view.get("state") or {}).get("values") or {}
        reason = ((values.get(REASON_BLOCK) or {}).get(REASON_INPUT) or {}).get("value")
        user = body["user"]["id"]
        reply = await self._core.rate(
            Rating(
                PLATFORM,
                tenant_of(body),
                channel,
                user,
                answer_id,
                "down",
                reason=reason if isinstance(reason, str) else None,
                link=message_link(channel, ts, thread_ts),
            )
        )
        await self._tell(channel, user, thread_ts, reply.text)

    async def _ask_why(
        self, trigger: str, answer_id: str, channel: str, ts: str, thread_ts: str | None
    ) -> None:
        from slack_sdk.errors import SlackApiError

        try:
            await self._client.views_open(
                trigger_id=trigger, view=reason_view(answer_id, channel, ts, thread_ts)
            )
        except SlackApiError as exc:  # expired trigger (over 3 s): the 👎 stands without why
            log.info("Slack: could not open the feedback form (%s)", error_code(exc))

    async def _tell(self, channel: str, user: str, thread_ts: str | None, text: str) -> None:
        from slack_sdk.errors import SlackApiError

        if not channel:
            return
        try:
            await self._client.chat_postEphemeral(
                channel=channel, user=user, thread_ts=thread_ts, text=text
            )
        except SlackApiError as exc:
            log.warning("Slack: could not answer a rating privately (%s)", error_code(exc))
