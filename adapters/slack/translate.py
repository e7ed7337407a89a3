"""Slack <-> core translation: two pure functions, testable without Slack.

`to_request(body)` turns a verified event or slash-command body into a `core.Request`;
`render(reply)` turns a `core.Reply` into the mrkdwn texts to post, each well under Slack's
limits. Nothing here performs I/O or decides anything.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, cast

from adapters.slack.mrkdwn import to_mrkdwn
from adapters.text import reply_markdown, split_markdown
from core.request import Reply, Request

if TYPE_CHECKING:
    from adapters.slack.files import FileHost
    from adapters.slack.payloads import (
        EventCallback,
        HistoryMessage,
        MessageEvent,
        ReactionAddedEvent,
        ReactionCallback,
        SlashCommand,
    )
    from core.request import ThreadReader

PLATFORM = "slack"

# Slack reports `msg_too_long` around 4,000 characters of text and takes 3,000 per section
# block; parts stay at 3,000 so either way of posting them fits with room to spare.
MESSAGE_LIMIT = 3_000

# Message subtypes that are still a person writing something new. Edits (`message_changed`),
# deletions, joins, bot messages and the rest are not requests.
ANSWERABLE_SUBTYPES = frozenset({"file_share", "thread_broadcast"})

_LABELLED_LINK = re.compile(r"<((?:https?|mailto):[^|>]+)\|([^>]*)>")
_BARE_LINK = re.compile(r"<((?:https?|mailto):[^|>]+)>")
_CHANNEL_REF = re.compile(r"<#(C\w+|G\w+)(?:\|([^>]*))?>")
_SPECIAL = re.compile(r"<!(here|channel|everyone)(?:\|[^>]*)?>")


# :speaker: and its louder siblings on one of Threadline's messages: "read this aloud".
READ_ALOUD_REACTIONS = frozenset({"speaker", "sound", "loud_sound"})
_USER_MENTION = re.compile(r"<@[UW][A-Z0-9]+(?:\|[^>]*)?>")


def tenant_of(body: EventCallback | SlashCommand | ReactionCallback) -> str:
    """The enterprise (org-wide installs on Enterprise Grid), else the workspace."""
    return body.get("enterprise_id") or body["team_id"]


def to_request(
    body: EventCallback | SlashCommand,
    *,
    bot_user_id: str | None = None,
    files: FileHost | None = None,
    earlier: ThreadReader | None = None,
) -> Request:
    """`files`: where the message's attached files are downloaded from, when core asks (none
    without it); `earlier`: the thread's earlier messages, for a message inside a thread."""
    if "command" in body:
        command = cast("SlashCommand", body)
        return Request(
            platform=PLATFORM,
            tenant=tenant_of(command),
            channel=command["channel_id"],
            thread=f"cmd-{command['trigger_id']}",
            user=command["user_id"],
            text=command_text(from_slack_text(command.get("text", ""))),
        )
    callback = body  # narrowed: not a command
    event = callback["event"]
    text = from_slack_text(strip_mention(event.get("text", ""), bot_user_id))
    return Request(
        platform=PLATFORM,
        tenant=tenant_of(callback),
        channel=event["channel"],
        thread=thread_of(event),
        user=event.get("user", ""),
        text=text.strip(),
        files=files.incoming(event.get("files") or []) if files is not None else (),
        earlier=earlier,
    )


def asks_to_read_aloud(event: ReactionAddedEvent, bot_user_id: str) -> bool:
    """A person (not Threadline) put a speaker on one of Threadline's messages."""
    return (
        event.get("reaction", "").split("::")[0] in READ_ALOUD_REACTIONS
        and event.get("item", {}).get("type") == "message"
        and event.get("item_user") == bot_user_id
        and event.get("user") != bot_user_id
    )


def read_aloud_request(body: ReactionCallback, message: HistoryMessage) -> Request:
    """`/tts` of the reacted message's text, in the thread it belongs to, for the person who
    reacted. An answer's markdown block is read as written (its `text` is only the start of it,
    for notifications); plain text stays mrkdwn: core's speech preparation reads
    `<url|label>` links as their label and drops the marks; only mentions and HTML entities
    are undone here."""
    event = body["event"]
    markdown = next(
        (
            str(b.get("text", ""))
            for b in message.get("blocks") or []
            if b.get("type") == "markdown"
        ),
        None,
    )
    if markdown is not None:
        text = markdown
    else:
        text = _USER_MENTION.sub("", message.get("text", ""))
        text = text.replace("&lt;", "<").replace("&gt;", ">").replace("&amp;", "&")
    return Request(
        platform=PLATFORM,
        tenant=tenant_of(body),
        channel=event["item"].get("channel", ""),
        thread=message.get("thread_ts") or message["ts"],
        user=event["user"],
        text=f"/tts {text.strip()}",
    )


def in_a_thread(event: MessageEvent) -> bool:
    """A reply inside a thread (not the message that starts one)."""
    thread_ts = event.get("thread_ts")
    return bool(thread_ts) and thread_ts != event["ts"]


def thread_of(event: MessageEvent) -> str:
    """Replies to a threaded message stay in that thread; a top-level one starts its own."""
    return event.get("thread_ts") or event["ts"]


def command_text(text: str) -> str:
    """`/threadline budget` -> `/budget`; `/threadline` alone -> `/help`.

    The words after the slash command are a command of the shared language (`ask`, `save`,
    `memory list` ...); core answers unknown ones with its own "unknown command" message."""
    text = text.strip()
    if not text:
        return "/help"
    if text.startswith("/"):  # `/threadline /budget`
        return text
    if not text[0].isalpha():
        return f"/ask {text}"
    return f"/{text}"


def strip_mention(text: str, bot_user_id: str | None) -> str:
    if not bot_user_id:
        return text
    return re.sub(rf"<@{re.escape(bot_user_id)}(?:\|[^>]*)?>", "", text).strip()


def from_slack_text(text: str) -> str:
    """Slack's escaped message text to plain text the agent can read."""

    def labelled(m: re.Match[str]) -> str:
        url, label = m[1], m[2]
        bare = re.sub(r"^(https?://|mailto:)", "", url)
        return url if not label or label in (url, bare) else f"{label} ({url})"

    text = _LABELLED_LINK.sub(labelled, text)
    text = _BARE_LINK.sub(r"\1", text)
    text = _CHANNEL_REF.sub(lambda m: f"#{m[2] or m[1]}", text)
    text = _SPECIAL.sub(r"@\1", text)
    return text.replace("&lt;", "<").replace("&gt;", ">").replace("&amp;", "&")


def render(reply: Reply, *, limit: int = MESSAGE_LIMIT) -> list[str]:
    """The mrkdwn messages for a reply, in order. Attachments are uploaded separately, the
    sources go under the last message (`adapters.slack.delivery`)."""
    parts = split_markdown(to_mrkdwn(reply_markdown(reply, sources=False)), limit)
    return [p.strip("\n") for p in parts if p.strip()]
