"""A long text cut to fit: its head and tail, plus the lines around its first errors (Python
tracebacks, `ERROR` / `FATAL` / `Exception` / `panic:` lines), with a marker wherever lines
were cut (`[... lines 120-4,800 cut ...]`) so the model (and the reply) know what is missing.
"""

from __future__ import annotations

import re
from bisect import bisect_right
from dataclasses import dataclass
from itertools import accumulate

# Where an incident starts: what a log shows when something went wrong. Searched only on the
# lines where one of `_GATES` occurs (str.find runs at C speed; these patterns over megabytes
# would take a second).
ERROR_LINE = re.compile(
    r"Traceback \(most recent call last\)|\b(?:ERROR|FATAL|CRITICAL|SEVERE)\b|panic:"
    r"|\b[A-Z]\w*(?:Exception|Error)\b[:\s]|^\s*Caused by:|\bException\b"
    r"|\berror(?:\[\w+\])?:"
)
_GATES = (
    "Traceback (",
    "ERROR",
    "FATAL",
    "CRITICAL",
    "SEVERE",
    "panic:",
    "Exception",
    "Error",
    "Caused by:",
    "error",
)
_GATE_HITS = 64  # candidates looked at per gate
INCIDENTS = 3  # first errors kept with their context
BEFORE = 5  # lines kept before an error line
AFTER = 40  # and after it (a traceback's frames)
LINE_CHARS = 2_000  # a longer line (minified JSON) keeps its start
HEAD_SHARE = 0.25  # of the budget, when there are errors to show (else half each)
TAIL_SHARE = 0.25
MARKERS_CHARS = (2 * INCIDENTS + 2) * 40  # the most room cut markers take


@dataclass(frozen=True, slots=True)
class Excerpt:
    text: str
    cut: tuple[tuple[int, int], ...] = ()  # 1-based inclusive line ranges left out
    lines: int = 0  # lines of the whole text
    long_lines: int = 0  # lines kept with only their start (longer than LINE_CHARS)

    @property
    def whole(self) -> bool:
        return not self.cut and not self.long_lines

    def describe_cut(self) -> str:
        """`lines 120-4,800` or `lines 120-4,800 and 5,000-9,000`."""
        spans = [f"{a:,}-{b:,}" if a != b else f"{a:,}" for a, b in self.cut]
        parts = []
        if spans:
            joined = spans[0] if len(spans) == 1 else ", ".join(spans[:-1]) + " and " + spans[-1]
            parts.append(
                ("line " if len(spans) == 1 and "-" not in spans[0] else "lines ") + joined
            )
        if self.long_lines:
            parts.append(f"the ends of {self.long_lines:,} very long lines")
        return " and ".join(parts)


def marker(first: int, last: int) -> str:
    what = f"line {first:,}" if first == last else f"lines {first:,}-{last:,}"
    return f"[... {what} cut ...]"


def _clip(line: str) -> str:
    if len(line) <= LINE_CHARS:
        return line
    return line[:LINE_CHARS] + f" [... {len(line) - LINE_CHARS:,} characters cut]"


def excerpt(text: str, max_chars: int) -> Excerpt:
    """`text` whole when it fits `max_chars`, else its head, tail and first incidents."""
    lines = text.split("\n")
    if len(text) <= max_chars and all(len(line) <= LINE_CHARS for line in lines):
        return Excerpt(text, (), len(lines))
    clipped = [_clip(line) for line in lines]
    n = len(clipped)
    keep = [False] * n
    budget = max(0, max_chars - MARKERS_CHARS)  # the cut markers take room too
    incidents = _incidents(text, lines)
    head_budget = int(budget * (HEAD_SHARE if incidents else 0.5))
    tail_budget = int(budget * (TAIL_SHARE if incidents else 0.5))
    used = _take(clipped, keep, range(n), head_budget)
    used += _take(clipped, keep, range(n - 1, -1, -1), tail_budget)
    room = budget - used
    for i, start in enumerate(incidents):
        share = room // (len(incidents) - i)
        first = max(0, start - BEFORE)
        last = min(n, start + AFTER + 1)
        room -= _take(clipped, keep, range(first, last), share)
    # What the incidents left goes to more of the head and the tail.
    room -= _take(clipped, keep, range(n), room // 2)
    _take(clipped, keep, range(n - 1, -1, -1), room)
    long_lines = sum(1 for i, line in enumerate(lines) if keep[i] and len(line) > LINE_CHARS)
    return _render(clipped, keep, long_lines)


def _incidents(text: str, lines: list[str]) -> list[int]:
    """Line numbers (0-based) of the first error lines, each outside the previous one's
    window (a traceback is one incident, not forty)."""
    rows: set[int] = set()
    starts: list[int] | None = None
    for gate in _GATES:
        pos, seen = text.find(gate), 0
        while pos >= 0 and seen < _GATE_HITS:
            if starts is None:
                starts = _line_starts(lines)
            row = bisect_right(starts, pos) - 1
            if row not in rows and ERROR_LINE.search(lines[row]):
                rows.add(row)
            seen += 1
            pos = text.find(gate, starts[row] + len(lines[row]) + 1)
    found: list[int] = []
    for row in sorted(rows):
        if found and row <= found[-1] + AFTER:
            continue
        found.append(row)
        if len(found) == INCIDENTS:
            break
    return found


def _line_starts(lines: list[str]) -> list[int]:
    return [0, *accumulate(len(line) + 1 for line in lines)][:-1]


def _take(lines: list[str], keep: list[bool], order: range, budget: int) -> int:
    """Mark lines in `order` as kept while they fit `budget` characters; what they cost."""
    used = 0
    for i in order:
        if keep[i]:
            continue
        cost = len(lines[i]) + 1
        if used + cost > budget:
            break
        keep[i] = True
        used += cost
    return used


def _render(lines: list[str], keep: list[bool], long_lines: int) -> Excerpt:
    out: list[str] = []
    cut: list[tuple[int, int]] = []
    i, n = 0, len(lines)
    while i < n:
        if keep[i]:
            out.append(lines[i])
            i += 1
            continue
        j = i
        while j < n and not keep[j]:
            j += 1
        cut.append((i + 1, j))
        out.append(marker(i + 1, j))
        i = j
    return Excerpt("\n".join(out), tuple(cut), n, long_lines)
