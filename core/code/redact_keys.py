"""Private-key blocks, redacted whole: from `-----BEGIN ... PRIVATE KEY-----` to its END line
(PuTTY keys to `Private-MAC`), when the block holds key material."""

from __future__ import annotations

import re
from collections.abc import Iterable

from core.code.redact_values import REDACTED

MAX_KEY_BLOCK_LINES = 200  # a 16k-bit RSA key in PEM is ~ 170 lines

KEY_GATE = re.compile(r"PRIVATE KEY|PuTTY-User-Key-File-")
_KEY_BEGIN = re.compile(
    r"-{4,5} ?BEGIN (?:[A-Z0-9]+ )*PRIVATE KEY(?: BLOCK)? ?-{4,5}|PuTTY-User-Key-File-\d+:"
)
_KEY_END = re.compile(
    r"-{4,5} ?END (?:[A-Z0-9]+ )*PRIVATE KEY(?: BLOCK)? ?-{4,5}|Private-MAC: *\S*"
)
# What a line inside a key block holds: base64, an RFC 1421 / PuTTY header, or nothing, maybe
# inside a string literal (quotes, a `\n` escape, a concatenation).
_KEY_MATERIAL = re.compile(
    r"""\s*["'`]?\s*(?:[A-Za-z0-9+/=]+|[A-Za-z][A-Za-z0-9-]*: .*)?(?:\\n)?["'`]?\s*[,+;\\]?\s*"""
)
_BASE64_RUN = re.compile(r"[A-Za-z0-9+/=]{16,}")


def redact_key_blocks(lines: list[str], candidates: Iterable[int]) -> None:
    """Replace each private-key block: from its BEGIN marker to the end of its END marker, when
    it holds key material (a PEM header alone, as in a parser's constants, is left)."""
    done = -1
    for i in sorted(candidates):
        if i <= done:
            continue
        line = lines[i]
        begin = _KEY_BEGIN.search(line)
        if begin is None:
            continue
        end = _KEY_END.search(line, begin.end())
        if end is not None:  # one line, e.g. JSON with "\n" escapes
            if _BASE64_RUN.search(line, begin.end(), end.start()):
                lines[i] = line[: begin.start()] + REDACTED + line[end.end() :]
            continue
        material = _BASE64_RUN.search(line, begin.end()) is not None
        j = i + 1
        while j < len(lines) and j - i <= MAX_KEY_BLOCK_LINES:
            if _KEY_END.search(lines[j]) or not _KEY_MATERIAL.fullmatch(lines[j]):
                break
            material = material or _BASE64_RUN.search(lines[j]) is not None
            j += 1
        closing = _KEY_END.search(lines[j]) if j < len(lines) else None
        if not material:
            continue
        lines[i] = line[: begin.start()] + REDACTED
        for k in range(i + 1, j):
            lines[k] = REDACTED
        if closing is not None:
            lines[j] = REDACTED + lines[j][closing.end() :]
            done = j
        else:
            done = j - 1
