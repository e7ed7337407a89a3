"""Confirmation buttons on Slack: the question posted in the thread with "Run" / "Cancel", and
the `block_actions` click turned into an answer for core's gate.

Who clicked comes only from the signed interaction payload (`user.id`, `team` / `enterprise`),
never from the button's value, which carries nothing but the confirmation id. The click may
reach any web process: the answer goes through the database (core/mcp/confirm_store.py), and
the process that took it updates the message, so nobody clicks a settled question.
"""

from __future__ import annotations

import logging
import re
from dataclasses import replace
from typing import TYPE_CHECKING, Any

from adapters.slack.errors import error_code
from core.mcp.confirm import (
    FULL_ARGUMENTS,
    STALE_CONFIRMATION,
    UNKNOWN_CONFIRMATION,
    ConfirmationPrompt,
    only_requester,
    outcome,
    question,
)
from core.mcp.confirm_store import UNANSWERED

if TYPE_CHECKING:
    from slack_sdk.web.async_client import AsyncWebClient

    from adapters.slack.payloads import BlockActions
    from core.mcp.confirm import ConfirmationGate
    from core.mcp.confirm_store import Confirmation

log = logging.getLogger("threadline.slack")

RUN, CANCEL = "threadline_confirm_run", "threadline_confirm_cancel"
ACTION_IDS = re.compile(rf"^({RUN}|{CANCEL})$")
_THREAD_TS = re.compile(r"^\d+\.\d+$")
_SECTION_CHARS = 3_000  # Slack's limit on a section block's text


def mention(user: str) -> str:
    return f"<@{user}>"


def escape(text: str) -> str:
    """Slack's three control characters in text that is not ours (tool arguments)."""
    return text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")


def question_blocks(prompt: ConfirmationPrompt) -> list[dict[str, Any]]:
    folded = [arguments_block(prompt)] if prompt.abridged and prompt.details else []
    return [
        {"type": "section", "text": {"type": "mrkdwn", "text": _question_text(prompt)}},
        *folded,
        {
            "type": "actions",
            "block_id": "threadline_confirm",
            "elements": [
                {
                    "type": "button",
                    "action_id": RUN,
                    "text": {"type": "plain_text", "text": "Run"},
                    "style": "danger",
                    "value": prompt.id,
                },
                {
                    "type": "button",
                    "action_id": CANCEL,
                    "text": {"type": "plain_text", "text": "Cancel"},
                    "value": prompt.id,
                },
            ],
        },
    ]


def arguments_block(prompt: ConfirmationPrompt) -> dict[str, Any]:
    """The full arguments in a section Slack folds away ("see more"): the summary shortened
    something, and whoever weighs the question can unfold the rest."""
    head, tail = f"*{FULL_ARGUMENTS}*\n```", "\n```"
    body = escape(prompt.details).replace("```", "`\u200b`\u200b`")  # as in _code
    room = _SECTION_CHARS - len(head) - len(tail) - 60
    if len(body) > room:
        body = body[:room] + f"\n… (cut: {len(body) - room:,} more characters)"
    return {
        "type": "section",
        "block_id": "threadline_confirm_arguments",
        "expand": False,
        "text": {"type": "mrkdwn", "text": head + body + tail},
    }


def outcome_blocks(text: str) -> list[dict[str, Any]]:
    return [{"type": "section", "text": {"type": "mrkdwn", "text": text}}]


def _code(arguments: str) -> str:
    """Arguments in a code block: mrkdwn in them (`~strike~`, `*bold*`) cannot restyle the
    rest of the question; a "```" inside would end the block early."""
    return "```" + escape(arguments).replace("```", "`\u200b`\u200b`") + "```"


def _question_text(prompt: ConfirmationPrompt) -> str:
    shown = replace(prompt, tool=escape(prompt.tool), arguments=_code(prompt.arguments))
    return question(shown, mention)


def _outcome_text(c: Confirmation) -> str:
    return outcome(replace(c, tool=escape(c.tool), arguments=_code(c.arguments)), mention)


def tenant_of_click(body: BlockActions) -> str:
    """As for events: the enterprise on Enterprise Grid, else the workspace."""
    enterprise = body.get("enterprise")
    return (enterprise["id"] if enterprise else None) or body["team"]["id"]


class SlackConfirmer:
    """Posts questions and retires expired ones; `click` takes the answers."""

    def __init__(self, client: AsyncWebClient, gate: ConfirmationGate) -> None:
        self._client = client
        self._gate = gate
        self._posted: dict[str, tuple[str, str]] = {}  # confirmation id -> (channel, ts)

    async def ask(self, prompt: ConfirmationPrompt) -> None:
        # A slash command's conversation is no Slack thread: the question goes in the channel.
        thread_ts = prompt.thread if _THREAD_TS.match(prompt.thread) else None
        resp = await self._client.chat_postMessage(
            channel=prompt.channel,
            thread_ts=thread_ts,
            text=_question_text(prompt),
            blocks=question_blocks(prompt),
        )
        self._posted[prompt.id] = (prompt.channel, str(resp["ts"]))

    async def closed(self, prompt: ConfirmationPrompt, final: Confirmation) -> None:
        where = self._posted.pop(prompt.id, None)
        if where is None or final.state not in UNANSWERED:
            return  # an answered one was updated by the process that took the click
        await self._show(where[0], where[1], final)

    async def click(self, body: BlockActions) -> None:
        """One `block_actions` click on our buttons (already acknowledged)."""
        from slack_sdk.errors import SlackApiError

        action = body["actions"][0]
        clicker = body["user"]["id"]
        container = body.get("container") or {}
        where = body.get("channel")
        channel = container.get("channel_id") or (where["id"] if where else "")
        ts = container.get("message_ts", "")
        thread_ts = container.get("thread_ts")
        answered = await self._gate.answer(
            str(action.get("value") or ""),
            clicker,
            action["action_id"] == RUN,
            platform="slack",
            tenant=tenant_of_click(body),
        )
        c = answered.confirmation
        try:
            if answered.status == "counted" and c is not None:
                await self._show(channel, ts, c)
            elif answered.status == "ignored" and c is not None:
                await self._tell(channel, clicker, thread_ts, only_requester(c, mention))
            elif answered.status == "stale" and c is not None:
                await self._show(channel, ts, c)
                await self._tell(channel, clicker, thread_ts, STALE_CONFIRMATION)
            else:
                await self._tell(channel, clicker, thread_ts, UNKNOWN_CONFIRMATION)
        except SlackApiError as exc:
            log.warning("Slack: could not show a confirmation's outcome (%s)", error_code(exc))

    async def _show(self, channel: str, ts: str, c: Confirmation) -> None:
        text = _outcome_text(c)
        await self._client.chat_update(
            channel=channel, ts=ts, text=text, blocks=outcome_blocks(text)
        )

    async def _tell(self, channel: str, user: str, thread_ts: str | None, text: str) -> None:
        await self._client.chat_postEphemeral(
            channel=channel, user=user, thread_ts=thread_ts, text=text
        )
