"""Platform-neutral text helpers for adapters: a reply as one Markdown text, and splitting long
Markdown into postable parts.

Chat platforms cap message length (Slack rejects ~4,000 characters, Discord 2,000). A long
answer is split at the best boundary that fits, in this order of preference:

1. the end of the text;
2. a paragraph boundary: a blank line, or just before a code fence or heading, or just after a
   code block;
3. a line boundary (inside a paragraph, or inside a code block that is longer than a part);
4. inside a line, only when one line alone is longer than a part (at whitespace if possible).

A code block that has to be split is closed at the end of one part and reopened, with the same
fence and language, at the start of the next, so every part renders on its own. Apart from
those added fence lines, the parts are consecutive slices of the input: joining their
`original` texts gives the input back exactly.

Known limit: a line that only looks like a fence opener (a backtick fence whose info string
holds a backtick) and is longer than a part is cut like text, and its first piece may then
read as a fence.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from core.request import Reply, Source

# CommonMark fences: up to three spaces of indent, then three or more backticks or tildes.
_FENCE = re.compile(r"^ {0,3}(?P<fence>`{3,}|~{3,})(?P<info>[^\n]*)$")
_FENCE_START = re.compile(r" {0,3}(`{3}|~{3})")
_HEADING = re.compile(r"^ {0,3}#{1,6}(\s|$)")
MIN_LIMIT = 32

# Break priorities (higher is better).
_EMPTY_BLOCK, _MID_LINE, _LINE, _PARAGRAPH, _END = 0, 1, 2, 3, 4


@dataclass(frozen=True, slots=True)
class Part:
    """One postable part. `head` / `tail` are the fence lines added to reopen / close a code
    block that continues across parts; they are included in `text`."""

    text: str
    head: str = ""
    tail: str = ""

    @property
    def original(self) -> str:
        """The slice of the input this part carries (without the added fence lines)."""
        return self.text[len(self.head) : len(self.text) - len(self.tail)]


@dataclass(frozen=True, slots=True)
class _Fence:
    opener: str  # the opening line as written (without its newline), e.g. "```python"
    chars: str  # the fence run, e.g. "```"

    def closes(self, line: str) -> bool:
        m = _FENCE.match(line.rstrip("\n"))
        return (
            m is not None
            and m["fence"][0] == self.chars[0]
            and len(m["fence"]) >= len(self.chars)
            and not m["info"].strip()
        )


@dataclass(frozen=True, slots=True)
class _Line:
    text: str
    inside: _Fence | None  # the code block open before this line (a closing line is inside)
    after: _Fence | None  # the code block open after it
    opens: bool  # an opening fence
    closes: bool  # a closing fence
    continued: bool  # the next _Line is the rest of the same input line


def open_fence(text: str) -> tuple[str, str] | None:
    """The code block still open at the end of `text`, as (its opening line, its fence run),
    or None: to close a block for display where a message ends and reopen it where the next
    one goes on (streamed answers)."""
    fence: _Fence | None = None
    for line in text.splitlines():
        if fence is None:
            fence = _opener(line)
        elif fence.closes(line):
            fence = None
    return (fence.opener, fence.chars) if fence is not None else None


def _opener(line: str) -> _Fence | None:
    m = _FENCE.match(line.rstrip("\n"))
    # A backtick fence's info string cannot contain backticks (CommonMark).
    if m is None or (m["fence"][0] == "`" and "`" in m["info"]):
        return None
    return _Fence(line.rstrip("\n").lstrip(" "), m["fence"])


def split_markdown(text: str, limit: int) -> list[str]:
    """Split Markdown into parts of at most `limit` characters (see the module docstring)."""
    return [p.text for p in split_parts(text, limit)]


def split_parts(text: str, limit: int) -> list[Part]:
    if limit < MIN_LIMIT:
        raise ValueError(f"limit must be at least {MIN_LIMIT} characters, got {limit}")
    if not text:
        return []
    lines = _annotate(text, limit)
    parts: list[Part] = []
    start = 0
    while start < len(lines):
        head = _reopen(lines[start].inside, limit)
        end = _best_end(lines, start, head, limit)
        body = "".join(line.text for line in lines[start:end])
        tail = _close(lines[end - 1].after, body)
        parts.append(Part(head + body + tail, head, tail))
        start = end
    return parts


def _annotate(text: str, limit: int) -> list[_Line]:
    """Lines with their code-block context; lines too long for any part are cut into pieces."""
    raw_lines = text.splitlines(keepends=True)
    contexts: list[tuple[_Fence | None, _Fence | None, bool, bool]] = []
    fence: _Fence | None = None
    for raw in raw_lines:
        before, opens, closes = fence, False, False
        if fence is None:
            fence = _opener(raw)
            opens = fence is not None
        elif fence.closes(raw):
            fence, closes = None, True
        contexts.append((before, fence, opens, closes))
    out: list[_Line] = []
    for raw, (before, after, opens, closes) in zip(raw_lines, contexts, strict=True):
        # A line is cut only if it cannot fit in a part on its own, fence lines included.
        fence = before or after
        overhead = len(_reopen(fence, limit)) + len(fence.chars) + 2 if fence else 0
        alone = len(_reopen(before, limit)) + len(raw) + len(_close(after, raw))
        chunks = [raw] if alone <= limit else _cut(raw, max(8, limit - overhead))
        for i, chunk in enumerate(chunks):
            last = i == len(chunks) - 1
            if opens:  # an over-long opening line: the block is open from its first piece on
                inside, now = (before if i == 0 else after), after
            else:
                inside, now = before, (after if last else before)
            out.append(
                _Line(
                    chunk,
                    inside=inside,
                    after=now,
                    opens=opens and i == 0,
                    closes=closes and last,
                    continued=not last,
                )
            )
    return out


def _cut(line: str, size: int) -> list[str]:
    """Cut an over-long line into pieces of at most `size`, preferring whitespace."""
    chunks = []
    while len(line) > size:
        cut = line.rfind(" ", size // 2, size)
        cut = cut + 1 if cut > 0 else size
        if _FENCE_START.match(line, cut) and cut > 4:
            cut -= 4  # a piece must not start with what reads as a fence
        chunks.append(line[:cut])
        line = line[cut:]
    chunks.append(line)
    return chunks


def _reopen(fence: _Fence | None, limit: int) -> str:
    if fence is None:
        return ""
    opener = fence.opener if len(fence.opener) <= limit // 8 else fence.chars
    return opener + "\n"


def _close(open_after: _Fence | None, body: str) -> str:
    if open_after is None:
        return ""
    return ("" if body.endswith("\n") else "\n") + open_after.chars + "\n"


def _priority(lines: list[_Line], end: int) -> int:
    """How good it is to end a part just before line `end`."""
    if end == len(lines):
        return _END
    prev, nxt = lines[end - 1], lines[end]
    if prev.opens:
        return _EMPTY_BLOCK  # the part would end with an empty code block: only as a last resort
    if prev.continued:
        return _MID_LINE
    if prev.after is not None:  # still inside a code block
        return _LINE
    if (
        not prev.text.strip()
        or not nxt.text.strip()
        or nxt.opens
        or prev.closes
        or _HEADING.match(nxt.text)
    ):
        return _PARAGRAPH
    return _LINE


def _best_end(lines: list[_Line], start: int, head: str, limit: int) -> int:
    """The end (exclusive) of the part starting at `start`: the best-ranked break that fits,
    the latest among equals. One line always goes, so the loop always advances."""
    best, best_rank = start + 1, (-1, 0)
    size = len(head)
    for end in range(start + 1, len(lines) + 1):
        size += len(lines[end - 1].text)
        if size > limit:
            break
        if size + len(_close(lines[end - 1].after, lines[end - 1].text)) > limit:
            continue  # no room to close the block here; after its closing line there may be
        rank = (_priority(lines, end), end)
        if rank > best_rank:
            best, best_rank = end, rank
    return best


def reply_markdown(reply: Reply, *, sources: bool = True) -> str:
    """The whole reply as one Markdown text: the answer, then notices, then its sources on one
    line (`sources=False`: left out, for a platform that shows them its own way)."""
    sections = [reply.text.strip()]
    sections += [f"_{n.strip()}_" for n in reply.notices if n.strip()]
    if sources and reply.sources:
        sections.append(sources_markdown(reply.sources))
    return "\n\n".join(s for s in sections if s)


# -- sources -----------------------------------------------------------------------------------

_MARKDOWN_SPECIAL = re.compile(r"([\\`*_~|\[\]()<>#])")


def source_text(source: Source) -> str:
    """How a source reads: `api/auth.py:10-42`, "from channel memory", "following the
    incident-triage skill"."""
    if source.kind == "memory":
        return f"from {source.label}"
    if source.kind == "skill":
        return f"following the {source.label}"
    return source.label


def sources_markdown(sources: tuple[Source, ...]) -> str:
    """One compact line: `Sources: [api/auth.py:10-42](<url>) · from channel memory`. The
    URL in `<...>` keeps Discord from embedding a preview of each link; labels are escaped."""
    shown = []
    for source in sources:
        label = _MARKDOWN_SPECIAL.sub(r"\\\1", source_text(source))
        shown.append(f"[{label}](<{source.url}>)" if source.url else label)
    return "Sources: " + " · ".join(shown)
