"""The tool dispatcher (core/tools/dispatcher.py) with a real database and real sessions.

Every rule of the chain `lookup -> permit -> size -> validate -> budget -> run -> cap -> audit`
has a test here that fails if the rule is removed.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import threading
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
from pydantic import Field

from core.errors import ToolError
from core.policy import Policy
from core.request import Request
from core.session import ToolSession, open_session
from core.store.engine import Database
from core.tools.audit import AuditLog
from core.tools.context import ToolContext
from core.tools.dispatcher import (
    DEFAULT_MAX_ARGS_CHARS,
    Dispatcher,
    ProposedCall,
    ToolOutcome,
)
from core.tools.registry import Tool, ToolArgs, ToolRegistry, tool

SECRET = "sk-THIS-IS-A-FAKE-SECRET-9f3a71"

# -- test tools ------------------------------------------------------------------------------
# Every tool records its runs in the test's `runs`, so a test can prove that a rejected call
# never ran.


@dataclass
class Runs:
    calls: list[tuple[str, Any]] = field(default_factory=list)
    threads: list[threading.Thread] = field(default_factory=list)
    # What `sync_hang` blocks on until the test lets it finish.
    release: threading.Event = field(default_factory=threading.Event)

    def names(self) -> list[str]:
        return [name for name, _ in self.calls]


class EchoArgs(ToolArgs):
    text: str = Field(description="Text to echo back.")
    times: int = Field(1, ge=1, le=3)


class NoArgs(ToolArgs):
    pass


class SizeArgs(ToolArgs):
    size: int = Field(ge=0)


class WhoArgs(ToolArgs):
    note: str = ""


def make_tools(runs: Runs) -> tuple[Tool, ...]:
    """The test tools, recording into `runs`."""

    @tool(name="echo", permission="ask")
    async def echo(ctx: ToolContext, args: EchoArgs) -> str:
        """Echo the text back."""
        runs.calls.append(("echo", args))
        return args.text * args.times

    @tool(name="admin_only", permission="admin")
    async def admin_only(ctx: ToolContext, args: NoArgs) -> str:
        """Something only admins may do."""
        runs.calls.append(("admin_only", args))
        return "admin secret stuff"

    @tool(name="sync_tool", permission="ask")
    def sync_tool(ctx: ToolContext, args: NoArgs) -> str:
        """A blocking (sync) tool."""
        runs.calls.append(("sync_tool", args))
        runs.threads.append(threading.current_thread())
        return "sync done"

    @tool(name="big", permission="ask")
    async def big(ctx: ToolContext, args: SizeArgs) -> str:
        """Return `size` characters."""
        runs.calls.append(("big", args))
        return "x" * args.size

    @tool(name="structured", permission="ask")
    async def structured(ctx: ToolContext, args: NoArgs) -> Any:
        """Return a non-string result."""
        runs.calls.append(("structured", args))
        return {"answer": 42, "items": ["a", "b"]}

    @tool(name="tool_error", permission="ask")
    async def tool_error(ctx: ToolContext, args: NoArgs) -> str:
        """Fails in a way the model can fix."""
        runs.calls.append(("tool_error", args))
        raise ToolError("no file named 'README.md' in repo 'demo'; try 'readme.rst'")

    @tool(name="crash", permission="ask")
    async def crash(ctx: ToolContext, args: NoArgs) -> str:
        """Fails unexpectedly."""
        runs.calls.append(("crash", args))
        raise RuntimeError(f"internal detail: connection to db://admin:{SECRET}@host refused")

    @tool(name="hang", permission="ask", timeout=0.05)
    async def hang(ctx: ToolContext, args: NoArgs) -> str:
        """Never finishes (waits on an event nobody sets)."""
        runs.calls.append(("hang", args))
        await asyncio.Event().wait()
        return "unreachable"

    @tool(name="sync_hang", permission="ask", timeout=0.05)
    def sync_hang(ctx: ToolContext, args: NoArgs) -> str:
        """A blocking tool that blocks until the test releases it."""
        runs.calls.append(("sync_hang", args))
        runs.release.wait(timeout=5)
        return "late"

    @tool(name="whoami", permission="ask")
    async def whoami(ctx: ToolContext, args: WhoArgs) -> str:
        """Report the identity and permissions the tool runs with."""
        runs.calls.append(("whoami", args))
        s = ctx.session
        return json.dumps({"user": s.identity.user, "permissions": sorted(s.permissions)})

    return (
        echo,
        admin_only,
        sync_tool,
        big,
        structured,
        tool_error,
        crash,
        hang,
        sync_hang,
        whoami,
    )


# -- fixtures --------------------------------------------------------------------------------

POLICY: dict[str, Any] = {
    "defaults": {
        "permissions": ["ask"],
        "budgets": {"tool_calls_per_request": 3, "iterations_per_request": 5},
    },
    "rules": [{"name": "admins", "match": {"roles": ["admin"]}, "grant": ["admin"]}],
}


def make_session(
    *, user: str = "alice", roles: tuple[str, ...] = (), policy: dict[str, Any] | None = None
) -> ToolSession:
    request = Request(
        platform="slack",
        tenant="T1",
        channel="C1",
        thread="th-1",
        user=user,
        roles=roles,
        text="question",
    )
    return open_session(request, Policy.from_dict(policy or POLICY))


@pytest.fixture
async def db(tmp_path: Path) -> AsyncIterator[Database]:
    """SQLite for the rules that do not depend on the backend; the audit test runs on both."""
    database = Database(f"sqlite:///{tmp_path / 'unit.db'}")
    yield database
    await database.dispose()


@dataclass
class Harness:
    db: Database
    registry: ToolRegistry
    dispatcher: Dispatcher
    session: ToolSession

    @property
    def ctx(self) -> ToolContext:
        return ToolContext(session=self.session, db=self.db)

    async def call(
        self, name: str, args: dict[str, Any] | str = "{}", call_id: str = "c1"
    ) -> ToolOutcome:
        raw = args if isinstance(args, str) else json.dumps(args)
        return await self.dispatcher.dispatch(self.ctx, ProposedCall(call_id, name, raw))

    async def audit_rows(self) -> list[Any]:
        from sqlmodel import col, select

        from core.store.models import AuditEntry

        async with self.db.session() as s:
            return list((await s.exec(select(AuditEntry).order_by(col(AuditEntry.id)))).all())


@pytest.fixture
def runs() -> Runs:
    return Runs()


@pytest.fixture
def tools(runs: Runs) -> tuple[Tool, ...]:
    return make_tools(runs)


def make_harness(
    db: Database, tools: tuple[Tool, ...], session: ToolSession | None = None, **limits: Any
) -> Harness:
    registry = ToolRegistry(tools)
    return Harness(
        db=db,
        registry=registry,
        dispatcher=Dispatcher(registry, AuditLog(db), **limits),
        session=session or make_session(),
    )


@pytest.fixture
def h(db: Database, tools: tuple[Tool, ...]) -> Harness:
    return make_harness(db, tools)


# -- the happy path --------------------------------------------------------------------------


async def test_valid_call_runs_the_tool_and_returns_its_result(h: Harness, runs: Runs) -> None:
    out = await h.call("echo", {"text": "ab", "times": 2}, call_id="call-7")
    assert out == ToolOutcome(
        ProposedCall("call-7", "echo", '{"text": "ab", "times": 2}'), True, "ok", "abab"
    )
    assert runs.names() == ["echo"]


async def test_empty_argument_string_means_no_arguments(h: Harness) -> None:
    out = await h.call("whoami", "")
    assert out.ok, out
    assert json.loads(out.content)["user"] == "alice"


async def test_non_string_results_are_sent_as_json(h: Harness) -> None:
    out = await h.call("structured")
    assert out.ok
    assert json.loads(out.content) == {"answer": 42, "items": ["a", "b"]}


# -- lookup ----------------------------------------------------------------------------------


async def test_unknown_tool_is_rejected(h: Harness, runs: Runs) -> None:
    out = await h.call("rm_rf", {"path": "/"})
    assert (out.ok, out.code) == (False, "unknown_tool")
    assert "rm_rf" in out.content and out.content.startswith("Error:")
    assert runs.calls == []


async def test_unknown_tool_name_is_not_echoed_at_length(h: Harness) -> None:
    out = await h.call("x" * 5000)
    assert out.code == "unknown_tool"
    assert len(out.content) < 200


# -- size ------------------------------------------------------------------------------------


def _echo_args_of_length(n: int) -> str:
    raw = json.dumps({"text": ""})
    raw = json.dumps({"text": "a" * (n - len(raw))})
    assert len(raw) == n
    return raw


async def test_default_args_limit_is_4000_characters(h: Harness, runs: Runs) -> None:
    assert DEFAULT_MAX_ARGS_CHARS == 4_000
    at_limit = await h.call("echo", _echo_args_of_length(4_000))
    assert at_limit.ok, at_limit
    over = await h.call("echo", _echo_args_of_length(4_001))
    assert (over.ok, over.code) == (False, "args_too_large")
    assert "4001" in over.content and "4000" in over.content
    assert len(runs.calls) == 1  # only the call at the limit ran


async def test_custom_args_limit(db: Database, tools: tuple[Tool, ...], runs: Runs) -> None:
    h = make_harness(db, tools, max_args_chars=50)
    assert (await h.call("echo", _echo_args_of_length(50))).ok
    over = await h.call("echo", _echo_args_of_length(51))
    assert over.code == "args_too_large"
    assert len(runs.calls) == 1


async def test_size_is_checked_before_parsing(h: Harness) -> None:
    out = await h.call("echo", "{" * 4_001)  # oversized *and* invalid JSON
    assert out.code == "args_too_large"


# -- validation ------------------------------------------------------------------------------


@pytest.mark.parametrize("raw", ['{"text": "a"', "not json at all", "{'text': 'a'}"])
async def test_invalid_json_is_rejected(h: Harness, raw: str, runs: Runs) -> None:
    out = await h.call("echo", raw)
    assert (out.ok, out.code) == (False, "invalid_args")
    assert "not valid JSON" in out.content
    assert runs.calls == []


@pytest.mark.parametrize("raw", ['["text", "a"]', '"a"', "42", "null"])
async def test_non_object_json_is_rejected(h: Harness, raw: str, runs: Runs) -> None:
    out = await h.call("echo", raw)
    assert (out.ok, out.code) == (False, "invalid_args")
    assert "JSON object" in out.content
    assert runs.calls == []


@pytest.mark.parametrize(
    ("args", "field"),
    [
        ({}, "text"),  # missing required field
        ({"text": "a", "times": 9}, "times"),  # out of range
        ({"text": ["a"]}, "text"),  # wrong type
    ],
)
async def test_schema_invalid_args_are_rejected(
    h: Harness, args: dict[str, Any], field: str, runs: Runs
) -> None:
    out = await h.call("echo", args)
    assert (out.ok, out.code) == (False, "invalid_args")
    assert field in out.content
    assert runs.calls == []


async def test_validation_errors_do_not_echo_argument_values(h: Harness) -> None:
    out = await h.call("echo", {"text": "a", "times": SECRET})
    assert out.code == "invalid_args"
    assert "times" in out.content
    assert SECRET not in out.content


# -- identity cannot come from arguments -----------------------------------------------------


@pytest.mark.parametrize(
    "extra",
    [
        {"user": "root"},
        {"permissions": ["admin", "memory.delete"]},
        {"user": "root", "roles": ["admin"], "session": {"user": "root"}},
    ],
)
async def test_model_cannot_pass_identity_or_permissions_in_arguments(
    h: Harness, extra: dict[str, Any], runs: Runs
) -> None:
    before = (h.session.identity, h.session.permissions, h.session.budgets)
    out = await h.call("whoami", {"note": "hi", **extra})
    assert (out.ok, out.code) == (False, "invalid_args")
    for key in extra:
        assert key in out.content  # the model is told which key is not allowed
    assert runs.calls == []
    assert (h.session.identity, h.session.permissions, h.session.budgets) == before
    assert h.session.identity.user == "alice"
    assert "admin" not in h.session.permissions

    # The identity a tool sees is still the verified one.
    ok = await h.call("whoami", {"note": "again"})
    assert json.loads(ok.content) == {"user": "alice", "permissions": ["ask"]}


async def test_admin_only_tool_stays_denied_when_arguments_claim_admin(
    h: Harness, runs: Runs
) -> None:
    out = await h.call("admin_only", {"roles": ["admin"], "permissions": ["admin"]})
    assert not out.ok
    assert "admin_only" not in runs.names()
    assert not h.session.allows("admin")


async def test_session_is_not_part_of_any_tool_schema(tools: tuple[Tool, ...]) -> None:
    registry = ToolRegistry(tools)
    admin = make_session(roles=("admin",))
    schemas = await registry.offered(admin)
    assert {s["function"]["name"] for s in schemas} == {t.name for t in tools}
    for s in schemas:
        params: Any = s["function"]["parameters"]
        assert params["type"] == "object"
        assert params.get("additionalProperties") is False
        props = set(params.get("properties", {}))
        assert not props & {"ctx", "session", "user", "permissions", "identity", "roles"}
        dumped = json.dumps(s)
        for word in ("ToolContext", "ToolSession", "session", "ctx"):
            assert word not in dumped, (s["function"]["name"], word)
    by_name: dict[str, Any] = {s["function"]["name"]: s["function"] for s in schemas}
    assert set(by_name["echo"]["parameters"]["properties"]) == {"text", "times"}
    assert by_name["echo"]["parameters"]["required"] == ["text"]
    assert by_name["echo"]["description"] == "Echo the text back."


async def test_schemas_list_only_permitted_tools(tools: tuple[Tool, ...]) -> None:
    registry = ToolRegistry(tools)
    user_names = [s["function"]["name"] for s in await registry.offered(make_session())]
    admin = make_session(roles=("admin",))
    admin_names = [s["function"]["name"] for s in await registry.offered(admin)]
    assert "admin_only" not in user_names
    assert "echo" in user_names
    assert "admin_only" in admin_names
    nothing = make_session(policy={"defaults": {"permissions": []}})
    assert await registry.offered(nothing) == []


# -- permission ------------------------------------------------------------------------------


async def test_denied_permission_is_rejected_before_the_tool_runs(h: Harness, runs: Runs) -> None:
    out = await h.call("admin_only")
    assert (out.ok, out.code, out.permission) == (False, "permission_denied", "admin")
    assert "not permitted" in out.content
    assert "admin secret stuff" not in out.content
    assert runs.calls == []


async def test_permission_is_checked_before_the_arguments(h: Harness, runs: Runs) -> None:
    # A tool the session may not use must not teach the model its argument schema, and the
    # user must hear about the missing permission rather than about bad arguments.
    out = await h.call("admin_only", json.dumps({"bogus": 1}))
    assert (out.code, out.permission) == ("permission_denied", "admin")
    assert "bogus" not in out.content
    assert runs.calls == []


async def test_permitted_session_runs_the_same_tool(
    db: Database, tools: tuple[Tool, ...], runs: Runs
) -> None:
    h = make_harness(db, tools, make_session(roles=("admin",)))
    out = await h.call("admin_only")
    assert (out.ok, out.code, out.permission) == (True, "ok", None)
    assert runs.names() == ["admin_only"]


async def test_denied_by_a_rule_overrides_defaults(
    db: Database, tools: tuple[Tool, ...], runs: Runs
) -> None:
    policy = {
        "defaults": {"permissions": ["ask"]},
        "rules": [{"match": {"user": "mallory"}, "deny": ["ask"]}],
    }
    h = make_harness(db, tools, make_session(user="mallory", policy=policy))
    out = await h.call("echo", {"text": "a"})
    assert (out.code, out.permission) == ("permission_denied", "ask")
    assert runs.calls == []


# -- budget ----------------------------------------------------------------------------------


async def test_budget_exhausted_on_the_n_plus_first_call(h: Harness, runs: Runs) -> None:
    assert h.session.budgets.tool_calls_per_request == 3
    for i in range(3):
        assert (await h.call("echo", {"text": str(i)})).ok
    out = await h.call("echo", {"text": "one too many"})
    assert (out.ok, out.code) == (False, "budget_exhausted")
    assert "budget" in out.content
    assert len(runs.calls) == 3
    assert h.session.counters.tool_calls == 4


async def test_failed_and_rejected_calls_count_against_the_budget(h: Harness, runs: Runs) -> None:
    assert (await h.call("no_such_tool")).code == "unknown_tool"
    assert (await h.call("echo", "{bad json")).code == "invalid_args"
    assert (await h.call("tool_error")).code == "tool_error"
    out = await h.call("echo", {"text": "fine otherwise"})
    assert out.code == "budget_exhausted"
    assert runs.names() == ["tool_error"]


async def test_denied_calls_count_against_the_budget(h: Harness, runs: Runs) -> None:
    for _ in range(3):
        assert (await h.call("admin_only")).code == "permission_denied"
    assert (await h.call("echo", {"text": "a"})).code == "budget_exhausted"
    assert runs.calls == []


async def test_budget_is_per_session(db: Database, tools: tuple[Tool, ...]) -> None:
    h = make_harness(db, tools)
    for _ in range(4):
        await h.call("echo", {"text": "a"})
    h.session = make_session()  # the next request starts with a fresh budget
    assert (await h.call("echo", {"text": "b"})).ok


async def test_zero_budget_allows_no_call(
    db: Database, tools: tuple[Tool, ...], runs: Runs
) -> None:
    policy = {"defaults": {"permissions": ["ask"], "budgets": {"tool_calls_per_request": 0}}}
    h = make_harness(db, tools, make_session(policy=policy))
    assert (await h.call("echo", {"text": "a"})).code == "budget_exhausted"
    assert runs.calls == []


# -- running ---------------------------------------------------------------------------------


async def test_results_over_the_cap_are_truncated_with_a_marker(
    db: Database, tools: tuple[Tool, ...]
) -> None:
    h = make_harness(db, tools, max_result_chars=100)
    exact = await h.call("big", {"size": 100})
    assert exact.content == "x" * 100
    out = await h.call("big", {"size": 250})
    assert out.ok
    assert out.content == "x" * 100 + "\n[truncated 150 characters]"


async def test_default_result_cap(h: Harness) -> None:
    out = await h.call("big", {"size": 20_000})
    assert out.content.startswith("x" * 8_000 + "\n[truncated 12000 characters]")
    assert len(out.content) < 8_100


async def test_tool_error_text_goes_to_the_model(h: Harness) -> None:
    out = await h.call("tool_error")
    assert (out.ok, out.code) == (False, "tool_error")
    assert out.content == "Error: no file named 'README.md' in repo 'demo'; try 'readme.rst'"


async def test_unexpected_exception_gives_a_fixed_text_without_traceback(
    h: Harness, caplog: pytest.LogCaptureFixture
) -> None:
    out = await h.call("crash")
    assert (out.ok, out.code) == (False, "internal_error")
    assert out.content == "Error: the tool failed."
    for leak in ("Traceback", "RuntimeError", "internal detail", SECRET):
        assert leak not in out.content
    # ... but the operator gets the whole story in the log.
    assert any(r.exc_info and "crash" in r.getMessage() for r in caplog.records)


async def test_async_tool_timeout(h: Harness, runs: Runs) -> None:
    async with asyncio.timeout(10):  # without the dispatcher's timeout: fail, do not hang
        out = await h.call("hang")
    assert (out.ok, out.code) == (False, "timeout")
    assert out.content == "Error: the tool timed out."
    assert runs.names() == ["hang"]
    # The next call still works: the hung tool was cancelled, not left blocking anything.
    assert (await h.call("echo", {"text": "a"})).ok


async def test_sync_tool_timeout_does_not_block_the_event_loop(h: Harness, runs: Runs) -> None:
    try:
        async with asyncio.timeout(10):
            out = await h.call("sync_hang")
        assert (out.ok, out.code) == (False, "timeout")
    finally:
        runs.release.set()  # let the worker thread finish


async def test_sync_tools_run_off_the_event_loop(h: Harness, runs: Runs) -> None:
    loop_thread = threading.current_thread()
    out = await h.call("sync_tool")
    assert out.content == "sync done"
    assert len(runs.threads) == 1
    assert runs.threads[0] is not loop_thread


# -- audit -----------------------------------------------------------------------------------


async def test_every_call_writes_one_audit_row_without_raw_arguments(
    database_url: str, monkeypatch: pytest.MonkeyPatch, tools: tuple[Tool, ...]
) -> None:
    db = Database(database_url)
    try:
        h = make_harness(db, tools)
        calls: list[tuple[str, str, str]] = [
            ("echo", json.dumps({"text": SECRET}), "ok"),
            ("echo", json.dumps({"text": "a", "api_key": SECRET}), "invalid_args"),
            ("admin_only", json.dumps({"token": SECRET}), "permission_denied"),
            ("nope", json.dumps({"password": SECRET}), "unknown_tool"),
        ]
        outcomes = [await h.call(name, raw) for name, raw, _ in calls]
        assert [o.code for o in outcomes] == [code for _, _, code in calls]
        denied = await h.call("admin_only", "{}")
        assert denied.code == "permission_denied"

        rows = await h.audit_rows()
        assert len(rows) == 5
        for row, (name, raw, code) in zip(rows, calls, strict=False):
            assert (row.tool, row.outcome) == (name, code)
            assert row.args_chars == len(raw)
            assert row.args_sha256 == hashlib.sha256(raw.encode()).hexdigest()
        assert (rows[4].tool, rows[4].outcome) == ("admin_only", "permission_denied")
        for row in rows:
            assert (row.platform, row.tenant, row.channel, row.thread, row.user) == (
                "slack",
                "T1",
                "C1",
                "th-1",
                "alice",
            )
            assert row.request_id == h.session.request_id
            at = row.at if row.at.tzinfo else row.at.replace(tzinfo=UTC)
            # wall clock: the audit log stamps rows by the real clock (no clock is injected)
            assert abs((datetime.now(UTC) - at).total_seconds()) < 120  # wall clock: as above
            assert SECRET not in json.dumps(row.model_dump(), default=str)
    finally:
        await db.dispose()


async def test_audit_records_failures_and_duration(
    db: Database, monkeypatch: pytest.MonkeyPatch, tools: tuple[Tool, ...]
) -> None:
    policy = {"defaults": {"permissions": ["ask"], "budgets": {"tool_calls_per_request": 10}}}
    h = make_harness(db, tools, make_session(policy=policy))

    class FakeTime:
        now = 100.0

        @classmethod
        def monotonic(cls) -> float:
            return cls.now

    @tool(name="slow", permission="ask")
    async def slow(ctx: ToolContext, args: NoArgs) -> str:
        """Takes 1.5 s of (fake) time."""
        FakeTime.now += 1.5
        return "done"

    import core.tools.dispatcher as dispatcher_module

    monkeypatch.setattr(dispatcher_module, "time", FakeTime)
    h.registry.add(slow)
    await h.call("slow")
    await h.call("crash")
    await h.call("tool_error")
    await h.call("hang")
    rows = await h.audit_rows()
    assert [(r.tool, r.outcome) for r in rows] == [
        ("slow", "ok"),
        ("crash", "internal_error"),
        ("tool_error", "tool_error"),
        ("hang", "timeout"),
    ]
    assert rows[0].duration_ms == 1500
    assert rows[1].detail == "RuntimeError"  # the type, not the message
    assert SECRET not in rows[1].detail
