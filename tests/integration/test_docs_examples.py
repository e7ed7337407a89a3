"""The worked examples of docs/extending.md run against the real registries: the page includes
these files, so what it shows is what runs here."""

from __future__ import annotations

import importlib.util
import json
import sys
from collections.abc import AsyncIterator
from pathlib import Path
from types import ModuleType

import pytest
from sqlmodel import col, select

from core.policy import Policy
from core.request import Request
from core.session import ToolSession, open_session
from core.store.engine import Database
from core.store.models import AuditEntry
from core.tools.audit import AuditLog
from core.tools.context import ToolContext
from core.tools.dispatcher import Dispatcher, ProposedCall
from core.tools.registry import ToolRegistry

EXAMPLES = Path(__file__).resolve().parents[2] / "docs" / "examples"


def load(name: str) -> ModuleType:
    """docs/examples is not a package: each example is loaded by path, as a plugin file would be."""
    spec = importlib.util.spec_from_file_location(f"docs_examples_{name}", EXAMPLES / f"{name}.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # pydantic resolves the argument model's annotations here
    spec.loader.exec_module(module)
    return module


def session(*permissions: str) -> ToolSession:
    request = Request(
        platform="console",
        tenant="T1",
        channel="C1",
        thread="t1",
        user="alice",
        roles=(),
        text="who is on call for payments?",
    )
    return open_session(request, Policy.from_dict({"defaults": {"permissions": list(permissions)}}))


@pytest.fixture
async def db(tmp_path: Path) -> AsyncIterator[Database]:
    database = Database(f"sqlite:///{tmp_path / 'threadline.db'}")
    yield database
    await database.dispose()


async def test_the_tool_example_runs_through_the_dispatcher(db: Database) -> None:
    example = load("oncall_tool")
    tool = example.who_is_on_call
    schema = tool.schema()["function"]
    assert schema["name"] == "who_is_on_call"
    assert schema["description"].startswith("Who is on call this week for a team.")
    assert schema["parameters"]["required"] == ["team"]

    dispatcher = Dispatcher(ToolRegistry([tool]), AuditLog(db))
    ctx = ToolContext(session=session("ask"), db=db)

    def call(args: dict[str, object]) -> ProposedCall:
        return ProposedCall("c1", "who_is_on_call", json.dumps(args))

    found = await dispatcher.dispatch(ctx, call({"team": "payments"}))
    assert (found.ok, found.content) == (True, "alice is on call for payments this week.")
    unknown = await dispatcher.dispatch(ctx, call({"team": "mobile"}))
    assert (unknown.ok, unknown.code) == (False, "tool_error")
    assert "known teams: payments, search" in unknown.content
    smuggled = await dispatcher.dispatch(ctx, call({"team": "payments", "user": "root"}))
    assert (smuggled.ok, smuggled.code) == (False, "invalid_args")

    no_ask = ToolContext(session=session(), db=db)
    denied = await dispatcher.dispatch(no_ask, call({"team": "payments"}))
    assert (denied.ok, denied.code, denied.permission) == (False, "permission_denied", "ask")

    async with db.session() as s:
        rows = (await s.exec(select(AuditEntry).order_by(col(AuditEntry.id)))).all()
    assert [(r.tool, r.outcome) for r in rows] == [
        ("who_is_on_call", "ok"),
        ("who_is_on_call", "tool_error"),
        ("who_is_on_call", "invalid_args"),
        ("who_is_on_call", "permission_denied"),
    ]
    assert all(r.args_sha256 and "payments" not in r.detail for r in rows)
