"""Markdown answers turned into text worth listening to.

A listener cannot skim: code blocks become a short note ("Code block, 12 lines, omitted."),
links are read as their text, tables row by row (or as a note when they are long), and the
marks of Markdown, emoji and raw URLs are left out, since engines read them as symbol names
("asterisk asterisk"). An answer that is mostly code is not worth reading at all: `mostly_code`
tells the caller to say so instead.
"""

from __future__ import annotations

import re
import unicodedata
from dataclasses import dataclass
from urllib.parse import urlsplit

MOSTLY_CODE = 0.6  # share of an answer's characters in code blocks above which it is not read
MAX_TABLE_ROWS = 6  # longer tables are announced, not read
# Longer numbers are read as their length: a hundred 9s took 37 s to hear, and nobody follows
# a number read digit by digit past about this many (a quadrillion has 16).
MAX_SPOKEN_DIGITS = 15

# Every pattern here runs over a whole answer, so none may rescan the rest of the text from
# each position (blank lines before a fence, "[[[[", backtick runs): a model's 20,000
# characters of those took 6-12 s each before these were bounded.
_FENCE = re.compile(r"^([ \t]*)(```|~~~)[^\n]*\n(.*?)(?:^[ \t]*\2[ \t]*$|\Z)", re.M | re.S)
_IMAGE = re.compile(r"!\[([^\[\]]*)\]\([^)]{0,2048}\)")
_LINK = re.compile(r"\[([^\[\]]+)\]\([^)]{0,2048}\)")
_SLACK_LINK = re.compile(r"<((?:https?|mailto):[^|>\s]+)(?:\|([^>]+))?>")
_URL = re.compile(r"\bhttps?://[^\s<>()\]]+")
_HTML = re.compile(r"</?[a-zA-Z][^<>]*>")
_INLINE_CODE = re.compile(r"(?<!`)`+([^`]+)`+")
_EMPHASIS = (
    re.compile(r"\*\*(.+?)\*\*"),
    re.compile(r"(?<!\w)__(.+?)__(?!\w)"),
    re.compile(r"~~(.+?)~~"),
    re.compile(r"(?<![\w*])\*(?!\s)(.+?)(?<!\s)\*(?![\w*])"),
    re.compile(r"(?<!\w)_(?!\s)(.+?)(?<!\s)_(?!\w)"),
)
_SHORTCODE = re.compile(r"(?<![\w:]):[a-z0-9_+-]+:(?![\w:])")
_HEADING = re.compile(r"^\s{0,3}#{1,6}\s+(.*?)\s*#*\s*$")
_BULLET = re.compile(r"^\s*(?:[-*+•]|\d{1,3}[.)])\s+(.*)$")
_QUOTE = re.compile(r"^\s*(?:>\s?)+")
_RULE = re.compile(r"^\s*(?:[-*_]\s*){3,}$")
_TABLE_ROW = re.compile(r"^\s*\|.*\|\s*$")
_TABLE_RULE = re.compile(r"^\s*\|?\s*:?-{2,}:?\s*(?:\|\s*:?-{2,}:?\s*)*\|?\s*$")
_ENDS_SENTENCE = re.compile(r"[.!?…:;。！？]$")
# Digits with thousands separators and a decimal part count as one number; "8000,8001" and
# "1,2,3" are lists, not numbers.
_NUMBER = re.compile(r"\d+(?:,\d{3}(?!\d))*(?:\.\d+)?")


@dataclass(frozen=True, slots=True)
class Prepared:
    text: str  # what the engine reads
    code_blocks: int
    mostly_code: bool


def prepare(markdown: str) -> Prepared:
    text = markdown.replace("\r\n", "\n")
    code_chars = 0
    blocks = 0

    def code_note(m: re.Match[str]) -> str:
        nonlocal code_chars, blocks
        lines = [line.strip() for line in m.group(3).splitlines() if line.strip()]
        code_chars += sum(len(line) for line in lines)
        blocks += 1
        noun = "line" if len(lines) == 1 else "lines"
        return f"\nCode block, {len(lines)} {noun}, omitted.\n"

    spoken = _lines(_FENCE.sub(code_note, text))
    prose_chars = len(re.sub(r"\s", "", _lines(_FENCE.sub("\n", text))))
    mostly = blocks > 0 and code_chars > MOSTLY_CODE * (code_chars + prose_chars)
    return Prepared(spoken, blocks, mostly)


def _lines(text: str) -> str:
    out: list[str] = []
    table: list[str] = []

    def flush_table() -> None:
        if table:
            out.append(_table(table))
            table.clear()

    for raw in text.split("\n"):
        if _TABLE_ROW.match(raw):
            table.append(raw)
            continue
        flush_table()
        if _RULE.match(raw):
            continue
        line = _QUOTE.sub("", raw)
        sentence = False
        if m := _HEADING.match(line):
            line, sentence = m.group(1), True
        elif m := _BULLET.match(line):
            line, sentence = m.group(1), True
        line = _inline(line)
        if not line:
            continue
        if sentence and not _ENDS_SENTENCE.search(line):
            line += "."
        out.append(line)
    flush_table()
    spoken = re.sub(r"\s+", " ", " ".join(out)).strip()
    # What was left out (an emoji, a link's URL) must not leave a space before punctuation.
    return re.sub(r"\s+([.,;:!?])", r"\1", spoken)


def _table(rows: list[str]) -> str:
    cells = [
        [_inline(c) for c in row.strip().strip("|").split("|")]
        for row in rows
        if not _TABLE_RULE.match(row)
    ]
    if len(cells) > MAX_TABLE_ROWS:
        return f"Table, {len(cells)} rows, omitted."
    spoken = [", ".join(c for c in row if c) for row in cells]
    return " ".join(s + ("" if _ENDS_SENTENCE.search(s) else ".") for s in spoken if s)


def _inline(text: str) -> str:
    text = _IMAGE.sub(lambda m: m.group(1), text)
    text = _LINK.sub(lambda m: m.group(1), text)
    text = _SLACK_LINK.sub(lambda m: m.group(2) or _link_name(m.group(1)), text)
    text = _URL.sub(lambda m: _link_name(m.group(0)), text)
    text = _HTML.sub("", text)
    text = _INLINE_CODE.sub(lambda m: m.group(1), text)
    for pattern in _EMPHASIS:
        text = pattern.sub(lambda m: m.group(1), text)
    text = _SHORTCODE.sub("", text)
    text = "".join(ch for ch in text if not _is_emoji(ch))
    text = _NUMBER.sub(_number, text)
    return re.sub(r"\s+", " ", text).strip()


def _number(m: re.Match[str]) -> str:
    digits = sum(ch.isdigit() for ch in m.group(0))
    return m.group(0) if digits <= MAX_SPOKEN_DIGITS else f"a number with {digits} digits"


def _link_name(url: str) -> str:
    host = urlsplit(url).hostname or ""
    host = host.removeprefix("www.")
    return f"a link to {host}" if host else "a link"


def _is_emoji(ch: str) -> bool:
    """Pictographs and their joiners/selectors: an engine spells them as names or skips them
    unpredictably, so they are left out. Letters, digits and CJK punctuation stay."""
    if ch in "\u200d\ufe0e\ufe0f\u20e3":
        return True
    code = ord(ch)
    if 0x1F000 <= code <= 0x1FAFF or 0x2600 <= code <= 0x27BF or 0x1F1E6 <= code <= 0x1F1FF:
        return True
    return unicodedata.category(ch) == "So" and code > 0x2100
