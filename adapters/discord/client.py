"""The Discord adapter's connection: a discord.py gateway client whose listeners hand each event
to the answering work (`answers`), and the lifecycle around it — log in, connect, wait for
READY, explain a failure in one line, stop with a grace for answers in flight. A `ChatAdapter`:
`start()` / `stop()` for a caller that serves other things too, or `run(stop)` for both.

Listeners are methods of the client class and commands are synced in `setup_hook` (once per
process, `sync`), so a second `on_ready` (discord.py fires one after every re-identify) doubles
nothing. Clicks on confirmation buttons (`confirm`) and on the 👍/👎 under answers
(`feedback`) are raw interactions answered by any process, since the one that asked may not
be the one that gets the click.
"""

from __future__ import annotations

import asyncio
import logging
from typing import TYPE_CHECKING, Any, cast

from adapters.background import BackgroundWork
from adapters.discord import delivery
from adapters.discord.answers import Answerer
from adapters.discord.config import DiscordConfig, DiscordStartupError
from adapters.discord.confirm import DiscordConfirmer, is_confirmation_click
from adapters.discord.endpoints import Endpoints, api_base, follow_gateway, use_rest_base
from adapters.discord.feedback import DiscordFeedback, is_feedback
from adapters.discord.lib import discord
from adapters.discord.sync import sync_commands
from adapters.discord.translate import COMMAND_NAME, PLATFORM, asks_to_read_aloud

if TYPE_CHECKING:
    from collections.abc import Iterable

    from adapters.discord.payloads import CommandData, Message
    from config.settings import Settings
    from core.mcp.confirm import ConfirmationGate
    from core.outbox import OutboxItem
    from core.service import Core

log = logging.getLogger("threadline.discord")

ANSWERABLE_TYPES = frozenset({discord.MessageType.default, discord.MessageType.reply})


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

    platform = PLATFORM

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
        self._stopped = False
        self._ready_changed = asyncio.Condition()
        self._work = BackgroundWork("Discord")
        self._answers = Answerer(core, lambda: self.config)
        self._feedback = DiscordFeedback(core)  # 👍/👎 under answers, and the 👎 form
        self._client_task: asyncio.Task[None] | None = None
        self._saved_rest: Endpoints | None = None

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
        stop_task = asyncio.create_task(stop.wait())
        try:
            client_task = self._connect()
            await self._until_connected(client_task, stop_task)
            if not stop.is_set():
                await asyncio.wait({client_task, stop_task}, return_when=asyncio.FIRST_COMPLETED)
            if client_task.done() and not stop.is_set():
                reason = self._explain(_error_of(client_task))
                log.error("Discord adapter stopped: %s", reason)
                raise DiscordStartupError(reason)
        finally:
            stop_task.cancel()
            await self.stop(self.config.shutdown_grace)

    async def start(self) -> None:
        """Log in and connect; returns at the first READY. Raises `DiscordStartupError` (and
        has stopped) when that fails. `stop()` ends it; watching the connection afterwards is
        `run`'s job."""
        try:
            await self._until_connected(self._connect())
        except BaseException:
            await self.stop(0)
            raise

    def _connect(self) -> asyncio.Task[None]:
        if self._client_task is not None:
            raise RuntimeError("this Discord adapter was started already")
        if self.config.api_url:
            self._saved_rest = use_rest_base(self.config.api_url)
        if self.confirmations is not None and self._confirmer is not None:
            self.confirmations.register(PLATFORM, self._confirmer)
        self._client_task = asyncio.create_task(self.client.start(self.config.token))
        return self._client_task

    async def _until_connected(
        self, client_task: asyncio.Task[None], stop_task: asyncio.Task[bool] | None = None
    ) -> None:
        """Return at the first READY (or once `stop_task` is done); raise
        `DiscordStartupError` when the client dies or no READY comes in time."""

        async def first_ready() -> None:
            async with self._ready_changed:
                await self._ready_changed.wait_for(lambda: self.readies > 0)

        ready_task = asyncio.create_task(first_ready())
        try:
            waits: set[asyncio.Task[Any]] = {client_task, ready_task}
            if stop_task is not None:
                waits.add(stop_task)
            done, _ = await asyncio.wait(
                waits,
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

    async def stop(self, grace: float) -> int:
        """Stop taking new work, let answers in flight finish (up to `grace` seconds),
        disconnect; returns how many answers were cut (also added to `cut`)."""
        if self._stopped:
            return 0
        self._stopped = self._closing = True
        if self.confirmations is not None and self._confirmer is not None:
            self.confirmations.unregister(PLATFORM, self._confirmer)
        cut = await self._work.drain(grace)
        self.cut += cut
        if not self.client.is_closed():
            await self.client.close()
        task = self._client_task
        if task is not None:
            if not task.done():
                task.cancel()
            await asyncio.gather(task, return_exceptions=True)
        if self._saved_rest is not None:
            self._saved_rest.restore()
            self._saved_rest = None
        return cut

    async def aclose(self) -> None:
        """`stop` with the configured grace."""
        await self.stop(self.config.shutdown_grace)

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
        """`/threadline` (`sync`). Once per process, and only by the process with shard 0."""
        if self._synced or not self.config.syncs_commands:
            return
        self._synced = True
        if await sync_commands(client, self.core.commands, self.config.guild_ids):
            self.syncs += 1

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
        self._work.spawn(self._answers.message(client, me, message))

    def on_interaction(self, interaction: discord.Interaction) -> None:
        if self._confirmer is not None and is_confirmation_click(interaction):
            # Answered even while closing: a request waiting on it may be what keeps us open.
            self._work.spawn(self._confirmer.click(interaction))
            return
        if is_feedback(interaction):
            # Whatever process posted the answer: the rating goes to the database.
            self._work.spawn(self._feedback.handle(interaction))
            return
        if self._closing or interaction.type is not discord.InteractionType.application_command:
            return
        data = cast("CommandData | None", interaction.data)
        if data is None or data.get("name") != COMMAND_NAME:
            return
        self._work.spawn(self._answers.command(interaction, data))

    def on_reaction(self, client: discord.Client, payload: discord.RawReactionActionEvent) -> None:
        me = client.user
        if self._closing or me is None:
            return
        emoji = payload.emoji.name if payload.emoji.id is None else None  # custom ones: no
        if asks_to_read_aloud(emoji, payload.message_author_id, payload.user_id, me.id):
            self._work.spawn(self._answers.read_aloud(client, me, payload))

    def on_thread_closed(self, guild_id: int, parent_id: int, thread_id: int) -> None:
        """An archived or deleted thread: follow-ups there need a mention again."""
        self._work.spawn(
            self._answers.forget_thread(str(guild_id), str(parent_id), str(thread_id)),
        )

    def on_messages_deleted(self, channel_id: int, message_ids: Iterable[int]) -> None:
        """Deleted messages are no longer given as a thread's earlier messages."""
        self._answers.history(self.client).deleted(channel_id, message_ids)

    def on_message_edited(
        self, client: discord.Client, payload: discord.RawMessageUpdateEvent
    ) -> None:
        """An edited message is given as a thread's earlier message as it reads now."""
        me = client.user
        if me is not None:
            raw = cast("Message", payload.data)
            self._answers.history(client).edited(payload.channel_id, raw, me.id)

    # -- outbox --------------------------------------------------------------------------------

    async def deliver_outbox(self, item: OutboxItem) -> str:
        """Post one outbox message (digests, late replies) exactly once as far as Discord
        allows; returns the id of its first message. Raises `core.outbox.DeliveryError` when
        Discord refuses it. Call once the client is ready (`wait_ready`)."""
        from adapters.discord import outbox

        tenant = item.message.tenant
        guild = self.client.get_guild(int(tenant)) if tenant.isdigit() else None
        limit = self._answers.upload_limit(guild)
        return await outbox.deliver(self.client, self.core.events, item, upload_limit=limit)


def _error_of(task: asyncio.Task[None]) -> BaseException | None:
    return None if task.cancelled() else task.exception()


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

    async def on_raw_message_delete(self, payload: discord.RawMessageDeleteEvent) -> None:
        self.adapter.on_messages_deleted(payload.channel_id, [payload.message_id])

    async def on_raw_bulk_message_delete(self, payload: discord.RawBulkMessageDeleteEvent) -> None:
        self.adapter.on_messages_deleted(payload.channel_id, payload.message_ids)

    async def on_raw_message_edit(self, payload: discord.RawMessageUpdateEvent) -> None:
        self.adapter.on_message_edited(self._client(), payload)

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
