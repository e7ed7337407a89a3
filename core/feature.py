"""What a feature contributes to the bot, through one small interface: its tools, its commands,
its parts of the prompt and its lifetime. The composition root (`bot/app.py`) builds a list of
features and composes them; a team's own feature (tools and commands of its own) is one more
`Feature` in that list, with no edit to core.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Iterable, Sequence
from contextlib import AsyncExitStack
from dataclasses import dataclass, field, fields
from typing import TypeVar

from core.agent.context import CodeMap, Recall
from core.commands import Command, Fallback
from core.session import ToolSession
from core.skills.service import Skills
from core.tools.registry import Tool

Close = Callable[[], Awaitable[None]]
T = TypeVar("T")


@dataclass(frozen=True, slots=True)
class PromptParts:
    """The parts of the prompt a feature provides (the agent fits them in one budget)."""

    memory: Recall | None = None
    code_map: CodeMap | None = None
    skills: Skills | None = None
    resources: Callable[[ToolSession], str | None] | None = None


@dataclass(frozen=True, slots=True)
class Feature:
    name: str
    tools: Sequence[Tool] = ()
    commands: Sequence[Command] = ()
    prompt: PromptParts = PromptParts()
    # Unknown `/NAME` commands go here (skills run as `/NAME`); at most one feature has one.
    fallback: Fallback | None = None
    # What to close when the bot stops, in this order; features close in reverse order of
    # composition, so a feature may rely on what was composed before it.
    close: Sequence[Close] = field(default_factory=tuple)


def tools_of(features: Iterable[Feature]) -> list[Tool]:
    return [t for f in features for t in f.tools]


def commands_of(features: Iterable[Feature]) -> list[Command]:
    return [c for f in features for c in f.commands]


def fallback_of(features: Iterable[Feature]) -> Fallback | None:
    found = [f for f in features if f.fallback is not None]
    if len(found) > 1:
        names = ", ".join(f.name for f in found)
        raise ValueError(f"only one feature may take unknown commands; these do: {names}")
    return found[0].fallback if found else None


def prompt_of(features: Iterable[Feature]) -> PromptParts:
    """Each prompt part from the one feature that provides it."""
    merged = PromptParts()
    owner: dict[str, str] = {}
    for feature in features:
        given = feature.prompt
        for part in fields(PromptParts):
            if getattr(given, part.name) is None:
                continue
            if part.name in owner:
                raise ValueError(
                    f"the prompt's {part.name} comes from two features: "
                    f"{owner[part.name]} and {feature.name}"
                )
            owner[part.name] = feature.name
        merged = PromptParts(
            memory=_first(merged.memory, given.memory),
            code_map=_first(merged.code_map, given.code_map),
            skills=_first(merged.skills, given.skills),
            resources=_first(merged.resources, given.resources),
        )
    return merged


def _first(a: T | None, b: T | None) -> T | None:
    return a if a is not None else b


def closing(stack: AsyncExitStack, features: Iterable[Feature]) -> None:
    """Register the features' closers on `stack` (which runs them last-in, first-out)."""
    for feature in features:
        for close in feature.close:
            stack.push_async_callback(close)
