"""The Slack adapter: a slack-bolt `AsyncApp` whose listeners verify, translate, hand to core,
and render — over HTTP (`/slack/events`) or Socket Mode.

One request, in order:

1. bolt verifies the signature (HTTP) and the listener acks at once: it only schedules the
   work (`process_before_response=True`, so the ack goes out after the listener returned and
   the work is already tracked here, never in a forgotten task);
2. cheap pure checks drop bots, Threadline's own echo, edits and channel chatter;
3. the event id is claimed in the database (Slack retries, duplicate deliveries, a second web
   process), then the message itself (channel + ts: one mention arrives as both `app_mention`
   and `message`);
4. :eyes: right away, then the answer written into the thread as core produces it
   (`core.stream`, `adapters.slack.stream`: Slack's streaming methods, or a message edited
   where a workspace refuses them), recorded so it is posted exactly once; a reply with
   nothing streamed (a command's answer, a refusal) is posted once, as Markdown too.
   Personal replies, what a workspace took neither as a stream nor as edits, and slash
   commands' answers are posted whole by `adapters.slack.delivery`.

Interactivity: the Run / Cancel of tool confirmations (`adapters.slack.confirm`) and the 👍/👎
under answers with the 👎's form (`adapters.slack.feedback`) are acknowledged at once and
handled by whichever process receives them (their state is in the database).
"""

from __future__ import annotations

import asyncio
import logging
import re
from dataclasses import replace
from typing import TYPE_CHECKING, Any

from adapters.background import BackgroundWork, last_word
from adapters.pacing import ChannelBudget
from adapters.slack import filters
from adapters.slack.config import Mode, SlackConfig, SlackStartupError
from adapters.slack.confirm import ACTION_IDS, SlackConfirmer
from adapters.slack.delivery import Delivery, DeliveryFailed, Target
from adapters.slack.errors import error_code
from adapters.slack.feedback import ACTION_ID as FEEDBACK_ACTION
from adapters.slack.feedback import REASON_VIEW, SlackFeedback
from adapters.slack.files import FileHost
from adapters.slack.filters import BotIdentity
from adapters.slack.logs import BOLT_LOGGER, quiet_logger
from adapters.slack.outbox import OutboxDelivery
from adapters.slack.progress import ProgressLine, progress_line
from adapters.slack.stream import AnswerStream, Pacing
from adapters.slack.stream_message import Record, StreamTarget, Workspaces
from adapters.slack.thread import ThreadCache
from adapters.slack.translate import (
    PLATFORM,
    asks_to_read_aloud,
    in_a_thread,
    read_aloud_request,
    tenant_of,
    thread_of,
    to_request,
)
from adapters.slack.web import make_web_client
from core import messages

if TYPE_CHECKING:
    import aiohttp
    from slack_bolt.async_app import AsyncAck, AsyncApp
    from slack_sdk.web.async_client import AsyncWebClient
    from starlette.requests import Request as HttpRequest
    from starlette.responses import Response

    from adapters.slack.payloads import (
        EventCallback,
        HistoryMessage,
        ReactionCallback,
        SlashCommand,
    )
    from core.mcp.confirm import ConfirmationGate
    from core.outbox import OutboxItem
    from core.request import Reply, Request
    from core.service import Core

log = logging.getLogger("threadline.slack")


class SlackAdapter:
    """Composes core with bolt. Build it, `await start()`, then serve `endpoint` (HTTP) or
    `run_socket_mode()`; `stop()` (`aclose()`) finishes in-flight work. A `ChatAdapter`."""

    platform = PLATFORM

    def __init__(
        self,
        core: Core,
        config: SlackConfig,
        mode: Mode,
        confirmations: ConfirmationGate | None = None,
    ) -> None:
        config.check(mode)
        self.core = core
        # Given: tool calls with side effects are confirmed with buttons in the thread.
        self.confirmations = confirmations
        self._confirmer: SlackConfirmer | None = None
        self.config = config
        self.mode = mode
        self.identity: BotIdentity | None = None
        self._session: aiohttp.ClientSession | None = None
        self._client: AsyncWebClient | None = None
        self._bolt: AsyncApp | None = None
        self._delivery: Delivery | None = None
        self._outbox: OutboxDelivery | None = None
        self._files: FileHost | None = None  # downloads of files attached to messages
        self._feedback: SlackFeedback | None = None  # 👍/👎 clicks under answers
        self.threads: ThreadCache | None = None  # earlier messages of threads, read so far
        self._work = BackgroundWork("Slack")
        # What each workspace refused (streaming, edits, the assistant status), learnt once.
        self.workspaces = Workspaces()
        # Calls into one channel, shared by the answers written there at once; per kind of
        # call (Slack limits each method per channel).
        rate = config.channel_calls_per_second
        self._budget = ChannelBudget.per_second(rate) if rate else None

    # -- lifecycle -------------------------------------------------------------------------------

    async def start(self) -> BotIdentity:
        """Open the HTTP session and check the token with `auth.test`; raises
        `SlackStartupError` with a clear message instead of starting half-working."""
        import aiohttp
        from slack_sdk.errors import SlackApiError

        self._session = aiohttp.ClientSession()
        self._client = make_web_client(
            self.config.bot_token,
            self.config.api_url,
            self._session,
            max_retry_wait=self.config.max_retry_wait,
        )
        try:
            auth = await self._client.auth_test()
        except SlackApiError as exc:
            await self._close_session()
            code = error_code(exc)
            raise SlackStartupError(
                f"Slack refused SLACK_BOT_TOKEN (auth.test answered {code}); check the token "
                "and SLACK_API_URL"
            ) from None
        except (aiohttp.ClientError, TimeoutError, OSError) as exc:
            await self._close_session()
            raise SlackStartupError(
                f"cannot reach the Slack Web API at {self._client.base_url} "
                f"({type(exc).__name__}); check SLACK_API_URL and the network"
            ) from None
        self.identity = BotIdentity(
            user_id=str(auth["user_id"]),
            bot_id=auth.get("bot_id"),
            team_id=str(auth.get("team_id") or ""),
            enterprise_id=auth.get("enterprise_id") or None,
        )
        self._delivery = Delivery(
            self._client,
            self.core.events,
            session=self._session,
            backoff=self.config.delivery_backoff,
        )
        self._outbox = OutboxDelivery(self._client, self.core.events)
        assert self.config.bot_token is not None  # config.check
        self._files = FileHost(self._session, self.config.bot_token, self.config.api_url)
        self.threads = ThreadCache(self._client, self.identity)
        self._feedback = SlackFeedback(self._client, self.core)
        if self.confirmations is not None:
            self._confirmer = SlackConfirmer(self._client, self.confirmations)
            self.confirmations.register(PLATFORM, self._confirmer)
        self._bolt = self._build_bolt()
        log.info(
            "Slack adapter ready (%s mode) as bot user %s in %s",
            self.mode,
            self.identity.user_id,
            self.identity.enterprise_id or self.identity.team_id,
        )
        return self.identity

    async def idle(self) -> None:
        """Wait until all scheduled work (answers, deliveries) has finished."""
        await self._work.idle()

    async def aclose(self, grace: float = 30.0) -> int:
        """Let in-flight answers finish (up to `grace` seconds), then close the HTTP session;
        returns how many answers were cancelled at the end of the grace."""
        if self.confirmations is not None and self._confirmer is not None:
            self.confirmations.unregister(PLATFORM, self._confirmer)
        cut = await self._work.drain(grace)
        await self._close_session()
        return cut

    async def stop(self, grace: float) -> int:
        return await self.aclose(grace)

    async def _close_session(self) -> None:
        if self._session is not None:
            await self._session.close()
            self._session = None

    async def deliver_outbox(self, item: OutboxItem) -> str:
        """Post one outbox message (digests, late replies) exactly once; returns the ts of
        its first message. Raises `core.outbox.DeliveryError` when Slack refuses it."""
        if self._outbox is None:
            raise RuntimeError("SlackAdapter.start() first")
        return await self._outbox.deliver(item)

    @property
    def bolt(self) -> AsyncApp:
        if self._bolt is None:
            raise RuntimeError("SlackAdapter.start() first")
        return self._bolt

    # -- transports ------------------------------------------------------------------------------

    async def endpoint(self, request: HttpRequest) -> Response:
        """POST /slack/events: events, slash commands and interactivity."""
        from slack_bolt.adapter.starlette.async_handler import AsyncSlackRequestHandler

        return await AsyncSlackRequestHandler(self.bolt).handle(request)

    async def run_socket_mode(self, stop: asyncio.Event) -> None:
        """Connect over Socket Mode and serve until `stop` is set."""
        from slack_bolt.adapter.socket_mode.async_handler import AsyncSocketModeHandler

        handler = AsyncSocketModeHandler(
            self.bolt,
            app_token=self.config.app_token,
            logger=quiet_logger("threadline.slack.socket"),
        )
        await handler.connect_async()  # type: ignore[no-untyped-call]
        log.info("connected to Slack over Socket Mode")
        try:
            await stop.wait()
        finally:
            await handler.close_async()  # type: ignore[no-untyped-call]

    # -- bolt --------------------------------------------------------------------------------------

    def _build_bolt(self) -> AsyncApp:
        from slack_bolt.async_app import AsyncApp
        from slack_bolt.authorization import AuthorizeResult

        assert self.identity is not None and self._client is not None
        identity, token = self.identity, self.config.bot_token

        async def authorize(enterprise_id: str | None, team_id: str | None) -> AuthorizeResult:
            # The token was checked at start-up: no auth.test per request, and no silent
            # "200 and dropped" when it fails later.
            return AuthorizeResult(
                enterprise_id=enterprise_id,
                team_id=team_id,
                bot_user_id=identity.user_id,
                bot_id=identity.bot_id,
                bot_token=token,
            )

        # bolt's own client only serves the listeners' injected `client`; ours posts.
        bolt_client = make_web_client(None, self.config.api_url, self._session)
        app = AsyncApp(
            name="threadline",
            client=bolt_client,
            authorize=authorize,
            signing_secret=self.config.signing_secret or "",
            request_verification_enabled=self.mode == "http",
            process_before_response=True,
            logger=quiet_logger(BOLT_LOGGER),
        )
        app.event("app_mention")(self._on_event)
        app.event("message")(self._on_event)
        app.event("reaction_added")(self._on_reaction)
        app.command(re.compile(r"^/"))(self._on_command)
        app.action(ACTION_IDS)(self._on_confirm_click)
        app.action(FEEDBACK_ACTION)(self._on_feedback_click)
        app.view(REASON_VIEW)(self._on_feedback_reason)
        # Every other subscribed type is acknowledged: an unhandled one gets 404 from bolt, and
        # Slack retries it (and eventually disables the subscription).
        app.event(re.compile(r".*"))(self._ack_only)
        app.action(re.compile(r".*"))(self._ack_only)
        app.shortcut(re.compile(r".*"))(self._ack_only)
        app.view(re.compile(r".*"))(self._ack_only)
        return app

    async def _ack_only(self, ack: AsyncAck) -> None:
        await ack()

    async def _on_event(self, body: dict[str, Any]) -> None:
        assert self.identity is not None
        callback: EventCallback = body  # type: ignore[assignment]
        if self.threads is not None:  # an edit or deletion in a thread read before
            self.threads.observe(tenant_of(callback), callback["event"])
        reason = filters.skip_reason(callback["event"], self.identity)
        if reason is None:
            self._work.spawn(self._answer_event(callback))
        else:
            log.debug("ignoring a Slack event: %s", reason)

    async def _on_reaction(self, body: dict[str, Any]) -> None:
        assert self.identity is not None
        callback: ReactionCallback = body  # type: ignore[assignment]
        if asks_to_read_aloud(callback["event"], self.identity.user_id):
            self._work.spawn(self._read_aloud(callback))

    async def _on_command(self, ack: AsyncAck, body: dict[str, Any]) -> None:
        await ack()  # within Slack's 3 s, whatever the work takes
        self._work.spawn(self._answer_command(body))  # type: ignore[arg-type]

    async def _on_confirm_click(self, ack: AsyncAck, body: dict[str, Any]) -> None:
        await ack()  # within Slack's 3 s; the answer and the message update follow
        if self._confirmer is not None:
            self._work.spawn(self._confirmer.click(body))  # type: ignore[arg-type]

    async def _on_feedback_click(self, ack: AsyncAck, body: dict[str, Any]) -> None:
        await ack()  # the rating, the form (for a 👎) and the private note follow
        if self._feedback is not None:
            self._work.spawn(self._feedback.click(body))  # type: ignore[arg-type]

    async def _on_feedback_reason(self, ack: AsyncAck, body: dict[str, Any]) -> None:
        await ack()  # closes the form; the reason is stored after
        if self._feedback is not None:
            self._work.spawn(self._feedback.submit(body))  # type: ignore[arg-type]

    # -- answering ---------------------------------------------------------------------------------

    async def _claim(self, tenant: str, key: str) -> bool:
        won = await self.core.events.claim(PLATFORM, tenant, key)
        if not won:
            log.info("Slack %s already taken; not answering twice", key.split(":", 1)[0])
        return won

    async def _answer_event(self, body: EventCallback) -> None:
        assert self._client is not None and self._delivery is not None
        event, tenant = body["event"], tenant_of(body)
        channel, thread = event["channel"], thread_of(event)
        events = self.core.events
        if filters.needs_a_thread_check(event) and not await events.thread_marked(
            PLATFORM, tenant, channel, thread
        ):
            return  # chatter in a thread Threadline is not part of
        if not await self._claim(tenant, f"event:{body['event_id']}"):
            return
        if not await self._claim(tenant, f"message:{channel}:{event['ts']}"):
            return  # the other half of an app_mention + message pair
        await self._react("reactions_add", channel, event["ts"])
        if not filters.is_direct(event):
            await events.mark_thread(PLATFORM, tenant, channel, thread)
        assert self.identity is not None and self.threads is not None
        if self._files is not None and event.get("files"):
            # The files Slack describes only partly, looked up (nothing is downloaded yet).
            files = await self._files.complete(self._client, event.get("files") or [])
            body = {**body, "event": {**event, "files": files}}
        earlier = (
            self.threads.reader(tenant, channel, thread, event["ts"])
            if in_a_thread(event)
            else None
        )
        request = to_request(
            body, bot_user_id=self.identity.user_id, files=self._files, earlier=earlier
        )
        target = Target(
            tenant=tenant,
            channel=channel,
            user=request.user,
            delivery_key=f"{tenant}:{channel}:{event['ts']}",
            thread_ts=thread,
        )
        if (await events.posted(PLATFORM, target.delivery_key)).get(0):
            return  # answered (or being answered) already: never a second stream
        await self._write_answer(body, request, target)
        await self._react("reactions_remove", channel, event["ts"])

    async def _write_answer(self, body: EventCallback, request: Request, target: Target) -> None:
        """The answer streamed into the thread (`adapters.slack.stream`); what it could not
        show, and the attachments, posted once after it. While it is visible but unfinished,
        a note is armed in the outbox for the case this process dies (`core.outbox.cut`)."""
        from core.outbox.cut import Where

        assert target.thread_ts is not None
        notes, events, key = self.core.cut_notes, self.core.events, target.delivery_key
        where = Where(PLATFORM, target.tenant, target.channel, target.thread_ts, key)
        armed = False

        async def record(part: int, ts: str) -> None:
            nonlocal armed
            await events.record_post(PLATFORM, key, part, ts)
            if notes is not None and not armed:
                armed = True
                await notes.arm(where)

        progress = self._progress_line(target.channel, target.thread_ts)  # post mode only
        answer = self._answer_stream(body, target, record, progress)
        try:
            written = await answer.write(self.core.stream(request))
        except asyncio.CancelledError:
            if armed and notes is not None and answer.cut_noted:  # our own note went out
                await last_word(lambda: notes.disarm(where))
            raise
        finally:
            await progress.finish()
        reply = written.final.reply
        if not written.shown:  # nothing streamed: posted whole, as before
            ephemeral = reply.ephemeral and not filters.is_direct(body["event"])
            await self._deliver(replace(target, ephemeral=ephemeral), reply)
        else:
            if written.rest:  # what the messages could not show (edits refused): once
                rest_target = replace(target, delivery_key=f"{key}:rest")
                rest = replace(reply, text=written.rest, notices=(), attachments=())
                # (The rest holds the notices already; the sources go under it, as the last
                # message could not show them.)
                await self._deliver(rest_target, rest)
            await self._deliver(target, reply, files_only=True)
        if armed and notes is not None:
            await notes.disarm(where)

    def _answer_stream(
        self, body: EventCallback, target: Target, record: Record, progress: ProgressLine
    ) -> AnswerStream:
        assert self._client is not None and target.thread_ts is not None
        return AnswerStream(
            self._client,
            StreamTarget(
                tenant=target.tenant,
                channel=target.channel,
                thread_ts=target.thread_ts,
                team_id=body["event"].get("team") or body["team_id"],
                user_id=target.user,
                delivery_key=target.delivery_key,
            ),
            self.workspaces,
            record=record,
            native=self.config.stream,
            assistant_status=self.config.assistant_status,
            pacing=Pacing(
                interval=self.config.stream_interval, edit_interval=self.config.edit_interval
            ),
            budget=self._budget,
            status_line=progress.update,
        )

    async def _read_aloud(self, body: ReactionCallback) -> None:
        """A speaker reaction on one of Threadline's messages: that message, read aloud, in
        its thread (refusals only to the person who reacted)."""
        from slack_sdk.errors import SlackApiError

        assert self._client is not None
        event, tenant = body["event"], tenant_of(body)
        channel, ts = event["item"].get("channel", ""), event["item"].get("ts", "")
        if not await self._claim(tenant, f"event:{body['event_id']}"):
            return
        try:
            found = await self._client.conversations_replies(
                channel=channel, ts=ts, oldest=ts, latest=ts, inclusive=True
            )
        except SlackApiError as exc:
            log.warning("Slack: cannot read the reacted message (%s)", error_code(exc))
            return
        messages_found: list[HistoryMessage] = found.get("messages") or []
        message = next((m for m in messages_found if m.get("ts") == ts), None)
        if message is None or not message.get("text"):
            return
        request = read_aloud_request(body, message)
        reply = await self.core.handle(request)
        target = Target(
            tenant=tenant,
            channel=channel,
            user=request.user,
            delivery_key=f"{tenant}:reaction:{channel}:{ts}:{request.user}:{body['event_id']}",
            thread_ts=request.thread,
            ephemeral=not reply.ok,
        )
        await self._deliver(target, reply)

    async def _answer_command(self, body: SlashCommand) -> None:
        tenant = tenant_of(body)
        if not await self._claim(tenant, f"command:{body['trigger_id']}"):
            return
        request = to_request(body)
        if self.core.commands.is_personal(request.text):
            reply = await self.core.handle(request)
        else:  # long public work (`/index`) shows a progress line in the channel meanwhile
            progress = self._progress_line(body["channel_id"], None)
            try:
                reply = await self.core.handle(request, progress.update)
            except asyncio.CancelledError:
                await last_word(lambda: self._say(body["channel_id"], None, messages.ANSWER_CUT))
                raise
            finally:
                await progress.finish()
        # Personal results and refusals go only to the person who asked; answers are posted
        # in the channel under a line saying who asked what, and continue in that thread.
        private = reply.ephemeral or not reply.ok
        said = f"{body['command']} {body.get('text', '')}".strip()
        target = Target(
            tenant=tenant,
            channel=body["channel_id"],
            user=body["user_id"],
            delivery_key=f"{tenant}:command:{body['trigger_id']}",
            ephemeral=private,
            header=None if private else messages.command_header(f"<@{body['user_id']}>", said),
            response_url=body.get("response_url"),
        )
        await self._deliver(target, reply)
        if not private:
            posted = await self.core.events.posted(PLATFORM, target.delivery_key)
            if posted.get(0) and not posted[0].startswith(("file:", "response_url")):
                await self.core.events.mark_thread(PLATFORM, tenant, target.channel, posted[0])

    async def _deliver(self, target: Target, reply: Reply, *, files_only: bool = False) -> None:
        """Post the reply (`files_only`: just its attachments, the text was streamed)."""
        assert self._delivery is not None
        deliver = self._delivery.deliver_attachments if files_only else self._delivery.deliver
        try:
            await deliver(target, reply)
        except DeliveryFailed:
            pass  # logged with its Slack error code by the delivery

    async def _say(self, channel: str, thread: str | None, text: str) -> None:
        assert self._client is not None
        await self._client.chat_postMessage(channel=channel, thread_ts=thread, text=text)

    def _progress_line(self, channel: str, thread: str | None) -> ProgressLine:
        assert self._client is not None
        return progress_line(self._client, channel, thread, self.config)

    async def _react(self, method: str, channel: str, ts: str) -> None:
        """:eyes: while working. A courtesy: failures (already_reacted...) are ignored."""
        assert self._client is not None
        try:
            await getattr(self._client, method)(channel=channel, timestamp=ts, name="eyes")
        except Exception as exc:
            log.debug("%s failed: %s", method, type(exc).__name__)
