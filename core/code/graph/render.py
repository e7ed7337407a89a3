"""The code graph as text: what `/graph`, the `code_graph` tool and `threadline graph` show
(every user- and model-facing string of the graph lives here).

`describe` is the one entry point: a name, the repositories the caller may read, a depth and
the sections wanted; it looks the name up and renders the answer (the neighbourhood, the
candidates of an ambiguous name, or close names for an unknown one).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from core.code.graph.model import Edge
from core.code.graph.query import (
    MAX_CANDIDATES,
    MAX_DEPTH,
    SECTIONS,
    Lookup,
    Neighbourhood,
    Section,
    Step,
    Symbol,
    lookup,
    neighbourhood,
)
from core.store.engine import Database

GRAPH_USAGE = (
    "Usage: `/graph SYMBOL [--repo NAME] [--depth N] [--callers] [--callees] [--hierarchy] "
    "[--image] [--confident]` — where SYMBOL is defined, what it extends, who calls it and what "
    "it calls (`--image`: also as a picture; `--confident`: the picture leaves out guesses)."
)
BAD_DEPTH = f"--depth must be a number from 1 to {MAX_DEPTH}."
NO_GRAPH = "No code graph yet: index a repository first (`/index NAME`)."

_TITLES = {
    "extends": "Extends / implements",
    "extended_by": "Extended / implemented by",
    "imports": "Imports",
    "callers": "Callers",
    "callees": "Calls",
}


@dataclass(frozen=True, slots=True)
class Answer:
    text: str
    found: bool  # one symbol found (False: ambiguous, unknown, nothing indexed)
    data: dict[str, Any]  # the same as JSON (`threadline graph --json`)
    view: Neighbourhood | None = None  # what was found, for the picture


def _where(symbol: Symbol) -> str:
    return f"{symbol.repo}: {symbol.path}:{symbol.line}"


def _target(edge: Edge) -> str:
    if edge.target_path is None:
        return f"{edge.target_name} (outside the repository or unresolved)"
    return f"{edge.target_symbol} ({edge.target_path}:{edge.target_line})"


def _confidence(edge: Edge) -> str:
    return "" if edge.confidence >= 0.9 else f" [confidence {edge.confidence:.1f}]"


def _line(name: str, step: Step) -> str:
    e = step.edge
    indent = "  " * step.depth
    if name in ("callers", "extended_by"):
        return (
            f"{indent}{e.source_symbol} ({e.source_path}:{e.source_line}) → "
            f"{e.target_symbol}{_confidence(e)}"
        )
    return (
        f"{indent}{e.source_symbol} → {_target(e)} at {e.source_path}:{e.source_line}"
        f"{_confidence(e)}"
    )


def render_neighbourhood(view: Neighbourhood) -> str:
    f = view.focus
    out = [f"`{f.symbol}` — {f.kind} in {_where(f)} (depth {view.depth})"]
    for name, steps in view.sections.items():
        if name == "imports" and not steps:
            continue
        out.append(f"{_TITLES[name]}:" + ("" if steps else " none"))
        out += [_line(name, step) for step in steps]
        if view.truncated.get(name):
            out.append("  […more; lower --depth or ask about one of these]")
    return "\n".join(out)


def render_candidates(name: str, candidates: Sequence[Symbol]) -> str:
    shown = list(candidates)[:MAX_CANDIDATES]
    out = [f"`{name}` is ambiguous: {len(candidates)} definitions. Ask for one of them:"]
    out += [f"- {c.path}:{c.symbol} ({c.kind}, {_where(c)})" for c in shown]
    if len(candidates) > len(shown):
        out.append(f"- …and {len(candidates) - len(shown)} more")
    return "\n".join(out)


def render_unknown(name: str, suggestions: Sequence[str]) -> str:
    text = f"No definition named `{name}` in the code graph"
    if suggestions:
        return text + ". Did you mean: " + ", ".join(f"`{s}`" for s in suggestions) + "?"
    return text + "."


async def describe(
    db: Database,
    repos: dict[int, str],
    name: str,
    *,
    depth: int = 2,
    sections: Sequence[Section] = SECTIONS,
) -> Answer:
    """Look `name` up in `repos` (id -> name, already filtered by policy) and render it."""
    found: Lookup = await lookup(db, repos, name)
    if not found.matches:
        data: dict[str, Any] = {"status": "unknown", "name": name}
        data["suggestions"] = found.suggestions
        return Answer(render_unknown(name, found.suggestions), False, data)
    if len(found.matches) > 1:
        data = {"status": "ambiguous", "name": name}
        data["candidates"] = [c.as_json() for c in found.matches]
        return Answer(render_candidates(name, found.matches), False, data)
    focus = found.matches[0]
    repo_id = next(i for i, n in repos.items() if n == focus.repo)
    view = await neighbourhood(db, repo_id, focus, depth=depth, sections=sections)
    data = {"status": "found", **view.as_json()}
    return Answer(render_neighbourhood(view), True, data, view)


def picture_note(symbol: str, omitted: int) -> str:
    """The line under the text when the picture left nodes out."""
    nodes = "node" if omitted == 1 else "nodes"
    return (
        f"(The picture shows the nodes nearest `{symbol}` and leaves out {omitted} {nodes}; "
        "the text lists them.)"
    )


def picture_filename(symbol: str) -> str:
    safe = re.sub(r"[^A-Za-z0-9_.-]+", "_", symbol).strip("._") or "symbol"
    return f"graph-{safe[:60]}.png"


PICTURE_FAILED = "(The picture could not be drawn; the text above has the whole graph.)"
