"""`threadline ask` with MCP servers configured (issue 23, finding 15): the one-shot command
connects the servers the request may use, waits for them up to their connect timeout, and says
in `notices` which were not ready. The real console script in a subprocess, the test MCP server
over stdio, the fake model."""

from __future__ import annotations

import json
import sys
from collections.abc import Callable
from pathlib import Path

from tests.bot.test_cli import ask_json, cli_env, llm_env
from tests.conftest import POLICY_ALL
from tests.support.fakes.openai_server import FakeOpenAI
from tests.support.paths import FAKES_DIR

__all__ = ["cli_env", "llm_env"]  # fixtures shared with the CLI tests

SERVER = FAKES_DIR / "mcp_server.py"
POLICY = (
    POLICY_ALL
    + """
[[rules]]
name = "ops may use the ticket servers"
match = { channel = "ops" }
grant = ["mcp:tickets", "mcp:down"]
"""
)


def _config(tmp_path: Path) -> Path:
    # `down` never starts; `unused` is granted nowhere (and would never start either).
    path = tmp_path / "mcp.toml"
    path.write_text(
        f"""
[mcp.tickets]
command = {json.dumps(sys.executable)}
args = [{json.dumps(str(SERVER))}]

[mcp.down]
command = "/nonexistent/mcp-server"
connect_timeout = 5

[mcp.unused]
command = "/nonexistent/other-server"
""",
        encoding="utf-8",
    )
    return path


def test_ask_connects_the_servers_the_request_may_use_and_names_those_not_ready(
    llm_env: dict[str, str],
    fake_llm: FakeOpenAI,
    tmp_path: Path,
    write_policy: Callable[[str], Path],
) -> None:
    env = {
        **llm_env,
        "THREADLINE_CONFIG": str(_config(tmp_path)),
        "THREADLINE_POLICY": str(write_policy(POLICY)),
    }
    fake_llm.tool_calls(("tickets__lookup", {"query": "ticket 17"}))
    fake_llm.reply("Ticket 17 is open.")

    code, out = ask_json(env, tmp_path, "Is ticket 17 open?", "--channel", "ops")

    assert code == 0, out
    assert out["tool_calls"] == [{"name": "tickets__lookup", "ok": True, "error": None}]
    first, second = fake_llm.wait_for_requests(2)
    offered = {t["function"]["name"] for t in first.get("tools", [])}
    assert "tickets__lookup" in offered
    results = [m["content"] for m in second["messages"] if m["role"] == "tool"]
    assert "found: ticket 17" in results[0]
    down = [n for n in out["notices"] if "`down`" in n]
    assert len(down) == 1 and "not ready" in down[0]
    assert not any("unused" in n or "tickets" in n for n in out["notices"])


def test_ask_in_a_channel_granted_no_server_waits_for_none(
    llm_env: dict[str, str],
    fake_llm: FakeOpenAI,
    tmp_path: Path,
    write_policy: Callable[[str], Path],
) -> None:
    env = {
        **llm_env,
        "THREADLINE_CONFIG": str(_config(tmp_path)),
        "THREADLINE_POLICY": str(write_policy(POLICY)),
    }
    fake_llm.reply("Hello.")
    code, out = ask_json(env, tmp_path, "hi", "--channel", "elsewhere")
    assert (code, out["text"], out["notices"]) == (0, "Hello.", [])
    (sent,) = fake_llm.requests
    assert not any("__" in t["function"]["name"] for t in sent.get("tools", []))
