"""Splitting long Markdown into postable parts (adapters/text.py)."""

from __future__ import annotations

import re

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from adapters.text import Part, split_markdown, split_parts

FENCE_LINE = re.compile(r"^ {0,3}(`{3,}|~{3,})")


def unsplit(parts: list[Part]) -> str:
    return "".join(p.original for p in parts)


def fences_balanced(text: str) -> bool:
    """Independent check: every fence line opens or closes; a part ends outside code."""
    open_fence: str | None = None
    for line in text.splitlines():
        m = FENCE_LINE.match(line)
        if not m:
            continue
        run = m.group(1)
        if open_fence is None:
            if not (run[0] == "`" and "`" in line[m.end() :]):  # not a fence (CommonMark)
                open_fence = run
        elif (
            run[0] == open_fence[0] and len(run) >= len(open_fence) and not line[m.end() :].strip()
        ):
            open_fence = None
    return open_fence is None


def test_short_text_is_one_part_unchanged() -> None:
    assert split_markdown("Hello **world**\n", 100) == ["Hello **world**\n"]
    assert split_markdown("", 100) == []


def test_paragraph_boundaries_are_preferred_over_line_boundaries() -> None:
    first = "First paragraph line one.\nFirst paragraph line two.\n"
    second = "Second paragraph line one.\nSecond paragraph line two.\n"
    parts = split_markdown(first + "\n" + second, len(first) + 10)
    assert parts == [first + "\n", second]


def test_a_code_block_that_fits_is_moved_whole_to_the_next_part() -> None:
    intro = "Here is the fix:\n\n"
    code = "```python\n" + "".join(f"x{i} = {i}\n" for i in range(8)) + "```\n"
    parts = split_markdown(intro + code, len(code) + 5)
    assert parts == [intro, code]


def test_a_long_code_block_is_closed_and_reopened_with_its_language() -> None:
    code = "```python\n" + "".join(f"print({i})\n" for i in range(40)) + "```\n"
    parts = split_parts("Intro\n\n" + code + "\nAfter.\n", 100)
    code_parts = [p for p in parts if "print(" in p.text]
    assert len(code_parts) > 2
    for p in code_parts:
        assert p.text.startswith("```python\n")
        assert p.tail or p is code_parts[-1]  # closed where the block continues
        assert fences_balanced(p.text)
        assert len(p.text) <= 100
    assert code_parts[1].head == "```python\n"  # reopened, not part of the input
    assert unsplit(parts) == "Intro\n\n" + code + "\nAfter.\n"


def test_lines_are_not_cut_unless_one_line_is_longer_than_a_part() -> None:
    text = "".join(f"line number {i} of a paragraph\n" for i in range(50))
    for part in split_markdown(text, 120):
        assert part.endswith("\n")
    long_line = "word " * 100 + "\n"
    parts = split_parts(long_line, 64)
    assert len(parts) > 1
    assert all(len(p.text) <= 64 for p in parts)
    assert all(p.text.endswith(" ") for p in parts[:-1])  # cut at whitespace
    assert unsplit(parts) == long_line


def test_an_unclosed_code_block_is_closed_in_every_part() -> None:
    text = "```sh\n" + "echo hi\n" * 30
    parts = split_parts(text, 64)
    assert all(fences_balanced(p.text) for p in parts)
    assert parts[-1].tail  # the closing fence is added, not part of the input
    assert unsplit(parts) == text


def test_tilde_fences_and_longer_backtick_runs_are_respected() -> None:
    text = "~~~~\n```\nnot a fence end\n```\n" + "body\n" * 20 + "~~~~\nafter\n"
    parts = split_parts(text, 48)
    assert all(fences_balanced(p.text) for p in parts)
    assert all(p.head in ("", "~~~~\n") for p in parts)
    assert unsplit(parts) == text


def test_a_too_small_limit_is_refused() -> None:
    with pytest.raises(ValueError, match="at least"):
        split_markdown("text", 10)


# -- properties -------------------------------------------------------------------------------

_word = st.text(alphabet="abcdefghij XYZ*_[]()`~#-", min_size=1, max_size=30)
# Prose never starts with a fence run (fences come from the "code" blocks, and from the
# long-info-string case); backticks and tildes inside a line are fine.
_prose_line = st.lists(_word, min_size=1, max_size=12).map(
    lambda w: " ".join(w).lstrip("`~ ") or "x"
)
_code_line = st.text(alphabet="abc(){}=+; <>&'\"\t", max_size=60)


@st.composite
def markdown(draw: st.DrawFn) -> str:
    blocks = []
    for _ in range(draw(st.integers(1, 12))):
        kind = draw(
            st.sampled_from(
                ["para", "code", "blank", "heading", "list", "long", "fence_with_long_info"]
            )
        )
        if kind == "para":
            blocks.append("\n".join(draw(st.lists(_prose_line, min_size=1, max_size=6))) + "\n")
        elif kind == "code":
            fence = draw(st.sampled_from(["```", "````", "~~~"]))
            lang = draw(st.sampled_from(["", "python", "sh", "js"]))
            body = "".join(line + "\n" for line in draw(st.lists(_code_line, max_size=25)))
            closed = draw(st.booleans())
            blocks.append(f"{fence}{lang}\n{body}" + (f"{fence}\n" if closed else ""))
        elif kind == "blank":
            blocks.append("\n")
        elif kind == "fence_with_long_info":
            info = draw(_prose_line).replace("`", "")  # (see the known limit in the module)
            blocks.append("```" + info * 4 + "\ncode\n```\n")
        elif kind == "heading":
            blocks.append("## " + draw(_prose_line) + "\n")
        elif kind == "list":
            items = draw(st.lists(_prose_line, min_size=1, max_size=5))
            blocks.append("".join(f"- {i}\n" for i in items))
        else:
            long_line = draw(_word) * draw(st.integers(5, 40))
            blocks.append((long_line.lstrip("`~ ") or "x") + "\n")
    text = "".join(blocks)
    return text if draw(st.booleans()) else text.rstrip("\n")


@settings(max_examples=300, deadline=None)
@given(text=markdown(), limit=st.integers(40, 400))
def test_every_part_fits_is_balanced_and_nothing_is_lost(text: str, limit: int) -> None:
    parts = split_parts(text, limit)
    assert unsplit(parts) == text
    for p in parts:
        assert 0 < len(p.text) <= limit
        assert fences_balanced(p.text), p.text
        assert p.text == p.head + p.original + p.tail


@settings(max_examples=200, deadline=None)
@given(text=markdown(), limit=st.integers(60, 400))
def test_lines_are_only_cut_when_longer_than_a_part(text: str, limit: int) -> None:
    parts = split_parts(text, limit)
    longest = max((len(line) for line in text.splitlines(keepends=True)), default=0)
    if longest <= limit // 2:  # every line fits in a part with room for fences
        for p in parts[:-1]:
            assert p.original.endswith("\n")


def closed_blocks(text: str) -> list[str]:
    """Complete fenced blocks (opening line to closing line), found by an independent scan."""
    blocks, lines = [], text.splitlines(keepends=True)
    open_fence: str | None = None
    start = 0
    for i, line in enumerate(lines):
        m = FENCE_LINE.match(line)
        if not m:
            continue
        run = m.group(1)
        if open_fence is None:
            if not (run[0] == "`" and "`" in line[m.end() :]):
                open_fence, start = run, i
        elif (
            run[0] == open_fence[0] and len(run) >= len(open_fence) and not line[m.end() :].strip()
        ):
            blocks.append("".join(lines[start : i + 1]))
            open_fence = None
    return blocks


@settings(max_examples=200, deadline=None)
@given(text=markdown(), limit=st.integers(40, 400))
def test_a_closed_code_block_that_fits_is_never_split(text: str, limit: int) -> None:
    parts = split_markdown(text, limit)
    for block in closed_blocks(text):
        if len(block) <= limit:
            assert any(block in p for p in parts), block
