"""What the agent puts before the thread: the rules, the tools on offer, long-term memory, the
repo map, skills, the MCP resource list and the thread's earlier messages
(`core.agent.thread_context`), each within the one prompt budget
(`core.prompt_budget`). The loop (`core.agent.loop`) asks for them; nothing here calls the
model or runs a tool.
"""

from __future__ import annotations

import asyncio
import json
import logging
import uuid
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import TYPE_CHECKING, Protocol

from core.agent import thread_context
from core.agent.thread_context import DEFAULT_CONFIG, ThreadContextConfig
from core.agent.turn import Turn
from core.chat import text_of
from core.memory.compaction import CompactionConfig
from core.memory.facts import Recalled
from core.memory.history import ThreadHistory
from core.memory.tokens import TokenCounter
from core.prompt import SYSTEM_RULES, PromptBuilder, lean_rules
from core.prompt_budget import (
    Needs,
    OfferedTool,
    OptionalPart,
    PromptBudget,
    ToolChoice,
    tool_group,
)
from core.session import ToolSession
from core.skills.service import LOAD_TOOL, Skills, load_text
from core.tools.dispatcher import cap
from core.tools.registry import Tool, ToolRegistry

if TYPE_CHECKING:
    from core.chat import Message
    from core.request import ThreadReader

log = logging.getLogger(__name__)


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


def memory_budget(window: int) -> int:
    """Tokens of long-term memory injected per request."""
    return min(5000, max(500, window // 200))


def code_map_budget(window: int) -> int:
    """The most tokens a repo map may take (its own default is 1,024, twice that when the
    conversation names no file): small windows get a smaller map."""
    return max(64, window // 16)


RECENT_TURNS = 4  # earlier user messages whose files and symbols seed the repo map
RESOURCES_MIN_WINDOW = 32_768  # MCP resources are listed in the prompt from this window up


@dataclass(frozen=True, slots=True)
class Parts:
    """The optional parts prepared for one request (rendered once, kept or left out per call)."""

    memory: str | None
    code_map: str | None
    thread: str | None = None  # the thread's earlier messages, quoted


class PromptContext:
    def __init__(
        self,
        *,
        prompt: PromptBuilder,
        registry: ToolRegistry,
        compaction: CompactionConfig,
        counter: TokenCounter,
        clock: Callable[[], datetime],
        memory: Recall | None = None,
        code_map: CodeMap | None = None,
        skills: Skills | None = None,
        resources: Callable[[ToolSession], str | None] | None = None,
        thread: ThreadContextConfig = DEFAULT_CONFIG,
    ) -> None:
        self.budget = PromptBudget(compaction, counter)
        self.thread = thread
        self.compaction = compaction
        self.counter = counter
        self._prompt = prompt
        self._registry = registry
        self._clock = clock
        self._memory = memory
        self._code_map = code_map
        self._skills = skills
        self._resources = resources

    def max_tool_result_chars(self) -> int:
        """A single tool result's cap before it enters the thread: a quarter of the window."""
        return max(500, int(self.compaction.window * 0.25 * self.counter.chars_per_token))

    async def prepare(
        self,
        session: ToolSession,
        text: str,
        history: ThreadHistory,
        turn: Turn,
        explicit: Sequence[str],
        earlier: ThreadReader | None = None,
    ) -> Parts:
        """Everything the request's prompt draws on, rendered within what the budget leaves
        it: memory and the repo map, the skills (and those the user asked for, loaded), the
        thread's earlier messages (`earlier`, read once here)."""
        recent = _recent_questions(history)
        turn.needs = Needs.of(text, recent, skills_in_use=bool(explicit))
        room = await self._room_for_parts(session, history, turn)
        # Independent parts of the prompt, prepared together: the skills ranking's query
        # embedding runs while memory and the repo map read the database.
        memory, code, thread, _ = await asyncio.gather(
            self._recall(session, text, room),
            self._map(session, text, recent, room),
            self._earlier(session, earlier, history, room),
            self._prepare_skills(session, text, turn, explicit),
        )
        if turn.thread_skills or (turn.skills and turn.skills.pinned):
            turn.needs = Needs.of(text, recent, skills_in_use=True)
        return Parts(memory, code, thread)

    async def choose_tools(self, session: ToolSession, turn: Turn) -> ToolChoice:
        offered = await self._registry.offered_tools(session)
        needs = turn.needs or Needs.of("")
        choice = self.budget.choose_tools([_offered(t) for t in offered], needs)
        if choice.left_out:
            log.debug(
                "request %s: tools left out to fit the window: %s",
                session.request_id,
                ", ".join(choice.left_out),
            )
        return choice

    def skills_again(
        self, session: ToolSession, turn: Turn, conversation: Sequence[Message]
    ) -> str | None:
        """Skills this thread loaded whose loading compaction has summarized, given again."""
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

    def prefix(
        self,
        session: ToolSession,
        turn: Turn,
        parts: Parts,
        again: str | None,
        choice: ToolChoice | None,
        conversation: Sequence[Message],
    ) -> tuple[list[Message], int]:
        """The messages before the thread, with the optional parts (memory, repo map, skills
        text, resource list) that fit beside the conversation's reserve, in priority order;
        and what each of this turn's tool results may keep, in characters."""
        now = self._clock()
        rules = self._rules(choice, memory=parts.memory is not None)
        tools = choice.schemas if choice is not None else None
        fixed = self.counter.count(
            self._prompt.prefix(session, now, skills_now=again, rules=rules), tools
        )
        sk = turn.skills if choice is None or "skills" in choice.groups else None
        resources = self._resource_list(session)
        context = "Conversation context."  # stands in for the context line the skills join
        optional: dict[OptionalPart, list[Message]] = {}
        if parts.memory:
            optional["memory"] = [{"role": "user", "content": parts.memory}]
        if parts.code_map:
            optional["code_map"] = [{"role": "user", "content": parts.code_map}]
        if sk is not None:
            optional["skills"] = [
                {"role": "system", "content": sk.stable},
                {"role": "system", "content": "\n\n".join([context, sk.dynamic or ""])},
            ]
        if resources:
            optional["resources"] = [{"role": "user", "content": resources}]
        if parts.thread:
            optional["thread"] = [{"role": "user", "content": parts.thread}]
        reserve = self.budget.reserve(conversation, fixed)
        kept = self.budget.fit_parts(fixed, reserve, optional)
        memory = parts.memory if "memory" in kept else None
        turn.facts = memory.facts if isinstance(memory, Recalled) else ()
        skills = sk if "skills" in kept else None
        skills_now = (
            "\n\n".join(p for p in (skills.dynamic if skills else None, again) if p) or None
        )
        prefix = self._prompt.prefix(
            session,
            now,
            parts.memory if "memory" in kept else None,
            parts.code_map if "code_map" in kept else None,
            skills=skills.stable if skills else None,
            skills_now=skills_now,
            resources=resources if "resources" in kept else None,
            rules=rules,
        )
        if parts.thread and "thread" in kept:  # last: next to the conversation it precedes
            prefix.append({"role": "user", "content": parts.thread})
        results = sum(1 for m in _current_turn(conversation) if m["role"] == "tool")
        return prefix, self.budget.results_chars(fixed, results)

    # -- the parts ----------------------------------------------------------------------------
    async def _room_for_parts(
        self, session: ToolSession, history: ThreadHistory, turn: Turn
    ) -> int:
        """What memory and the repo map may take, at most, beside the rules, the tools and the
        conversation's reserve (`core.prompt_budget`): they are rendered within it."""
        choice = await self.choose_tools(session, turn)
        rules = self._rules(choice, memory=True)
        fixed = self.counter.count(
            self._prompt.prefix(session, self._clock(), rules=rules), choice.schemas
        )
        reserve = self.budget.reserve([*history.messages, *turn.messages], fixed)
        return self.budget.room_for_parts(fixed, reserve)

    def _rules(self, choice: ToolChoice | None, *, memory: bool) -> str:
        """The full rules where they fit their share, else the sections this request needs."""
        if self.budget.full_rules_fit(self._prompt.stable_prefix()):
            return SYSTEM_RULES
        code = choice is not None and "code" in choice.groups
        return lean_rules(code=code, memory=memory)

    async def _earlier(
        self,
        session: ToolSession,
        reader: ThreadReader | None,
        history: ThreadHistory,
        room: int,
    ) -> str | None:
        """The thread's earlier messages the model has not seen, quoted, within the share of
        the window they may take and the room left."""
        budget = min(self.thread.max_tokens(self.compaction.window), room)
        if reader is None or budget < thread_context.MIN_TOKENS:
            return None
        found = await thread_context.read(reader, self.thread.timeout, session.request_id)
        fresh = thread_context.new_to_history(found, history.messages)
        return thread_context.render(fresh, budget, self.counter.count_text)

    async def _recall(self, session: ToolSession, text: str, room: int) -> str | None:
        if self._memory is None or not session.allows("memory.read") or room <= 0:
            return None
        budget = min(memory_budget(self.compaction.window), room)
        return await self._memory.recall(session, text, budget, self.counter.count_text)

    async def _prepare_skills(
        self, session: ToolSession, text: str, turn: Turn, explicit: Sequence[str]
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
            content = cap(load_text(skill), self.max_tool_result_chars())
            turn.messages.append({"role": "tool", "tool_call_id": call_id, "content": content})
            skills.narrow(session, skill)
            await skills.record(session.conversation, skill.name)
            turn.skills_loaded.append(skill.name)

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


def _offered(t: Tool) -> OfferedTool:
    return OfferedTool(t.name, tool_group(t.permission), t.schema())


def _recent_questions(history: ThreadHistory) -> list[str]:
    """The thread's last user messages, whose files and symbols seed the repo map."""
    return [
        text_of(m)
        for m in history.messages
        if m["role"] == "user" and isinstance(m.get("content"), str)
    ][-RECENT_TURNS:]


def _current_turn(conversation: Sequence[Message]) -> Sequence[Message]:
    users = [i for i, m in enumerate(conversation) if m["role"] == "user"]
    return conversation[users[-1] :] if users else conversation
