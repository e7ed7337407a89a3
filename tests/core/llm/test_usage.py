"""Provider usage parsing (core/llm/usage.py `parse_usage`)."""

from __future__ import annotations

from typing import Any

import pytest

from core.llm.usage import parse_usage
from core.request import Usage


def test_openai_nested_cached_tokens() -> None:
    raw = {
        "prompt_tokens": 1200,
        "completion_tokens": 80,
        "total_tokens": 1280,
        "prompt_tokens_details": {"cached_tokens": 1024, "audio_tokens": 0},
        "completion_tokens_details": {"reasoning_tokens": 0},
    }
    assert parse_usage(raw) == Usage(prompt_tokens=1200, completion_tokens=80, cached_tokens=1024)


def test_deepseek_prompt_cache_hit_tokens() -> None:
    raw = {
        "prompt_tokens": 500,
        "completion_tokens": 20,
        "total_tokens": 520,
        "prompt_cache_hit_tokens": 384,
        "prompt_cache_miss_tokens": 116,
    }
    assert parse_usage(raw) == Usage(prompt_tokens=500, completion_tokens=20, cached_tokens=384)


def test_input_cache_hit_tokens() -> None:
    raw = {"prompt_tokens": 300, "completion_tokens": 7, "input_cache_hit_tokens": 256}
    assert parse_usage(raw) == Usage(prompt_tokens=300, completion_tokens=7, cached_tokens=256)


def test_no_cache_information_means_zero_cached() -> None:
    assert parse_usage({"prompt_tokens": 10, "completion_tokens": 3}) == Usage(10, 3, 0)


@pytest.mark.parametrize(
    "details",
    [None, {}, {"cached_tokens": None}, {"audio_tokens": 5}],
)
def test_empty_or_null_details_fall_back_to_flat_keys(details: Any) -> None:
    raw = {"prompt_tokens": 100, "completion_tokens": 1, "prompt_tokens_details": details}
    assert parse_usage(raw) == Usage(100, 1, 0)
    raw["prompt_cache_hit_tokens"] = 64
    assert parse_usage(raw) == Usage(100, 1, 64)


def test_cache_miss_tokens_are_not_mistaken_for_hits() -> None:
    raw = {"prompt_tokens": 100, "completion_tokens": 1, "prompt_cache_miss_tokens": 100}
    assert parse_usage(raw) == Usage(100, 1, 0)


@pytest.mark.parametrize("raw", [None, {}])
def test_missing_usage_is_none(raw: dict[str, Any] | None) -> None:
    assert parse_usage(raw) is None


def test_null_counts_are_zero() -> None:
    raw = {"prompt_tokens": None, "completion_tokens": None, "total_tokens": None}
    assert parse_usage(raw) == Usage(0, 0, 0)


def test_parsed_usage_adds_up() -> None:
    first = parse_usage({"prompt_tokens": 10, "completion_tokens": 2, "prompt_cache_hit_tokens": 4})
    second = parse_usage(
        {"prompt_tokens": 20, "completion_tokens": 3, "prompt_tokens_details": {"cached_tokens": 8}}
    )
    assert first is not None and second is not None
    total = first + second
    assert total == Usage(30, 5, 12)
    assert total.total_tokens == 35


def test_openai_sdk_model_dump_shape() -> None:
    from openai.types import CompletionUsage

    usage = CompletionUsage.model_validate(
        {
            "prompt_tokens": 2048,
            "completion_tokens": 16,
            "total_tokens": 2064,
            "prompt_tokens_details": {"cached_tokens": 1920},
        }
    )
    assert parse_usage(usage.model_dump()) == Usage(2048, 16, 1920)
    # DeepSeek's extra field survives the SDK model as an extra attribute.
    deepseek = CompletionUsage.model_validate(
        {
            "prompt_tokens": 64,
            "completion_tokens": 1,
            "total_tokens": 65,
            "prompt_cache_hit_tokens": 32,
        }
    )
    assert parse_usage(deepseek.model_dump()) == Usage(64, 1, 32)


@pytest.mark.parametrize(
    ("raw", "expected"),
    [
        ({"prompt_tokens": -100_000, "completion_tokens": -1}, Usage(0, 0, 0)),
        ({"prompt_tokens": True, "completion_tokens": "12"}, Usage(0, 0, 0)),
        ({"prompt_tokens": 10**15, "completion_tokens": 5}, Usage(10_000_000, 5, 0)),
        ({"prompt_tokens": 10, "prompt_cache_hit_tokens": 50}, Usage(10, 0, 10)),
    ],
)
def test_reported_counts_are_clamped(raw: dict[str, Any], expected: Usage) -> None:
    assert parse_usage(raw) == expected


def test_settled_charges_the_estimate_where_the_provider_reported_nothing() -> None:
    from core.llm.usage import settled

    assert settled(None, 120, 30) == Usage(120, 30)
    assert settled(Usage(0, 0), 120, 30) == Usage(120, 30)
    assert settled(Usage(500, 0), 120, 30) == Usage(500, 30)
    assert settled(Usage(500, 40, 100), 120, 30) == Usage(500, 40, 100)
