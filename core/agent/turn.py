"""What one request adds to the thread while the agent works on it, plus what its reply
reports (shared by the loop and the prompt context)."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from typing import TYPE_CHECKING

from core.prompt_budget import Needs
from core.request import ToolCallRecord, Usage
from core.skills.service import SkillPrompt
from core.tools.result import CodeLocation

if TYPE_CHECKING:
    from core.chat import Message


@dataclass
class Turn:
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
    # What the model wrote for the user at each step, stripped: the reply is all of it (the
    # words before a tool call were shown as they came), the thread keeps the last as the answer.
    written: list[str] = field(default_factory=list)
    # What the answer may name as its sources (`core.agent.sources`): the code this turn's
    # tools showed, the memory facts (scope, text) in the prompt it was written from, the
    # skills loaded in this turn.
    locations: list[CodeLocation] = field(default_factory=list)
    facts: tuple[tuple[str, str], ...] = ()
    found_facts: list[tuple[str, str]] = field(default_factory=list)  # by search_memory
    skills_loaded: list[str] = field(default_factory=list)
