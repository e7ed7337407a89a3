"""MCP hardening (issue 23, round two) that needs no server: server names that would share
model-facing tool names, and what a confirmation shows of a call's arguments."""

from __future__ import annotations

import asyncio
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


def test_a_closed_schema_refuses_undeclared_properties_at_any_depth_and_keeps_declared_ones() -> (
    None
):
    from jsonschema import Draft202012Validator

    from core.mcp.schema import closed

    schema = {
        "type": "object",
        "properties": {
            "filter": {"$ref": "#/$defs/Filter"},
            "rows": {"type": "array", "items": {"type": "object", "properties": {"id": {}}}},
            "labels": {"type": "object", "additionalProperties": {"type": "string"}},
            "any": {},
        },
        "allOf": [{"properties": {"extra": {"type": "string"}}}],
        "$defs": {
            "Filter": {
                "allOf": [{"$ref": "#/$defs/Base"}],
                "properties": {"scope": {"type": "string"}},
            },
            "Base": {"properties": {"why": {"type": "string"}}},
        },
    }
    check = Draft202012Validator(closed(schema))
    fine = {
        "filter": {"scope": "x", "why": "y"},
        "rows": [{"id": 1}],
        "labels": {"anything": "goes"},
        "any": {"free": "form"},
        "extra": "declared in allOf",
    }
    assert list(check.iter_errors(fine)) == []
    for bad in (
        {"sneaky": 1},
        {"filter": {"scope": "x", "sneaky": "ALL"}},
        {"rows": [{"id": 1, "sneaky": 2}]},
    ):
        assert [e.validator for e in check.iter_errors(bad)] == ["unevaluatedProperties"], bad
    assert "unevaluatedProperties" not in schema  # the server's schema is left as it was


async def test_the_console_prompt_prints_arguments_literally_and_the_full_ones_when_abridged() -> (
    None
):
    import io
    import os
    from datetime import UTC, datetime, timedelta

    from rich.console import Console

    from adapters.console.repl import ConsoleConfirmer, _LineReader
    from adapters.console.translate import ConsoleIdentity
    from core.mcp.confirm import ConfirmationGate, ConfirmationPrompt
    from core.mcp.confirm_store import ConfirmationStore
    from core.store.engine import Database

    read, write = os.pipe()
    try:
        out = io.StringIO()
        gate = ConfirmationGate(ConfirmationStore(Database("sqlite://")))
        reader = _LineReader(read)
        confirmer = ConsoleConfirmer(
            Console(file=out, width=200), reader, gate, ConsoleIdentity(user="alice")
        )
        prompt = ConfirmationPrompt(
            id="p1",
            request_id="r1",
            platform="console",
            tenant="local",
            channel="console",
            thread="t",
            user="alice",
            tool="t.close",
            arguments='{"note": "[/] [bold]x[/bold] (300 chars)", "id": "ALL"}',
            expires_at=datetime(2026, 1, 1, tzinfo=UTC) + timedelta(seconds=0),
            details='{\n  "note": "[/] [bold]x[/bold]  ...",\n  "id": "ALL"\n}',
            abridged=True,
        )
        await confirmer.ask(prompt)
        printed = out.getvalue()
        assert '"note": "[/] [bold]x[/bold] (300 chars)", "id": "ALL"' in printed
        assert '  "note": "[/] [bold]x[/bold]  ...",' in printed  # the full arguments
        async with asyncio.timeout(5):  # expired at once; its reader thread is drained
            while "not run" not in out.getvalue():  # noqa: ASYNC110
                await asyncio.sleep(0.01)
            os.write(write, b"\n")
            assert await reader.readline() == ""
    finally:
        os.close(write)
        os.close(read)
