"""`[mcp.NAME]` settings (core/mcp/config.py via config/settings.py) and `mcp:` permissions."""

from __future__ import annotations

from pathlib import Path

import pytest

from config.settings import SettingsError, load_settings
from core.policy import Identity, Policy, PolicyError
from core.request import Request
from core.session import open_session


def load(monkeypatch: pytest.MonkeyPatch, tmp_path: Path, text: str) -> str:
    path = tmp_path / "threadline.toml"
    path.write_text(text, encoding="utf-8")
    monkeypatch.setenv("THREADLINE_CONFIG", str(path))
    try:
        settings = load_settings()
    except SettingsError as exc:
        return str(exc)
    return repr(sorted(settings.mcp))


def test_stdio_and_http_servers_load(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    text = """
[mcp.tracker]
command = "tracker-mcp"
args = ["--readonly"]
env = ["TRACKER_TOKEN"]
timeout = 20
destructive_tools = ["close_issue"]

[mcp.ci]
url = "http://127.0.0.1:8931/mcp"
headers = { Authorization = "CI_MCP_AUTH" }
"""
    assert load(monkeypatch, tmp_path, text) == "['ci', 'tracker']"
    settings = load_settings()
    assert settings.mcp["tracker"].transport == "stdio"
    assert settings.mcp["ci"].headers == {"Authorization": "CI_MCP_AUTH"}


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        (
            '[mcp.t]\ncommand = "x"\nevn = ["A"]',
            "[mcp] t.evn in the settings file: unknown key (did you mean env?)",
        ),
        ('[mcp.t]\ncommand = "x"\ntimeout = true', "[mcp] t.timeout"),
        ('[mcp.t]\ncommand = "x"\ntimeout = 0', "greater than 0"),
        ('[mcp.t]\ncommand = "x"\nenv = ["TOKEN=abc"]', "is not an environment variable name"),
        ('[mcp.t]\ncommand = "x"\nurl = "http://127.0.0.1:1/mcp"', "either command (stdio) or url"),
        ("[mcp.t]\ntimeout = 3", "either command (stdio) or url"),
        ('[mcp.t]\nurl = "ftp://x"', "must be an http:// or https:// URL"),
        ('[mcp.t]\nurl = "http://127.0.0.1:1/mcp"\nargs = ["a"]', "apply to command servers only"),
        ('[mcp.t]\ncommand = "x"\nheaders = { A = "B" }', "headers apply to url servers only"),
        ('[mcp."Bad.Name"]\ncommand = "x"', "a server name is 1-31 characters"),
        ('[mcp.a__b]\ncommand = "x"', "a server name is 1-31 characters"),
    ],
)
def test_invalid_servers_are_refused_naming_the_key(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, text: str, expected: str
) -> None:
    message = load(monkeypatch, tmp_path, text)
    assert "cannot start" in message
    assert expected in message


def test_a_header_value_in_the_file_is_refused_without_echoing_it(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    text = '[mcp.t]\nurl = "http://127.0.0.1:1/mcp"\nheaders = { Authorization = "Bearer s3cr3t" }'
    message = load(monkeypatch, tmp_path, text)
    assert "must name an environment variable" in message
    assert "s3cr3t" not in message


def _request(channel: str) -> Request:
    return Request(
        platform="slack", tenant="T1", channel=channel, thread="t", user="u", roles=(), text="q"
    )


def test_mcp_permissions_are_granted_per_server_or_tool() -> None:
    policy = Policy.from_dict(
        {
            "rules": [
                {"match": {"channel": "C1"}, "grant": ["mcp:tracker"]},
                {"match": {"channel": "C2"}, "grant": ["mcp:tracker.search"]},
            ]
        }
    )
    s1 = open_session(_request("C1"), policy)
    assert s1.allows("mcp:tracker.search") and s1.allows("mcp:tracker.close_issue")
    assert not s1.allows("mcp:ci.run")
    s2 = open_session(_request("C2"), policy)
    assert s2.allows("mcp:tracker.search") and not s2.allows("mcp:tracker.close_issue")
    other = policy.resolve(Identity("slack", "T1", "C3", "u", frozenset()))
    assert not any(p.startswith("mcp:") for p in other.permissions)  # nothing by default


@pytest.mark.parametrize(
    ("permission", "expected"),
    [
        ("mcp:", "malformed MCP permission 'mcp:'"),
        ("mcp:Tracker", "malformed MCP permission"),
        ("mcp:tracker.", "malformed MCP permission"),
        ("mcp:tracker.a.b", "malformed MCP permission"),
        ("mcp:tracker__x", "malformed MCP permission"),
        ("mcp-tracker", "unknown permission 'mcp-tracker'"),
    ],
)
def test_malformed_mcp_permissions_are_refused(permission: str, expected: str) -> None:
    with pytest.raises(PolicyError, match=r"rules\[1\]\.grant: ") as info:
        Policy.from_dict({"rules": [{"grant": [permission]}]})
    assert expected in str(info.value)
    assert "mcp:SERVER" in str(info.value)


def test_unusable_tool_definitions_are_skipped_with_a_reason() -> None:
    from core.mcp.registration import _unusable

    def definition(name: str = "ok", schema: object = None) -> dict[str, object]:
        return {"name": name, "inputSchema": schema if schema is not None else {"type": "object"}}

    assert _unusable("s", definition()) is None
    assert "characters" in (_unusable("s", definition("a.b")) or "")
    assert "too long" in (_unusable("s", definition("x" * 62)) or "")
    assert "not an object" in (_unusable("s", definition(schema={"type": "string"})) or "")
    invalid = {"type": "object", "properties": {"a": {"type": 5}}}
    assert "not a valid" in (_unusable("s", definition(schema=invalid)) or "")
    remote = {"type": "object", "properties": {"a": {"$ref": "http://127.0.0.1:1/x.json"}}}
    assert "outside itself" in (_unusable("s", definition(schema=remote)) or "")
    local = {
        "type": "object",
        "$defs": {"a": {"type": "string"}},
        "properties": {"a": {"$ref": "#/$defs/a"}},
    }
    assert _unusable("s", definition(schema=local)) is None


def test_a_diff_of_a_huge_description_is_capped() -> None:
    from core.mcp.pins import PendingChange

    old = {"name": "t", "description": "short", "inputSchema": {"type": "object"}}
    new = {**old, "description": "\n".join(f"line {i} " + "x" * 500 for i in range(5000))}
    text = PendingChange("t", old, new, None).describe()
    assert len(text) < 10_000
    assert "more diff lines" in text
    assert "inputSchema" not in text  # unchanged fields are not shown
