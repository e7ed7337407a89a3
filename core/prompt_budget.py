"""One budget for the whole prompt, shared out by priority.

The prompt budget is the context window at the compaction threshold, minus the tokens reserved
for the answer (`CompactionConfig.limit`). It is shared out in this order:

1. the rules and the conversation context line (a short form of the rules, with the sections
   this request needs, when the full rules would take more than `RULES_SHARE` of the budget);
2. the tool schemas: all of them when they fit `TOOLS_SHARE`, else the tools this request is
   likely to need (code tools for a code question, memory tools when memory is mentioned, ...),
   in a compact form (first sentence, no parameter descriptions) where the full one does not fit;
3. the current turn: the question and this turn's tool results, which compaction shortens
   (head and tail, with a note) but never removes;
4. the thread's summary and the previous turn;
5. then, while room is left, in this order: the thread's earlier messages (a mention inside a
   thread Threadline was not part of), long-term memory, the repo map, the skills text
   (rule, pinned skills, index), the MCP resource list. A part that does not fit is left out
   whole (the repo map is fenced, memory quotes facts with their authors: half of either reads
   wrong), and it is rendered within what the plan leaves it in the first place.

On large windows every part fits and nothing changes between requests, so provider prefix
caches keep hitting; on 3-8k windows the conversation keeps its place.
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal

from core.code.graph.focus import looks_like_code_question
from core.memory.compaction import CompactionConfig, shortened, without_result
from core.memory.history import is_summary, summary_messages
from core.memory.tokens import TokenCounter

if TYPE_CHECKING:
    from core.chat import Message, ToolSchema

ToolGroup = Literal["code", "memory", "skills", "voice", "mcp", "general"]
OptionalPart = Literal["thread", "memory", "code_map", "skills", "resources"]

RULES_SHARE = 0.15  # the full rules, when they take at most this share of the prompt budget
TOOLS_SHARE = 0.25  # what tool schemas may take when not all of them fit in it
# The current turn's tool results may take this share of what the conversation has, so the
# summary and the previous turn keep a place beside them.
RESULTS_SHARE = 0.5
MIN_PART_TOKENS = 48  # an optional part given less room than this is left out
COMPACT_DESCRIPTION_CHARS = 160
PRIORITY: tuple[OptionalPart, ...] = ("thread", "memory", "code_map", "skills", "resources")

_MEMORY_WORDS = re.compile(
    r"\b(remember|remembers|memory|memories|recall|forget|forgot|save|saved|note|notes|fact|decide|"
    r"facts|decided|decision|decisions|preference|preferences|prefer|we agreed|told you)\b",
    re.IGNORECASE,
)
_SKILL_WORDS = re.compile(
    r"\b(skill|skills|playbook|playbooks|runbook|runbooks|checklist|procedure|process|"
    r"triage|incident|release|review)\b",
    re.IGNORECASE,
)
_TIME_WORDS = re.compile(
    r"\b(time|date|today|tomorrow|yesterday|now|weekday|week|month|year|clock|timezone|utc|"
    r"when)\b",
    re.IGNORECASE,
)
_AUDIT_WORDS = re.compile(r"\b(tool calls?|audit|recent calls)\b", re.IGNORECASE)
_WORD = re.compile(r"[a-z0-9]+")


def tool_group(permission: str) -> ToolGroup:
    """A tool's feature, read from the permission it needs."""
    if permission == "code.read":
        return "code"
    if permission.startswith("memory."):
        return "memory"
    if permission == "skills.use":
        return "skills"
    if permission == "tts":
        return "voice"
    if permission.startswith("mcp:"):
        return "mcp"
    return "general"


@dataclass(frozen=True, slots=True)
class Needs:
    """What a request is likely to need, read from its text (and the thread's last question)."""

    text: str
    code: bool
    memory: bool
    skills: bool
    words: frozenset[str] = frozenset()  # the message's words, matched against MCP tool names

    @classmethod
    def of(cls, text: str, recent: Sequence[str] = (), *, skills_in_use: bool = False) -> Needs:
        # A follow-up ("and who calls it?") continues the question before it.
        last = recent[-1] if recent else ""
        return cls(
            text=text,
            code=looks_like_code_question(text) or looks_like_code_question(last),
            memory=bool(_MEMORY_WORDS.search(text)),
            skills=skills_in_use or bool(_SKILL_WORDS.search(text)),
            words=frozenset(_WORD.findall(text.lower())),
        )

    def wants(self, group: ToolGroup, name: str) -> bool:
        if group == "code":
            return self.code
        if group == "memory":
            return self.memory
        if group == "skills":
            return self.skills
        if group == "voice":
            return True  # offered at all only when the user asked for audio
        if group == "mcp":
            parts = {p for p in re.split(r"[_\W]+", name.lower()) if len(p) > 2}
            return bool(self.words & parts)
        if name == "current_time":
            return bool(_TIME_WORDS.search(self.text))
        return bool(_AUDIT_WORDS.search(self.text))


def compact_schema(schema: ToolSchema) -> ToolSchema:
    """A tool's schema at a fraction of its size: the description's first sentence and the
    parameters without their descriptions and titles (names, types, enums and bounds stay)."""
    fn = schema["function"]
    description = str(fn.get("description") or "").strip()
    first = re.split(r"(?<=[.!?])\s", description, maxsplit=1)[0]
    if len(first) > COMPACT_DESCRIPTION_CHARS:
        first = first[: COMPACT_DESCRIPTION_CHARS - 1].rstrip() + "…"
    return {
        "type": "function",
        "function": {
            "name": fn["name"],
            "description": " ".join(first.split()),
            "parameters": _bare(fn.get("parameters") or {"type": "object", "properties": {}}),
        },
    }


def _bare(node: Any) -> Any:
    if isinstance(node, dict):
        out: dict[str, Any] = {}
        for key, value in node.items():
            if key in ("description", "title", "examples"):
                continue
            if key == "properties" and isinstance(value, dict):
                out[key] = {k: _bare(v) for k, v in value.items()}
            else:
                out[key] = _bare(value)
        return out
    if isinstance(node, list):
        return [_bare(v) for v in node]
    return node


@dataclass(frozen=True, slots=True)
class OfferedTool:
    name: str
    group: ToolGroup
    schema: ToolSchema


@dataclass(frozen=True, slots=True)
class ToolChoice:
    schemas: list[ToolSchema]
    names: frozenset[str]
    groups: frozenset[ToolGroup]
    left_out: tuple[str, ...] = ()  # offered by the registry, not in this request (logged)


class PromptBudget:
    def __init__(self, config: CompactionConfig, counter: TokenCounter) -> None:
        self.config = config
        self.counter = counter

    @property
    def total(self) -> int:
        return self.config.limit

    def full_rules_fit(self, rules: str) -> bool:
        return self.counter.count_text(rules) <= self.total * RULES_SHARE

    # -- tools ------------------------------------------------------------------------------
    def choose_tools(self, offered: Sequence[OfferedTool], needs: Needs) -> ToolChoice:
        """Every offered tool when all fit their share; else the likely ones, full where they
        fit and compact where not, in the order offered."""
        cap = int(self.total * TOOLS_SHARE)
        everything = [t.schema for t in offered]
        if not offered or self._schema_tokens(everything) <= cap:
            return ToolChoice(everything, frozenset(t.name for t in offered), _groups(offered))
        chosen: list[OfferedTool] = []
        schemas: list[ToolSchema] = []
        left_out: list[str] = []
        for t in offered:
            if not needs.wants(t.group, t.name):
                left_out.append(t.name)
                continue
            for candidate in (t.schema, compact_schema(t.schema)):
                if self._schema_tokens([*schemas, candidate]) <= cap:
                    schemas.append(candidate)
                    chosen.append(t)
                    break
            else:
                left_out.append(t.name)
        return ToolChoice(
            schemas,
            frozenset(t.name for t in chosen),
            _groups(chosen),
            left_out=tuple(left_out),
        )

    def _schema_tokens(self, schemas: Sequence[ToolSchema]) -> int:
        return int(len(json.dumps(list(schemas))) / self.counter.chars_per_token) if schemas else 0

    # -- the conversation's place -----------------------------------------------------------
    def results_chars(self, fixed: int, results: int) -> int:
        """What each of the current turn's `results` tool results may keep, in characters,
        after `fixed` tokens of rules, context and tools."""
        room = max(0, self.total - fixed) * RESULTS_SHARE
        each = room / max(1, results) * self.counter.chars_per_token
        return max(300, int(each))

    def reserve(self, conversation: Sequence[Message], fixed: int) -> int:
        """Tokens kept for the conversation before any optional part: the current turn (its
        tool results at their share), the previous turn (its tool results as markers, as
        compaction measures it when it chooses what to summarize), and the summary (the one
        there, or room for one when older turns will need it)."""
        users = [i for i, m in enumerate(conversation) if m["role"] == "user"]
        current = users[-1] if users else 0
        turn = list(conversation[current:])
        results = sum(1 for m in turn if m["role"] == "tool")
        keep = self.results_chars(fixed, results)
        turn = [shortened(m, keep) if m["role"] == "tool" else m for m in turn]
        previous_start = users[-2] if len(users) > 1 else current
        if previous_start < current and is_summary(conversation[previous_start]):
            previous_start = current  # the turn before this one is the summary itself
        previous = [without_result(m) for m in conversation[previous_start:current]]
        head = list(conversation[:previous_start])
        if head and is_summary(head[0]) and len(head) <= 2:
            summary = head
        elif head:
            chars = int(self.config.summary_tokens * self.counter.chars_per_token)
            summary = summary_messages("x" * chars)
        else:
            summary = []
        return self.counter.count([*summary, *previous, *turn])

    def fit_parts(
        self, fixed: int, reserve: int, parts: dict[OptionalPart, list[Message]]
    ) -> list[OptionalPart]:
        """The optional parts that fit beside the fixed ones and the conversation's reserve,
        in priority order."""
        room = self.total - fixed - reserve
        kept: list[OptionalPart] = []
        for name in PRIORITY:
            messages = parts.get(name)
            if not messages:
                continue
            size = self.counter.count(messages) - 8  # `count`'s fixed framing is counted once
            if size <= room:
                kept.append(name)
                room -= size
        return kept

    def room_for_parts(self, fixed: int, reserve: int) -> int:
        """What the optional parts may take together, in tokens (0: none of them fits)."""
        room = self.total - fixed - reserve
        return room if room >= MIN_PART_TOKENS else 0


def _groups(tools: Sequence[OfferedTool]) -> frozenset[ToolGroup]:
    return frozenset(t.group for t in tools)
