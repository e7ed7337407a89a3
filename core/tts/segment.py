"""Cutting text into segments an engine synthesizes one at a time (and in parallel).

Limits are in UTF-8 **bytes**: engines and HTTP bodies count bytes, and a CJK sentence is three
times longer in bytes than in characters. A cut prefers, within the limit, the last sentence end
(`.!?…` before a space, `。！？` anywhere), then the last clause break (`,;:` and `，；：、`), then
the last space; only a run without any of those is cut hard, and never inside a character, a
combining sequence or a number. Segments are exact slices: joined, they give the text back.
"""

from __future__ import annotations

import re
import unicodedata

DEFAULT_SEGMENT_BYTES = 600
MIN_SEGMENT_BYTES = 16  # room for any one character with its combining marks, and then some

_SENTENCE_END = re.compile(r"[.!?…](?=[\s\"'”’)\]]|$)[\"'”’)\]]*\s*|[。！？]+\s*")
_CLAUSE_END = re.compile(r"[,;:—–](?=\s)\s*|[，；：、]+\s*")
_SPACE = re.compile(r"\s+")
# A number is digits with the separators written inside it: 3.14, 1,234,567, 12:30, 2024-05-01.
_NUMBER = re.compile(r"\d+(?:[.,:/-]\d+)*")


def segment(text: str, max_bytes: int = DEFAULT_SEGMENT_BYTES) -> list[str]:
    """`text` in order as slices of at most `max_bytes` UTF-8 bytes each (none empty)."""
    if max_bytes < MIN_SEGMENT_BYTES:
        raise ValueError(f"segments need at least {MIN_SEGMENT_BYTES} bytes, not {max_bytes}")
    out: list[str] = []
    start = 0
    while start < len(text):
        end = _fit(text, start, max_bytes)
        if end == len(text):
            out.append(text[start:])
            break
        cut = _best_cut(text, start, end)
        out.append(text[start:cut])
        start = cut
    return out


def _fit(text: str, start: int, max_bytes: int) -> int:
    """The largest end such that text[start:end] is at most `max_bytes` bytes."""
    used = 0
    for i in range(start, len(text)):
        used += _utf8_len(text[i])
        if used > max_bytes:
            return i
    return len(text)


def _utf8_len(ch: str) -> int:
    code = ord(ch)
    if code < 0x80:
        return 1
    if code < 0x800:
        return 2
    if code < 0x10000:
        return 3
    return 4


def _best_cut(text: str, start: int, end: int) -> int:
    limit = end - start
    # One character past the limit, so a pattern's look-ahead sees what really follows: cut at
    # the limit, "3." of "3.14" would otherwise look like the end of a sentence.
    window = text[start : end + 1]
    for pattern in (_SENTENCE_END, _CLAUSE_END, _SPACE):
        last = None
        for m in pattern.finditer(window):
            # The break must start inside the limit; what it runs past the limit (trailing
            # spaces) starts the next segment.
            if m.start() < limit:
                last = min(m.end(), limit)
        if last is not None and last > 0:
            return start + last
    return _hard_cut(text, start, end)


def _hard_cut(text: str, start: int, end: int) -> int:
    """A cut inside a run of text with no break: before `end`, not inside a number, not before a
    combining mark (it belongs to the character before it)."""
    cut = end
    for m in _NUMBER.finditer(text, max(start, end - 64), min(len(text), end + 64)):
        if m.start() < cut < m.end() and m.start() > start:
            cut = m.start()
            break
    clean = cut
    while clean > start and (_joins_previous(text[clean]) or text[clean - 1] == "\u200d"):
        clean -= 1
    # A cluster longer than a whole segment has to be cut somewhere: where the limit falls.
    return clean if clean > start else cut


def _joins_previous(ch: str) -> bool:
    """Combining marks, variation selectors and zero-width joiners belong to what precedes."""
    return unicodedata.category(ch) in ("Mn", "Mc", "Me") or ch in "\u200d\ufe0e\ufe0f"
