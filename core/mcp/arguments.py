"""A tool call's arguments as a confirmation shows them: every argument, nothing hidden.

The arguments come from the model, which may be steered by anything it read; a person is asked
to say yes to them. So the summary shows every key at every depth (in the schema's order, the
rest sorted), each value on its own terms: whitespace runs collapsed to one space, characters
that do not show (zero-width, bidirectional overrides, controls) written as `\\uXXXX`, and a
value longer than a few dozen characters shortened with its full length said ("(320 chars)").
Long arrays show their first items and how many there are. A call whose summary would not fit
a chat message even so is not shown (`Unshowable`) and so not run: a prompt that must cut
arguments away is the prompt that hides the one that matters. The full arguments, pretty JSON
with secrets redacted, are a separate view for the platforms that can fold it away.
"""

from __future__ import annotations

import json
import unicodedata
from dataclasses import dataclass
from typing import Any

MAX_SUMMARY_CHARS = 1_500  # a Discord message is 2,000 with the question around it
MAX_DETAILS_CHARS = 12_000
MAX_DEPTH = 8
# Tried in order until the summary fits: characters per value, items per array.
_STEPS = ((120, 10), (60, 5), (24, 3))
_KEY_CHARS = 60
# Characters that change how text reads without showing themselves: format (zero-width,
# bidi overrides), controls, private use, unassigned, surrogates, line/paragraph separators.
_INVISIBLE = frozenset({"Cf", "Cc", "Co", "Cn", "Cs", "Zl", "Zp"})


class Unshowable(ValueError):
    """The arguments cannot be shown whole within a message."""


@dataclass(frozen=True, slots=True)
class Summary:
    text: str
    abridged: bool  # some value is shown other than as it is (shortened, collapsed, escaped)


def shown(value: str) -> str:
    """A string as JSON, its whitespace runs as one space and invisible characters as
    `\\uXXXX` (JSON's own escape: the text stays valid JSON)."""
    return _escape_invisible(json.dumps(" ".join(value.split()), ensure_ascii=False))


def summarize(values: dict[str, Any], order: list[str] | None = None) -> Summary:
    """Every argument, shortened per value until the whole fits MAX_SUMMARY_CHARS."""
    from core.code.redact import redact

    for value_chars, items in _STEPS:
        render = _Render(value_chars, items)
        text = render.mapping(values, order or [], 0)
        safe = redact(text, "arguments.json")  # a token in an argument is not for the channel
        if len(safe) <= MAX_SUMMARY_CHARS:
            return Summary(safe, render.abridged or safe != text)
    raise Unshowable(f"over {MAX_SUMMARY_CHARS} characters with every value shortened")


def details(values: dict[str, Any]) -> str:
    """The full arguments as indented JSON, secrets redacted, invisible characters visible,
    cut at MAX_DETAILS_CHARS (saying so)."""
    from core.code.redact import redact

    text = json.dumps(values, indent=2, ensure_ascii=False, default=str)
    text = "\n".join(_escape_invisible(line) for line in redact(text, "arguments.json").split("\n"))
    if len(text) > MAX_DETAILS_CHARS:
        cut = len(text) - MAX_DETAILS_CHARS
        text = text[:MAX_DETAILS_CHARS] + f"\n… ({cut:,} more characters not shown)"
    return text


def _escape_invisible(text: str) -> str:
    return "".join(f"\\u{ord(c):04x}" if unicodedata.category(c) in _INVISIBLE else c for c in text)


class _Render:
    def __init__(self, value_chars: int, items: int) -> None:
        self.value_chars = value_chars
        self.items = items
        self.abridged = False

    def value(self, v: Any, depth: int) -> str:
        if depth > MAX_DEPTH:
            raise Unshowable(f"nested deeper than {MAX_DEPTH} levels")
        if isinstance(v, dict):
            return self.mapping(v, [], depth + 1)
        if isinstance(v, list):
            items = [self.value(item, depth + 1) for item in v[: self.items]]
            if len(v) > self.items:
                self.abridged = True
                items.append(f"… {len(v) - self.items} more ({len(v)} items)")
            return "[" + ", ".join(items) + "]"
        raw = json.dumps(v, ensure_ascii=False, default=str)
        text, length = (shown(v), len(v)) if isinstance(v, str) else (raw, len(raw))
        if len(text) > self.value_chars:
            text = text[: self.value_chars] + "…"
        if text != raw:
            self.abridged = True
            return f"{text} ({length:,} chars)"
        return text

    def mapping(self, values: dict[str, Any], order: list[str], depth: int) -> str:
        if depth > MAX_DEPTH:
            raise Unshowable(f"nested deeper than {MAX_DEPTH} levels")
        first = [k for k in order if k in values]
        keys = first + sorted(k for k in values if k not in first)
        parts = []
        for key in keys:
            name = shown(str(key))
            if name != json.dumps(str(key), ensure_ascii=False):
                self.abridged = True
            if len(name) > _KEY_CHARS:
                name = name[:_KEY_CHARS] + f'…" ({len(str(key)):,} chars)'
                self.abridged = True
            parts.append(f"{name}: {self.value(values[key], depth)}")
        return "{" + ", ".join(parts) + "}"
