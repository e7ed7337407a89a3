"""A fake Discord on 127.0.0.1 (port 0): the REST API routes Threadline uses and a gateway
websocket speaking the real protocol, driven by the real discord.py client.

    fake = await FakeDiscord().start()
    settings: DISCORD_TOKEN=fake.token, DISCORD_API_URL=fake.api_url
    msg = await fake.post_message(fake.alice, fake.general, "<@bot> why?")   # MESSAGE_CREATE
    await fake.wait_for(lambda: fake.messages_in(thread_id))                 # recorded, no sleep
    inter = await fake.slash(fake.alice, "budget")                           # INTERACTION_CREATE
    await fake.post_message(fake.alice, thread, "see log", files=[FakeFile("a.log", b"...")])
    fake.seed_messages(thread, 300)      # history written before: GET /channels/{id}/messages
    click = await fake.click(fake.alice, posted, "tl:fb:down:…")             # a button
    await fake.submit_modal(fake.alice, click, {"reason": "stale"})          # the form it opened
    await fake.disconnect(replay=1)      # drop the socket; the resume re-delivers one event

What it is careful about, because discord.py 2.7.1 depends on it:

- the gateway honours `compress=zlib-stream` (one zlib stream per connection, every frame
  ending in Z_SYNC_FLUSH) and `zstd-stream` when `zstandard` is installed;
- REST bodies are sent with `Content-Type` exactly `application/json` (discord.py parses JSON
  only then), with the full set of `X-RateLimit-*` headers; a scripted 429 carries `Via`
  (without it discord.py takes the 429 for a Cloudflare ban) and `retry_after`;
- interaction callbacks answer `?with_response=1` with the callback resource, interactions
  carry `attachment_size_limit`, a callback later than 3 s gets "Unknown interaction" and the
  first follow-up after a deferral replaces the "thinking…" response, keeping its visibility;
- a message sent with `enforce_nonce` and a nonce the bot used within `nonce_window` seconds
  is answered with the earlier message, and nothing new is posted;
- edits (of messages, interaction responses and follow-ups) are recorded with the time they
  arrived (`Posted.edited_at`, by `edit_clock`); `limit_edits(interval)` answers an edit that
  comes sooner than `interval` after the message was last written with a real 429, and
  `limit_channel_edits(n, per)` one past n edits in a channel within `per` seconds, as a
  busy channel's limit would (`rate_limited` lists them);
- the gateway session survives a dropped socket: RESUME replays what the client missed (and,
  on request, events it already had: Discord delivers at least once) and then RESUMED;
  an invalid session (op 9) makes the client identify again, which fires `on_ready` again.

Everything runs on the test's event loop; tests wait on recorded events with `wait_for`.
The gateway protocol lives in `discord_gateway`, the HTTP conventions in `discord_http`, the
CDN serving attached files (signed URLs, on this fake's origin) in `discord_cdn`.
"""

from __future__ import annotations

import asyncio
import base64
import binascii
import re
import secrets
import time
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, TypeVar, cast

from aiohttp import web

from adapters.discord.payloads import (
    Channel,
    Interaction,
    Member,
    Message,
    MessageAttachment,
    Role,
    User,
)
from tests.support.fakes import discord_world as world
from tests.support.fakes.discord_cdn import FakeCdn
from tests.support.fakes.discord_gateway import FakeGateway
from tests.support.fakes.discord_http import (
    Call,
    UploadedFile,
    check_commands,
    empty_response,
    json_response,
    read_body,
)

__all__ = [
    "Call",
    "FakeDiscord",
    "FakeFile",
    "InteractionState",
    "Posted",
    "Sync",
    "UploadedFile",
]

T = TypeVar("T")

MAX_CONTENT = 2_000
EPHEMERAL = 1 << 6
LOADING = 1 << 7
IS_VOICE_MESSAGE = 1 << 13
MAX_WAVEFORM = 256
SINGLE_AUDIO = "Voice messages must have a single audio attachment"
INTERACTION_WINDOW = 3.0  # seconds Discord allows before the first interaction response
NONCE_WINDOW = 300.0  # seconds Discord remembers an enforced nonce ("a few minutes")
DEFERRED_UPDATE_MESSAGE, UPDATE_MESSAGE = 6, 7  # interaction callbacks for component clicks
MODAL = 9  # an interaction callback that opens a form (a modal) instead of a message


@dataclass
class Posted:
    """A message the bot made visible (in a channel, or as an interaction response)."""

    id: str
    channel_id: str
    content: str
    files: list[UploadedFile]
    ephemeral: bool = False
    kind: str = "message"  # message | original | followup
    interaction_id: str | None = None
    loading: bool = False
    deleted: bool = False
    edits: list[str] = field(default_factory=list)  # contents after each PATCH
    # When each edit arrived, by `FakeDiscord.edit_clock` (a test's clock, or monotonic time).
    edited_at: list[float] = field(default_factory=list)
    posted_at: float | None = None  # when it was posted (same clock)
    written_at: float | None = None  # when it was posted or last edited (same clock)
    flags: int = 0
    # The attachments' metadata from payload_json (voice messages: duration_secs, waveform).
    attachment_meta: list[dict[str, Any]] = field(default_factory=list)
    components: list[dict[str, Any]] = field(default_factory=list)  # action rows of buttons


@dataclass
class FakeFile:
    """A file a person attaches to a message: Discord stores it on its CDN (here: the fake's
    `/attachments/...` route, signed URLs) and lists it in the message's `attachments`."""

    filename: str
    data: bytes
    content_type: str | None = "application/octet-stream"
    claimed_size: int | None = None  # the size the message states (default: the real one)
    url: str | None = None  # a URL of its own instead of the CDN's (a forged attachment)


@dataclass
class InteractionState:
    payload: Interaction
    created: float
    callback_at: float | None = None
    callback_type: int | None = None
    deferred_ephemeral: bool = False
    original: Posted | None = None
    modal: dict[str, Any] | None = None  # the form a MODAL callback opened
    followups: list[Posted] = field(default_factory=list)

    @property
    def visible(self) -> list[Posted]:
        """What the user sees now: the original response (once it is no longer loading),
        then the follow-ups."""
        out = []
        if self.original and not self.original.deleted and not self.original.loading:
            out.append(self.original)
        return out + [f for f in self.followups if not f.deleted]


@dataclass
class Sync:
    scope: str  # "global" or a guild id
    commands: list[dict[str, Any]]


@dataclass
class _Failure:
    method: str
    path: re.Pattern[str]
    status: int
    body: dict[str, Any]
    headers: dict[str, str]
    times: int
    skip: int = 0  # matching calls let through first


class FakeDiscord:
    token = "fake-discord-bot-token"

    def __init__(
        self,
        *,
        upload_limit: int = 10 * 1024 * 1024,
        interaction_window: float = INTERACTION_WINDOW,
        nonce_window: float = NONCE_WINDOW,
        privileged_intents: bool = True,
        gateway_up: bool = True,
        shards: int = 1,
    ) -> None:
        self._id = world.snowflake_factory()
        self.upload_limit = upload_limit
        self.interaction_window = interaction_window
        self.nonce_window = nonce_window
        self._nonces: dict[str, tuple[Posted, float]] = {}  # the bot's enforced nonces
        self.privileged_intents = privileged_intents
        self.shard_count = shards
        self.gateway = FakeGateway(self)
        self.gateway.up = gateway_up

        self.application_id = self._id()
        self.bot: User = self._user("Threadline", bot=True)
        self.guild_id = self._id()
        self.guilds = [self.guild_id]  # the first is `guild_id`; `add_guild` adds more
        self.roles: dict[str, Role] = {}
        self._role(self.guild_id, "@everyone", position=0)
        self.bot_role = self._role(self._id(), "Threadline", managed=True)
        self.channels: dict[str, Channel] = {}
        self.general = self.add_channel("general")
        self.members: dict[str, Member] = {}
        self._add_member(self.bot, [self.bot_role["id"]])
        self.alice = self.add_member("alice")
        self.dm_channels: dict[str, str] = {}  # user id -> DM channel id

        self.calls: list[Call] = []
        self.posts: list[Posted] = []
        self.typing: list[str] = []  # channel ids
        self.threads_opened: list[Channel] = []  # by the bot
        self.syncs: list[Sync] = []
        self.interactions: dict[str, InteractionState] = {}
        self.user_messages: dict[str, Message] = {}
        self.unhandled: list[str] = []
        # The CDN: attachment path -> its bytes; every download asked for, query included.
        self.cdn = FakeCdn(lambda: self.api_url, self.changed)  # attached files
        # Channels where voice messages are refused (error 50173), as a server may set it.
        self.no_voice_messages: set[str] = set()

        self._failures: list[_Failure] = []
        self.edit_clock: Callable[[], float] = time.monotonic
        self.edit_interval: float | None = None  # see `limit_edits`
        self.channel_edit_limit: tuple[int, float] | None = None  # see `limit_channel_edits`
        self._channel_edits: dict[str, list[float]] = {}  # channel -> when its edits arrived
        self.rate_limited: list[Call] = []  # edits answered 429 by `limit_edits`
        self._held: dict[str, asyncio.Event] = {}  # channel id -> set when posts may proceed
        self._changed = asyncio.Condition()
        self._runner: web.AppRunner | None = None
        self.port = 0

    # -- lifecycle -----------------------------------------------------------------------------

    async def start(self) -> FakeDiscord:
        app = web.Application(client_max_size=64 * 1024 * 1024)
        app.router.add_get("/gateway", self.gateway.handle)
        app.router.add_route("*", "/api/v10/{path:.*}", self._rest)
        self.cdn.route(app)
        self._runner = web.AppRunner(app, handle_signals=False, access_log=None)
        await self._runner.setup()
        site = web.TCPSite(self._runner, "127.0.0.1", 0)
        await site.start()
        self.port = int(self._runner.addresses[0][1])
        return self

    async def stop(self) -> None:
        await self.gateway.close()
        if self._runner is not None:
            await self._runner.cleanup()
            self._runner = None

    @property
    def api_url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    @property
    def gateway_url(self) -> str:
        return f"ws://127.0.0.1:{self.port}/gateway"

    # What the gateway recorded: IDENTIFY and RESUME payloads (without the token), and the
    # query string of every connection the client dialled.
    @property
    def identifies(self) -> list[dict[str, Any]]:
        return self.gateway.identifies

    @property
    def resumes(self) -> list[dict[str, Any]]:
        return self.gateway.resumes

    @property
    def connections(self) -> list[dict[str, str]]:
        return self.gateway.connections

    async def dispatch(self, event: str, data: Any, *, dm: bool = False) -> None:
        await self.gateway.dispatch(event, data, dm=dm)

    async def disconnect(self, *, code: int = 4000, replay: int = 0) -> None:
        """Drop the gateway socket; see `FakeGateway.disconnect`."""
        await self.gateway.disconnect(code=code, replay=replay)

    async def invalidate_session(self) -> None:
        """Op 9: the client must identify again (and fires `on_ready` again)."""
        await self.gateway.invalidate_session()

    def guild_shard(self, guild_id: str | None = None, shard_count: int | None = None) -> int:
        """The shard Discord sends a guild's events to: (guild_id >> 22) % shard_count."""
        return world.shard_of(guild_id or self.guild_id, shard_count or self.shard_count)

    def guilds_of(self, shard: tuple[int, int]) -> list[str]:
        """The guilds a session identified as (shard id, shard count) receives."""
        return [g for g in self.guilds if world.shard_of(g, shard[1]) == shard[0]]

    def ready_payload(self, session_id: str, shard: tuple[int, int]) -> dict[str, Any]:
        return {
            "v": 10,
            "user": {**self.bot, "verified": True, "mfa_enabled": False, "flags": 0},
            "guilds": [{"id": g, "unavailable": True} for g in self.guilds_of(shard)],
            "session_id": session_id,
            "resume_gateway_url": self.gateway_url,
            "shard": list(shard),
            "application": {"id": self.application_id, "flags": 0},
            "private_channels": [],
            "relationships": [],
            "presences": [],
            "user_settings": {},
        }

    # -- the world -----------------------------------------------------------------------------

    def _user(self, name: str, *, bot: bool = False) -> User:
        return world.user(self._id(), name, bot=bot)

    def _role(self, role_id: str, name: str, *, position: int = 1, managed: bool = False) -> Role:
        self.roles[role_id] = world.role(role_id, name, position=position, managed=managed)
        return self.roles[role_id]

    def add_role(self, name: str) -> str:
        return self._role(self._id(), name, position=len(self.roles))["id"]

    def add_channel(self, name: str, guild_id: str | None = None) -> str:
        channel = world.text_channel(
            self._id(), guild_id or self.guild_id, name, len(self.channels)
        )
        self.channels[channel["id"]] = channel
        return channel["id"]

    def add_guild(self, *, shard: int | None = None) -> tuple[str, str]:
        """Another guild the bot is in, with its @everyone role and a #general channel; with
        `shard`, its id is chosen so that Discord's rule puts it on that shard (of
        `shard_count`). Returns the guild id and the channel id. Members are shared with the
        first guild (alice writes in both)."""
        guild_id = self._id()
        if shard is not None:
            guild_id = world.snowflake_on_shard(guild_id, shard, self.shard_count)
        self.guilds.append(guild_id)
        self._role(guild_id, "@everyone", position=0)
        return guild_id, self.add_channel("general", guild_id)

    def guild_of(self, channel_id: str) -> str:
        return self.channels[channel_id]["guild_id"]

    def _add_member(self, user: User, roles: list[str]) -> Member:
        self.members[user["id"]] = world.member(user, roles)
        return self.members[user["id"]]

    def add_member(self, name: str, roles: tuple[str, ...] = ()) -> User:
        """A human member holding the roles with these ids."""
        user = self._user(name)
        self._add_member(user, list(roles))
        return user

    def _thread(self, thread_id: str, parent: str, name: str, owner: str) -> Channel:
        return world.thread(thread_id, self.guild_of(parent), parent, name, owner)

    async def add_thread(
        self, name: str, parent: str | None = None, owner: User | None = None
    ) -> str:
        """A thread someone else opened (THREAD_CREATE once connected)."""
        owner_id = (owner or self.alice)["id"]
        thread = self._thread(self._id(), parent or self.general, name, owner_id)
        self.channels[thread["id"]] = thread
        if self.identifies:  # connected: announce it (else GUILD_CREATE lists it)
            await self.dispatch("THREAD_CREATE", {**thread, "newly_created": True})
        return thread["id"]

    async def archive_thread(self, thread_id: str) -> None:
        thread = self.channels[thread_id]
        thread["thread_metadata"]["archived"] = True
        await self.dispatch("THREAD_UPDATE", dict(thread))

    def guild_payload(self, guild_id: str | None = None) -> dict[str, Any]:
        guild_id = guild_id or self.guild_id
        first = guild_id == self.guild_id
        others = set(self.guilds[1:])  # each extra guild has its @everyone role only
        roles = (
            [r for r in self.roles.values() if r["id"] not in others]
            if first
            else [self.roles[guild_id]]
        )
        bot = self.members[self.bot["id"]]
        return world.guild(
            guild_id,
            self.alice["id"],
            roles=roles,
            # The bot's managed role exists in the first guild only.
            members=[bot if first else {**bot, "roles": []}],
            member_count=len(self.members),
            channels=[c for c in self.channels.values() if c["guild_id"] == guild_id],
        )

    # -- driving the bot -----------------------------------------------------------------------

    def mention(self) -> str:
        return f"<@{self.bot['id']}>"

    async def post_message(
        self,
        author: User,
        channel_id: str,
        content: str,
        *,
        files: Sequence[FakeFile] = (),
        voice: bool = False,
        reply_to: Message | None = None,
    ) -> Message:
        """A person writes in a guild channel or thread (MESSAGE_CREATE), with `files` attached
        (`voice`: a recorded voice message, flag IS_VOICE_MESSAGE, its one audio file), as a
        reply to `reply_to` (type 19, the replied-to message included as Discord does)."""
        channel = self.channels[channel_id]
        if channel["type"] == 11 and world.archived(channel):  # writing reopens an archived thread
            channel["thread_metadata"]["archived"] = False
            await self.dispatch("THREAD_UPDATE", dict(channel))
        member = dict(self.members[author["id"]])
        member.pop("user", None)
        message = self._message(channel_id, author, content)
        message["guild_id"] = channel["guild_id"]
        message["member"] = member  # type: ignore[typeddict-item]
        self._attach(message, files, voice=voice)
        if reply_to is not None:
            message["type"] = 19
            message["message_reference"] = {
                "message_id": reply_to["id"],
                "channel_id": reply_to["channel_id"],
                "guild_id": channel["guild_id"],
            }
            message["referenced_message"] = reply_to
        self.user_messages[message["id"]] = message
        await self.dispatch("MESSAGE_CREATE", message)
        return message

    def seed_messages(
        self,
        channel_id: str,
        count: int,
        *,
        authors: Sequence[User] = (),
        text: str = "message {n}",
        files: Sequence[FakeFile] = (),
    ) -> list[Message]:
        """`count` messages people wrote in `channel_id` before now (no events: they are only
        in the channel's history), oldest first; authors take turns, `text` numbered from 1,
        `files` attached to each."""
        writers = list(authors) or [self.alice]
        out = []
        for n in range(1, count + 1):
            message = self._message(channel_id, writers[(n - 1) % len(writers)], "")
            message["content"] = text.format(n=n)
            message["guild_id"] = self.guild_of(channel_id)
            self._attach(message, files, voice=False)
            self.user_messages[message["id"]] = message
            out.append(message)
        return out

    async def edit_user_message(self, message_id: str, content: str) -> Message:
        """A person edits their message (MESSAGE_UPDATE, carrying the whole message)."""
        message = self.user_messages[message_id]
        message["content"] = content
        message["edited_timestamp"] = world.TIMESTAMP
        await self.dispatch("MESSAGE_UPDATE", dict(message))
        return message

    async def delete_user_message(self, message_id: str) -> None:
        """A person (or a moderator) deletes a message (MESSAGE_DELETE)."""
        message = self.user_messages.pop(message_id)
        data = {"id": message_id, "channel_id": message["channel_id"]}
        if "guild_id" in message:
            data["guild_id"] = message["guild_id"]
        await self.dispatch("MESSAGE_DELETE", data, dm="guild_id" not in message)

    async def bulk_delete(self, channel_id: str, message_ids: Sequence[str]) -> None:
        """A moderator deletes several messages at once (MESSAGE_DELETE_BULK)."""
        for message_id in message_ids:
            self.user_messages.pop(message_id, None)
        data = {"ids": list(message_ids), "channel_id": channel_id}
        data["guild_id"] = self.guild_of(channel_id)
        await self.dispatch("MESSAGE_DELETE_BULK", data)

    def _attach(self, message: Message, files: Sequence[FakeFile], *, voice: bool) -> None:
        for file in files:
            attachment_id = self._id()
            path = f"{message['channel_id']}/{attachment_id}/{file.filename}"
            url = file.url or self.cdn.store(path, file.data, file.content_type)
            size = file.claimed_size if file.claimed_size is not None else len(file.data)
            attachment: MessageAttachment = {
                "id": attachment_id,
                "filename": file.filename,
                "size": size,
                "url": url,
                "proxy_url": url.replace("/attachments/", "/proxy/attachments/"),
            }
            if file.content_type is not None:
                attachment["content_type"] = file.content_type
            if voice:
                attachment["duration_secs"] = 2.5
                attachment["waveform"] = base64.b64encode(bytes(range(0, 256, 8))).decode()
            message["attachments"].append(attachment)
        if voice:
            message["flags"] |= IS_VOICE_MESSAGE

    async def direct_message(
        self,
        author: User,
        content: str,
        *,
        files: Sequence[FakeFile] = (),
        voice: bool = False,
    ) -> Message:
        channel_id = self.dm_channels.setdefault(author["id"], self._id())
        message = self._message(channel_id, author, content)
        self._attach(message, files, voice=voice)
        self.user_messages[message["id"]] = message
        await self.dispatch("MESSAGE_CREATE", message, dm=True)
        return message

    async def react(self, user: User, posted: Posted, emoji: str = "🔊") -> None:
        """A person adds `emoji` to a message the bot posted (MESSAGE_REACTION_ADD)."""
        dm = posted.channel_id not in self.channels
        data: dict[str, Any] = {
            "user_id": user["id"],
            "channel_id": posted.channel_id,
            "message_id": posted.id,
            "message_author_id": self.bot["id"],
            "emoji": {"id": None, "name": emoji},
            "burst": False,
            "type": 0,
        }
        if not dm:
            data["guild_id"] = self.guild_of(posted.channel_id)
            data["member"] = dict(self.members[user["id"]])
        await self.dispatch("MESSAGE_REACTION_ADD", data, dm=dm)

    def _message(self, channel_id: str, author: User, content: str) -> Message:
        known = {uid: m["user"] for uid, m in self.members.items() if "user" in m}
        return world.message(self._id(), channel_id, author, content, known)

    def _known_user(self, user_id: str) -> User | None:
        member = self.members.get(user_id)
        return member.get("user") if member else None

    async def slash(
        self,
        author: User,
        subcommand: str,
        value: str | None = None,
        *,
        option: str = "text",
        channel_id: str | None = None,
        files: Sequence[FakeFile] = (),
    ) -> InteractionState:
        """A person runs `/threadline <subcommand> [option:value]` (INTERACTION_CREATE), with
        `files` in its attachment option (resolved in `data.resolved.attachments`)."""
        channel = self.channels[channel_id or self.general]
        sub: dict[str, Any] = {"name": subcommand, "type": 1, "options": []}
        if value is not None:
            sub["options"].append({"name": option, "type": 3, "value": value})
        holder = self._message(channel["id"], author, "")
        self._attach(holder, files, voice=False)
        resolved = {a["id"]: a for a in holder["attachments"]}
        for attachment_id in resolved:
            sub["options"].append({"name": "file", "type": 11, "value": attachment_id})
        if not sub["options"]:
            del sub["options"]  # Discord leaves the key out
        member = dict(self.members[author["id"]])
        member["permissions"] = "1071698660929"
        payload: Interaction = {
            "id": self._id(),
            "application_id": self.application_id,
            "type": 2,
            "data": {
                "id": self._id(),
                "name": "threadline",
                "type": 1,
                "options": [sub],  # type: ignore[list-item]
                "guild_id": channel["guild_id"],
                **({"resolved": {"attachments": resolved}} if resolved else {}),  # type: ignore[typeddict-item]
            },
            "guild_id": channel["guild_id"],
            "channel_id": channel["id"],
            "channel": channel,
            "member": member,  # type: ignore[typeddict-item]
            "token": secrets.token_urlsafe(24),
            "version": 1,
            "locale": "en-US",
            "app_permissions": "1071698660929",
            "entitlements": [],
            "authorizing_integration_owners": {"0": channel["guild_id"]},
            "context": 0,
            "attachment_size_limit": self.upload_limit,
        }
        state = InteractionState(payload, created=time.monotonic())
        self.interactions[payload["id"]] = state
        await self.dispatch("INTERACTION_CREATE", dict(payload))
        return state

    async def click(self, user: User, posted: Posted, custom_id: str) -> InteractionState:
        """`user` clicks the button `custom_id` on the bot's message `posted`, in a guild
        channel or a DM (INTERACTION_CREATE of type MESSAGE_COMPONENT). A custom_id the message
        does not have is refused here, as Discord only sends clicks on components that exist."""
        ids = [c.get("custom_id") for row in posted.components for c in row.get("components", [])]
        if custom_id not in ids:
            raise AssertionError(f"no button {custom_id!r} on message {posted.id}: {ids}")
        dm = posted.channel_id in self.dm_channels.values()
        channel = (
            cast(Channel, {"id": posted.channel_id, "type": 1, "recipients": [user]})
            if dm
            else self.channels[posted.channel_id]
        )
        member = dict(self.members[user["id"]])
        member["permissions"] = "1071698660929"
        message = self._bot_message(posted)
        message["guild_id"] = self.guild_id
        payload: Interaction = {
            "id": self._id(),
            "application_id": self.application_id,
            "type": 3,
            "data": {"custom_id": custom_id, "component_type": 2},  # type: ignore[typeddict-item]
            "guild_id": self.guild_id,
            "channel_id": channel["id"],
            "channel": channel,
            "member": member,  # type: ignore[typeddict-item]
            "message": message,
            "token": secrets.token_urlsafe(24),
            "version": 1,
            "locale": "en-US",
            "app_permissions": "1071698660929",
            "entitlements": [],
            "authorizing_integration_owners": {"0": self.guild_id},
            "context": 0,
            "attachment_size_limit": self.upload_limit,
        }
        if dm:  # no guild and no member: the user as itself
            for key in ("guild_id", "member"):
                payload.pop(key, None)  # type: ignore[misc]
            message.pop("guild_id", None)
            payload["user"] = user
            payload["authorizing_integration_owners"] = {"1": user["id"]}
            payload["context"] = 1
        state = InteractionState(payload, created=time.monotonic())
        self.interactions[payload["id"]] = state
        await self.dispatch("INTERACTION_CREATE", dict(payload), dm="guild_id" not in payload)
        return state

    async def submit_modal(
        self, user: User, opened: InteractionState, values: dict[str, str]
    ) -> InteractionState:
        """`user` sends the form that the interaction `opened` answered with (a MODAL
        callback), its text inputs filled with `values` by custom_id (INTERACTION_CREATE of
        type MODAL_SUBMIT, carrying the message whose button opened the form)."""
        modal = opened.modal
        if modal is None:
            raise AssertionError("that interaction opened no form")
        rows = [
            {
                "type": 1,
                "components": [
                    {
                        "type": 4,
                        "custom_id": c["custom_id"],
                        "value": values.get(c["custom_id"], ""),
                    }
                    for c in row.get("components", [])
                ],
            }
            for row in modal.get("components", [])
        ]
        payload: dict[str, Any] = {
            **opened.payload,
            "id": self._id(),
            "type": 5,
            "data": {"custom_id": modal["custom_id"], "components": rows},
            "token": secrets.token_urlsafe(24),
        }
        dm = "guild_id" not in payload
        if dm:
            payload["user"] = user
        else:
            payload["member"] = {**self.members[user["id"]], "permissions": "1071698660929"}
        state = InteractionState(cast(Interaction, payload), created=time.monotonic())
        self.interactions[payload["id"]] = state
        await self.dispatch("INTERACTION_CREATE", dict(payload), dm=dm)
        return state

    # -- waiting -------------------------------------------------------------------------------

    async def changed(self) -> None:
        async with self._changed:
            self._changed.notify_all()

    async def wait_for(self, predicate: Callable[[], T], within: float = 10.0) -> T:
        """Wait until `predicate()` is truthy (re-checked on every recorded event); return it."""
        result: list[T] = []

        def check() -> bool:
            value = predicate()
            if value:
                result[:] = [value]
            return bool(value)

        async with asyncio.timeout(within), self._changed:
            await self._changed.wait_for(check)
        return result[0]

    def messages_in(self, channel_id: str) -> list[Posted]:
        return [
            p
            for p in self.posts
            if p.channel_id == channel_id and p.kind == "message" and not p.deleted
        ]

    def thread_of(self, message_id: str) -> Channel | None:
        return next((t for t in self.threads_opened if t["id"] == message_id), None)

    def calls_to(self, method: str, pattern: str) -> list[Call]:
        rx = re.compile(pattern)
        return [c for c in self.calls if c.method == method and rx.fullmatch(c.path)]

    def fail_next(
        self,
        method: str,
        path: str,
        status: int,
        *,
        code: int = 0,
        message: str = "scripted failure",
        headers: dict[str, str] | None = None,
        body: dict[str, Any] | None = None,
        times: int = 1,
        skip: int = 0,
    ) -> None:
        """The next `times` calls matching `method` and the `path` regex fail like this (after
        `skip` of them were answered as usual)."""
        self._failures.append(
            _Failure(
                method,
                re.compile(path),
                status,
                body if body is not None else {"message": message, "code": code},
                headers or {},
                times,
                skip,
            )
        )

    def hold_posts(self, channel_id: str) -> asyncio.Event:
        """Messages sent to `channel_id` get no answer until the returned event is set (a
        slow or stalled Discord); then they are made as usual, even when the client that sent
        them is gone by then (Discord finishes what it received)."""
        return self._held.setdefault(channel_id, asyncio.Event())

    def limit_edits(self, interval: float, *, clock: Callable[[], float] | None = None) -> None:
        """From now on an edit of a message less than `interval` seconds (by `clock`, default
        `edit_clock`) after it was posted or last edited is answered 429, and recorded."""
        self.edit_interval = interval
        if clock is not None:
            self.edit_clock = clock

    def limit_channel_edits(self, edits: int, per: float) -> None:
        """From now on a channel takes at most `edits` edits of its messages in any `per`
        seconds (by `edit_clock`); one more is answered 429, and recorded."""
        self.channel_edit_limit = (edits, per)

    def _too_soon(self, posted: Posted, call: Call) -> web.Response | None:
        now = self.edit_clock()
        last = posted.written_at
        message_ok = self.edit_interval is None or last is None or now - last >= self.edit_interval
        channel_ok = True
        if self.channel_edit_limit is not None and posted.kind == "message":
            edits, per = self.channel_edit_limit
            recent = [t for t in self._channel_edits.get(posted.channel_id, []) if t > now - per]
            channel_ok = len(recent) < edits
        if message_ok and channel_ok:
            return None
        self.rate_limited.append(call)
        return json_response(
            429,
            {"message": "You are being rate limited.", "retry_after": 0.05, "global": False},
            {"Via": "1.1 google", "Retry-After": "1", "X-RateLimit-Scope": "shared"},
        )

    def _edited(self, posted: Posted, content: str) -> None:
        posted.content = content
        posted.edits.append(content)
        posted.edited_at.append(self.edit_clock())
        posted.written_at = posted.edited_at[-1]
        if posted.kind == "message":
            self._channel_edits.setdefault(posted.channel_id, []).append(posted.written_at)

    def rate_limit_next(self, method: str, path: str, retry_after: float = 0.05) -> None:
        """A real 429 (with `Via`, as Discord's edge sends it): discord.py waits and retries."""
        self.fail_next(
            method,
            path,
            429,
            headers={"Via": "1.1 google", "Retry-After": "1", "X-RateLimit-Scope": "user"},
            body={
                "message": "You are being rate limited.",
                "retry_after": retry_after,
                "global": False,
            },
        )

    # -- REST ----------------------------------------------------------------------------------

    async def _rest(self, request: web.Request) -> web.StreamResponse:
        path = "/" + request.match_info["path"]
        body, files = await read_body(request)
        call = Call(request.method, path, dict(request.query), body, files, time.monotonic())
        self.calls.append(call)
        try:
            failure = self._scripted_failure(request.method, path)
            if failure is not None:
                return failure
            handler = self._route(request.method, path)
            if handler is None:
                self.unhandled.append(f"{request.method} {path}")
                return json_response(404, {"message": "404: Not Found", "code": 0})
            bot_route = not path.startswith(("/interactions/", "/webhooks/"))
            if bot_route and request.headers.get("Authorization") != f"Bot {self.token}":
                return json_response(401, {"message": "401: Unauthorized", "code": 0})
            return await handler(call)
        finally:
            await self.changed()

    def _scripted_failure(self, method: str, path: str) -> web.Response | None:
        for failure in self._failures:
            if failure.method == method and failure.path.fullmatch(path) and failure.times > 0:
                if failure.skip > 0:
                    failure.skip -= 1
                    continue
                failure.times -= 1
                return json_response(failure.status, failure.body, failure.headers)
        return None

    def _route(self, method: str, path: str) -> Callable[[Call], Awaitable[web.Response]] | None:
        routes: list[tuple[str, str, Callable[[Call], Awaitable[web.Response]]]] = [
            ("GET", r"/users/@me", self._me),
            ("GET", r"/oauth2/applications/@me", self._application),
            ("GET", r"/gateway/bot", self._gateway_bot),
            ("GET", r"/gateway", self._gateway_plain),
            ("POST", r"/users/@me/channels", self._open_dm),
            ("GET", r"/channels/\d+", self._get_channel),
            ("POST", r"/channels/\d+/messages", self._create_message),
            ("GET", r"/channels/\d+/messages", self._list_messages),
            ("GET", r"/channels/\d+/messages/\d+", self._get_message),
            ("PATCH", r"/channels/\d+/messages/\d+", self._edit_message),
            ("DELETE", r"/channels/\d+/messages/\d+", self._delete_message),
            ("POST", r"/channels/\d+/typing", self._typing),
            ("POST", r"/channels/\d+/messages/\d+/threads", self._start_thread),
            ("POST", r"/interactions/\d+/[^/]+/callback", self._callback),
            ("POST", r"/webhooks/\d+/[^/]+", self._followup),
            ("PATCH", r"/webhooks/\d+/[^/]+/messages/@original", self._edit_original),
            ("DELETE", r"/webhooks/\d+/[^/]+/messages/@original", self._delete_original),
            ("PATCH", r"/webhooks/\d+/[^/]+/messages/\d+", self._edit_followup),
            ("DELETE", r"/webhooks/\d+/[^/]+/messages/\d+", self._delete_followup),
            ("PUT", r"/applications/\d+/commands", self._sync),
            ("PUT", r"/applications/\d+/guilds/\d+/commands", self._sync),
        ]
        for m, pattern, handler in routes:
            if m == method and re.fullmatch(pattern, path):
                return handler
        return None

    async def _me(self, call: Call) -> web.Response:
        return json_response(200, {**self.bot, "verified": True, "mfa_enabled": False, "flags": 0})

    async def _application(self, call: Call) -> web.Response:
        return json_response(
            200,
            {
                "id": self.application_id,
                "name": "Threadline",
                "icon": None,
                "description": "",
                "bot_public": True,
                "bot_require_code_grant": False,
                "verify_key": "00" * 32,
                "owner": self.alice,
                "team": None,
                "flags": 0,
                "summary": "",
                "rpc_origins": [],
            },
        )

    async def _gateway_bot(self, call: Call) -> web.Response:
        return json_response(
            200,
            {
                "url": self.gateway_url,
                "shards": self.shard_count,
                "session_start_limit": {
                    "total": 1000,
                    "remaining": 999,
                    "reset_after": 14_400_000,
                    "max_concurrency": 1,
                },
            },
        )

    async def _gateway_plain(self, call: Call) -> web.Response:
        return json_response(200, {"url": self.gateway_url})

    async def _open_dm(self, call: Call) -> web.Response:
        recipient = str((call.body or {}).get("recipient_id"))
        user = self._known_user(recipient)
        if user is None:
            return json_response(400, {"message": "Invalid Recipient(s)", "code": 50033})
        channel_id = self.dm_channels.setdefault(recipient, self._id())
        return json_response(
            200, {"id": channel_id, "type": 1, "recipients": [user], "last_message_id": None}
        )

    def dm_channel_of(self, user: User) -> str | None:
        return self.dm_channels.get(user["id"])

    async def _get_channel(self, call: Call) -> web.Response:
        channel = self.channels.get(call.path.split("/")[2])
        if channel is None:
            return json_response(404, {"message": "Unknown Channel", "code": 10003})
        return json_response(200, channel)

    async def _typing(self, call: Call) -> web.Response:
        self.typing.append(call.path.split("/")[2])
        return empty_response()

    async def _create_message(self, call: Call) -> web.Response:
        channel_id = call.path.split("/")[2]
        held = self._held.get(channel_id)
        if held is not None:
            await self.changed()  # the call is recorded: a test may wait for it
            await held.wait()
        body = call.body or {}
        problem = self._check_content(body, call.files)
        if problem is not None:
            return problem
        nonce = str(body.get("nonce") or "")
        if nonce and body.get("enforce_nonce"):
            seen = self._nonces.get(nonce)
            if seen is not None and call.at - seen[1] <= self.nonce_window:
                # The same author sent this nonce a moment ago: Discord answers with that
                # message and creates none.
                return json_response(200, {**self._bot_message(seen[0]), "nonce": nonce})
        flags = int(body.get("flags") or 0)
        if flags & IS_VOICE_MESSAGE:
            problem = self._check_voice_message(channel_id, body, call.files)
            if problem is not None:
                return problem
        posted = Posted(self._id(), channel_id, body.get("content") or "", call.files)
        posted.posted_at = posted.written_at = self.edit_clock()
        posted.flags = flags
        posted.attachment_meta = list(body.get("attachments") or [])
        posted.components = list(body.get("components") or [])
        self.posts.append(posted)
        if nonce:
            self._nonces[nonce] = (posted, call.at)
        message = self._bot_message(posted)
        if nonce:
            message["nonce"] = nonce
        if channel_id in self.channels:
            message["guild_id"] = self.guild_of(channel_id)
            await self.dispatch("MESSAGE_CREATE", message)  # the bot's own echo
        elif channel_id in self.dm_channels.values():
            await self.dispatch("MESSAGE_CREATE", message, dm=True)
        return json_response(200, message)

    def _own_message(self, call: Call) -> Posted | None:
        _, channel_id, _, message_id = call.path.strip("/").split("/")[:4]
        return next(
            (
                p
                for p in self.posts
                if p.id == message_id and p.channel_id == channel_id and not p.deleted
            ),
            None,
        )

    async def _get_message(self, call: Call) -> web.Response:
        posted = self._own_message(call)
        if posted is not None:
            message = self._bot_message(posted)
            if posted.channel_id in self.channels:
                message["guild_id"] = self.guild_of(posted.channel_id)
            return json_response(200, message)
        message_id = call.path.strip("/").split("/")[3]
        if message_id in self.user_messages:
            return json_response(200, self.user_messages[message_id])
        return json_response(404, {"message": "Unknown Message", "code": 10008})

    async def _list_messages(self, call: Call) -> web.Response:
        """`GET /channels/{id}/messages` as Discord answers it: newest first; `before=` the
        `limit` (1-100, default 50) newest older than it, `after=` the `limit` oldest newer than
        it (still sent newest first)."""
        channel_id = call.path.split("/")[2]
        if channel_id not in self.channels and channel_id not in self.dm_channels.values():
            return json_response(404, {"message": "Unknown Channel", "code": 10003})
        try:
            limit = int(call.query.get("limit", "50"))
            before = int(call.query["before"]) if "before" in call.query else None
            after = int(call.query["after"]) if "after" in call.query else None
        except ValueError:
            return json_response(400, {"message": "Invalid Form Body", "code": 50035})
        if not 1 <= limit <= 100:
            return json_response(400, {"message": "Invalid Form Body", "code": 50035})
        found = [m for m in self.user_messages.values() if m["channel_id"] == channel_id]
        found += [self._bot_message(p) for p in self.messages_in(channel_id)]
        found.sort(key=lambda m: int(m["id"]))
        if before is not None:
            found = [m for m in found if int(m["id"]) < before][-limit:]
        elif after is not None:
            found = [m for m in found if int(m["id"]) > after][:limit]
        else:
            found = found[-limit:]
        return json_response(200, found[::-1])

    async def _edit_message(self, call: Call) -> web.Response:
        posted = self._own_message(call)
        if posted is None:
            return json_response(404, {"message": "Unknown Message", "code": 10008})
        body = call.body or {}
        if "content" in body:
            problem = self._check_content(body, posted.files) or self._too_soon(posted, call)
            if problem is not None:
                return problem
            self._edited(posted, body.get("content") or "")
        if "components" in body:
            posted.components = list(body.get("components") or [])
        return json_response(200, self._bot_message(posted))

    async def _delete_message(self, call: Call) -> web.Response:
        posted = self._own_message(call)
        if posted is None:
            return json_response(404, {"message": "Unknown Message", "code": 10008})
        posted.deleted = True
        return empty_response()

    def _check_content(
        self, body: dict[str, Any], files: list[UploadedFile]
    ) -> web.Response | None:
        content = body.get("content") or ""
        if len(content) > MAX_CONTENT:
            return json_response(
                400,
                {
                    "message": "Invalid Form Body",
                    "code": 50035,
                    "errors": {
                        "content": {
                            "_errors": [
                                {
                                    "code": "BASE_TYPE_MAX_LENGTH",
                                    "message": "Must be 2000 or fewer in length.",
                                }
                            ]
                        }
                    },
                },
            )
        if not content and not files:
            return json_response(400, {"message": "Cannot send an empty message", "code": 50006})
        if sum(len(f.data) for f in files) > self.upload_limit:
            return json_response(413, {"message": "Request entity too large", "code": 40005})
        return None

    def _check_voice_message(
        self, channel_id: str, body: dict[str, Any], files: list[UploadedFile]
    ) -> web.Response | None:
        """What Discord checks of a voice message: one OGG file, no text, a duration and a
        base64 waveform of at most 256 bytes; and whether the channel allows them at all."""
        if channel_id in self.no_voice_messages:
            return json_response(
                403, {"message": "Cannot send voice messages in this channel.", "code": 50173}
            )
        if body.get("content"):
            return json_response(
                400, {"message": "Voice messages do not support additional content", "code": 50159}
            )
        meta = body.get("attachments") or []
        if len(files) != 1 or len(meta) != 1:
            return json_response(400, {"message": SINGLE_AUDIO, "code": 50160})
        try:
            duration = float(meta[0]["duration_secs"])
            waveform = base64.b64decode(meta[0]["waveform"], validate=True)
        except (KeyError, TypeError, ValueError, binascii.Error):
            return json_response(400, {"message": "Invalid Form Body", "code": 50035})
        if duration <= 0 or not 0 < len(waveform) <= MAX_WAVEFORM:
            return json_response(400, {"message": "Invalid Form Body", "code": 50035})
        if not files[0].data.startswith(b"OggS"):
            return json_response(400, {"message": SINGLE_AUDIO, "code": 50160})
        return None

    def _bot_message(self, posted: Posted) -> Message:
        attachments: list[MessageAttachment] = [
            {
                "id": self._id(),
                "filename": f.filename,
                "size": len(f.data),
                "url": f"{self.api_url}/attachments/{f.filename}",
                "proxy_url": f"{self.api_url}/attachments/{f.filename}",
                "content_type": f.content_type,
            }
            for f in posted.files
        ]
        message = self._message(posted.channel_id, self.bot, posted.content)
        message["id"] = posted.id
        message["attachments"] = attachments
        message["components"] = posted.components  # type: ignore[typeddict-unknown-key]
        message["flags"] = (
            (EPHEMERAL if posted.ephemeral else 0)
            | (LOADING if posted.loading else 0)
            | (posted.flags & IS_VOICE_MESSAGE)
        )
        return message

    async def _start_thread(self, call: Call) -> web.Response:
        _, _, channel_id, _, message_id, _ = call.path.split("/")
        body = call.body or {}
        name = str(body.get("name") or "")
        if not 1 <= len(name) <= 100:
            return json_response(
                400, {"message": "Invalid Form Body", "code": 50035, "errors": {"name": {}}}
            )
        if message_id in self.channels:
            return json_response(
                400,
                {"message": "A thread has already been created for this message", "code": 160004},
            )
        origin = self.user_messages.get(message_id)
        own = any(p.id == message_id and p.channel_id == channel_id for p in self.posts)
        if not own and (origin is None or origin["channel_id"] != channel_id):
            return json_response(404, {"message": "Unknown Message", "code": 10008})
        thread = self._thread(message_id, channel_id, name, self.bot["id"])
        self.channels[message_id] = thread
        self.threads_opened.append(thread)
        await self.dispatch("THREAD_CREATE", {**thread, "newly_created": True})
        return json_response(201, thread)

    # -- interactions --------------------------------------------------------------------------

    def _interaction_by_token(self, token: str) -> InteractionState | None:
        return next((s for s in self.interactions.values() if s.payload["token"] == token), None)

    async def _callback(self, call: Call) -> web.Response:
        _, _, interaction_id, token, _ = call.path.split("/")
        state = self.interactions.get(interaction_id)
        if state is None or state.payload["token"] != token:
            return json_response(404, {"message": "Unknown interaction", "code": 10062})
        if state.callback_type is not None:
            return json_response(
                400, {"message": "Interaction has already been acknowledged.", "code": 40060}
            )
        if call.at - state.created > self.interaction_window:
            return json_response(404, {"message": "Unknown interaction", "code": 10062})
        body = call.body or {}
        kind = int(body.get("type", 0))
        flags = int((body.get("data") or {}).get("flags") or 0)
        state.callback_at, state.callback_type = call.at, kind
        state.deferred_ephemeral = bool(flags & EPHEMERAL)
        if kind in (DEFERRED_UPDATE_MESSAGE, UPDATE_MESSAGE):
            return await self._update_component_message(call, state, kind, body)
        if kind == MODAL:
            return self._open_modal(call, state, body)
        content = str((body.get("data") or {}).get("content") or "")
        state.original = Posted(
            self._id(),
            state.payload["channel_id"],
            content,
            call.files,
            ephemeral=state.deferred_ephemeral,
            kind="original",
            interaction_id=interaction_id,
            loading=kind == 5,
        )
        if call.query.get("with_response") not in ("1", "true", "True"):
            return empty_response()
        message = self._bot_message(state.original)
        return json_response(
            200,
            {
                "interaction": {
                    "id": interaction_id,
                    "type": 2,
                    "response_message_id": state.original.id,
                    "response_message_loading": kind == 5,
                    "response_message_ephemeral": state.deferred_ephemeral,
                },
                "resource": {"type": kind, "message": message},
            },
        )

    def _open_modal(
        self, call: Call, state: InteractionState, body: dict[str, Any]
    ) -> web.Response:
        """A MODAL callback: the form (checked against Discord's limits) is shown to the
        person who clicked; no message is made."""
        data = body.get("data") or {}
        inputs = [c for row in data.get("components") or [] for c in row.get("components", [])]
        bad = (
            state.payload["type"] not in (2, 3)
            or not 0 < len(str(data.get("title") or "")) <= 45
            or not 0 < len(str(data.get("custom_id") or "")) <= 100
            or not 0 < len(inputs) <= 5
            or any(
                c.get("type") != 4
                or not 0 < len(str(c.get("label") or "")) <= 45
                or not 0 < int(c.get("max_length", 4000)) <= 4000
                for c in inputs
            )
        )
        if bad:
            return json_response(400, {"message": "Invalid Form Body", "code": 50035})
        state.modal = data
        if call.query.get("with_response") not in ("1", "true", "True"):
            return empty_response()
        interaction = {"id": state.payload["id"], "type": state.payload["type"]}
        return json_response(200, {"interaction": interaction, "resource": {"type": MODAL}})

    async def _update_component_message(
        self, call: Call, state: InteractionState, kind: int, body: dict[str, Any]
    ) -> web.Response:
        """Types 6 and 7 answer a click by (later, or now) editing the message that holds the
        component: it becomes the interaction's original response."""
        clicked = cast(dict[str, Any], state.payload).get("message") or {}
        if state.payload["type"] != 3 or not clicked:
            return json_response(400, {"message": "Invalid interaction type", "code": 50035})
        target = next((p for p in self.posts if p.id == clicked["id"] and not p.deleted), None)
        if target is None:
            return json_response(404, {"message": "Unknown Message", "code": 10008})
        state.original = target
        data = body.get("data") or {}
        if kind == UPDATE_MESSAGE:
            if "content" in data:
                target.content = str(data.get("content") or "")
                target.edits.append(target.content)
            if "components" in data:
                target.components = list(data.get("components") or [])
        if call.query.get("with_response") not in ("1", "true", "True"):
            return empty_response()
        message = self._bot_message(target)
        message["guild_id"] = self.guild_id
        return json_response(
            200,
            {
                "interaction": {
                    "id": state.payload["id"],
                    "type": 3,
                    "response_message_id": target.id,
                    "response_message_loading": False,
                    "response_message_ephemeral": False,
                },
                "resource": {"type": kind, "message": message},
            },
        )

    async def _followup(self, call: Call) -> web.Response:
        token = call.path.split("/")[3]
        state = self._interaction_by_token(token)
        if state is None or state.callback_type is None or state.callback_type == MODAL:
            return json_response(404, {"message": "Unknown Webhook", "code": 10015})
        body = call.body or {}
        problem = self._check_content(body, call.files)
        if problem is not None:
            return problem
        original = state.original
        if original is not None and original.loading and not original.deleted:
            # The first follow-up after a deferral fills the "thinking…" response and keeps
            # the visibility chosen when deferring.
            original.loading = False
            original.content = body.get("content") or ""
            original.files = call.files
            original.components = list(body.get("components") or [])
            original.written_at = self.edit_clock()
            self.posts.append(original)
            return json_response(200, self._bot_message(original))
        posted = Posted(
            self._id(),
            state.payload["channel_id"],
            body.get("content") or "",
            call.files,
            ephemeral=bool(int(body.get("flags") or 0) & EPHEMERAL),
            kind="followup",
            interaction_id=state.payload["id"],
            posted_at=self.edit_clock(),
        )
        posted.written_at = posted.posted_at
        posted.components = list(body.get("components") or [])
        state.followups.append(posted)
        self.posts.append(posted)
        return json_response(200, self._bot_message(posted))

    async def _edit_original(self, call: Call) -> web.Response:
        state = self._interaction_by_token(call.path.split("/")[3])
        if state is None or state.original is None or state.original.deleted:
            return json_response(404, {"message": "Unknown Message", "code": 10008})
        body = call.body or {}
        original = state.original
        content = body.get("content") or "" if "content" in body else original.content
        files = call.files or original.files
        problem = self._check_content({"content": content}, files)
        if problem is None and not original.loading:
            problem = self._too_soon(original, call)
        if problem is not None:
            return problem
        if original.loading:
            self.posts.append(original)
        original.loading, original.files = False, files
        self._edited(original, content)
        if "components" in body:
            original.components = list(body.get("components") or [])
        return json_response(200, self._bot_message(original))

    def _followup_of(self, call: Call) -> Posted | None:
        _, _, _, token, _, message_id = call.path.split("/")
        state = self._interaction_by_token(token)
        if state is None:
            return None
        return next((p for p in state.followups if p.id == message_id and not p.deleted), None)

    async def _edit_followup(self, call: Call) -> web.Response:
        posted = self._followup_of(call)
        if posted is None:
            return json_response(404, {"message": "Unknown Message", "code": 10008})
        body = call.body or {}
        if "content" in body:
            problem = self._check_content(body, posted.files) or self._too_soon(posted, call)
            if problem is not None:
                return problem
            self._edited(posted, body.get("content") or "")
        return json_response(200, self._bot_message(posted))

    async def _delete_followup(self, call: Call) -> web.Response:
        posted = self._followup_of(call)
        if posted is None:
            return json_response(404, {"message": "Unknown Message", "code": 10008})
        posted.deleted = True
        return empty_response()

    async def _delete_original(self, call: Call) -> web.Response:
        state = self._interaction_by_token(call.path.split("/")[3])
        if state is None or state.original is None or state.original.deleted:
            return json_response(404, {"message": "Unknown Message", "code": 10008})
        state.original.deleted = True
        return empty_response()

    # -- application commands ------------------------------------------------------------------

    async def _sync(self, call: Call) -> web.Response:
        parts = call.path.split("/")
        scope = parts[4] if len(parts) > 5 else "global"
        commands = call.body if isinstance(call.body, list) else None
        problem = check_commands(commands)
        if problem is not None or commands is None:
            return json_response(
                400, {"message": "Invalid Form Body", "code": 50035, "errors": problem or "body"}
            )
        self.syncs.append(Sync(scope, commands))
        out = [
            {
                **c,
                "id": self._id(),
                "application_id": self.application_id,
                "version": self._id(),
                "default_member_permissions": None,
                "dm_permission": True,
                "nsfw": False,
                **({"guild_id": scope} if scope != "global" else {}),
            }
            for c in commands
        ]
        return json_response(200, out)
