"""Names that are stored with every model call (usage_records.provider and .model) are bounded
when the settings are read, not when the first write fails on PostgreSQL."""

from __future__ import annotations

import pytest

from config.settings import MAX_MODEL_CHARS, SettingsError, load_settings


def test_an_overlong_model_name_stops_start_up_with_its_length() -> None:
    with pytest.raises(SettingsError, match=f"129 characters long; at most {MAX_MODEL_CHARS}"):
        load_settings(llm_base_url="http://127.0.0.1:9/v1", llm_model="m" * 129)
    ok = load_settings(llm_base_url="http://127.0.0.1:9/v1", llm_model="m" * MAX_MODEL_CHARS)
    resolved = ok.llm()
    assert resolved is not None and len(resolved.model) == MAX_MODEL_CHARS
