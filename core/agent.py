"""The agent loop: prompt -> model -> tool calls through the dispatcher -> model ... -> Reply.

At most `iterations_per_request` model calls; the last one is offered no tools, so the model
has to answer with what it has. Before every call the thread is fitted into the model's window
(`core.memory.compaction`); each call reserves tokens from the persistent daily quotas first and
settles with the provider's real usage afterwards, which also calibrates the token counter.
"""

from __future__ import annotations

import asyncio
import json
import logging
import time
import uuid
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any, Protocol

from core import messages
from core.llm.calibration import SAVE_EVERY, CalibrationStore
from core.llm.client import ChatModel, Completion, LLMError
from core.llm.toolcalls import assistant_message
from core.llm.usage import UsageRecorder, settled
from core.memory.compaction import Compacted, CompactionConfig, Compactor
from core.memory.history import HistoryStore, ThreadHistory, summary_messages
from core.memory.tokens import TokenCounter
from core.metrics import Metrics
from core.prompt import SYSTEM_RULES, PromptBuilder, lean_rules
from core.prompt_budget import (
    Needs,
    OfferedTool,
    OptionalPart,
    PromptBudget,
    ToolChoice,
    tool_group,
)
from core.quotas import BudgetExhausted, QuotaLedger, QuotaState
from core.request import Progress, Reply, ToolCallRecord, Usage
from core.session import ToolSession
from core.skills.service import LOAD_TOOL, SkillPrompt, Skills, load_text
from core.store.engine import Database
from core.tools.context import ToolContext
from core.tools.dispatcher import Dispatcher, cap
from core.tools.registry import Tool

log = logging.getLogger(__name__)

Message = dict[str, Any]


class Recall(Protocol):
    """Long-term memory as the agent needs it: the facts relevant to a message, rendered."""

    async def recall(
        self, session: ToolSession, text: str, budget_tokens: int, count: Callable[[str], int]
    ) -> str | None: ...


class CodeMap(Protocol):
    """The repo map for the prompt (`core.code.graph.repomap.RepoMaps`): None when the message
    is not about code or no readable repository has a graph."""

    async def for_prompt(
        self,
        session: ToolSession,
        text: str,
        recent: Sequence[str],
        count: Callable[[str], int],
        max_tokens: int,
    ) -> str | None: ...


DEFAULT_DEADLINE = 120.0  # seconds per request (THREADLINE_REQUEST_DEADLINE)
# A reservation outlives its request's deadline by this much before another process may take
# it back: the request's last settle may still be on its way.
RESERVATION_MARGIN = timedelta(minutes=1)


def memory_budget(window: int) -> int:
    """Tokens of long-term memory injected per request."""
    return min(5000, max(500, window // 200))


def code_map_budget(window: int) -> int:
    """The most tokens a repo map may take (its own default is 1,024, twice that when the
    conversation names no file): small windows get a smaller map."""
    return max(64, window // 16)


RECENT_TURNS = 4  # earlier user messages whose files and symbols seed the repo map
RESOURCES_MIN_WINDOW = 32_768  # MCP resources are listed in the prompt from this window up


@dataclass
class _Turn:
    """What one request adds to the thread, plus what the reply reports."""

    messages: list[Message]
    tool_calls: list[ToolCallRecord]
    notices: list[str]
    usage: Usage = field(default_factory=Usage)
    summarize_failed: bool = False
    over_budget: bool = False  # the model proposed more tool calls than the budget allowed
    expires_at: datetime | None = None  # when this request's quota reservations lapse
    skills: SkillPrompt | None = None  # what skills add to the prompt
    thread_skills: list[str] = field(default_factory=list)  # loaded earlier in the thread
    needs: Needs | None = None  # what the request likely needs, for the tools it is offered


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
    ) -> None:
        self.model = model
        self.deadline = deadline
        self.counter = counter or TokenCounter()
        self._calibration = CalibrationStore(db)
        self._calibration_loaded = False
        self._dispatcher = dispatcher
        self._history = history
        self._quotas = quotas
        self._usage = usage
        self._db = db
        self._prompt = prompt
        self._memory = memory
        self._code_map = code_map
        self._skills = skills
        self._resources = resources
        self._metrics = metrics
        self._clock = clock
        spec = model.spec
        self.compaction = CompactionConfig(
            window=spec.context_window,
            threshold=spec.compact_threshold,
            reserved_output=spec.max_output_tokens,
        )
        self.budget = PromptBudget(self.compaction, self.counter)

    async def answer(
        self,
        session: ToolSession,
        text: str,
        progress: Progress | None = None,
        *,
        skills: Sequence[str] = (),
    ) -> Reply:
        """Answer `text` in the session's thread. `skills` (a user ran `/skill NAME`) are
        loaded before the model is called, so running one never depends on the model."""
        if not self._calibration_loaded:
            self._calibration_loaded = True
            await self._calibration.load(self.model.spec, self.counter)
        turn = _Turn(messages=[{"role": "user", "content": text}], tool_calls=[], notices=[])
        turn.expires_at = self._clock() + timedelta(seconds=self.deadline) + RESERVATION_MARGIN
        # One deadline for the whole request: a hung model call or a slow tool must not keep
        # the user (and the thread's lock) waiting for minutes.
        limit = asyncio.timeout(self.deadline)
        try:
            async with limit:
                history = await self._history.load(session.conversation)
                recent = _recent_questions(history)
                turn.needs = Needs.of(text, recent, skills_in_use=bool(skills))
                room = await self._room_for_parts(session, history, turn)
                # Independent parts of the prompt, prepared together: the skills ranking's
                # query embedding runs while memory and the repo map read the database.
                memory, code, _ = await asyncio.gather(
                    self._recall(session, text, room),
                    self._map(session, text, recent, room),
                    self._prepare_skills(session, text, turn, skills),
                )
                if turn.thread_skills or (turn.skills and turn.skills.pinned):
                    turn.needs = Needs.of(text, recent, skills_in_use=True)
                reply = await self._loop(session, history, turn, memory, progress, code)
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
            turn.messages.append({"role": "assistant", "content": reply.text})
        # One transaction per request: the thread never holds half a turn.
        await self._history.append(session.conversation, turn.messages)
        return reply

    async def _room_for_parts(
        self, session: ToolSession, history: ThreadHistory, turn: _Turn
    ) -> int:
        """What memory and the repo map may take, at most, beside the rules, the tools and the
        conversation's reserve (`core.prompt_budget`): they are rendered within it."""
        choice = await self._choose_tools(session, turn)
        rules = self._rules(choice, memory=True)
        fixed = self.counter.count(
            self._prompt.prefix(session, self._clock(), rules=rules), choice.schemas
        )
        reserve = self.budget.reserve([*history.messages, *turn.messages], fixed)
        return self.budget.room_for_parts(fixed, reserve)

    async def _choose_tools(self, session: ToolSession, turn: _Turn) -> ToolChoice:
        offered = await self._dispatcher.registry.offered_tools(session)
        needs = turn.needs or Needs.of("")
        return self.budget.choose_tools([_offered(t) for t in offered], needs)

    def _rules(self, choice: ToolChoice | None, *, memory: bool) -> str:
        """The full rules where they fit their share, else the sections this request needs."""
        if self.budget.full_rules_fit(self._prompt.stable_prefix()):
            return SYSTEM_RULES
        code = choice is not None and "code" in choice.groups
        return lean_rules(code=code, memory=memory)

    async def _recall(self, session: ToolSession, text: str, room: int) -> str | None:
        if self._memory is None or not session.allows("memory.read") or room <= 0:
            return None
        budget = min(memory_budget(self.compaction.window), room)
        return await self._memory.recall(session, text, budget, self.counter.count_text)

    async def _prepare_skills(
        self, session: ToolSession, text: str, turn: _Turn, explicit: Sequence[str]
    ) -> None:
        """The skills index and pinned skills for the prompt, the skills this thread loaded
        before, and the skills the user asked for, loaded into the turn as if the model had
        called load_skill (so the thread records them the same way)."""
        skills = self._skills
        if skills is None or not session.allows("skills.use"):
            return
        window = self.compaction.window
        try:
            turn.skills = await skills.prompt(session, text, window, self.counter.count_text)
            turn.thread_skills = await skills.loaded_in_thread(session.conversation)
        except Exception:  # a broken skills setup costs the skills, never the answer
            log.warning("no skills for request %s", session.request_id, exc_info=True)
        for name in explicit:
            skill = skills.usable(session, name)
            if skill is None:
                continue
            call_id = f"skill-{uuid.uuid4().hex[:16]}"
            arguments = json.dumps({"name": skill.name})
            turn.messages.append(
                {
                    "role": "assistant",
                    "content": "",
                    "tool_calls": [
                        {
                            "id": call_id,
                            "type": "function",
                            "function": {"name": LOAD_TOOL, "arguments": arguments},
                        }
                    ],
                }
            )
            content = cap(load_text(skill), self._max_tool_result_chars())
            turn.messages.append({"role": "tool", "tool_call_id": call_id, "content": content})
            skills.narrow(session, skill)
            await skills.record(session.conversation, skill.name)

    def _skills_again(
        self, session: ToolSession, turn: _Turn, conversation: Sequence[Message]
    ) -> str | None:
        if self._skills is None or not turn.thread_skills:
            return None
        return self._skills.reinjection(
            session,
            turn.thread_skills,
            conversation,
            self.compaction.window,
            self.counter.count_text,
            skip=turn.skills.pinned if turn.skills else (),
        )

    def _prefix(
        self,
        session: ToolSession,
        turn: _Turn,
        memory: str | None,
        code: str | None,
        again: str | None,
        choice: ToolChoice | None,
        conversation: Sequence[Message],
    ) -> tuple[list[Message], int]:
        """The messages before the thread, with the optional parts (memory, repo map, skills
        text, resource list) that fit beside the conversation's reserve, in priority order;
        and what each of this turn's tool results may keep, in characters."""
        now = self._clock()
        rules = self._rules(choice, memory=memory is not None)
        tools = choice.schemas if choice is not None else None
        fixed = self.counter.count(
            self._prompt.prefix(session, now, skills_now=again, rules=rules), tools
        )
        sk = turn.skills if choice is None or "skills" in choice.groups else None
        resources = self._resource_list(session)
        context = "Conversation context."  # stands in for the context line the skills join
        parts: dict[OptionalPart, list[Message]] = {}
        if memory:
            parts["memory"] = [{"role": "user", "content": memory}]
        if code:
            parts["code_map"] = [{"role": "user", "content": code}]
        if sk is not None:
            parts["skills"] = [
                {"role": "system", "content": sk.stable},
                {"role": "system", "content": "\n\n".join([context, sk.dynamic or ""])},
            ]
        if resources:
            parts["resources"] = [{"role": "user", "content": resources}]
        reserve = self.budget.reserve(conversation, fixed)
        kept, _ = self.budget.fit_parts(fixed, reserve, parts)
        skills = sk if "skills" in kept else None
        skills_now = (
            "\n\n".join(p for p in (skills.dynamic if skills else None, again) if p) or None
        )
        prefix = self._prompt.prefix(
            session,
            now,
            memory if "memory" in kept else None,
            code if "code_map" in kept else None,
            skills=skills.stable if skills else None,
            skills_now=skills_now,
            resources=resources if "resources" in kept else None,
            rules=rules,
        )
        results = sum(1 for m in _current_turn(conversation) if m["role"] == "tool")
        return prefix, self.budget.results_chars(fixed, results)

    def _resource_list(self, session: ToolSession) -> str | None:
        """MCP resources readable here, listed when the window has room for them."""
        if self._resources is None or self.compaction.window < RESOURCES_MIN_WINDOW:
            return None
        try:
            return self._resources(session)
        except Exception:  # a listing is a courtesy; the tools still list them
            log.warning("no MCP resource list for request %s", session.request_id, exc_info=True)
            return None

    async def _map(
        self, session: ToolSession, text: str, recent: Sequence[str], room: int
    ) -> str | None:
        """The repo map for a code question; a failure costs the map, never the answer."""
        if self._code_map is None or room <= 0:
            return None
        try:
            return await self._code_map.for_prompt(
                session,
                text,
                recent,
                self.counter.count_text,
                min(code_map_budget(self.compaction.window), room),
            )
        except Exception:
            log.warning("no repo map for request %s", session.request_id, exc_info=True)
            return None

    async def _loop(
        self,
        session: ToolSession,
        history: ThreadHistory,
        turn: _Turn,
        memory: str | None,
        progress: Progress | None,
        code: str | None = None,
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
            choice = await self._choose_tools(session, turn) if offer else None
            tools = choice.schemas if choice is not None else None
            whole = [*history.messages, *turn.messages]
            again = self._skills_again(session, turn, whole)
            prefix, keep = self._prefix(session, turn, memory, code, again, choice, whole)
            try:
                history, conversation = await self._fit(session, prefix, history, turn, tools, keep)
                # Compaction may just have summarized the turn that loaded a skill: give it
                # again in this very call, not only in the next one.
                if self._skills_again(session, turn, conversation) != again:
                    again = self._skills_again(session, turn, conversation)
                    prefix, keep = self._prefix(
                        session, turn, memory, code, again, choice, conversation
                    )
                    history, conversation = await self._fit(
                        session, prefix, history, turn, tools, keep
                    )
                completion = await self._call_model(session, [*prefix, *conversation], tools, turn)
            except BudgetExhausted as exc:
                return self._reply(turn, self._exhausted_text(exc), ok=False)
            except LLMError as exc:
                log.warning("model call failed for request %s: %s", session.request_id, exc)
                return self._reply(turn, messages.llm_failure(exc.kind), ok=False)
            session.counters.iterations += 1
            if not completion.tool_calls or tools is None:
                text = completion.text.strip()
                if text:
                    return self._reply(turn, text, denied=denied, session=session)
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
            for i, call in enumerate(calls):
                await _notify(progress, messages.progress_tool(call.name, step))
                started = time.monotonic()
                offered = choice.names if choice is not None else frozenset()
                outcome = await self._dispatcher.dispatch(ctx, call, offered=offered)
                if self._metrics is not None:
                    self._metrics.tool_call(call.name, time.monotonic() - started)
                turn.tool_calls.append(
                    ToolCallRecord(call.name, outcome.ok, None if outcome.ok else outcome.code)
                )
                if outcome.permission:
                    denied[call.name] = outcome.permission
                # A single huge result must not crowd the thread out of the window.
                content = cap(outcome.content, self._max_tool_result_chars())
                if excess and i == len(calls) - 1:
                    content += "\n" + messages.TOOL_CALLS_DROPPED.format(
                        extra=len(excess), n=tool_budget
                    )
                turn.messages.append({"role": "tool", "tool_call_id": call.id, "content": content})
        raise AssertionError("unreachable: the last step offers no tools")

    def _max_tool_result_chars(self) -> int:
        return max(500, int(self.compaction.window * 0.25 * self.counter.chars_per_token))

    async def _fit(
        self,
        session: ToolSession,
        prefix: Sequence[Message],
        history: ThreadHistory,
        turn: _Turn,
        tools: list[dict[str, Any]] | None,
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
        tools: list[dict[str, Any]] | None,
        turn: _Turn,
        max_output: int | None = None,
    ) -> Completion:
        spec = self.model.spec
        estimate = self.counter.count(prompt, tools)
        # The prompt and the answer share the window, and the prompt's size is an estimate:
        # never ask for more than the compaction threshold leaves of the window.
        room = int(spec.context_window * spec.compact_threshold) - estimate
        out = min(max_output or spec.max_output_tokens, max(16, room))
        reservation = await self._quotas.reserve(
            session.token_limits(),
            estimate + out,
            minimum=estimate + 16,
            expires_at=turn.expires_at,
        )
        started = time.monotonic()
        try:
            completion = await self.model.complete(
                prompt, tools=tools, max_tokens=min(out, reservation.amount - estimate)
            )
        except BaseException:
            await self._quotas.release(reservation)
            if self._metrics is not None:
                self._metrics.model_call(
                    spec.name, spec.model, None, time.monotonic() - started, False
                )
            raise
        if completion.usage is not None and completion.usage.prompt_tokens > 0:
            before = self.counter.samples
            self.counter.calibrate(prompt, tools, completion.usage.prompt_tokens)
            if self.counter.samples != before and self.counter.samples % SAVE_EVERY == 1:
                await self._calibration.save(spec, self.counter)
        # Charge what the provider reported, or the local estimate where it reported nothing,
        # zero or less: a request is never free because of a provider's bookkeeping.
        answer = completion.text + "".join(c.name + c.arguments for c in completion.tool_calls)
        usage = settled(completion.usage, estimate, self.counter.count_text(answer))
        crossed = await self._quotas.settle(reservation, usage.total_tokens)
        turn.notices.extend(_warnings(crossed))
        turn.usage = turn.usage + usage
        await self._usage.record(session, spec.name, spec.model, usage)
        if self._metrics is not None:
            self._metrics.model_call(spec.name, spec.model, usage, time.monotonic() - started, True)
        return completion

    def _exhausted_text(self, exc: BudgetExhausted) -> str:
        return exc.explain(self._clock())

    @staticmethod
    def _reply(
        turn: _Turn,
        text: str,
        *,
        ok: bool = True,
        denied: dict[str, str] | None = None,
        session: ToolSession | None = None,
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
        )


def _offered(t: Tool) -> OfferedTool:
    return OfferedTool(t.name, tool_group(t.permission), t.schema())


def _recent_questions(history: ThreadHistory) -> list[str]:
    """The thread's last user messages, whose files and symbols seed the repo map."""
    return [
        m["content"]
        for m in history.messages
        if m.get("role") == "user" and isinstance(m.get("content"), str)
    ][-RECENT_TURNS:]


def _current_turn(conversation: Sequence[Message]) -> Sequence[Message]:
    users = [i for i, m in enumerate(conversation) if m["role"] == "user"]
    return conversation[users[-1] :] if users else conversation


def _close_open_calls(turn: list[Message], note: str) -> None:
    """Answer the calls of the turn's last assistant message that have no result yet (the
    request stopped in the middle of running them), so the stored thread stays valid."""
    for i in range(len(turn) - 1, -1, -1):
        if turn[i]["role"] == "assistant":
            answered = {m.get("tool_call_id") for m in turn[i + 1 :] if m["role"] == "tool"}
            for call in turn[i].get("tool_calls") or []:
                if call["id"] not in answered:
                    turn.append({"role": "tool", "tool_call_id": call["id"], "content": note})
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
