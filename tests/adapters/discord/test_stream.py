"""The pure parts of Discord's streamed answers: how a growing answer is split into messages
while it is written (`live_parts`), and the fence and status-line helpers."""

from __future__ import annotations

import pytest

from adapters.discord.live_text import live_parts, status_line
from adapters.discord.translate import render
from adapters.pacing import PRUNE_AT, ChannelBudget
from adapters.text import open_fence
from core.request import Reply


def _answer_with_code() -> str:
    code = "\n".join(f"    step_{i} = run(batch={i}, retries=3)  # line {i}" for i in range(70))
    return (
        "Here is how the importer works.\n\n"
        + ("It reads rows in batches and validates each one. " * 22).strip()
        + "\n\n```python\ndef run():\n"
        + code
        + "\n```\n\n"
        + ("After that the results are written back and indexed. " * 30).strip()
        + "\n\n## Retries\n\n"
        + "\n".join(f"- attempt {i} waits {2**i} s" for i in range(40))
    )


def _one_long_line() -> str:
    return " ".join(f"word{i}" for i in range(1600))  # no newline at all, 13,000+ characters


@pytest.mark.parametrize("answer", [_answer_with_code(), _one_long_line()], ids=["code", "line"])
def test_parts_settled_while_streaming_are_the_parts_of_the_finished_answer(answer: str) -> None:
    final = [o.text for o in render(Reply(answer), upload_limit=1)]
    assert len(final) >= 3
    seen_settled = 0
    for end in range(1, len(answer) + 1, 13):
        shown = live_parts(answer[:end])
        settled, writing = shown[:-1], shown[-1]
        assert settled == final[: len(settled)]  # never moved again once in its own message
        assert all(len(p) <= 2_000 for p in shown)
        # The part being written shows the text of its final part written so far.
        if len(writing) < len(final[len(settled)]):
            assert final[len(settled)].startswith(writing.rstrip(" `\n")) or "```" in writing
        seen_settled = max(seen_settled, len(settled))
    if "\n" in answer:  # lines end: every part but the last settles while it is written
        assert live_parts(answer) == final
        assert seen_settled == len(final) - 1
    else:  # inside one very long line a part waits until two more parts' worth follow
        assert len(final) - 3 <= seen_settled < len(final) - 1


def test_a_code_block_open_at_the_split_is_closed_and_reopened_in_the_next_message() -> None:
    parts = live_parts(_answer_with_code())
    crossing = [i for i, p in enumerate(parts[:-1]) if open_fence(p.rsplit("\n", 1)[0])]
    assert crossing, "the sample answer splits inside its code block"
    i = crossing[0]
    assert parts[i].endswith("\n```") and parts[i + 1].startswith("```python\n")


def test_open_fence_follows_commonmark_fences() -> None:
    assert open_fence("text") is None
    assert open_fence("a\n```py\nx = 1") == ("```py", "```")
    assert open_fence("```py\nx = 1\n```") is None
    assert open_fence("~~~~\ncode\n~~~") == ("~~~~", "~~~~")  # a shorter run does not close it
    assert open_fence("``` not `a fence`\nx") is None  # backticks in a backtick info string
    assert open_fence("```\n```js\n") == ("```", "```")  # a closing fence has no info string


def test_status_lines_are_short_italic_and_end_in_an_ellipsis() -> None:
    assert status_line("Searching code for `retry`") == "_Searching code for `retry`…_"
    assert status_line("Reading the thread…") == "_Reading the thread…_"


def test_a_channel_budget_spreads_the_edits_of_answers_sharing_a_channel() -> None:
    budget = ChannelBudget(writes=2, per=5.0)
    assert [budget.reserve("c1", 0.0) for _ in range(5)] == [0.0, 0.0, 5.0, 5.0, 10.0]
    assert budget.reserve("c2", 0.0) == 0.0  # another channel has a budget of its own
    assert budget.reserve("c1", 20.0) == 20.0  # the old writes have left the window
    with pytest.raises(ValueError):
        ChannelBudget(writes=0)


def test_a_channel_budget_forgets_quiet_channels() -> None:
    budget = ChannelBudget(writes=1, per=1.0)
    for i in range(PRUNE_AT + 1):
        budget.reserve(f"thread-{i}", 0.0)
    assert budget.reserve("busy", 10.0) == 10.0
    assert budget.reserve("busy", 10.0) == 11.0  # still counted after the others went
    assert len(budget._slots) == 1
