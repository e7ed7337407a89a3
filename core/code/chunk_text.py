"""Chunks of text that is not parsed with a grammar: a file cut at line boundaries (files with no
grammar, and the rows of a parsed file that no definition covers), and Markdown cut by headings
into sections. Apart from the tree-sitter chunker, which only borrows the line cutting."""

from __future__ import annotations

import re
from pathlib import PurePosixPath

from core.code.chunk import MAX_FILE_CHARS, Chunk, embed_header


def split_lines(text: str) -> list[str]:
    lines = text.split("\n")
    if lines and lines[-1] == "":
        lines.pop()
    return lines


def _line_ranges(lines: list[str], first: int, last: int, limit: int) -> list[tuple[int, int]]:
    """Rows first..last (0-based, inclusive) in runs of at most `limit` characters."""
    ranges: list[tuple[int, int]] = []
    start, size = first, 0
    for row in range(first, last + 1):
        length = len(lines[row]) + 1
        if size + length > limit and row > start:
            ranges.append((start, row - 1))
            start, size = row, 0
        size += length
    if last >= first:
        ranges.append((start, last))
    return ranges


def _text_pieces(
    lines: list[str], first: int, last: int, limit: int = MAX_FILE_CHARS
) -> list[tuple[int, int, str]]:
    """(start row, end row, text) pieces of rows first..last; blank pieces are dropped."""
    pieces: list[tuple[int, int, str]] = []
    for start, end in _line_ranges(lines, first, last, limit):
        body = "\n".join(lines[start : end + 1])
        if not body.strip():
            continue
        if len(body) > limit:  # a single overlong line (minified code): cut inside it
            pieces.extend((start, end, body[i : i + limit]) for i in range(0, len(body), limit))
        else:
            pieces.append((start, end, body))
    return pieces


def file_chunks(
    repo: str, path: str, language: str, lines: list[str], rows: tuple[int, int] | None = None
) -> list[Chunk]:
    first, last = rows if rows is not None else (0, len(lines) - 1)
    symbol = PurePosixPath(path).name
    return [
        Chunk(
            repo,
            path,
            language,
            symbol,
            "file",
            start + 1,
            end + 1,
            body,
            embed_header(path, f"Lines {start + 1}-{end + 1}") + body,
        )
        for start, end, body in _text_pieces(lines, first, last)
    ]


# -- markdown -----------------------------------------------------------------------------------

_FENCE = re.compile(r"^ {0,3}(`{3,}|~{3,})")
_HEADING = re.compile(r"^ {0,3}(#{1,6})(?:[ \t]+(.*?))?(?:[ \t]+#+)?[ \t]*$")


def markdown_chunks(repo: str, path: str, text: str) -> list[Chunk]:
    lines = split_lines(text)
    sections: list[tuple[int, str]] = []  # (first row, heading path)
    stack: list[tuple[int, str]] = []
    fence: str | None = None
    for row, line in enumerate(lines):
        fence_match = _FENCE.match(line)
        if fence_match:
            marker = fence_match.group(1)
            if fence is None:
                fence = marker
            elif marker[0] == fence[0] and len(marker) >= len(fence):
                fence = None
            continue
        if fence is not None:
            continue
        heading = _HEADING.match(line)
        if heading:
            level = len(heading.group(1))
            while stack and stack[-1][0] >= level:
                stack.pop()
            stack.append((level, (heading.group(2) or "").strip()))
            sections.append((row, " > ".join(title for _, title in stack)))
    if not sections or sections[0][0] > 0:
        sections.insert(0, (0, PurePosixPath(path).name))
    chunks: list[Chunk] = []
    for index, (first, symbol) in enumerate(sections):
        last = sections[index + 1][0] - 1 if index + 1 < len(sections) else len(lines) - 1
        for start, end, body in _text_pieces(lines, first, last):
            chunks.append(
                Chunk(
                    repo,
                    path,
                    "markdown",
                    symbol,
                    "section",
                    start + 1,
                    end + 1,
                    body,
                    embed_header(path, f"Section: {symbol}") + body,
                )
            )
    return chunks
