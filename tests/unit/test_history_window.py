"""The history window (core/memory/history.py `keep_recent_turns`), checked with hypothesis.

Histories are generated in the chat-completions shape the agent stores: user messages,
assistant messages with `tool_calls` each followed by all of their tool results, and plain
assistant answers. Whatever is cut, the window sent back to the model must stay valid for the
protocol, or providers reject the request.
"""

from __future__ import annotations

import itertools
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from core.memory.history import keep_recent_turns

Message = dict[str, Any]


@st.composite
def histories(draw: st.DrawFn) -> list[Message]:
    ids = itertools.count(1)
    messages: list[Message] = []
    for turn in range(draw(st.integers(0, 8))):
        messages.append({"role": "user", "content": f"question {turn}"})
        for step in range(draw(st.integers(0, 3))):
            if draw(st.booleans()):
                calls = [
                    {
                        "id": f"call_{next(ids)}",
                        "type": "function",
                        "function": {"name": "search", "arguments": "{}"},
                    }
                    for _ in range(draw(st.integers(1, 3)))
                ]
                messages.append({"role": "assistant", "content": "", "tool_calls": calls})
                # Results come back in any order, but all of them come back.
                for call in draw(st.permutations(calls)):
                    messages.append(
                        {"role": "tool", "tool_call_id": call["id"], "content": "result"}
                    )
            else:
                messages.append({"role": "assistant", "content": f"answer {turn}.{step}"})
    return messages


@st.composite
def stored_histories(draw: st.DrawFn) -> list[Message]:
    """A valid history, possibly with its beginning already pruned at an arbitrary point."""
    messages = draw(histories())
    start = draw(st.integers(0, len(messages)))
    return messages[start:]


def assert_protocol_valid(window: list[Message]) -> None:
    announced: set[str] = set()
    answered: set[str] = set()
    for m in window:
        if m["role"] == "assistant":
            for call in m.get("tool_calls") or []:
                announced.add(call["id"])
        elif m["role"] == "tool":
            assert m["tool_call_id"] in announced, f"orphan tool result {m['tool_call_id']}"
            answered.add(m["tool_call_id"])
    assert announced == answered, f"tool calls without results: {announced - answered}"


def users(messages: list[Message]) -> int:
    return sum(m["role"] == "user" for m in messages)


@settings(max_examples=300, deadline=None, database=None)
@given(messages=stored_histories(), max_turns=st.integers(1, 10))
def test_window_is_valid_recent_suffix(messages: list[Message], max_turns: int) -> None:
    original = [dict(m) for m in messages]
    window = keep_recent_turns(messages, max_turns)

    assert messages == original  # the input is not modified
    assert_protocol_valid(window)
    assert users(window) <= max_turns
    if window:
        assert window[0]["role"] == "user"
        assert messages[len(messages) - len(window) :] == window  # a suffix of the input
    # Nothing more is dropped than needed: the most recent N user turns are all kept.
    assert users(window) == min(max_turns, users(messages))
    if users(messages):
        last_user = max(i for i, m in enumerate(messages) if m["role"] == "user")
        assert len(window) >= len(messages) - last_user


@settings(max_examples=100, deadline=None, database=None)
@given(messages=stored_histories())
def test_zero_turns_keeps_nothing(messages: list[Message]) -> None:
    assert keep_recent_turns(messages, 0) == []


def test_cut_never_splits_tool_calls_from_results() -> None:
    messages: list[Message] = [
        {"role": "user", "content": "q1"},
        {"role": "assistant", "content": "a1"},
        {"role": "user", "content": "q2"},
        {"role": "assistant", "content": "", "tool_calls": [{"id": "c1"}, {"id": "c2"}]},
        {"role": "tool", "tool_call_id": "c1", "content": "r1"},
        {"role": "tool", "tool_call_id": "c2", "content": "r2"},
        {"role": "assistant", "content": "a2"},
        {"role": "user", "content": "q3"},
        {"role": "assistant", "content": "a3"},
    ]
    assert keep_recent_turns(messages, 2) == messages[2:]
    assert keep_recent_turns(messages, 1) == messages[7:]
    assert keep_recent_turns(messages, 3) == messages
    assert keep_recent_turns(messages, 50) == messages


def test_orphan_prefix_is_dropped() -> None:
    messages: list[Message] = [
        {"role": "tool", "tool_call_id": "gone", "content": "r"},
        {"role": "assistant", "content": "a0"},
        {"role": "user", "content": "q1"},
        {"role": "assistant", "content": "a1"},
    ]
    assert keep_recent_turns(messages, 5) == messages[2:]


@pytest.mark.parametrize(
    "messages",
    [
        [],
        [{"role": "assistant", "content": "hello"}],
        [{"role": "tool", "tool_call_id": "x", "content": "r"}],
    ],
)
def test_no_user_message_keeps_nothing(messages: list[Message]) -> None:
    assert keep_recent_turns(messages, 3) == []
