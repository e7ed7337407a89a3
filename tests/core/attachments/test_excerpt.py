"""Long texts cut to fit, keeping head, tail and first errors (core/attachments/excerpt.py)."""

from __future__ import annotations

from core.attachments.excerpt import LINE_CHARS, excerpt
from tests.core.attachments.files import log_with_traceback


def test_a_short_text_is_whole() -> None:
    cut = excerpt("one\ntwo\n", 1000)
    assert cut.whole and cut.text == "one\ntwo\n" and cut.describe_cut() == ""


def test_a_5_mb_log_keeps_the_traceback_in_its_middle() -> None:
    text = log_with_traceback(110_000, 55_000)
    assert len(text) > 5_000_000
    cut = excerpt(text, 30_000)
    assert len(cut.text) < 31_000
    assert "Traceback (most recent call last):" in cut.text
    assert "KeyError: 'customer'" in cut.text
    assert "ERROR job 77 failed" in cut.text
    lines = cut.text.split("\n")
    assert lines[0].endswith("handled job 0")  # the head
    assert lines[-1].endswith("handled job 109999")  # the tail
    # What was cut is said, where it was cut and in the description.
    assert len(cut.cut) == 2
    (a, b), (c, d) = cut.cut
    assert 1 < a < b < 55_000 < c < d < 110_007
    assert f"[... lines {a:,}-{b:,} cut ...]" in cut.text
    assert cut.describe_cut() == f"lines {a:,}-{b:,} and {c:,}-{d:,}"


def test_without_errors_head_and_tail_share_the_room() -> None:
    text = "\n".join(f"line {i}" for i in range(10_000))
    cut = excerpt(text, 2_000)
    kept = cut.text.split("\n")
    assert kept[0] == "line 0" and kept[-1] == "line 9999"
    assert len(cut.cut) == 1


def test_go_panics_and_java_exceptions_are_incidents() -> None:
    filler = [f"ok {i}" for i in range(5_000)]
    for incident in (
        "panic: runtime error: index out of range",
        "java.lang.IllegalStateException: x",
    ):
        text = "\n".join([*filler, incident, *filler])
        assert incident in excerpt(text, 3_000).text


def test_a_very_long_line_keeps_its_start() -> None:
    text = "{" + '"k": 1, ' * 100_000 + "}"
    cut = excerpt(text, 50_000)
    assert len(cut.text) < LINE_CHARS + 100
    assert cut.long_lines == 1
    assert "very long lines" in cut.describe_cut()
