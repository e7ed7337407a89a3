"""The real `threadline` console script, run in subprocesses against the fake model server.

Each test sets the environment explicitly (data dir, policy, an empty config file, the model
endpoint) and runs in `tmp_path`, so nothing leaks in from the checkout or the developer's
shell. Long-running commands (`serve`, `worker`) are polled with deadlines, never slept on.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import time
import urllib.error
import urllib.request
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import POLICY_ALL
from tests.support.cli import run_cli as run_cli
from tests.support.fakes.openai_server import FakeOpenAI
from tests.support.paths import ROOT_DIR
from tests.support.processes import free_port as free_port
from tests.support.processes import threadline_command as threadline_command

REPO = ROOT_DIR
STARTUP_DEADLINE = 20.0  # generous: a loaded CI machine, a cold import cache
STOP_DEADLINE = 10.0


@pytest.fixture
def cli_env(tmp_path: Path, write_policy: Callable[[str], Path]) -> dict[str, str]:
    """Environment for one CLI run: isolated data dir, the test policy, an empty config."""
    empty = tmp_path / "empty.toml"
    empty.write_text("")
    env = dict(os.environ)  # the autouse `isolated_env` fixture already removed our variables
    env.update(
        THREADLINE_DATA_DIR=str(tmp_path / "data"),
        THREADLINE_POLICY=str(write_policy(POLICY_ALL)),
        THREADLINE_CONFIG=str(empty),
        PYTHONUNBUFFERED="1",
    )
    return env


@pytest.fixture
def llm_env(cli_env: dict[str, str], fake_llm: FakeOpenAI) -> dict[str, str]:
    return {
        **cli_env,
        "LLM_BASE_URL": fake_llm.url,
        "LLM_MODEL": "fake-model",
        "LLM_MAX_RETRIES": "0",
    }


def ask_json(env: dict[str, str], cwd: Path, text: str, *flags: str) -> tuple[int, dict[str, Any]]:
    proc = run_cli(env, cwd, "ask", text, "--json", "--user", "alice", *flags)
    assert "Traceback" not in proc.stderr, proc.stderr
    lines = proc.stdout.strip().splitlines()
    assert len(lines) == 1, proc.stdout  # exactly one JSON document, nothing else on stdout
    return proc.returncode, json.loads(lines[0])


def messages_text(request: dict[str, Any]) -> str:
    """Everything in a model request's messages, as one string to search."""
    return json.dumps(request["messages"])


# -- ask ------------------------------------------------------------------------------------------


def test_help_exits_zero_and_lists_the_commands(cli_env: dict[str, str], tmp_path: Path) -> None:
    proc = run_cli(cli_env, tmp_path, "--help")
    assert proc.returncode == 0, proc.stderr
    for command in ("run", "serve", "worker", "chat", "ask"):
        assert command in proc.stdout
    assert not (tmp_path / "data").exists()  # --help touches no database


def test_ask_json_prints_the_documented_shape_with_the_providers_usage(
    llm_env: dict[str, str], fake_llm: FakeOpenAI, tmp_path: Path
) -> None:
    fake_llm.reply(
        "Hello from the model",
        prompt_tokens=123,
        completion_tokens=45,
        usage={"prompt_tokens_details": {"cached_tokens": 7}},
    )

    code, out = ask_json(llm_env, tmp_path, "hi")

    assert code == 0
    assert set(out) == {
        "ok",
        "text",
        "attachments",
        "tool_calls",
        "usage",
        "notices",
        "sources",
        "answer_id",
    }
    assert out["ok"] is True
    assert out["text"] == "Hello from the model"
    assert out["attachments"] == []
    assert out["tool_calls"] == []
    assert out["notices"] == []
    assert out["sources"] == []
    assert len(out["answer_id"]) == 32  # what 👍/👎 under the answer would carry
    assert out["usage"] == {"prompt_tokens": 123, "completion_tokens": 45, "cached_tokens": 7}
    (sent,) = fake_llm.requests
    assert sent["model"] == "fake-model"
    assert sent["messages"][-1] == {"role": "user", "content": "hi"}


def test_the_same_thread_continues_across_invocations(
    llm_env: dict[str, str], fake_llm: FakeOpenAI, tmp_path: Path
) -> None:
    fake_llm.reply("The answer is forty-two.")
    fake_llm.reply("You asked about the meaning of life.")
    fake_llm.reply("I have no earlier context here.")

    first = run_cli(llm_env, tmp_path, "ask", "What is the meaning of life?", "--thread", "T")
    second = run_cli(llm_env, tmp_path, "ask", "What did I just ask?", "--thread", "T")
    other = run_cli(llm_env, tmp_path, "ask", "What did I just ask?", "--thread", "OTHER")

    for proc in (first, second, other):
        assert proc.returncode == 0, proc.stderr
    assert first.stdout.strip() == "The answer is forty-two."  # plain text mode: just the reply
    assert second.stdout.strip() == "You asked about the meaning of life."
    r1, r2, r3 = fake_llm.wait_for_requests(3)
    assert "forty-two" not in messages_text(r1)
    # The second process saw the first process's question and answer, in order.
    history = [(m["role"], m["content"]) for m in r2["messages"] if m["role"] != "system"]
    assert history == [
        ("user", "What is the meaning of life?"),
        ("assistant", "The answer is forty-two."),
        ("user", "What did I just ask?"),
    ]
    # A different thread starts fresh.
    assert "meaning of life" not in messages_text(r3)
    assert "forty-two" not in messages_text(r3)


def test_tool_calls_are_reported_with_name_ok_and_error(
    llm_env: dict[str, str], fake_llm: FakeOpenAI, tmp_path: Path
) -> None:
    fake_llm.tool_calls(
        ("current_time", {}),
        ("recent_tool_calls", {"limit": 5}),  # needs `admin`, which alice does not have
        ("no_such_tool", {}),
        usage={"prompt_tokens": 100, "completion_tokens": 10},
    )
    fake_llm.reply("It is a good time.", prompt_tokens=200, completion_tokens=20)

    code, out = ask_json(llm_env, tmp_path, "What time is it?")

    assert code == 0
    assert out["text"] == "It is a good time."
    assert out["tool_calls"] == [
        {"name": "current_time", "ok": True, "error": None},
        {"name": "recent_tool_calls", "ok": False, "error": "permission_denied"},
        {"name": "no_such_tool", "ok": False, "error": "unknown_tool"},
    ]
    assert any("recent_tool_calls" in n for n in out["notices"])
    # Usage adds up over both model calls.
    assert out["usage"]["prompt_tokens"] == 300
    assert out["usage"]["completion_tokens"] == 30
    _, followup = fake_llm.wait_for_requests(2)
    tool_results = [m["content"] for m in followup["messages"] if m["role"] == "tool"]
    assert len(tool_results) == 3
    assert tool_results[0].startswith("20")  # an ISO timestamp from the real tool


def test_a_failed_model_call_exits_one(
    llm_env: dict[str, str], fake_llm: FakeOpenAI, tmp_path: Path
) -> None:
    fake_llm.error(500, "upstream exploded")

    code, out = ask_json(llm_env, tmp_path, "hi")

    assert code == 1
    assert out["ok"] is False
    assert out["text"]
    assert "upstream exploded" not in out["text"]  # the provider's raw error stays inside
    assert out["answer_id"] is None  # a failure is nothing to rate
    assert len(fake_llm.requests) == 1  # LLM_MAX_RETRIES=0 is honoured


def test_without_a_model_questions_fail_but_commands_work(
    cli_env: dict[str, str], tmp_path: Path
) -> None:
    code, out = ask_json(cli_env, tmp_path, "hello")
    assert code == 1
    assert out["ok"] is False
    assert "No language model is configured" in out["text"]

    budget = run_cli(cli_env, tmp_path, "ask", "/budget", "--user", "alice")
    assert budget.returncode == 0, budget.stderr
    assert "your daily token budget: 0 of 100,000 tokens" in budget.stdout  # from the policy
    assert (tmp_path / "data" / "threadline.db").is_file()


# -- configuration errors -------------------------------------------------------------------------

SECRET = "sk-test-0123456789abcdef"


@pytest.mark.parametrize(
    ("case", "expected"),
    [
        ("newline_in_key", "LLM_API_KEY"),
        ("missing_model", "LLM_MODEL"),
        ("broken_policy", "not valid TOML"),
        ("bad_database_url", "DATABASE_URL"),
    ],
)
def test_config_errors_exit_two_with_a_clear_message(
    cli_env: dict[str, str], tmp_path: Path, case: str, expected: str
) -> None:
    env = dict(cli_env)
    if case == "newline_in_key":
        env.update(
            LLM_BASE_URL="http://127.0.0.1:9/v1", LLM_MODEL="m", LLM_API_KEY=f"{SECRET}\n{SECRET}"
        )
    elif case == "missing_model":
        env.update(LLM_BASE_URL="http://127.0.0.1:9/v1")
    elif case == "broken_policy":
        broken = tmp_path / "broken-policy.toml"
        broken.write_text("[defaults\npermissions = ['ask'\n")
        env.update(THREADLINE_POLICY=str(broken))
    else:
        env.update(DATABASE_URL=f"mysql://admin:{SECRET}@db.internal/threadline")

    proc = run_cli(env, tmp_path, "ask", "hi")

    assert proc.returncode == 2, (proc.returncode, proc.stderr)
    assert expected in proc.stderr
    assert "Traceback" not in proc.stderr
    assert proc.stdout == ""
    assert SECRET not in proc.stderr
    if case == "broken_policy":
        assert "broken-policy.toml" in proc.stderr  # says which file


# -- processes ------------------------------------------------------------------------------------


@pytest.fixture
def spawn(tmp_path: Path) -> Iterator[Callable[..., tuple[subprocess.Popen[bytes], Path]]]:
    """Start the CLI in the background with stderr in a file; killed if a test leaves it."""
    procs: list[subprocess.Popen[bytes]] = []

    def start(
        env: dict[str, str], *args: str, stdout: Path | None = None, stdin: int | None = None
    ) -> tuple[subprocess.Popen[bytes], Path]:
        log = tmp_path / f"stderr-{len(procs)}.log"
        with log.open("wb") as err, (stdout or Path(os.devnull)).open("wb") as out:
            proc = subprocess.Popen(
                [*threadline_command(), *args],
                env=env,
                cwd=tmp_path,
                stdin=stdin if stdin is not None else subprocess.DEVNULL,
                stdout=out,
                stderr=err,
            )
        procs.append(proc)
        return proc, log

    yield start
    for proc in procs:
        if proc.poll() is None:
            proc.kill()
            proc.wait(STOP_DEADLINE)
        if proc.stdin is not None:
            proc.stdin.close()


def wait_until(
    check: Callable[[], bool], proc: subprocess.Popen[bytes], log: Path, what: str
) -> None:
    deadline = time.monotonic() + STARTUP_DEADLINE
    while time.monotonic() < deadline:
        if check():
            return
        if proc.poll() is not None:
            pytest.fail(f"exited ({proc.returncode}) before {what}:\n{log.read_text()}")
        time.sleep(0.05)  # polling interval, bounded by the deadline
    pytest.fail(f"no {what} within {STARTUP_DEADLINE} s:\n{log.read_text()}")


def http_get(url: str) -> tuple[int, str, str] | None:
    try:
        with urllib.request.urlopen(url, timeout=2) as resp:
            return resp.status, resp.headers.get("Content-Type", ""), resp.read().decode()
    except (urllib.error.URLError, ConnectionError, TimeoutError):
        return None


def test_serve_answers_health_and_metrics_and_stops_cleanly_on_sigterm(
    cli_env: dict[str, str], tmp_path: Path, spawn: Callable[..., Any]
) -> None:
    port = free_port()
    proc, log = spawn(cli_env, "serve", "--port", str(port))
    base = f"http://127.0.0.1:{port}"
    health: list[tuple[int, str, str]] = []

    def healthy() -> bool:
        got = http_get(f"{base}/healthz")
        if got is not None:
            health.append(got)
        return got is not None

    wait_until(healthy, proc, log, "/healthz answer")

    status, content_type, body = health[-1]
    assert status == 200
    assert content_type.startswith("application/json")
    assert json.loads(body) == {"status": "ok", "database": "ok", "model_configured": False}
    metrics = http_get(f"{base}/metrics")
    assert metrics is not None
    status, content_type, body = metrics
    assert status == 200
    assert content_type.startswith("text/plain")
    assert "# TYPE threadline_requests_total counter" in body

    proc.send_signal(signal.SIGTERM)
    assert proc.wait(STOP_DEADLINE) == 0, log.read_text()
    assert "Traceback" not in log.read_text()
    assert http_get(f"{base}/healthz") is None  # the port is closed


def test_worker_starts_and_stops_cleanly_on_sigterm(
    cli_env: dict[str, str], spawn: Callable[..., Any]
) -> None:
    proc, log = spawn(cli_env, "-v", "worker")

    wait_until(lambda: "worker started" in log.read_text(), proc, log, "worker start log line")

    proc.send_signal(signal.SIGTERM)
    assert proc.wait(STOP_DEADLINE) == 0, log.read_text()
    text = log.read_text()
    assert "worker stopping" in text
    assert "Traceback" not in text


def test_chat_answers_and_ctrl_c_ends_it_while_waiting_for_input(
    cli_env: dict[str, str], tmp_path: Path, spawn: Callable[..., Any]
) -> None:
    """Ctrl-C at the prompt must end `threadline chat` at once, not after the next Enter."""
    out = tmp_path / "chat-stdout.txt"
    proc, log = spawn(cli_env, "chat", "--user", "alice", stdout=out, stdin=subprocess.PIPE)
    assert proc.stdin is not None
    proc.stdin.write(b"/budget\n")
    proc.stdin.flush()  # ...and keep stdin open, like a terminal with nobody typing

    wait_until(
        lambda: out.read_text().count("you>") >= 2 and "your daily token budget" in out.read_text(),
        proc,
        log,
        "the /budget reply and the next prompt",
    )

    proc.send_signal(signal.SIGINT)
    assert proc.wait(STOP_DEADLINE) == 0, log.read_text()
    assert "Traceback" not in log.read_text()
    assert "Fatal Python error" not in log.read_text()


def test_procfile_declares_web_and_worker_with_valid_commands() -> None:
    from bot.cli import build_parser

    lines = [
        line.strip()
        for line in (REPO / "Procfile").read_text().splitlines()
        if line.strip() and not line.lstrip().startswith("#")
    ]
    assert "web: threadline serve --port $PORT" in lines
    assert "worker: threadline worker" in lines
    # The commands the process manager runs parse with the real CLI.
    web = build_parser().parse_args(["serve", "--port", "5000"])
    assert (web.command, web.port) == ("serve", 5000)
    assert build_parser().parse_args(["worker"]).command == "worker"


def test_port_comes_from_the_environment_and_a_bad_one_only_breaks_serve(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    from bot.cli import build_parser

    monkeypatch.setenv("PORT", "5123")
    assert build_parser().parse_args(["serve"]).port == 5123
    assert build_parser().parse_args(["serve", "--port", "6000"]).port == 6000

    monkeypatch.setenv("PORT", "not-a-port")
    assert build_parser().parse_args(["ask", "hi"]).text == "hi"
    with pytest.raises(SystemExit) as caught:
        build_parser().parse_args(["serve"])
    assert caught.value.code == 2
    assert "--port" in capsys.readouterr().err


def test_worker_with_an_unreachable_database_says_so_without_a_traceback(
    cli_env: dict[str, str], tmp_path: Path
) -> None:
    # Port 1 on loopback: nothing listens there, the connection is refused at once.
    env = {**cli_env, "DATABASE_URL": "postgresql://bob:hunter2@127.0.0.1:1/none"}
    proc = run_cli(env, tmp_path, "worker")
    assert proc.returncode == 1
    assert "database (DATABASE_URL) is unreachable" in proc.stderr
    assert "Traceback" not in proc.stderr
    assert "hunter2" not in proc.stderr


# -- text that is not UTF-8 at the console boundary ------------------------------------------------


def run_cli_bytes(
    env: dict[str, str], cwd: Path, *args: str | bytes, stdin: bytes | None = None
) -> subprocess.CompletedProcess[bytes]:
    """Like `run_cli`, with raw bytes in (arguments, stdin) and out, as a shell passes them."""
    return subprocess.run(
        [*threadline_command(), *args],
        env=env,
        cwd=cwd,
        input=stdin,
        capture_output=True,
        timeout=60.0,
        check=False,
    )


def strict_utf8(data: bytes) -> str:
    return data.decode("utf-8")  # raises on anything that is not valid UTF-8


def test_invalid_utf8_in_ask_arguments_becomes_replacement_characters(
    cli_env: dict[str, str], tmp_path: Path
) -> None:
    # Latin-1 bytes from an old terminal reach Python as lone surrogates (surrogateescape);
    # they used to reach the database and end in an internal error.
    user = b"al\xffce"
    saved = run_cli_bytes(cli_env, tmp_path, "ask", "--json", "--user", user, b"/save caf\xe9 ok")
    assert b"Traceback" not in saved.stderr, saved.stderr
    out = json.loads(strict_utf8(saved.stdout))
    assert (saved.returncode, out["ok"]) == (0, True), out["text"]

    listed = run_cli_bytes(cli_env, tmp_path, "ask", "--json", "--user", user, "/memory list")
    text = json.loads(strict_utf8(listed.stdout))["text"]
    assert "caf\ufffd ok" in text
    assert "al\ufffdce" in text  # the author, from --user


def test_memory_search_json_output_is_valid_utf8(cli_env: dict[str, str], tmp_path: Path) -> None:
    # The reply echoes the query; a lone surrogate used to be written out as the raw byte.
    proc = run_cli_bytes(cli_env, tmp_path, "ask", "--json", b"/memory search caf\xe9")
    assert proc.returncode == 0, proc.stderr
    out = json.loads(strict_utf8(proc.stdout))
    assert "caf\ufffd" in out["text"]
    plain = run_cli_bytes(cli_env, tmp_path, "ask", b"/memory search caf\xe9")
    assert "caf\ufffd" in strict_utf8(plain.stdout)


def test_invalid_utf8_in_a_question_reaches_the_model_as_valid_text(
    llm_env: dict[str, str], fake_llm: FakeOpenAI, tmp_path: Path
) -> None:
    fake_llm.reply("Yes.")
    proc = run_cli_bytes(llm_env, tmp_path, "ask", "--json", b"caf\xe9?")
    assert proc.returncode == 0, proc.stderr
    assert json.loads(strict_utf8(proc.stdout))["text"] == "Yes."
    (sent,) = fake_llm.requests
    assert sent["messages"][-1] == {"role": "user", "content": "caf\ufffd?"}


def test_invalid_utf8_on_chat_stdin_becomes_replacement_characters(
    cli_env: dict[str, str], tmp_path: Path
) -> None:
    proc = run_cli_bytes(
        cli_env, tmp_path, "chat", "--user", "alice", stdin=b"/save cr\xe8me\n/memory list\n"
    )
    assert proc.returncode == 0, proc.stderr
    assert b"Traceback" not in proc.stderr
    out = strict_utf8(proc.stdout)
    assert "Saved as #1" in out
    assert "cr\ufffdme" in out


def test_index_refuses_a_path_that_is_not_utf8_without_a_traceback(
    cli_env: dict[str, str], tmp_path: Path
) -> None:
    # The path is kept as text in the database; its raw byte used to crash the insert.
    root = os.fsencode(tmp_path) + b"/caf\xe9"
    os.mkdir(root)
    with open(root + b"/app.py", "wb") as f:
        f.write(b"def hello():\n    return 1\n")
    proc = run_cli_bytes(cli_env, tmp_path, "index", root, "--name", "cafe")
    assert proc.returncode == 1
    err = strict_utf8(proc.stderr)
    assert "Traceback" not in err
    assert "not UTF-8" in err
    assert "caf\ufffd" in err
