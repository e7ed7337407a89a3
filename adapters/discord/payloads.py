"""Raw Discord JSON that Threadline reads or writes itself, typed (wire shapes, not models).

discord.py parses most gateway traffic into its own models; these are the payloads Threadline
builds or inspects directly — application command definitions it syncs, the `data` of an
application-command interaction it maps to the shared command language — plus the gateway and
REST shapes the fake Discord in `tests/fakes/` serves, so both sides agree on one definition.
Field names and numbers follow the Discord API v10 documentation.
"""

from __future__ import annotations

from typing import Literal, NotRequired, TypedDict

# -- application commands ----------------------------------------------------------------------

# Option types: 1 SUB_COMMAND, 2 SUB_COMMAND_GROUP, 3 STRING, 4 INTEGER, 5 BOOLEAN ...
SUB_COMMAND: Literal[1] = 1
STRING: Literal[3] = 3
ATTACHMENT: Literal[11] = 11
CHAT_INPUT: Literal[1] = 1
APPLICATION_COMMAND: Literal[2] = 2  # interaction type
EPHEMERAL_FLAG = 1 << 6


class CommandOption(TypedDict):
    type: int
    name: str
    description: str
    required: NotRequired[bool]
    max_length: NotRequired[int]
    options: NotRequired[list[CommandOption]]


class ApplicationCommand(TypedDict):
    """One entry of `PUT /applications/{id}/commands` (or the guild variant)."""

    name: str
    description: str
    type: NotRequired[int]
    options: NotRequired[list[CommandOption]]
    contexts: NotRequired[list[int]]  # 0 guild, 1 bot DM, 2 private channel
    integration_types: NotRequired[list[int]]  # 0 guild install, 1 user install


class OptionValue(TypedDict):
    """An option as it arrives in an interaction (a sub-command carries nested options)."""

    name: str
    type: int
    value: NotRequired[str | int | float | bool]
    options: NotRequired[list[OptionValue]]


class ResolvedData(TypedDict):
    """`interaction.data.resolved`: what the options name, resolved by Discord (attachment
    options' files by attachment id)."""

    attachments: NotRequired[dict[str, MessageAttachment]]


class CommandData(TypedDict):
    """`interaction.data` of an application-command interaction."""

    id: str
    name: str
    type: int
    options: NotRequired[list[OptionValue]]
    guild_id: NotRequired[str]
    resolved: NotRequired[ResolvedData]


# -- gateway and REST objects (what the fake serves) -------------------------------------------


class User(TypedDict):
    id: str
    username: str
    discriminator: str
    global_name: str | None
    avatar: str | None
    bot: NotRequired[bool]


class Role(TypedDict):
    id: str
    name: str
    color: int
    hoist: bool
    position: int
    permissions: str
    managed: bool
    mentionable: bool
    flags: int


class Member(TypedDict):
    user: NotRequired[User]
    nick: str | None
    roles: list[str]
    joined_at: str
    deaf: bool
    mute: bool
    flags: int
    pending: NotRequired[bool]
    permissions: NotRequired[str]


class ThreadMetadata(TypedDict):
    archived: bool
    auto_archive_duration: int
    archive_timestamp: str
    locked: bool


class Channel(TypedDict):
    id: str
    type: int  # 0 text, 1 DM, 11 public thread, 12 private thread, 15 forum ...
    guild_id: NotRequired[str]
    name: NotRequired[str]
    position: NotRequired[int]
    parent_id: NotRequired[str | None]
    owner_id: NotRequired[str]
    permission_overwrites: NotRequired[list[object]]
    thread_metadata: NotRequired[ThreadMetadata]
    message_count: NotRequired[int]
    member_count: NotRequired[int]
    recipients: NotRequired[list[User]]
    last_message_id: NotRequired[str | None]
    rate_limit_per_user: NotRequired[int]
    nsfw: NotRequired[bool]
    topic: NotRequired[str | None]
    flags: NotRequired[int]
    newly_created: NotRequired[bool]


class MessageAttachment(TypedDict):
    id: str
    filename: str
    size: int
    url: str
    proxy_url: str
    content_type: NotRequired[str]
    duration_secs: NotRequired[float]  # a voice message's recording
    waveform: NotRequired[str]  # base64, up to 256 bytes


class Message(TypedDict):
    id: str
    channel_id: str
    guild_id: NotRequired[str]
    author: User
    member: NotRequired[Member]
    content: str
    timestamp: str
    edited_timestamp: str | None
    tts: bool
    mention_everyone: bool
    mentions: list[User]
    mention_roles: list[str]
    attachments: list[MessageAttachment]
    embeds: list[object]
    pinned: bool
    type: int  # 0 default, 19 reply, 21 thread starter ...
    flags: int
    nonce: NotRequired[str]  # in the answer to a message sent with one
    message_reference: NotRequired[MessageReference]  # a reply: the message it answers
    referenced_message: NotRequired[Message | None]  # ...and that message itself


class MessageReference(TypedDict):
    message_id: str
    channel_id: str
    guild_id: NotRequired[str]


class Interaction(TypedDict):
    id: str
    application_id: str
    type: int
    data: CommandData
    guild_id: NotRequired[str]
    channel_id: str
    channel: Channel
    member: NotRequired[Member]
    user: NotRequired[User]
    token: str
    version: int
    locale: str
    app_permissions: str
    entitlements: list[object]
    authorizing_integration_owners: dict[str, str]
    context: int
    attachment_size_limit: int


class GatewayPayload(TypedDict):
    op: int
    d: object
    s: int | None
    t: str | None
