"""Discord <-> core translation: pure functions, testable without Discord or discord.py.

`to_request(origin, text)` turns what discord.py verified about a message or an interaction
into a `core.Request`; `render(reply)` turns a `core.Reply` into the messages to post, each
within Discord's 2,000 characters and with code fences balanced, attachments as files under
the upload limit. `command_definitions` / `command_text` map the shared command language to
the `/threadline` application command and back. Nothing here performs I/O or decides anything.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from adapters.discord.payloads import (
    ATTACHMENT,
    CHAT_INPUT,
    STRING,
    SUB_COMMAND,
    ApplicationCommand,
    CommandData,
    CommandOption,
    OptionValue,
)
from adapters.text import reply_markdown, split_markdown
from core import messages
from core.commands import Command
from core.request import Attachment, IncomingFile, Reply, Request, ThreadReader

PLATFORM = "discord"
MESSAGE_LIMIT = 2_000  # characters of content per Discord message
THREAD_NAME_LIMIT = 100
COMMAND_NAME = "threadline"
MAX_SUBCOMMANDS = 25  # Discord's limit of options per command
DESCRIPTION_LIMIT = 100
OPTION_MAX_LENGTH = 6_000  # characters of a command's text option

# The option each known command takes; other commands get one derived from their usage line.
_OPTION_NAMES = {
    "ask": "question",
    "save": "fact",
    "memory": "action",
    "search": "query",
    "index": "target",
}
# Commands that also take a file (an optional attachment option after their text).
_FILE_OPTIONS = {"ask": "file"}
_OPTION_NAME = re.compile(r"^[a-z0-9_-]{1,32}$")
_PLACEHOLDER = re.compile(r"\b([A-Z][A-Z_]+)\b")
_BRACKETED = re.compile(r"\[[^\]]*\]")

_USER_MENTION = re.compile(r"<@!?(\d+)>")
_ROLE_MENTION = re.compile(r"<@&(\d+)>")
_CHANNEL_MENTION = re.compile(r"<#(\d+)>")
_CUSTOM_EMOJI = re.compile(r"<a?:(\w+):\d+>")
_THREAD_NAME_NOISE = re.compile(r"[`*_~|>#\[\]]+")


@dataclass(frozen=True, slots=True)
class RoleRef:
    id: int
    name: str


@dataclass(frozen=True, slots=True)
class Origin:
    """Where a message or command came from, as the gateway session verified it.

    `channel_id` is where it was posted: a channel, a thread (then `parent_id` is the thread's
    channel) or a DM channel (then `guild_id` is None)."""

    guild_id: int | None
    channel_id: int
    user_id: int
    parent_id: int | None = None
    roles: tuple[RoleRef, ...] = ()

    @property
    def tenant(self) -> str:
        """The guild; a DM belongs to a tenant of its own per user (no guild data leaks in)."""
        return str(self.guild_id) if self.guild_id is not None else f"dm-{self.user_id}"

    @property
    def channel(self) -> str:
        """The channel policy rules match: a thread's parent channel."""
        return str(self.parent_id if self.parent_id is not None else self.channel_id)

    @property
    def in_thread(self) -> bool:
        return self.parent_id is not None


@dataclass(frozen=True, slots=True)
class Names:
    """Display names for mentions in a message's text (users, roles, channels by id)."""

    users: Mapping[int, str]
    roles: Mapping[int, str]
    channels: Mapping[int, str]


NO_NAMES = Names({}, {}, {})


def to_request(
    origin: Origin,
    text: str,
    *,
    thread: str | None = None,
    files: tuple[IncomingFile, ...] = (),
    earlier: ThreadReader | None = None,
) -> Request:
    """A request from `origin`. `thread` names the conversation when `origin` is not inside a
    thread (a DM channel, a one-off command); inside a thread the thread is the conversation.
    `files` are the message's attachments, `earlier` reads the thread's earlier messages."""
    if origin.in_thread:
        conversation = str(origin.channel_id)
    elif thread is not None:
        conversation = thread
    else:
        conversation = str(origin.channel_id)
    roles: list[str] = []
    for role in origin.roles:
        roles += [str(role.id), role.name]
    return Request(
        platform=PLATFORM,
        tenant=origin.tenant,
        channel=origin.channel,
        thread=conversation,
        user=str(origin.user_id),
        text=text.strip(),
        roles=tuple(dict.fromkeys(r for r in roles if r)),
        files=files,
        earlier=earlier,
    )


def message_text(content: str, bot_user_id: int, names: Names = NO_NAMES) -> str:
    """Message content as the agent should read it: without the mention of Threadline, other
    mentions and custom emoji as readable names."""

    def user(m: re.Match[str]) -> str:
        uid = int(m[1])
        return "" if uid == bot_user_id else f"@{names.users.get(uid, m[1])}"

    text = _USER_MENTION.sub(user, content)
    text = _ROLE_MENTION.sub(lambda m: f"@{names.roles.get(int(m[1]), m[1])}", text)
    text = _CHANNEL_MENTION.sub(lambda m: f"#{names.channels.get(int(m[1]), m[1])}", text)
    text = _CUSTOM_EMOJI.sub(r":\1:", text)
    return re.sub(r"[ \t]{2,}", " ", text).strip()


# 🔊 (and its quieter siblings) on one of Threadline's messages: "read this aloud".
READ_ALOUD_EMOJI = frozenset({"🔊", "🔉", "🔈"})


def asks_to_read_aloud(emoji: str | None, author_id: int | None, user_id: int, me: int) -> bool:
    """A person (not Threadline) put a speaker on a message Threadline wrote."""
    return emoji in READ_ALOUD_EMOJI and author_id == me and user_id != me


def read_aloud_text(content: str, bot_user_id: int, names: Names = NO_NAMES) -> str:
    """The command that reads a message aloud: `/tts` of its text, mentions as names."""
    return f"/tts {message_text(content, bot_user_id, names)}"


def thread_name(question: str) -> str:
    """A thread's name from the question: its first line, without Markdown marks, at most 100
    characters (cut at a word, with an ellipsis)."""
    line = next((ln for ln in question.splitlines() if ln.strip()), "")
    line = " ".join(_THREAD_NAME_NOISE.sub(" ", line).split())
    if not line:
        return messages.DISCORD_THREAD_NAME
    if len(line) <= THREAD_NAME_LIMIT:
        return line
    cut = line.rfind(" ", 0, THREAD_NAME_LIMIT)
    if cut < THREAD_NAME_LIMIT // 2:
        cut = THREAD_NAME_LIMIT - 1
    return line[:cut].rstrip() + "…"


# -- rendering ---------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Outgoing:
    """One message to post: text, or a file (with no text)."""

    text: str = ""
    file: Attachment | None = None


def render(reply: Reply, *, upload_limit: int, limit: int = MESSAGE_LIMIT) -> list[Outgoing]:
    """The messages for a reply, in order: the text in parts of at most `limit` characters
    (code blocks closed and reopened across parts), then each attachment as a file — or, for a
    file over `upload_limit` bytes, a message saying it could not be attached."""
    out = [Outgoing(text=p.strip("\n")) for p in split_markdown(reply_markdown(reply), limit)]
    out = [o for o in out if o.text.strip()]
    for attachment in reply.attachments:
        size = len(attachment.data)
        if size > upload_limit:
            refusal = messages.discord_file_too_large(attachment.filename, size, upload_limit)
            out.append(Outgoing(text=refusal))
        else:
            out.append(Outgoing(file=attachment))
    return out or [Outgoing(text=messages.DISCORD_NO_ANSWER)]


def is_private(reply: Reply) -> bool:
    """Personal results and refusals go only to the person who asked (where Discord can)."""
    return reply.ephemeral or not reply.ok


# -- application commands ----------------------------------------------------------------------


def command_definitions(commands: Iterable[Command]) -> list[ApplicationCommand]:
    """`/threadline` with one sub-command per command of the shared language (what `/help`
    lists), each taking its arguments as one text option."""
    subcommands: list[CommandOption] = []
    for command in commands:
        if not _OPTION_NAME.match(command.name) or len(subcommands) == MAX_SUBCOMMANDS:
            continue
        sub: CommandOption = {
            "type": SUB_COMMAND,
            "name": command.name,
            "description": _description(command.summary),
        }
        options = [o for o in (_option_for(command), _file_option_for(command)) if o]
        if options:
            sub["options"] = options
        subcommands.append(sub)
    return [
        {
            "name": COMMAND_NAME,
            "description": messages.DISCORD_COMMAND_DESCRIPTION,
            "type": CHAT_INPUT,
            "options": subcommands,
            "contexts": [0, 1],
            "integration_types": [0],
        }
    ]


def _option_for(command: Command) -> CommandOption | None:
    args = command.usage.strip().removeprefix(f"/{command.name}").strip()
    if not args:
        return None
    placeholders = _PLACEHOLDER.findall(args)
    name = _OPTION_NAMES.get(command.name) or (placeholders[0].lower() if placeholders else "")
    if not _OPTION_NAME.match(name):
        name = "text"
    unbracketed = _BRACKETED.sub("", args).strip()
    return {
        "type": STRING,
        "name": name,
        "description": _description(args),
        "required": bool(unbracketed) and "|" not in unbracketed,
        "max_length": OPTION_MAX_LENGTH,
    }


def _file_option_for(command: Command) -> CommandOption | None:
    name = _FILE_OPTIONS.get(command.name)
    if name is None:
        return None
    return {
        "type": ATTACHMENT,
        "name": name,
        "description": messages.DISCORD_FILE_OPTION_DESCRIPTION,
        "required": False,
    }


def _description(text: str) -> str:
    text = " ".join(text.split()) or COMMAND_NAME
    return text if len(text) <= DESCRIPTION_LIMIT else text[: DESCRIPTION_LIMIT - 1] + "…"


def command_text(data: CommandData) -> str:
    """`/threadline save fact:we deploy with Helm` -> `/save we deploy with Helm`;
    `/threadline` without a sub-command -> `/help`."""
    options = data.get("options") or []
    sub = next((o for o in options if o["type"] == SUB_COMMAND), None)
    if sub is None:
        return "/help"
    args = " ".join(_value(o) for o in sub.get("options") or [] if o["type"] != ATTACHMENT)
    return f"/{sub['name']} {args}".strip()


def command_attachment_ids(data: CommandData) -> list[str]:
    """The attachment ids a command's attachment options name (their files are in
    `data["resolved"]["attachments"]`)."""
    ids: list[str] = []
    for sub in data.get("options") or []:
        for option in sub.get("options") or []:
            if option["type"] == ATTACHMENT and option.get("value") is not None:
                ids.append(str(option.get("value")))
    return ids


def _value(option: OptionValue) -> str:
    value = option.get("value")
    return "" if value is None else str(value).strip()
