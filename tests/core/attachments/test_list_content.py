"""A user message with image parts (what an attached image makes) through the code that reads
messages: token estimates, compaction's shortening and its transcript for summaries."""

from __future__ import annotations

from typing import TYPE_CHECKING

from core.memory.compaction import TEXT_SHORTENED, render_transcript, shortened
from core.memory.tokens import IMAGE_PART_CHARS, TokenCounter, message_chars

if TYPE_CHECKING:
    from core.chat import Message

URL = "data:image/jpeg;base64," + "A" * 200_000


def with_image(text: str) -> Message:
    return {
        "role": "user",
        "content": [
            {"type": "text", "text": text},
            {"type": "text", "text": "Attached image `shot.png`:"},
            {"type": "image_url", "image_url": {"url": URL}},
        ],
    }


def test_an_image_counts_as_its_estimate_not_its_base64() -> None:
    message = with_image("what is this?")
    chars = len("what is this?") + len("Attached image `shot.png`:")
    assert message_chars(message) == chars + IMAGE_PART_CHARS
    assert TokenCounter().count([message]) < 3_000


def test_shortening_cuts_the_text_parts_and_keeps_the_image() -> None:
    message = with_image("x" * 10_000)
    short = shortened(message, 1_000)
    parts = short["content"]
    assert isinstance(parts, list)
    first = parts[0]
    assert first["type"] == "text" and TEXT_SHORTENED in first["text"]
    assert len(first["text"]) < 1_200
    assert parts[2] == {"type": "image_url", "image_url": {"url": URL}}


def test_a_summary_transcript_has_the_text_and_never_the_image_bytes() -> None:
    [line] = render_transcript([with_image("why is this red?")])
    assert line.startswith("User: why is this red?")
    assert "base64" not in line
