"""Tool calls as they enter from a model response (core/llm/toolcalls.py)."""

from __future__ import annotations

import json
from types import SimpleNamespace
from typing import Any

from core.llm.toolcalls import MAX_NAME_CHARS, normalize_tool_calls


def raw(call_id: Any, name: Any = "t", arguments: Any = "{}") -> SimpleNamespace:
    return SimpleNamespace(id=call_id, function=SimpleNamespace(name=name, arguments=arguments))


def test_missing_empty_odd_and_repeated_ids_are_replaced_by_unique_ones() -> None:
    calls = normalize_tool_calls(
        [raw(None), raw(""), raw("dup"), raw("dup"), raw("x" * 500), raw("a b"), raw("ok_1")]
    )
    ids = [c.id for c in calls]
    assert len(set(ids)) == len(ids) == 7
    assert ids[2] == "dup" and ids[6] == "ok_1"  # good ids are the provider's own
    assert all(i.startswith("call_") for i in (ids[0], ids[1], ids[3], ids[4], ids[5]))


def test_arguments_in_any_shape_become_a_json_string() -> None:
    calls = normalize_tool_calls(
        [raw("a", arguments={"k": "v"}), raw("b", arguments=None), raw("c", arguments="  ")]
    )
    assert [json.loads(c.arguments) for c in calls] == [{"k": "v"}, {}, {}]


def test_names_are_bounded_and_dict_shaped_calls_are_read() -> None:
    calls = normalize_tool_calls(
        [
            raw("a", name="n" * 3000),
            raw("b", name=None),
            {"id": "c", "function": {"name": "grep_code", "arguments": "{}"}},
            SimpleNamespace(id="d", function=None),  # no function part: skipped
        ]
    )
    assert [len(c.name) for c in calls] == [MAX_NAME_CHARS, 0, len("grep_code")]
    assert normalize_tool_calls(None) == () and normalize_tool_calls("garbage") == ()
