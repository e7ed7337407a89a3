"""An answer's sources: the code it relied on, the memory and the skills it used.

Code sources come only from what this turn's code tools returned, as data
(`core.tools.result.CodeLocation`), never from the text the model wrote: a path the model
cites that no tool returned is not a source. Of the returned lines, the answer relied on:

1. lines of a definition the answer names (a search hit's symbol), or that it cites by line
   (`app.py:12`);
2. otherwise the lines returned from a file the answer names (its path or file name);
3. otherwise the lines the model read with `read_file` (it went to the trouble).

Files rank in that order, then by where the answer first names them; each file's ranges are
merged where they overlap or touch; at most `MAX_CODE_SOURCES` are given. Grep hits and search
results the answer never names are not sources: they were looked at, not relied on.

Memory: when long-term memory was in the prompt the answer was written from, and the answer
repeats distinctive words of a fact, that fact's scope is named ("channel memory", "workspace
memory", "your memory"). Skills: those loaded in this turn (`/NAME`, or by the model).
"""

from __future__ import annotations

import re
from collections.abc import Awaitable, Callable, Iterable, Sequence
from dataclasses import dataclass
from pathlib import PurePosixPath

from core.code.checkout import Lines
from core.request import Source
from core.session import ToolSession
from core.tools.result import CodeLocation

MAX_CODE_SOURCES = 5
MERGE_GAP = 3  # ranges of one file at most this many lines apart are one source

# Asks for forge links for lines of code (`core.code.checkout.CodeLinks.links`).
Links = Callable[[ToolSession, Sequence[Lines]], Awaitable[list[str | None]]]

SCOPE_NAMES = {"channel": "channel memory", "global": "workspace memory", "user": "your memory"}

_WORD = re.compile(r"[\w][\w.-]*[\w]|\w")
# Words too common to show that an answer drew on a fact.
_COMMON = frozenset(
    """about after again also always because been before being both could does doing done
    down each even every from have here into just like made make many more most much must
    need never only other over same should some such than that their them then there these
    they this those through under until very want were what when where which while will with
    would your yours please thanks using used uses""".split()
)


@dataclass(frozen=True, slots=True)
class Fact:
    """A memory fact that was in the prompt: its scope and its text."""

    scope: str
    text: str


# -- code ------------------------------------------------------------------------------------


def pick_code(answer: str, locations: Iterable[CodeLocation]) -> list[Lines]:
    """The lines the answer relied on, best first, merged, at most `MAX_CODE_SOURCES`."""
    by_file: dict[tuple[str, str], list[CodeLocation]] = {}
    for loc in locations:
        by_file.setdefault((loc.repo, loc.path), []).append(loc)
    ranked: list[tuple[tuple[int, int, int], list[CodeLocation]]] = []
    for order, ((_, path), locs) in enumerate(by_file.items()):
        named_at = _file_named_at(answer, path)
        scored = [(_location_score(answer, loc, named_at is not None), loc) for loc in locs]
        best = max(score for score, _ in scored)
        if best == 0:
            continue
        chosen = [loc for score, loc in scored if score == best]
        where = named_at if named_at is not None else len(answer)
        ranked.append(((-best, where, order), chosen))
    ranked.sort(key=lambda item: item[0])
    out: list[Lines] = []
    for _, chosen in ranked:
        out.extend(_merge(chosen))
        if len(out) >= MAX_CODE_SOURCES:
            break
    return out[:MAX_CODE_SOURCES]


def _location_score(answer: str, loc: CodeLocation, file_named: bool) -> int:
    if loc.symbol and _symbol_named(answer, loc.symbol):
        return 3
    if file_named and _line_cited(answer, loc):
        return 3
    if file_named:
        return 2
    return 1 if loc.kind == "read" else 0


def _file_named_at(answer: str, path: str) -> int | None:
    """Where the answer first names the file: its path, or its file name as a word."""
    found = _as_word(answer, path)
    if found is not None:
        return found
    name = PurePosixPath(path).name
    if "." not in name.strip(".") and len(name) < 6:
        return None  # `main`, `run`: words, not file names
    return _as_word(answer, name)


def _as_word(answer: str, name: str) -> int | None:
    """Where `name` first stands on its own in the answer (`a.py` is not in `data.py`)."""
    found = re.search(rf"(?<![\w/.-]){re.escape(name)}(?![\w-])", answer)
    return found.start() if found else None


def _symbol_named(answer: str, symbol: str) -> bool:
    """The answer names the symbol, qualified or not, without its parameters (search hits'
    symbols carry them: `billing.refund(order, amount)`): as a word, or in backticks when it
    is short enough to be an ordinary word (`run`)."""
    head = symbol.split("(", 1)[0].strip()
    for name in {symbol, head, head.rsplit(".", 1)[-1], head.rsplit("::", 1)[-1]}:
        if len(name) >= 4 and re.search(rf"(?<!\w){re.escape(name)}(?!\w)", answer):
            return True
        if name and re.search(rf"`[^`\n]*(?<!\w){re.escape(name)}(?!\w)[^`\n]*`", answer):
            return True
    return False


def _line_cited(answer: str, loc: CodeLocation) -> bool:
    """The answer cites `file:N` or `file:N-M` with N within these lines."""
    name = re.escape(PurePosixPath(loc.path).name)
    for m in re.finditer(rf"{name}:(\d+)(?:-(\d+))?", answer):
        first = int(m[1])
        last = int(m[2]) if m[2] else first
        if first <= loc.end and last >= loc.start:
            return True
    return False


def _merge(locs: list[CodeLocation]) -> list[Lines]:
    spans = sorted((loc.start, loc.end) for loc in locs)
    merged: list[list[int]] = []
    for start, end in spans:
        if merged and start <= merged[-1][1] + MERGE_GAP + 1:
            merged[-1][1] = max(merged[-1][1], end)
        else:
            merged.append([start, end])
    first = locs[0]
    return [Lines(first.repo, first.path, s, e) for s, e in merged]


def code_label(lines: Lines, *, with_repo: bool = False) -> str:
    span = f"{lines.start}" if lines.start == lines.end else f"{lines.start}-{lines.end}"
    path = f"{lines.repo}/{lines.path}" if with_repo else lines.path
    return f"{path}:{span}"


async def code_sources(
    session: ToolSession, answer: str, locations: Iterable[CodeLocation], links: Links | None
) -> list[Source]:
    picked = pick_code(answer, locations)
    if not picked:
        return []
    urls: list[str | None] = [None] * len(picked)
    if links is not None:
        urls = await links(session, picked)
    several = len({p.repo for p in picked}) > 1
    # The same path in two repositories reads ambiguously without the repository's name.
    paths = [p.path for p in picked]
    return [
        Source("code", code_label(p, with_repo=several and paths.count(p.path) > 1), url)
        for p, url in zip(picked, urls, strict=True)
    ]


# -- memory and skills -------------------------------------------------------------------------


def _distinctive(text: str) -> set[str]:
    words = {w.casefold() for w in _WORD.findall(text)}
    return {w for w in words if (len(w) >= 4 or any(c.isdigit() for c in w)) and w not in _COMMON}


def used_facts(answer: str, facts: Iterable[Fact]) -> list[Fact]:
    """The facts the answer drew on: it repeats two of a fact's distinctive words (names,
    numbers, identifiers), or the only one a short fact has."""
    said = _distinctive(answer)
    used = []
    for fact in facts:
        words = _distinctive(fact.text)
        if words and len(words & said) >= min(2, len(words)):
            used.append(fact)
    return used


def memory_sources(answer: str, facts: Iterable[Fact]) -> list[Source]:
    scopes = dict.fromkeys(f.scope for f in used_facts(answer, facts))
    return [Source("memory", SCOPE_NAMES[s]) for s in scopes if s in SCOPE_NAMES]


def skill_sources(names: Iterable[str]) -> list[Source]:
    return [Source("skill", f"{name} skill") for name in dict.fromkeys(names)]
