"""Compaction keeps threads inside the window without breaking the tool-call protocol."""

from __future__ import annotations

import itertools
import json
from typing import Any

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from core.chat import text_of
from core.memory.compaction import (
    MERGE_INSTRUCTIONS,
    TEXT_SHORTENED,
    CompactionConfig,
    Compactor,
    is_protocol_valid,
)
from core.memory.history import SUMMARY_ACK, SUMMARY_PREFIX, summary_messages
from core.memory.tokens import TokenCounter

# Tests build messages freely (and malformed ones on purpose); core's own code is what mypy
# holds to the `openai` message types.
Message = Any
PREFIX: list[Message] = [{"role": "system", "content": "rules " * 20}]
_ids = itertools.count()


class Summarizer:
    """Stands in for the model: records each summarization call, answers a short text."""

    def __init__(self, fail: bool = False) -> None:
        self.calls: list[list[Message]] = []
        self.fail = fail

    async def __call__(self, messages: list[Message], max_tokens: int) -> str:
        self.calls.append(messages)
        if self.fail:
            raise RuntimeError("model down")
        return f"summary #{len(self.calls)}"


@st.composite
def turns(draw: st.DrawFn, min_turns: int = 1, max_turns: int = 12) -> list[Message]:
    """A protocol-valid history: user turns, each with optional rounds of tool calls."""
    history: list[Message] = []
    for _ in range(draw(st.integers(min_turns, max_turns))):
        history.append({"role": "user", "content": "q" * draw(st.integers(1, 400))})
        for _ in range(draw(st.integers(0, 2))):  # tool rounds
            ids = [f"call_{next(_ids)}" for _ in range(draw(st.integers(1, 3)))]
            history.append(
                {
                    "role": "assistant",
                    "content": "",
                    "tool_calls": [
                        {"id": i, "type": "function", "function": {"name": "t", "arguments": "{}"}}
                        for i in ids
                    ],
                }
            )
            for i in ids:
                size = draw(st.integers(0, 1500))
                history.append({"role": "tool", "tool_call_id": i, "content": "r" * size})
        if draw(st.booleans()):
            history.append({"role": "assistant", "content": "a" * draw(st.integers(1, 300))})
    return history


def user_turn_texts(messages: list[Message]) -> list[str]:
    return [text_of(m) for m in messages if m["role"] == "user"]


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(history=turns(), window=st.integers(1024, 16_000))
async def test_compaction_is_protocol_valid_keeps_last_three_turns_and_fits(
    history: list[Message], window: int
) -> None:
    counter = TokenCounter()
    config = CompactionConfig(window=window)
    compactor = Compactor(counter, config, Summarizer())
    users = [i for i, m in enumerate(history) if m["role"] == "user"]
    recent = history[users[-3] :] if len(users) > 3 else history
    # The property holds for threads whose last three turns fit beside a summary of full size
    # (when they do not, fewer turns are kept verbatim and more is summarized).
    full_summary = "x" * int(config.summary_tokens * counter.chars_per_token)
    summary_room = counter.count(summary_messages(full_summary))
    recent_fits = counter.count([*PREFIX, *recent]) + summary_room < config.limit

    result = await compactor.fit(PREFIX, history)

    assert is_protocol_valid(result.messages)
    assert result.messages and result.messages[0]["role"] == "user"
    if result.method == "none":
        assert result.messages == history
        return
    if recent_fits:
        assert result.messages[-len(recent) :] == recent  # verbatim
        assert user_turn_texts(result.messages)[-3:] == user_turn_texts(history)[-3:]
        assert compactor.fits(PREFIX, result.messages)
    if result.method == "summary" and recent_fits:
        assert text_of(result.messages[0]).startswith(SUMMARY_PREFIX)
        assert result.messages[1] == {"role": "assistant", "content": SUMMARY_ACK}


def _overflowing_current_turn() -> list[Message]:
    """Found by Hypothesis in CI: a current turn (a 242-character question, six tool results)
    that alone overflows a 1,024-token window, so its question is shortened, not dropped."""

    def round_(ids: range, sizes: tuple[int, ...]) -> list[Message]:
        calls = [
            {
                "id": f"call_{11370 + i}",
                "type": "function",
                "function": {"name": "t", "arguments": "{}"},
            }
            for i in ids
        ]
        results: list[Message] = [
            {"role": "tool", "tool_call_id": f"call_{11370 + i}", "content": "r" * size}
            for i, size in zip(ids, sizes, strict=True)
        ]
        return [{"role": "assistant", "content": "", "tool_calls": calls}, *results]

    return [
        *[{"role": "user", "content": "q"} for _ in range(7)],
        *round_(range(1, 2), (0,)),
        *round_(range(2, 3), (0,)),
        {"role": "user", "content": "q" * 242},
        *round_(range(3, 6), (201, 201, 201)),
        *round_(range(6, 9), (157, 201, 219)),
        {"role": "assistant", "content": "a" * 300},
    ]


@settings(max_examples=80, deadline=None)
@given(history=turns(min_turns=4))
@example(history=_overflowing_current_turn())
async def test_a_failed_summary_drops_old_turns_and_stays_valid(history: list[Message]) -> None:
    compactor = Compactor(TokenCounter(), CompactionConfig(window=1024), Summarizer(fail=True))
    result = await compactor.fit(PREFIX, history)
    assert is_protocol_valid(result.messages)
    assert result.method in ("none", "dropped")
    if result.method == "dropped":
        assert not any(text_of(m).startswith(SUMMARY_PREFIX) for m in result.messages)
        # The newest question is always kept: whole, or, when the current turn alone overflows
        # the window, with its middle cut out (its start and end kept).
        newest, asked = user_turn_texts(result.messages)[-1], user_turn_texts(history)[-1]
        if TEXT_SHORTENED in newest and newest != asked:
            head, tail = newest.split(TEXT_SHORTENED)
            assert asked.startswith(head) and asked.endswith(tail) and head and tail
        else:
            assert newest == asked


async def test_nothing_happens_below_the_threshold() -> None:
    summarizer = Summarizer()
    history: list[Message] = [{"role": "user", "content": "hi"}]
    result = await Compactor(TokenCounter(), CompactionConfig(window=8192), summarizer).fit(
        PREFIX, history
    )
    assert (result.method, result.messages, summarizer.calls) == ("none", history, [])


async def test_old_part_too_big_for_one_call_is_summarized_by_map_reduce() -> None:
    summarizer = Summarizer()
    # 12 old turns of ~3,000 characters cannot go into one summarization call of a 4k window.
    history: list[Message] = []
    for i in range(15):
        history += [
            {"role": "user", "content": f"question {i} " + "x" * 3000},
            {"role": "assistant", "content": f"answer {i}"},
        ]
    config = CompactionConfig(window=4096)
    result = await Compactor(TokenCounter(), config, summarizer).fit(PREFIX, history[-6:])
    assert result.method == "none"  # sanity: the recent part alone fits

    result = await Compactor(TokenCounter(), config, summarizer).fit(PREFIX, history)
    assert result.method == "summary"
    map_calls = [c for c in summarizer.calls if "compress" in text_of(c[0])]
    merge_calls = [c for c in summarizer.calls if text_of(c[0]).startswith(MERGE_INSTRUCTIONS[:30])]
    assert len(map_calls) > 1 and len(merge_calls) >= 1
    # Every old question reached some map call; the final summary is the last merge's output.
    mapped = "\n".join(text_of(c[1]) for c in map_calls)
    assert all(f"question {i} " in mapped for i in range(12))
    assert result.summary == f"summary #{len(summarizer.calls)}"
    assert result.messages[2:] == history[-6:]


async def test_a_previous_summary_is_folded_into_the_next_one() -> None:
    summarizer = Summarizer()
    history = [*summary_messages("earlier facts: deploy with Helm")]
    for i in range(6):
        history += [
            {"role": "user", "content": f"q{i} " + "y" * 1500},
            {"role": "assistant", "content": f"a{i}"},
        ]
    result = await Compactor(TokenCounter(), CompactionConfig(window=2048), summarizer).fit(
        PREFIX, history
    )
    assert result.method == "summary"
    assert "deploy with Helm" in text_of(summarizer.calls[0][1])
    assert sum(text_of(m).startswith(SUMMARY_PREFIX) for m in result.messages) == 1


async def test_the_current_turns_tool_result_is_shortened_never_removed() -> None:
    summarizer = Summarizer()
    call = {"id": "c1", "type": "function", "function": {"name": "t", "arguments": "{}"}}
    history: list[Message] = [
        {"role": "user", "content": "look it up"},
        {"role": "assistant", "content": "", "tool_calls": [call]},
        {"role": "tool", "tool_call_id": "c1", "content": "HEAD " + "z" * 6000 + " TAIL"},
        {"role": "assistant", "content": "found"},
    ]
    result = await Compactor(TokenCounter(), CompactionConfig(window=1024), summarizer).fit(
        PREFIX, history
    )
    assert result.method == "trimmed"
    kept = text_of(result.messages[2])
    assert kept.startswith("HEAD ") and kept.endswith(" TAIL") and TEXT_SHORTENED in kept
    assert is_protocol_valid(result.messages)
    assert summarizer.calls == []  # nothing older to summarize


async def test_older_turns_give_way_before_the_current_turn_and_the_previous_one() -> None:
    """Older turns' results go first, then older turns, and the previous turn stays beside
    this turn's (shortened) result."""
    call = {"id": "c9", "type": "function", "function": {"name": "t", "arguments": "{}"}}
    history: list[Message] = [*summary_messages("SUMMARY of the early part")]
    for i in range(4):
        old = {"id": f"o{i}", "type": "function", "function": {"name": "t", "arguments": "{}"}}
        history += [
            {"role": "user", "content": f"old question {i} " + "q" * 300},
            {"role": "assistant", "content": "", "tool_calls": [old]},
            {"role": "tool", "tool_call_id": f"o{i}", "content": f"OLD-RESULT-{i} " + "o" * 2000},
            {"role": "assistant", "content": f"old answer {i}"},
        ]
    history += [
        {"role": "user", "content": "the question now"},
        {"role": "assistant", "content": "", "tool_calls": [call]},
        {"role": "tool", "tool_call_id": "c9", "content": "NEW-HEAD " + "n" * 5000 + " NEW-TAIL"},
    ]
    compactor = Compactor(TokenCounter(), CompactionConfig(window=2048), Summarizer())
    result = compactor._trim(PREFIX, history, None)
    assert compactor.fits(PREFIX, result) and is_protocol_valid(result)
    text = json.dumps(result)
    assert text_of(result[0]).startswith(SUMMARY_PREFIX)
    assert "old answer 3" in text  # the previous turn
    assert "old question 0" not in text  # the oldest turn went first
    new = text_of(result[-1])
    assert new.startswith("NEW-HEAD") and new.endswith("NEW-TAIL")


@pytest.mark.parametrize(
    ("messages", "valid"),
    [
        ([{"role": "user", "content": "x"}], True),
        ([{"role": "tool", "tool_call_id": "a", "content": ""}], False),
        (
            [
                {"role": "assistant", "content": "", "tool_calls": [{"id": "a"}, {"id": "b"}]},
                {"role": "tool", "tool_call_id": "a", "content": ""},
            ],
            False,
        ),
        (
            [
                {"role": "assistant", "content": "", "tool_calls": [{"id": "a"}]},
                {"role": "user", "content": "x"},
                {"role": "tool", "tool_call_id": "a", "content": ""},
            ],
            False,
        ),
    ],
)
def test_protocol_validity_checker(messages: list[Message], valid: bool) -> None:
    assert is_protocol_valid(messages) is valid


def test_token_counter_calibrates_toward_the_providers_count() -> None:
    counter = TokenCounter()
    messages: list[Message] = [{"role": "user", "content": "w" * 4000}]
    for _ in range(20):
        # The provider says 4 characters per token (plus its own framing).
        counter.calibrate(messages, None, 1000 + 12)
    assert 3.8 < counter.chars_per_token < 4.1
    assert counter.samples == 20


@pytest.mark.parametrize("calls", [40, 1000])
async def test_any_single_turn_can_be_brought_under_the_limit(calls: int) -> None:
    """A turn alone bigger than the window (a flood of calls with large arguments, long
    assistant text): its finished tool exchanges collapse into notes, texts are shortened,
    and the question's start and end survive."""
    ids = [f"c{i}" for i in range(calls)]
    turn: list[Message] = [
        {"role": "user", "content": "QUESTION-START " + "u" * 20_000 + " QUESTION-END"},
        {
            "role": "assistant",
            "content": "thinking " * 2000,
            "tool_calls": [
                {"id": i, "type": "function", "function": {"name": "t", "arguments": "a" * 300}}
                for i in ids
            ],
        },
        *[{"role": "tool", "tool_call_id": i, "content": "r" * 50} for i in ids],
    ]
    history = [*summary_messages("the earlier part"), *turn]
    compactor = Compactor(TokenCounter(), CompactionConfig(window=4096), Summarizer())
    result = await compactor.fit(PREFIX, history)
    assert compactor.fits(PREFIX, result.messages)
    assert is_protocol_valid(result.messages)
    assert text_of(result.messages[0]).startswith(SUMMARY_PREFIX)  # kept
    question = next(text_of(m) for m in result.messages[2:] if m["role"] == "user")
    assert question.startswith("QUESTION-START") and question.endswith("QUESTION-END")
    assert f"{calls} tool call(s) (t)" in json.dumps(result.messages)
