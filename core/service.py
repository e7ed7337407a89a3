"""`Core`: the one object adapters call. `await core.handle(request) -> Reply`."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import AsyncGenerator, Awaitable, Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, replace
from datetime import UTC, datetime
from typing import TYPE_CHECKING

from core import commands as cmd
from core import messages
from core.errors import Refusal
from core.logcontext import RequestContext, request_scope
from core.policy import Identity, Policy
from core.request import Progress, Rating, Reply, Request, ThreadReader
from core.session import ToolSession, open_session
from core.streaming import Finished, ReplyEvent, ReplySink, Status, TextDelta, finished

if TYPE_CHECKING:
    from core.agent import Agent
    from core.attachments import AttachmentReader, Intake
    from core.events import EventLedger
    from core.feedback.store import FeedbackStore
    from core.llm.usage import UsageRecorder
    from core.metrics import Metrics
    from core.outbox.cut import CutNotes
    from core.quotas import QuotaLedger
    from core.request import IncomingFile
    from core.tts.service import VoiceService

log = logging.getLogger(__name__)

DEFAULT_MAX_MESSAGE_CHARS = 20_000
DEFAULT_DEADLINE = 120.0  # seconds, as THREADLINE_REQUEST_DEADLINE's default
# When a lifted deadline is put back after its part finished in time, what is left to do (return
# the agent's answer) gets at least this long: an answer must not be lost by a few milliseconds.
RESUME_GRACE = 1.0
# Tokens kept from the day's quota for the rest of a prompt (rules, tools, thread) when attached
# files are fitted to what is left of it.
FILES_PROMPT_ALLOWANCE = 4_000


class RequestSlots:
    """At most `limit` requests answered at once; the others wait in arrival order (asyncio's
    semaphore wakes waiters first come, first served). `queued` feeds a gauge."""

    def __init__(self, limit: int) -> None:
        self._semaphore = asyncio.Semaphore(limit)
        self._queued = 0

    def queued(self) -> int:
        return self._queued

    async def __aenter__(self) -> None:
        self._queued += 1
        try:
            await self._semaphore.acquire()
        finally:
            self._queued -= 1

    async def __aexit__(self, *_: object) -> None:
        self._semaphore.release()


@dataclass(frozen=True, slots=True)
class Limits:
    max_message_chars: int = DEFAULT_MAX_MESSAGE_CHARS
    max_concurrent: int = 16  # requests answered at once by this process; others queue
    deadline: float = DEFAULT_DEADLINE  # seconds one request may take, commands included


class RequestDeadline:
    """The one deadline of a request, enforced around all of it by `limit`. Parts that handle
    running out of time themselves run with `limit` lifted, so their own handling answers: the
    agent (same deadline; it keeps the question and finished tool calls in the thread) and a
    voice attachment (the text answer stands, with a notice instead of the audio)."""

    def __init__(self, seconds: float) -> None:
        self.seconds = seconds
        self.at = asyncio.get_running_loop().time() + seconds
        self.limit = asyncio.timeout_at(self.at)

    @contextlib.contextmanager
    def lifted(self) -> Iterator[None]:
        when = self.limit.when()
        self.limit.reschedule(None)
        try:
            yield
        finally:
            if when is not None:
                soonest = asyncio.get_running_loop().time() + RESUME_GRACE
                self.limit.reschedule(max(when, soonest))


class Core:
    def __init__(
        self,
        *,
        policy: Policy,
        commands: cmd.CommandRegistry,
        quotas: QuotaLedger,
        usage: UsageRecorder,
        agent: Agent | None,
        events: EventLedger,
        agents: Mapping[str, Agent] | None = None,
        limits: Limits = Limits(),
        metrics: Metrics | None = None,
        clock: Callable[[], datetime] = lambda: datetime.now(UTC),
        offline_answer: Callable[[ToolSession, str], Awaitable[Reply | None]] | None = None,
        attachments: AttachmentReader | None = None,
        voice: VoiceService | None = None,
        cut_notes: CutNotes | None = None,
        feedback: FeedbackStore | None = None,
    ) -> None:
        """`agent` answers with the default model (None: none configured); `agents` with the
        models policy rules choose, by provider name. `offline_answer` answers free text when
        a conversation has no model (code search hits); returning None falls back to the plain
        "no model" reply."""
        from core.ordering import KeyedLocks

        self.policy = policy
        self.commands = commands
        self.agent = agent
        self.agents = dict(agents or {})
        self.events = events  # exactly-once bookkeeping adapters ask for
        self._quotas = quotas
        self._usage = usage
        self._limits = limits
        self._metrics = metrics
        self._clock = clock
        self._threads = KeyedLocks()
        self._slots = RequestSlots(limits.max_concurrent)
        if metrics is not None:
            metrics.watch_waiting(self._threads.waiting)
            metrics.watch_queued(self._slots.queued)
        self._offline_answer = offline_answer
        # Reads the files attached to a message (`core.attachments`); None: default limits.
        self.attachments = attachments
        self.voice = voice
        # Adapters arm one while an answer is visible but unfinished (`core.outbox.cut`).
        self.cut_notes = cut_notes
        # Records answers people may rate, and their ratings (None: no 👍/👎 buttons).
        self.feedback = feedback

    @property
    def model_configured(self) -> bool:
        """Whether any conversation has a model (the default or one a policy rule picks)."""
        return self.agent is not None or bool(self.agents)

    def agent_for(self, session: ToolSession) -> Agent | None:
        """The agent of the model the policy chose for this conversation, else the default
        one (the start-up check made sure every chosen model exists)."""
        if session.model is not None and session.model in self.agents:
            return self.agents[session.model]
        return self.agent

    async def stream(self, request: Request) -> AsyncGenerator[ReplyEvent, None]:
        """Answer one request as it is written: the answer's words, tool steps and status
        lines as they happen, then one `Finished` with the whole reply (`core.streaming`).
        Never raises for the request's sake; closing the iterator early cancels the work."""
        queue: asyncio.Queue[ReplyEvent] = asyncio.Queue()

        async def progress(text: str) -> None:
            queue.put_nowait(Status(text))

        async def events(event: ReplyEvent) -> None:
            queue.put_nowait(event)

        async def work() -> None:
            reply = await self.handle(request, progress, events=events)
            queue.put_nowait(Finished(reply))

        task = asyncio.create_task(work())
        streamed: list[str] = []
        try:
            while True:
                event = await queue.get()
                if isinstance(event, TextDelta):
                    streamed.append(event.text)
                elif isinstance(event, Finished):
                    yield finished(event.reply, "".join(streamed))
                    return
                yield event
        finally:
            if not task.done():
                task.cancel()
                # The work's own clean-up (the thread's lock, quota reservations) runs first.
                await asyncio.wait([task])

    async def handle(
        self,
        request: Request,
        progress: Progress | None = None,
        *,
        events: ReplySink | None = None,
    ) -> Reply:
        """Answer one request. Never raises: refusals and failures become a Reply.

        `progress` receives short status lines while tools run, `events` the answer's words
        as they are written and its tool steps (both optional; see `stream`)."""
        started = time.monotonic()
        context = RequestContext(
            request.request_id, request.platform, request.tenant, request.channel
        )
        with request_scope(context):
            try:
                async with self._slots:
                    reply = await self._handle(request, progress, events)
            except Refusal as exc:
                reply = Reply(str(exc), ok=False)
            except Exception:
                log.exception(
                    "request %s failed (%s, channel %s)",
                    request.request_id,
                    request.platform,
                    request.channel,
                )
                reply = Reply(messages.INTERNAL_ERROR, ok=False)
        if self._metrics is not None:
            self._metrics.observe(request.platform, reply, time.monotonic() - started)
        return reply

    async def _handle(
        self, request: Request, progress: Progress | None, events: ReplySink | None
    ) -> Reply:
        if len(request.text) > self._limits.max_message_chars:
            raise Refusal(
                messages.message_too_long(len(request.text), self._limits.max_message_chars)
            )
        _check_identity(request)
        session = open_session(request, self.policy)
        deadline = RequestDeadline(self._limits.deadline)
        text = request.text.strip()
        if not text and not request.files:
            ctx = self._command_context(session, deadline, None, None)
            return Reply(messages.EMPTY_MESSAGE_HINT + "\n\n" + cmd.help_text(ctx), ephemeral=True)
        parsed = cmd.parse(text)
        try:
            async with deadline.limit:
                if parsed is None:
                    return await self._ask(
                        session,
                        text,
                        progress,
                        events,
                        deadline,
                        earlier=request.earlier,
                        files=request.files,
                    )
                command = self.commands.get(parsed.name)
                if command is not None and not command.timed:
                    deadline.limit.reschedule(None)
                ctx = self._command_context(
                    session, deadline, progress, events, request.earlier, request.files
                )
                return await self.commands.run(ctx, parsed)
        except TimeoutError:
            if not deadline.limit.expired():
                raise
            log.warning(
                "request %s passed its %g s deadline (%s)",
                request.request_id,
                deadline.seconds,
                f"/{parsed.name}" if parsed is not None else "free text",
            )
            name = parsed.name if parsed is not None else None
            return Reply(messages.command_deadline(deadline.seconds, name), ok=False)

    async def _ask(
        self,
        session: ToolSession,
        text: str,
        progress: Progress | None,
        events: ReplySink | None,
        deadline: RequestDeadline,
        skills: Sequence[str] = (),
        *,
        earlier: ThreadReader | None = None,
        files: Sequence[IncomingFile] = (),
    ) -> Reply:
        session.require("ask")
        agent = self.agent_for(session)
        if agent is None:
            if self._offline_answer is not None:
                reply = await self._offline_answer(session, text)
                if reply is not None:
                    return _files_unread(reply, files)
            return _files_unread(Reply(messages.NO_MODEL, ok=False), files)
        intake = None
        if files:
            await _status(progress, files)
            intake = await self._read_files(session, agent, files, text)
        if intake is not None:
            from core.attachments import notices

            text = intake.question(text)
            if not text and not intake.read_any:
                return Reply(notices.NOTHING_READ, ok=False, notices=tuple(intake.notices))
            text = text or notices.NO_TEXT_QUESTION
        from core.tts.tool import asks_for_voice

        session.effects.voice_asked = self.voice is not None and asks_for_voice(text)
        async with self._threads.hold(session.conversation):
            with deadline.lifted():
                reply = await agent.answer(
                    session,
                    text,
                    progress,
                    skills=skills,
                    events=events,
                    earlier=earlier,
                    attached=intake,
                )
        if intake is not None and intake.notices:
            reply = replace(reply, notices=(*intake.notices, *reply.notices))
        spoken = intake is not None and bool(intake.spoken)
        if session.effects.speak or spoken:
            # The model asked (through the `speak` tool) for its answer to be read aloud, or
            # the question was a voice message: a voice reply, where voice replies are set up.
            title = " ".join(intake.spoken) if intake is not None and spoken else text
            reply = await self._attach_voice(session, reply, title, deadline)
        return await self._rateable(session, agent, reply, skills)

    async def _rateable(
        self, session: ToolSession, agent: Agent, reply: Reply, skills: Sequence[str]
    ) -> Reply:
        """`reply` with the id of its answer record, so people can rate it. A failure to
        record costs the buttons, never the answer."""
        if self.feedback is None or not reply.ok or not reply.text.strip():
            return reply
        try:
            answer_id = await self.feedback.record(
                session,
                model=agent.model.spec.model,
                skills=skills,
                tools=[c.name for c in reply.tool_calls],
                sources=reply.sources,
            )
        except Exception:
            log.exception("request %s: the answer was not recorded for ratings", session.request_id)
            return reply
        return replace(reply, answer_id=answer_id)

    async def rate(self, rating: Rating) -> Reply:
        """Store a 👍/👎 on an answer. Never raises: a refusal (an answer from another channel,
        a value that is not a rating) becomes a private reply."""
        if self.feedback is None:
            return Reply(messages.FEEDBACK_OFF, ok=False, ephemeral=True)
        identity = Identity(
            rating.platform, rating.tenant, rating.channel, rating.user, frozenset(rating.roles)
        )
        try:
            rated = await self.feedback.rate(
                identity, rating.answer_id, rating.value, reason=rating.reason, link=rating.link
            )
        except Refusal as exc:
            return Reply(str(exc), ok=False, ephemeral=True)
        except Exception:
            log.exception("a rating on %s could not be stored", rating.platform)
            return Reply(messages.INTERNAL_ERROR, ok=False, ephemeral=True)
        if self._metrics is not None:
            self._metrics.rated(rating.platform, rated.value, rated.model)
        if rated.value == rated.previous == "down" and (rating.reason or "").strip():
            # The 👎 form sent back: the rating was thanked for when it was clicked.
            return Reply(messages.FEEDBACK_REASON_NOTED, ephemeral=True)
        return Reply(messages.feedback_thanks(rated.value, rated.previous), ephemeral=True)

    async def _read_files(
        self, session: ToolSession, agent: Agent, files: Sequence[IncomingFile], text: str
    ) -> Intake:
        """The message's files, read for `agent`'s model within its window and within what is
        left of the day's token quotas (after the rest of a prompt and the answer)."""
        from core.attachments import AttachmentReader

        reader = self.attachments or AttachmentReader()
        left = None
        states = await self._quotas.snapshot(session.token_limits())
        if states:
            left = min(s.remaining for s in states)
            left -= agent.compaction.reserved_output + FILES_PROMPT_ALLOWANCE
        return await reader.read(
            files,
            spec=agent.model.spec,
            window=agent.compaction.window,
            count=agent.counter.count_text,
            chars_per_token=agent.counter.chars_per_token,
            question=text,
            budget_tokens=max(0, left) if left is not None else None,
        )

    async def _attach_voice(
        self, session: ToolSession, reply: Reply, title: str, deadline: RequestDeadline
    ) -> Reply:
        """`reply` with its audio, made within what is left of the request's deadline; past
        it, the text answer without audio and a notice saying why."""
        if self.voice is None or not reply.ok:
            return reply
        bound = asyncio.timeout_at(deadline.at)
        try:
            with deadline.lifted():
                async with bound:
                    return await self.voice.attach(session, reply, title=title)
        except TimeoutError:
            if not bound.expired():
                raise
            log.warning("request %s: no time left for the audio", session.request_id)
            return replace(reply, notices=(*reply.notices, messages.VOICE_OUT_OF_TIME))

    def _command_context(
        self,
        session: ToolSession,
        deadline: RequestDeadline,
        progress: Progress | None,
        events: ReplySink | None,
        earlier: ThreadReader | None = None,
        files: Sequence[IncomingFile] = (),
    ) -> cmd.CommandContext:
        async def ask(text: str, *, skills: Sequence[str] = ()) -> Reply:
            return await self._ask(
                session, text, progress, events, deadline, skills, earlier=earlier, files=files
            )

        voice = self.voice

        async def speak(reply: Reply, title: str) -> Reply:
            if session.effects.speak:  # the `speak` tool already attached it
                return reply
            return await self._attach_voice(session, reply, title, deadline)

        return cmd.CommandContext(
            session=session,
            commands=self.commands,
            quotas=self._quotas,
            usage=self._usage,
            model_configured=self.agent_for(session) is not None,
            model=_describe_model(self.agent_for(session)),
            ask=ask,
            now=self._clock(),
            progress=progress,
            speak=speak if voice is not None else None,
        )


async def _status(progress: Progress | None, files: Sequence[IncomingFile]) -> None:
    """A status line while attached files are read (downloads may take seconds); a courtesy
    that never fails the request."""
    if progress is None:
        return
    from core.attachments import notices

    try:
        await progress(notices.reading(len(files)))
    except Exception:
        log.warning("progress update failed", exc_info=True)


def _files_unread(reply: Reply, files: Sequence[IncomingFile]) -> Reply:
    """`reply` (given without a model) with a notice that the attached files were not read."""
    if not files:
        return reply
    from core.attachments import notices

    return replace(reply, notices=(*reply.notices, notices.no_model([f.name for f in files])))


def _check_identity(request: Request) -> None:
    """Every part of the identity fits the columns it is stored in (thread history, memory,
    quotas, the audit log); platforms send short ids, but `threadline chat --thread ...` takes
    whatever is typed, and PostgreSQL would refuse the row halfway through the request."""
    from core.store.limits import identity_limits

    for part, limit in identity_limits().items():
        value: str = getattr(request, part)
        if len(value) > limit:
            raise Refusal(messages.id_too_long(part, len(value), limit))


def _describe_model(agent: Agent | None) -> str | None:
    if agent is None:
        return None
    spec = agent.model.spec
    return f"{spec.model} (provider {spec.name})"
