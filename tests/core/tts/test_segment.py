"""Segmentation by UTF-8 bytes: limits, order, whole characters, whole numbers, good breaks."""

from __future__ import annotations

import re

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from core.tts.segment import MIN_SEGMENT_BYTES, segment

WORDS = st.sampled_from(
    [
        "the",
        "deploy",
        "naïve",
        "Straße",
        "日本語の文章です",
        "你好世界",
        "😀",
        "👩‍👩‍👧",
        "e\u0301",
        "3.14159",
        "1,234,567",
        "2024-05-01",
        "supercalifragilisticexpialidocious" * 3,
        "。",
        "！",
        "？",
        ".",
        ",",
        "—",
    ]
)
SEPARATORS = st.sampled_from([" ", " ", " ", "\n", "", ". ", ", ", "; "])
TEXTS = st.lists(st.tuples(WORDS, SEPARATORS), max_size=200).map(
    lambda pairs: "".join(w + s for w, s in pairs)
)
LIMITS = st.integers(min_value=MIN_SEGMENT_BYTES, max_value=700)


@settings(max_examples=300, deadline=None)
@given(text=TEXTS, limit=LIMITS)
def test_segments_fit_and_give_the_text_back(text: str, limit: int) -> None:
    parts = segment(text, limit)
    assert "".join(parts) == text  # order and every character preserved
    for p in parts:
        assert p
        assert len(p.encode("utf-8")) <= limit
        p.encode("utf-8").decode("utf-8")  # whole characters only


@settings(max_examples=300, deadline=None)
@given(text=st.text(max_size=2000), limit=LIMITS)
def test_any_unicode_text(text: str, limit: int) -> None:
    parts = segment(text, limit)
    assert "".join(parts) == text
    assert all(0 < len(p.encode("utf-8", "surrogatepass")) <= limit for p in parts)


@settings(max_examples=200, deadline=None)
@given(text=TEXTS, limit=st.integers(min_value=40, max_value=700))
def test_numbers_are_never_split(text: str, limit: int) -> None:
    parts = segment(text, limit)
    for number in re.finditer(r"\d+(?:[.,:/-]\d+)*", text):
        if len(number.group().encode()) > limit:
            continue
        pos = 0
        for p in parts:
            end = pos + len(p)
            assert not (pos < number.start() < end < number.end()), (number.group(), parts)
            pos = end


@settings(max_examples=100, deadline=None)
@given(text=TEXTS, limit=st.integers(min_value=40, max_value=700))
def test_combining_marks_and_joiners_stay_with_their_character(text: str, limit: int) -> None:
    for p in segment(text, limit)[1:]:
        assert not p.startswith(("\u0301", "\u200d"))


def test_prefers_sentence_ends_then_clauses_then_spaces() -> None:
    text = "First sentence here. Second one, with a clause and more words"
    assert segment(text, 30) == [
        "First sentence here. ",
        "Second one, ",
        "with a clause and more words",
    ]
    cjk = "今日は晴れです。明日は雨でしょう！" * 4
    parts = segment(cjk, 60)
    assert all(p.endswith(("。", "！")) for p in parts[:-1])
    assert all(len(p.encode()) <= 60 for p in parts)


def test_a_decimal_point_is_not_a_sentence_end() -> None:
    text = "Pi is 3.14159 and e is 2.71828 roughly, fine"
    parts = segment(text, 24)
    assert any("3.14159" in p for p in parts)
    assert any("2.71828" in p for p in parts)


def test_a_long_word_is_cut_hard_but_whole() -> None:
    word = "日本" * 100
    parts = segment(word, 16)
    assert "".join(parts) == word
    assert all(len(p.encode()) <= 16 for p in parts)


def test_default_is_600_bytes() -> None:
    text = "word " * 1000
    assert all(len(p.encode()) <= 600 for p in segment(text))
    assert max(len(p.encode()) for p in segment(text)) > 550


def test_too_small_a_limit_is_refused() -> None:
    with pytest.raises(ValueError, match="at least"):
        segment("text", 3)


def test_a_number_at_the_limit_is_not_taken_for_a_sentence_end() -> None:
    # Found by the property test: the limit fell just after "3." of "3.14159", and the cut
    # took "3." for the end of a sentence.
    text = "the the. deploy. deploy. Straße 日本語の文章です3.14159. 2024-05-01 3.14159 "
    parts = segment(text, 79)
    assert "".join(parts) == text
    assert not any(p.endswith("3.") for p in parts), parts
