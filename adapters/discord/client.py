"""The Discord adapter: a discord.py gateway client whose listeners translate, hand to core and
render. `run_discord(core, settings, stop)` is the entry point for `threadline worker`.

What users see:

- a mention in a channel opens a thread on that message (named from the question) and the
  answer goes inside; mentioned inside a thread, it answers there; in a thread it opened, the
  conversation continues without a mention until the thread is archived; DMs work too;
- `/threadline <command>` is deferred at once (Discord allows 3 s) and answered with a
  follow-up, privately for personal results;
- "typing…" while the agent works; a thread it opened is never left empty (a failure to post
  the answer is reported inside it).

Exactly once: every message and interaction is claimed in `core.events` before any work, so a
gateway resume that replays events, or a second process, never answers twice; the parts of an
answer are recorded as they are posted. Listeners are methods of the client class and
commands are synced in `setup_hook` (once per process), so a second `on_ready` (discord.py
fires one after every re-identify) doubles nothing.
"""

from __future__ import annotations

import asyncio
import logging
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any, cast

from adapters.background import BackgroundWork, last_word
from adapters.discord import delivery
from adapters.discord.confirm import DiscordConfirmer, is_confirmation_click
from adapters.discord.endpoints import api_base, follow_gateway, use_rest_base
from adapters.discord.lib import discord
from adapters.discord.translate import (
    COMMAND_NAME,
    PLATFORM,
    Names,
    Origin,
    Outgoing,
    RoleRef,
    asks_to_read_aloud,
    command_definitions,
    command_text,
    is_private,
    message_text,
    read_aloud_text,
    render,
    thread_name,
    to_request,
)
from config.settings import DEFAULT_DISCORD_UPLOAD_LIMIT
from core import messages

if TYPE_CHECKING:
    from adapters.discord.payloads import CommandData
    from config.settings import Settings
    from core.mcp.confirm import ConfirmationGate
    from core.outbox import OutboxItem
    from core.service import Core

log = logging.getLogger("threadline.discord")

THREAD_ALREADY_EXISTS = 160004  # Discord error code: this message already has a thread
ANSWERABLE_TYPES = frozenset({discord.MessageType.default, discord.MessageType.reply})


class DiscordStartupError(Exception):
    """The Discord client cannot run with these settings or could not connect; `str()` says
    why, without secrets. The worker exits non-zero so its supervisor restarts it."""


@dataclass(frozen=True, slots=True)
class DiscordConfig:
    token: str = field(repr=False)  # never in logs or tracebacks
    api_url: str | None = None  # DISCORD_API_URL: REST base; the gateway follows it
    guild_ids: tuple[int, ...] = ()  # sync app commands to these guilds instead of globally
    upload_limit: int = DEFAULT_DISCORD_UPLOAD_LIMIT
    shards: str | None = None  # None: one connection; "auto" or "N": auto-sharded client
    shard_ids: tuple[int, ...] = ()
    guild_ready_timeout: float = 2.0  # discord.py waits this long after the last GUILD_CREATE
    identify_delay: float = 5.0  # pause before a re-identify (Discord's identify rate limit)
    connect_timeout: float = 60.0  # the first READY must arrive within this
    typing_every: float = 8.0
    progress_every: float = 1.0  # at most one progress-note edit per interval
    shutdown_grace: float = 30.0  # seconds in-flight answers may take to finish on stop

    @classmethod
    def from_settings(cls, settings: Settings, **tuning: Any) -> DiscordConfig:
        if settings.discord_token is None:
            raise DiscordStartupError("DISCORD_TOKEN is not set: the Discord adapter needs it")
        config = cls(
            token=settings.discord_token.get_secret_value(),
            api_url=settings.discord_api_url,
            guild_ids=settings.discord_guild_ids,
            upload_limit=settings.discord_upload_limit,
            shards=settings.discord_shard_count,
            shard_ids=settings.discord_shard_ids,
        )
        return replace(config, **tuning)

    @property
    def sharded(self) -> bool:
        return self.shards is not None

    @property
    def syncs_commands(self) -> bool:
        """With shards split over processes, only the process with shard 0 syncs commands."""
        return not self.shard_ids or 0 in self.shard_ids


def intents() -> discord.Intents:
    """Guilds (channels, threads, roles), messages in guilds and DMs, and their content (a
    privileged intent: enable "Message Content Intent" in the developer portal)."""
    wanted = discord.Intents.none()
    wanted.guilds = True
    wanted.guild_messages = True
    wanted.dm_messages = True
    wanted.message_content = True
    # 🔊 on one of Threadline's messages reads it aloud (not privileged).
    wanted.guild_reactions = True
    wanted.dm_reactions = True
    return wanted


class DiscordAdapter:
    """Composes core with a discord.py client. `await run(stop)` serves until `stop` is set."""

    def __init__(
        self, core: Core, config: DiscordConfig, confirmations: ConfirmationGate | None = None
    ) -> None:
        self.core = core
        self.config = config
        self.client = self._make_client()
        # Given: tool calls with side effects are confirmed with buttons where they were asked.
        self.confirmations = confirmations
        self._confirmer = (
            DiscordConfirmer(self.client, confirmations) if confirmations is not None else None
        )
        self.syncs = 0  # app command syncs done (one per process)
        self.readies = 0  # on_ready events seen (one per identify)
        self.cut = 0  # answers cancelled at the end of the shutdown grace
        self._synced = False
        self._connected = False
        self._closing = False
        self._ready_changed = asyncio.Condition()
        self._work = BackgroundWork("Discord")

    def _make_client(self) -> discord.Client:
        options: dict[str, Any] = {
            "intents": intents(),
            "allowed_mentions": delivery.NO_PINGS,
            "guild_ready_timeout": self.config.guild_ready_timeout,
            "max_messages": None,  # Threadline reads no message cache
            "chunk_guilds_at_startup": False,
        }
        if not self.config.sharded:
            return ThreadlineClient(self, **options)
        if self.config.shards != "auto":
            options["shard_count"] = int(self.config.shards or 1)
            if self.config.shard_ids:
                options["shard_ids"] = list(self.config.shard_ids)
        return ShardedThreadlineClient(self, **options)

    # -- lifecycle -----------------------------------------------------------------------------

    async def run(self, stop: asyncio.Event) -> None:
        """Log in, connect and serve until `stop` is set. Raises `DiscordStartupError` when the
        first connection fails (discord.py 2.7.1 does not retry it) or is lost for good."""
        saved = use_rest_base(self.config.api_url) if self.config.api_url else None
        if self.confirmations is not None and self._confirmer is not None:
            self.confirmations.register(PLATFORM, self._confirmer)
        client_task = asyncio.create_task(self.client.start(self.config.token))
        stop_task = asyncio.create_task(stop.wait())
        try:
            await self._until_connected(client_task, stop_task)
            if not stop.is_set():
                await asyncio.wait({client_task, stop_task}, return_when=asyncio.FIRST_COMPLETED)
            if client_task.done() and not stop.is_set():
                reason = self._explain(_error_of(client_task))
                log.error("Discord adapter stopped: %s", reason)
                raise DiscordStartupError(reason)
        finally:
            stop_task.cancel()
            await self.aclose()
            if not client_task.done():
                client_task.cancel()
            await asyncio.gather(client_task, return_exceptions=True)
            if saved is not None:
                saved.restore()

    async def _until_connected(
        self, client_task: asyncio.Task[None], stop_task: asyncio.Task[bool]
    ) -> None:
        async def first_ready() -> None:
            async with self._ready_changed:
                await self._ready_changed.wait_for(lambda: self.readies > 0)

        ready_task = asyncio.create_task(first_ready())
        try:
            done, _ = await asyncio.wait(
                {client_task, stop_task, ready_task},
                timeout=self.config.connect_timeout,
                return_when=asyncio.FIRST_COMPLETED,
            )
        finally:
            ready_task.cancel()
        if stop_task in done or ready_task in done:
            return
        if client_task in done:
            reason = self._explain(_error_of(client_task))
        else:
            reason = (
                f"no READY from the Discord gateway within {self.config.connect_timeout:g} s "
                f"({self._where()})"
            )
        log.error("Discord adapter stopped: %s", reason)
        raise DiscordStartupError(reason)

    async def idle(self) -> None:
        """Wait until every answer in flight has finished."""
        await self._work.idle()

    async def wait_ready(self, count: int = 1) -> None:
        """Wait until discord.py has fired `on_ready` `count` times (tests, health checks)."""
        async with self._ready_changed:
            await self._ready_changed.wait_for(lambda: self.readies >= count)

    async def aclose(self) -> None:
        """Stop taking new work, let answers in flight finish (up to the grace), disconnect."""
        self._closing = True
        if self.confirmations is not None and self._confirmer is not None:
            self.confirmations.unregister(PLATFORM, self._confirmer)
        self.cut += await self._work.drain(self.config.shutdown_grace)
        if not self.client.is_closed():
            await self.client.close()

    def _where(self) -> str:
        rest = api_base(self.config.api_url) if self.config.api_url else discord.http.Route.BASE
        gateway = discord.gateway.DiscordWebSocket.DEFAULT_GATEWAY
        return f"API {rest}, gateway {gateway}"

    def _explain(self, exc: BaseException | None) -> str:
        """One clear line for the operator: what failed and what to check (no secrets)."""
        if exc is None:
            return "the Discord client stopped without an error"
        if isinstance(exc, discord.LoginFailure):
            return "Discord refused DISCORD_TOKEN (401 on /users/@me): check the bot token"
        if isinstance(exc, discord.PrivilegedIntentsRequired):
            return (
                "the Message Content intent is not enabled for this bot: turn on 'Message "
                "Content Intent' under Bot > Privileged Gateway Intents in the Discord "
                "developer portal"
            )
        if isinstance(exc, discord.ConnectionClosed) and exc.code == 4004:
            return "the Discord gateway rejected DISCORD_TOKEN (close code 4004)"
        if isinstance(exc, discord.ConnectionClosed):
            return f"the Discord gateway closed the connection for good (close code {exc.code})"
        if isinstance(exc, discord.GatewayNotFound):
            return f"the Discord API did not say where its gateway is ({self._where()})"
        if isinstance(exc, discord.HTTPException):
            return f"the Discord API answered HTTP {exc.status} at start-up ({self._where()})"
        if isinstance(exc, AttributeError) and exc.__context__ is not None:
            # discord.py 2.7.1 trips over its own missing websocket while handling a failed
            # first connection; the real cause is the exception it was handling.
            exc = exc.__context__
        what = "reach Discord" if not self._connected else "stay connected to Discord"
        return (
            f"could not {what} ({type(exc).__name__}: {exc}); {self._where()}. "
            "discord.py does not retry a failed first connection: the process exits so its "
            "supervisor can restart it"
        )

    # -- set-up (runs once per process: inside login, before the gateway connects) -------------

    async def setup(self, client: discord.Client) -> None:
        if self.config.api_url:
            url = await follow_gateway(client.http)
            log.info("Discord API at %s; gateway at %s", api_base(self.config.api_url), url)
        await self.sync_commands(client)

    async def sync_commands(self, client: discord.Client) -> None:
        """`/threadline` with a sub-command per command of the shared language: globally, or
        per guild with DISCORD_GUILD_IDS (instant there, while global changes take a while).
        Once per process; a failure is logged and mentions keep working."""
        if self._synced or not self.config.syncs_commands:
            return
        self._synced = True
        app_id = client.application_id
        if app_id is None:
            log.error("Discord: no application id after login; app commands were not synced")
            return
        payload = cast("list[Any]", command_definitions(self.core.commands))
        try:
            if self.config.guild_ids:
                for guild_id in self.config.guild_ids:
                    await client.http.bulk_upsert_guild_commands(app_id, guild_id, payload)
            else:
                await client.http.bulk_upsert_global_commands(app_id, payload)
        except discord.HTTPException as exc:
            log.error(
                "Discord: syncing the /%s command failed (HTTP %s, code %s): %s",
                COMMAND_NAME,
                exc.status,
                exc.code,
                exc.text,
            )
            return
        self.syncs += 1
        scope = f"guilds {list(self.config.guild_ids)}" if self.config.guild_ids else "globally"
        log.info("Discord: /%s command synced %s", COMMAND_NAME, scope)

    # -- events --------------------------------------------------------------------------------

    async def on_ready(self, client: discord.Client) -> None:
        self._connected = True
        async with self._ready_changed:
            self.readies += 1
            self._ready_changed.notify_all()
        user = client.user
        log.info(
            "Discord: ready as %s (%s) in %d guilds",
            user,
            user.id if user else "?",
            len(client.guilds),
        )

    def on_message(self, client: discord.Client, message: discord.Message) -> None:
        me = client.user
        if self._closing or me is None:
            return
        if message.author.bot or message.author.id == me.id or message.webhook_id:
            return  # bots, webhooks and Threadline's own echo
        if message.type not in ANSWERABLE_TYPES:
            return  # joins, pins, thread starters and other system messages
        self._work.spawn(self._answer_message(client, me, message))

    def on_interaction(self, interaction: discord.Interaction) -> None:
        if self._confirmer is not None and is_confirmation_click(interaction):
            # Answered even while closing: a request waiting on it may be what keeps us open.
            self._work.spawn(self._confirmer.click(interaction))
            return
        if self._closing or interaction.type is not discord.InteractionType.application_command:
            return
        data = cast("CommandData | None", interaction.data)
        if data is None or data.get("name") != COMMAND_NAME:
            return
        self._work.spawn(self._answer_command(interaction, data))

    def on_reaction(self, client: discord.Client, payload: discord.RawReactionActionEvent) -> None:
        me = client.user
        if self._closing or me is None:
            return
        emoji = payload.emoji.name if payload.emoji.id is None else None  # custom ones: no
        if asks_to_read_aloud(emoji, payload.message_author_id, payload.user_id, me.id):
            self._work.spawn(self._read_aloud(client, me, payload))

    def on_thread_closed(self, guild_id: int, parent_id: int, thread_id: int) -> None:
        """An archived or deleted thread: follow-ups there need a mention again."""
        self._work.spawn(
            self._forget_thread(str(guild_id), str(parent_id), str(thread_id)),
        )

    # -- messages ------------------------------------------------------------------------------

    async def _answer_message(
        self, client: discord.Client, me: discord.ClientUser, message: discord.Message
    ) -> None:
        channel: Any = message.channel
        if message.guild is not None and isinstance(channel, discord.PartialMessageable):
            channel = await self._resolve(client, channel.id)  # a thread not in the cache
            if channel is None:
                return
        mentioned = _mentions(message, me)
        events = self.core.events
        origin = _origin(message.author, message.guild, channel)
        text = message_text(message.content, me.id, _names(message))
        if isinstance(channel, discord.Thread):
            if not mentioned and not await events.thread_marked(
                PLATFORM, origin.tenant, origin.channel, str(channel.id)
            ):
                return  # chatter in a thread Threadline is not part of
            if await self._claim(origin.tenant, f"message:{message.id}"):
                await self._answer_in(channel, origin, text, message, str(channel.id))
            return
        if message.guild is None:  # a DM: the DM channel is one conversation
            if await self._claim(origin.tenant, f"message:{message.id}"):
                await self._answer_in(channel, origin, text, message, str(channel.id))
            return
        if mentioned and await self._claim(origin.tenant, f"message:{message.id}"):
            await self._open_thread_and_answer(client, message, origin, text)

    async def _read_aloud(
        self,
        client: discord.Client,
        me: discord.ClientUser,
        payload: discord.RawReactionActionEvent,
    ) -> None:
        """🔊 on one of Threadline's messages: that message read aloud where it is."""
        channel = await self._resolve(client, payload.channel_id)
        if channel is None:
            return
        guild = client.get_guild(payload.guild_id) if payload.guild_id else None
        author: discord.User | discord.Member | None = payload.member
        try:
            if author is None:
                author = client.get_user(payload.user_id) or await client.fetch_user(
                    payload.user_id
                )
            message = await channel.fetch_message(payload.message_id)
        except discord.HTTPException as exc:
            log.info("Discord: cannot read the reacted message (%s)", _describe(exc))
            return
        if not message.content.strip():
            return  # a file or a voice message: nothing written to read
        origin = _origin(author, guild, channel)
        tenant = origin.tenant
        key = f"reaction:{payload.message_id}:{payload.user_id}"
        if not await self._claim(tenant, key):
            return
        text = read_aloud_text(message.content, me.id, _names(message))
        await self._answer_in(
            channel, origin, text, message, str(channel.id), key=f"{tenant}:{key}"
        )

    async def _open_thread_and_answer(
        self, client: discord.Client, message: discord.Message, origin: Origin, text: str
    ) -> None:
        thread: discord.Thread | None = None
        try:
            thread = await message.create_thread(name=thread_name(text))
        except discord.HTTPException as exc:
            if exc.code == THREAD_ALREADY_EXISTS:  # opened by an earlier attempt
                found = await self._resolve(client, message.id)
                thread = found if isinstance(found, discord.Thread) else None
            if thread is None:
                log.warning(
                    "Discord: cannot open a thread in channel %s (HTTP %s, code %s; the bot "
                    "needs Create Public Threads there); answering in the channel",
                    message.channel.id,
                    exc.status,
                    exc.code,
                )
                await self._answer_in(
                    message.channel, origin, text, message, str(message.id), reply_to=message
                )
                return
        try:
            await self.core.events.mark_thread(
                PLATFORM, origin.tenant, origin.channel, str(thread.id)
            )
        except Exception:  # follow-ups will need a mention; the answer still goes out
            log.exception("Discord: could not remember thread %s", thread.id)
        inside = replace(origin, channel_id=thread.id, parent_id=message.channel.id)
        await self._answer_in(thread, inside, text, message, str(thread.id))

    async def _answer_in(
        self,
        channel: discord.abc.Messageable,
        origin: Origin,
        text: str,
        message: discord.Message,
        conversation: str,
        *,
        reply_to: discord.Message | None = None,
        key: str | None = None,
    ) -> None:
        """Answer in `channel` (a thread, a DM, or a channel without threads). Whatever fails,
        something is posted: the answer, or a short error line. `key` names the delivery
        (default: the message answered)."""
        request = to_request(origin, text, thread=conversation)
        key = key or f"{origin.tenant}:message:{message.id}"
        status = delivery.ProgressNote(channel=channel, every=self.config.progress_every)
        try:
            async with delivery.typing(channel, self.config.typing_every):
                try:
                    reply = await self.core.handle(request, status.update)
                except asyncio.CancelledError:
                    cut = messages.ANSWER_CUT
                    await last_word(lambda: channel.send(cut, allowed_mentions=delivery.NO_PINGS))
                    raise
                finally:
                    await status.finish()
            parts = render(reply, upload_limit=self._upload_limit(message.guild))
            if reply.ephemeral and message.guild is not None:
                await self._answer_privately(message.author, channel, key, parts)
            else:
                await delivery.post(self.core.events, channel, key, parts, reference=reply_to)
        except Exception as exc:
            refused = isinstance(exc, discord.HTTPException)
            log.error(
                "Discord: answering message %s in %s failed (%s)",
                message.id,
                getattr(channel, "id", "?"),
                _describe(exc),
                exc_info=not refused,
            )
            note = messages.DISCORD_POST_FAILED if refused else messages.INTERNAL_ERROR
            try:
                await channel.send(note, allowed_mentions=delivery.NO_PINGS)
            except (discord.HTTPException, OSError) as again:
                log.error("Discord: could not post the error note either (%s)", again)

    async def _answer_privately(
        self,
        author: discord.User | discord.Member,
        channel: discord.abc.Messageable,
        key: str,
        parts: list[Outgoing],
    ) -> None:
        """A personal result asked for in public (e.g. `@Threadline /memory list`): Discord has
        no private messages in a channel, so the answer goes by DM and the thread says so."""
        try:
            dm = await author.create_dm()
            await delivery.post(self.core.events, dm, f"{key}:dm", parts)
            note = messages.DISCORD_SENT_PRIVATELY
        except discord.Forbidden:  # the member does not accept DMs from this server
            note = messages.DISCORD_CANNOT_DM
        await delivery.post(self.core.events, channel, key, [Outgoing(text=note)])

    # -- outbox --------------------------------------------------------------------------------

    async def deliver_outbox(self, item: OutboxItem) -> str:
        """Post one outbox message (digests, late replies) exactly once as far as Discord
        allows; returns the id of its first message. Raises `core.outbox.DeliveryError` when
        Discord refuses it. Call once the client is ready (`wait_ready`)."""
        from adapters.discord import outbox

        tenant = item.message.tenant
        guild = self.client.get_guild(int(tenant)) if tenant.isdigit() else None
        limit = self._upload_limit(guild)
        return await outbox.deliver(self.client, self.core.events, item, upload_limit=limit)

    def _upload_limit(self, guild: discord.Guild | None) -> int:
        """The configured limit, never above what the guild's boost level allows."""
        if guild is None:
            return self.config.upload_limit
        return min(self.config.upload_limit, guild.filesize_limit)

    # -- app commands --------------------------------------------------------------------------

    async def _answer_command(self, interaction: discord.Interaction, data: CommandData) -> None:
        text = command_text(data)
        # Discord fixes a deferred answer's visibility when it is deferred; core knows which
        # commands are personal.
        privately = self.core.commands.is_personal(text)
        try:  # first, inside Discord's 3 s: everything else may take longer
            await interaction.response.defer(ephemeral=privately, thinking=True)
        except (discord.HTTPException, discord.InteractionResponded) as exc:
            log.warning("Discord: could not defer interaction %s (%s)", interaction.id, exc)
            return
        origin = _origin(
            interaction.user,
            interaction.guild,
            interaction.channel,
            channel_id=interaction.channel_id or interaction.user.id,
        )
        conversation = f"cmd-{interaction.id}" if origin.guild_id else str(origin.channel_id)
        request = to_request(origin, text, thread=conversation)
        try:
            if not await self._claim(origin.tenant, f"interaction:{interaction.id}"):
                return
            status = delivery.ProgressNote(
                interaction=interaction, every=self.config.progress_every
            )
            reply = await self.core.handle(request, status.update)
            limit = min(self._upload_limit(interaction.guild), interaction.filesize_limit)
            await delivery.answer_interaction(
                interaction,
                render(reply, upload_limit=limit),
                deferred_privately=privately,
                private=is_private(reply),
            )
        except Exception as exc:
            log.error(
                "Discord: answering interaction %s failed (%s)",
                interaction.id,
                type(exc).__name__,
                exc_info=not isinstance(exc, discord.HTTPException),
            )
            try:
                await interaction.followup.send(messages.DISCORD_POST_FAILED, ephemeral=True)
            except (discord.HTTPException, OSError) as again:
                log.error("Discord: could not post the error note either (%s)", again)

    # -- helpers -------------------------------------------------------------------------------

    async def _claim(self, tenant: str, key: str) -> bool:
        won = await self.core.events.claim(PLATFORM, tenant, key)
        if not won:
            log.info("Discord %s already taken; not answering twice", key)
        return won

    async def _forget_thread(self, tenant: str, channel: str, thread: str) -> None:
        if await self.core.events.unmark_thread(PLATFORM, tenant, channel, thread):
            log.info("Discord: thread %s closed; follow-ups there need a mention again", thread)

    async def _resolve(self, client: discord.Client, channel_id: int) -> Any:
        """A channel or thread by id, from the cache or the API (None if not visible)."""
        found = client.get_channel(channel_id)
        if found is not None:
            return found
        try:
            return await client.fetch_channel(channel_id)
        except discord.HTTPException as exc:
            log.info("Discord: channel %s is not visible (HTTP %s)", channel_id, exc.status)
            return None


def _describe(exc: Exception) -> str:
    if isinstance(exc, discord.HTTPException):
        return f"HTTP {exc.status}, code {exc.code}"
    return type(exc).__name__


def _error_of(task: asyncio.Task[None]) -> BaseException | None:
    return None if task.cancelled() else task.exception()


def _mentions(message: discord.Message, me: discord.ClientUser) -> bool:
    """Threadline is mentioned: as a user (a reply that pings it counts), or by its own
    managed role, which Discord's mention picker offers too."""
    if any(user.id == me.id for user in message.mentions):
        return True
    own_role = message.guild.self_role if message.guild is not None else None
    return own_role is not None and own_role in message.role_mentions


def _origin(
    author: discord.User | discord.Member,
    guild: discord.Guild | None,
    channel: Any,
    *,
    channel_id: int | None = None,
) -> Origin:
    """What the gateway session verified: the guild, where it was said (a thread's parent
    channel too), who said it and the roles they hold (ids and names)."""
    roles: tuple[RoleRef, ...] = ()
    if isinstance(author, discord.Member):
        roles = tuple(RoleRef(r.id, r.name) for r in author.roles if not r.is_default())
    parent = channel.parent_id if isinstance(channel, discord.Thread) else None
    return Origin(
        guild_id=guild.id if guild is not None else None,
        channel_id=channel.id if channel is not None else (channel_id or author.id),
        user_id=author.id,
        parent_id=parent,
        roles=roles,
    )


def _names(message: discord.Message) -> Names:
    return Names(
        users={u.id: u.display_name for u in message.mentions},
        roles={r.id: r.name for r in message.role_mentions},
        channels={c.id: getattr(c, "name", str(c.id)) for c in message.channel_mentions},
    )


# -- the client classes: listeners are methods, so they exist once however often READY comes ---


class _Listeners:
    adapter: DiscordAdapter

    def _client(self) -> discord.Client:
        return cast("discord.Client", self)

    async def setup_hook(self) -> None:
        await self.adapter.setup(self._client())

    async def before_identify_hook(self, shard_id: int | None, *, initial: bool = False) -> None:
        if not initial:  # a re-identify: Discord limits how often a bot may identify
            await asyncio.sleep(self.adapter.config.identify_delay)

    async def on_ready(self) -> None:
        await self.adapter.on_ready(self._client())

    async def on_resumed(self) -> None:
        log.info("Discord: gateway session resumed")

    async def on_message(self, message: discord.Message) -> None:
        self.adapter.on_message(self._client(), message)

    async def on_interaction(self, interaction: discord.Interaction) -> None:
        self.adapter.on_interaction(interaction)

    async def on_raw_reaction_add(self, payload: discord.RawReactionActionEvent) -> None:
        self.adapter.on_reaction(self._client(), payload)

    async def on_raw_thread_update(self, payload: discord.RawThreadUpdateEvent) -> None:
        metadata = cast("dict[str, Any]", payload.data.get("thread_metadata") or {})
        if metadata.get("archived"):
            self.adapter.on_thread_closed(payload.guild_id, payload.parent_id, payload.thread_id)

    async def on_raw_thread_delete(self, payload: discord.RawThreadDeleteEvent) -> None:
        self.adapter.on_thread_closed(payload.guild_id, payload.parent_id, payload.thread_id)


class ThreadlineClient(_Listeners, discord.Client):
    def __init__(self, adapter: DiscordAdapter, **options: Any) -> None:
        super().__init__(**options)
        self.adapter = adapter


class ShardedThreadlineClient(_Listeners, discord.AutoShardedClient):
    def __init__(self, adapter: DiscordAdapter, **options: Any) -> None:
        super().__init__(**options)
        self.adapter = adapter


# -- wiring ------------------------------------------------------------------------------------


async def run_discord(
    core: Core,
    settings: Settings,
    stop_event: asyncio.Event,
    confirmations: ConfirmationGate | None = None,
    **tuning: Any,
) -> None:
    """Serve Discord until `stop_event` is set. Raises `DiscordStartupError` (already logged)
    when the bot cannot connect or loses its connection for good; the caller exits non-zero.
    `tuning` overrides `DiscordConfig` timing fields (tests)."""
    adapter = DiscordAdapter(core, DiscordConfig.from_settings(settings, **tuning), confirmations)
    await adapter.run(stop_event)


__all__ = [
    "DiscordAdapter",
    "DiscordConfig",
    "DiscordStartupError",
    "run_discord",
]
