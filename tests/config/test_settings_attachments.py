"""Settings for attached files: the limits (sizes with units, errors naming the variable) and
what each provider can do with them (`vision`, `transcription_model`)."""

from __future__ import annotations

from pathlib import Path

import pytest

from config.settings import SettingsError, load_settings
from core.attachments.limits import MB, AttachmentLimits

PROVIDERS = """
[providers.seeing]
base_url = "http://127.0.0.1:9000/v1"
model = "vision-model"
vision = true
transcription_model = "whisper-1"

[providers.plain]
base_url = "http://127.0.0.1:9001/v1"
model = "text-model"
"""


def test_defaults() -> None:
    assert load_settings().attachment_limits() == AttachmentLimits()


def test_sizes_take_units(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("THREADLINE_ATTACHMENTS_MAX_FILE", "5MB")
    monkeypatch.setenv("THREADLINE_ATTACHMENTS_MAX_MESSAGE", "12 MB")
    monkeypatch.setenv("THREADLINE_ATTACHMENTS_MAX_FILES", "3")
    limits = load_settings().attachment_limits()
    assert (limits.max_file_bytes, limits.max_message_bytes, limits.max_files) == (
        5 * MB,
        12 * MB,
        3,
    )


def test_a_bad_size_names_the_variable(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("THREADLINE_ATTACHMENTS_MAX_UNPACKED", "lots")
    with pytest.raises(SettingsError) as info:
        load_settings()
    assert "THREADLINE_ATTACHMENTS_MAX_UNPACKED" in str(info.value)


def test_providers_say_whether_they_see_and_transcribe(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    path = tmp_path / "threadline.toml"
    path.write_text(PROVIDERS)
    monkeypatch.setenv("THREADLINE_CONFIG", str(path))
    settings = load_settings()
    seeing, plain = settings.provider("seeing"), settings.provider("plain")
    assert (seeing.vision, seeing.transcription_model) == (True, "whisper-1")
    assert (plain.vision, plain.transcription_model) == (False, None)


def test_the_active_provider_takes_the_llm_variables(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("LLM_BASE_URL", "http://127.0.0.1:9002/v1")
    monkeypatch.setenv("LLM_MODEL", "m")
    monkeypatch.setenv("LLM_VISION", "true")
    monkeypatch.setenv("LLM_TRANSCRIPTION_MODEL", "whisper-1")
    resolved = load_settings().llm()
    assert resolved is not None
    assert (resolved.vision, resolved.transcription_model) == (True, "whisper-1")
