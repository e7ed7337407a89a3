"""The agent loop: prompt -> model -> tool calls through the dispatcher -> model ... -> Reply.

At most `iterations_per_request` model calls; the last one is offered no tools, so the model
has to answer with what it has. Before every call the prompt's parts are chosen within one
budget (`core.agent.context`) and the thread is fitted into the model's window
(`core.memory.compaction`); every call is paid for by `core.llm.metered.MeteredModel`
(quotas reserved and settled, usage recorded, the token counter calibrated).
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Callable, Sequence
from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING

from core import messages
from core.agent.activity import describe
from core.agent.context import CodeMap, Parts, PromptContext, Recall
from core.agent.sources import Fact, Links, code_sources, memory_sources, skill_sources
from core.agent.thread_context import DEFAULT_CONFIG, ThreadContextConfig
from core.agent.turn import Turn
from core.chat import calls_of, tool_result
from core.llm.client import ChatModel, Completion, LLMError, TextSink
from core.llm.metered import MeteredModel
from core.llm.toolcalls import assistant_message
from core.llm.usage import UsageRecorder
from core.memory.compaction import Compacted, CompactionConfig, Compactor
from core.memory.history import HistoryStore, ThreadHistory, summary_messages
from core.memory.tokens import TokenCounter
from core.metrics import Metrics
from core.prompt import PromptBuilder
from core.prompt_budget import PromptBudget
from core.quotas import BudgetExhausted, QuotaLedger, QuotaState
from core.request import Progress, Reply, Source, ThreadReader, ToolCallRecord
from core.session import ToolSession
from core.skills.service import Skills
from core.store.engine import Database
from core.streaming import ReplyEvent, ReplySink, TextDelta, ToolFinished, ToolStarted
from core.tools.context import ToolContext
from core.tools.dispatcher import Dispatcher, cap
from core.tools.result import seen

if TYPE_CHECKING:
    from core.attachments import Intake
    from core.chat import Message, ToolSchema

log = logging.getLogger(__name__)

DEFAULT_DEADLINE = 120.0  # seconds per request (THREADLINE_REQUEST_DEADLINE)
# A reservation outlives its request's deadline by this much before another process may take
# it back: the request's last settle may still be on its way.
RESERVATION_MARGIN = timedelta(minutes=1)


class Agent:
    def __init__(
        self,
        *,
        model: ChatModel,
        dispatcher: Dispatcher,
        history: HistoryStore,
        quotas: QuotaLedger,
        usage: UsageRecorder,
        db: Database,
        prompt: PromptBuilder,
        memory: Recall | None = None,
        code_map: CodeMap | None = None,
        skills: Skills | None = None,
        resources: Callable[[ToolSession], str | None] | None = None,
        metrics: Metrics | None = None,
        counter: TokenCounter | None = None,
        clock: Callable[[], datetime] = lambda: datetime.now(UTC),
        deadline: float = DEFAULT_DEADLINE,
        links: Links | None = None,
        thread: ThreadContextConfig = DEFAULT_CONFIG,
    ) -> None:
        self.model = model
        self.deadline = deadline
        self._links = links  # forge links for the code an answer names as its sources
        self.counter = counter or TokenCounter()
        self._dispatcher = dispatcher
        self._history = history
        self._db = db
        self._metrics = metrics
        self._clock = clock
        spec = model.spec
        self.compaction = CompactionConfig(
            window=spec.context_window,
            threshold=spec.compact_threshold,
            reserved_output=spec.max_output_tokens,
        )
        self._metered = MeteredModel(
            model, quotas=quotas, usage=usage, db=db, counter=self.counter, metrics=metrics
        )
        self.context = PromptContext(
            prompt=prompt,
            registry=dispatcher.registry,
            compaction=self.compaction,
            counter=self.counter,
            clock=clock,
            memory=memory,
            code_map=code_map,
            skills=skills,
            resources=resources,
            thread=thread,
        )

    @property
    def budget(self) -> PromptBudget:
        return self.context.budget

    async def answer(
        self,
        session: ToolSession,
        text: str,
        progress: Progress | None = None,
        *,
        skills: Sequence[str] = (),
        events: ReplySink | None = None,
        earlier: ThreadReader | None = None,
        attached: Intake | None = None,
    ) -> Reply:
        """Answer `text` in the session's thread. `skills` (a user ran `/skill NAME`) are
        loaded before the model is called, so running one never depends on the model.
        `events` receives the answer's words as they are written and the tool steps;
        `earlier` reads the thread's messages before this one (`core.agent.thread_context`);
        `attached` is what the message's files give the model (`core.attachments`)."""
        await self._metered.ready()
        # The message's files (`core.attachments`) go with the question; the thread keeps the
        # text of them and a placeholder for each image, never image bytes.
        question: Message = {"role": "user", "content": text}
        kept: Message = question
        if attached is not None:
            question = attached.message(text)
            kept = {"role": "user", "content": attached.stored(text)}
        turn = Turn(messages=[question], tool_calls=[], notices=[])
        writer = _Writer(events)
        turn.expires_at = self._clock() + timedelta(seconds=self.deadline) + RESERVATION_MARGIN
        # One deadline for the whole request: a hung model call or a slow tool must not keep
        # the user (and the thread's lock) waiting for minutes.
        limit = asyncio.timeout(self.deadline)
        try:
            async with limit:
                history = await self._history.load(session.conversation)
                # The question is kept at once: a process killed mid-answer (whose words were
                # already on screen) must not leave the thread without what was asked.
                await self._history.append(session.conversation, [kept])
                parts = await self.context.prepare(session, text, history, turn, skills, earlier)
                reply = await self._loop(session, history, turn, parts, progress, writer)
        except TimeoutError:
            if not limit.expired():
                raise
            log.warning("request %s passed its %.0f s deadline", session.request_id, self.deadline)
            # What was done is kept: the question and every tool call that finished.
            _close_open_calls(turn.messages, messages.NOT_RUN_DEADLINE)
            tools_run = sum(1 for c in turn.tool_calls if c.ok)
            reply = self._reply(turn, messages.request_deadline(self.deadline, tools_run), ok=False)
        # Only a real answer becomes the assistant's words: a failure notice ("budget used
        # up") stored as such would read to the model as something it said.
        if reply.ok:
            turn.messages.append({"role": "assistant", "content": turn.written[-1]})
        # The rest in one transaction: the thread never holds a tool call without its result.
        await self._history.append(session.conversation, turn.messages[1:])
        return reply

    async def _loop(
        self,
        session: ToolSession,
        history: ThreadHistory,
        turn: Turn,
        parts: Parts,
        progress: Progress | None,
        writer: _Writer,
    ) -> Reply:
        ctx = ToolContext(session=session, db=self._db)
        max_steps = session.budgets.iterations_per_request
        tool_budget = session.budgets.tool_calls_per_request
        denied: dict[str, str] = {}
        for step in range(1, max_steps + 1):
            left = tool_budget - session.counters.tool_calls
            # The last step, or a spent tool budget: no tools on offer, so the model answers
            # instead of wasting steps on calls that would be refused.
            offer = step < max_steps and left > 0
            choice = await self.context.choose_tools(session, turn) if offer else None
            tools = choice.schemas if choice is not None else None
            whole = [*history.messages, *turn.messages]
            again = self.context.skills_again(session, turn, whole)
            prefix, keep = self.context.prefix(session, turn, parts, again, choice, whole)
            try:
                history, conversation = await self._fit(session, prefix, history, turn, tools, keep)
                # Compaction may just have summarized the turn that loaded a skill: give it
                # again in this very call, not only in the next one.
                if self.context.skills_again(session, turn, conversation) != again:
                    again = self.context.skills_again(session, turn, conversation)
                    prefix, keep = self.context.prefix(
                        session, turn, parts, again, choice, conversation
                    )
                    history, conversation = await self._fit(
                        session, prefix, history, turn, tools, keep
                    )
                writer.next_step()
                completion = await self._call_model(
                    session, [*prefix, *conversation], tools, turn, on_text=writer.text
                )
            except BudgetExhausted as exc:
                return self._reply(turn, self._exhausted_text(exc), ok=False)
            except LLMError as exc:
                log.warning("model call failed for request %s: %s", session.request_id, exc)
                return self._reply(turn, messages.llm_failure(exc.kind), ok=False)
            session.counters.iterations += 1
            written = completion.text.strip()
            if not completion.tool_calls or tools is None:
                if written:
                    turn.written.append(written)
                    text = "\n\n".join(turn.written)
                    sources = await self._sources(session, turn, text)
                    return self._reply(turn, text, denied=denied, session=session, sources=sources)
                # No answer is a failed request. Only a model that still wants tools on the
                # last step ran out of steps; an empty answer earlier is a bad response.
                text = (
                    messages.MODEL_STEP_LIMIT.format(n=max_steps)
                    if completion.tool_calls
                    else messages.llm_failure("invalid_response")
                )
                return self._reply(turn, text, ok=False, denied=denied, session=session)
            # Calls past the budget are neither run nor kept as calls: a response with a
            # thousand of them would otherwise outgrow any context window for good.
            calls, excess = list(completion.tool_calls[:left]), completion.tool_calls[left:]
            if excess:
                turn.over_budget = True
                await self._dispatcher.refuse_excess(ctx, list(excess))
            turn.messages.append(assistant_message(completion.text, calls))
            if written:
                turn.written.append(written)
            for i, call in enumerate(calls):
                await _notify(progress, messages.progress_tool(call.name, step))
                label = describe(self._dispatcher.registry, call)
                await writer.send(ToolStarted(call.id, label))
                started = time.monotonic()
                offered = choice.names if choice is not None else frozenset()
                outcome = await self._dispatcher.dispatch(ctx, call, offered=offered)
                if self._metrics is not None:
                    self._metrics.tool_call(call.name, time.monotonic() - started)
                turn.tool_calls.append(
                    ToolCallRecord(call.name, outcome.ok, None if outcome.ok else outcome.code)
                )
                await writer.send(ToolFinished(call.id, label, outcome.ok))
                if outcome.permission:
                    denied[call.name] = outcome.permission
                # A single huge result must not crowd the thread out of the window.
                content = cap(outcome.content, self.context.max_tool_result_chars())
                # What the model saw of the result is what an answer may name as its sources.
                turn.locations += seen(outcome.locations, self.context.max_tool_result_chars())
                if outcome.skill is not None:
                    turn.skills_loaded.append(outcome.skill)
                turn.found_facts += outcome.facts
                if excess and i == len(calls) - 1:
                    content += "\n" + messages.TOOL_CALLS_DROPPED.format(
                        extra=len(excess), n=tool_budget
                    )
                turn.messages.append({"role": "tool", "tool_call_id": call.id, "content": content})
        raise AssertionError("unreachable: the last step offers no tools")

    async def _fit(
        self,
        session: ToolSession,
        prefix: Sequence[Message],
        history: ThreadHistory,
        turn: Turn,
        tools: list[ToolSchema] | None,
        results_chars: int,
    ) -> tuple[ThreadHistory, list[Message]]:
        """Compact the thread if the next prompt would be over the threshold. Returns the
        (possibly compacted) stored history and the conversation to send."""

        async def summarize(prompt: list[Message], max_tokens: int) -> str:
            # One failed attempt per request is enough: later steps drop old turns at once
            # instead of paying for (and waiting on) the same failure again.
            if turn.summarize_failed:
                raise RuntimeError("summarizing already failed during this request")
            try:
                return (await self._call_model(session, prompt, None, turn, max_tokens)).text
            except Exception:
                turn.summarize_failed = True
                raise

        compactor = Compactor(self.counter, self.compaction, summarize)
        result = await compactor.fit(
            prefix, [*history.messages, *turn.messages], tools, results_chars
        )
        if result.method in ("none", "trimmed"):
            return history, result.messages
        history = await self._persist_compaction(session, history, result)
        return history, result.messages

    async def _persist_compaction(
        self, session: ToolSession, history: ThreadHistory, result: Compacted
    ) -> ThreadHistory:
        cut = min(result.replaced, len(history.messages))
        kept = ThreadHistory(history.messages[cut:], history.ids[cut:])
        if result.summary is None:  # summarizing failed: the older turns were dropped
            return kept
        covers = history.last_stored_id(cut)
        if covers is not None:
            await self._history.save_summary(session.conversation, result.summary, covers)
        log.info(
            "compacted thread %s: %d messages summarized", session.conversation, result.replaced
        )
        return ThreadHistory(
            summary_messages(result.summary) + kept.messages, [None, None, *kept.ids]
        )

    async def _call_model(
        self,
        session: ToolSession,
        prompt: list[Message],
        tools: list[ToolSchema] | None,
        turn: Turn,
        max_output: int | None = None,
        *,
        on_text: TextSink | None = None,
    ) -> Completion:
        paid = await self._metered.complete(
            session,
            prompt,
            tools,
            expires_at=turn.expires_at,
            max_output=max_output,
            on_text=on_text,
        )
        turn.notices.extend(_warnings(paid.crossed))
        turn.usage = turn.usage + paid.usage
        return paid.completion

    async def _sources(self, session: ToolSession, turn: Turn, text: str) -> tuple[Source, ...]:
        """Where the answer came from (`core.agent.sources`); links are a courtesy: failing to
        make them leaves the code sources unlinked, never the answer unanswered."""
        try:
            code = await code_sources(session, text, turn.locations, self._links)
        except Exception:
            log.warning("no links for the sources of %s", session.request_id, exc_info=True)
            code = await code_sources(session, text, turn.locations, None)
        facts = [Fact(scope, fact) for scope, fact in (*turn.facts, *turn.found_facts)]
        return (*code, *memory_sources(text, facts), *skill_sources(turn.skills_loaded))

    def _exhausted_text(self, exc: BudgetExhausted) -> str:
        return exc.explain(self._clock())

    @staticmethod
    def _reply(
        turn: Turn,
        text: str,
        *,
        ok: bool = True,
        denied: dict[str, str] | None = None,
        session: ToolSession | None = None,
        sources: tuple[Source, ...] = (),
    ) -> Reply:
        notices = list(turn.notices)
        for name, permission in (denied or {}).items():
            notices.append(
                f"I was not allowed to use `{name}`: {messages.permission_denied(permission)}"
            )
        if session and (
            turn.over_budget or any(c.error == "budget_exhausted" for c in turn.tool_calls)
        ):
            notices.append(
                messages.TOOL_BUDGET_NOTICE.format(n=session.budgets.tool_calls_per_request)
            )
        return Reply(
            text=text,
            ok=ok,
            notices=tuple(notices),
            tool_calls=tuple(turn.tool_calls),
            usage=turn.usage,
            sources=sources,
        )


def _close_open_calls(turn: list[Message], note: str) -> None:
    """Answer the calls of the turn's last assistant message that have no result yet (the
    request stopped in the middle of running them), so the stored thread stays valid."""
    for i in range(len(turn) - 1, -1, -1):
        if turn[i]["role"] == "assistant":
            answered = {m["tool_call_id"] for m in turn[i + 1 :] if m["role"] == "tool"}
            for call in calls_of(turn[i]):
                if call["id"] not in answered:
                    turn.append(tool_result(call["id"], note))
            return


def _warnings(crossed: list[QuotaState]) -> list[str]:
    return [messages.budget_warning(st.limit.label, st.used, st.limit.limit) for st in crossed]


async def _notify(progress: Progress | None, text: str) -> None:
    """Progress is a courtesy: a failing status update must never fail the request."""
    if progress is None:
        return
    try:
        await progress(text)
    except Exception:
        log.warning("progress update failed", exc_info=True)


class _Writer:
    """Hands the model's words to `events` as they come, normalized as the reply's text will
    be: each step's text without leading or trailing blank space, steps apart by a blank line.
    So the reply's text always starts with what was streamed (`core.streaming`'s contract).
    Events are a courtesy: a sink that fails is logged and the request goes on."""

    def __init__(self, events: ReplySink | None) -> None:
        self._events = events
        self._any = False  # some step has written something
        self._step_started = False
        self._blank = ""  # trailing blank space, held until more text follows it
        self.text: TextSink | None = self._text if events is not None else None

    def next_step(self) -> None:
        self._step_started = False
        self._blank = ""

    async def _text(self, piece: str) -> None:
        if not self._step_started:
            piece = piece.lstrip()
            if not piece:
                return
            self._step_started = True
            if self._any:
                piece = "\n\n" + piece
            self._any = True
        body = piece.rstrip()
        if body:
            await self.send(TextDelta(self._blank + body))
            self._blank = ""
        self._blank += piece[len(body) :]

    async def send(self, event: ReplyEvent) -> None:
        if self._events is None:
            return
        try:
            await self._events(event)
        except Exception:
            log.warning("a reply event could not be handed on", exc_info=True)
