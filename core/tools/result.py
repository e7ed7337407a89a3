"""What a tool may return besides its text: the places in the team's code it showed, the
skill it loaded, the memory facts it found.

A tool returns a plain `str` (or JSON-able data) for the model, or a `ToolResult` whose
`locations` say, as data, which files and lines that text shows (`skill`: which skill it
loaded; `facts`: which memory facts it returned). The agent names an answer's sources from
these (`core.agent.sources`), never from the text the model read or wrote, so a path the model
invents is never presented as a source.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Literal

LocationKind = Literal["read", "search", "grep", "graph"]


@dataclass(frozen=True, slots=True)
class CodeLocation:
    """Lines `start`-`end` of `path` in repository `repo`, as a code tool showed them.

    `at` is where in the tool's text these lines begin: a result cut to fit the model's window
    keeps only the locations the model actually saw. `symbol` is the definition a search hit
    is part of ("" when none)."""

    repo: str
    path: str
    start: int
    end: int
    kind: LocationKind
    symbol: str = ""
    at: int = 0


@dataclass(frozen=True, slots=True)
class ToolResult:
    text: str
    locations: tuple[CodeLocation, ...] = ()
    skill: str | None = None  # the skill this call loaded (`load_skill`)
    facts: tuple[tuple[str, str], ...] = ()  # memory facts it returned: (scope, text)

    def cut(self, text: str) -> ToolResult:
        """This result with its text shortened to `text` (a prefix of it): locations past the
        cut were never shown and are dropped."""
        return replace(self, text=text, locations=seen(self.locations, len(text)))


def seen(locations: tuple[CodeLocation, ...], chars: int) -> tuple[CodeLocation, ...]:
    """The locations that begin within the first `chars` characters of their tool's text."""
    return tuple(loc for loc in locations if loc.at < chars)
