"""MCP hardening (issue 23, round two) that needs no server: server names that would share
model-facing tool names, and what a confirmation shows of a call's arguments."""

from __future__ import annotations

from pathlib import Path

import pytest

from config.settings import SettingsError, load_settings


def _load(monkeypatch: pytest.MonkeyPatch, tmp_path: Path, text: str) -> str:
    path = tmp_path / "threadline.toml"
    path.write_text(text, encoding="utf-8")
    monkeypatch.setenv("THREADLINE_CONFIG", str(path))
    try:
        return repr(sorted(load_settings().mcp))
    except SettingsError as exc:
        return str(exc)


def test_servers_whose_tools_could_share_a_model_facing_name_are_refused_naming_both(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    # `a` + `_x` and `a_` + `x` would both be `a___x` for the model.
    text = '[mcp.a]\ncommand = "x"\n\n[mcp.a_]\ncommand = "y"\n'
    message = _load(monkeypatch, tmp_path, text)
    assert "cannot start" in message
    assert "[mcp.a]" in message and "[mcp.a_]" in message and "a___x" in message


@pytest.mark.parametrize("names", [["a_", "b"], ["a", "ab"], ["a-", "a"], ["tracker", "ci"]])
def test_other_server_names_keep_loading(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, names: list[str]
) -> None:
    text = "".join(f'[mcp.{n}]\ncommand = "x"\n\n' for n in names)
    assert _load(monkeypatch, tmp_path, text) == repr(sorted(names))
