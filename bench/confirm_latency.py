"""Confirmation benchmark (not a pytest test): what the SQL-backed confirmations cost and how
soon a waiting request goes on after the requester's answer.

- poll: one look at the row (`ConfirmationStore.get`), done every 0.5 s per waiting call;
- answer: the conditional UPDATE of a click (plus its read of the row);
- same process: from the click's `gate.answer` to the tool having run (the gate is woken);
- other process: the click answered through another `Database` handle (another process's
  view): from its answer to the tool having run in the waiting process (noticed by polling,
  so about half the poll interval on average, at most one interval plus a query).

    python bench/confirm_latency.py [--rounds N] [--postgres URL] [--append bench/RESULTS.md]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import random
import secrets
import sys
import tempfile
import time
from collections.abc import Awaitable, Callable
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from pydantic import BaseModel  # noqa: E402

from bench.machine import append_results, percentile  # noqa: E402
from core.mcp.confirm import DEFAULT_POLL, ConfirmationGate, ConfirmationPrompt  # noqa: E402
from core.mcp.confirm_store import ConfirmationStore  # noqa: E402
from core.policy import Policy  # noqa: E402
from core.request import Request  # noqa: E402
from core.session import open_session  # noqa: E402
from core.store.engine import Database  # noqa: E402
from core.tools.audit import AuditLog  # noqa: E402
from core.tools.context import ToolContext  # noqa: E402
from core.tools.dispatcher import Dispatcher, ProposedCall  # noqa: E402
from core.tools.registry import Tool, ToolArgs, ToolRegistry  # noqa: E402


class _Args(ToolArgs):
    item_id: int


class _Asked:
    def __init__(self) -> None:
        self.prompts: asyncio.Queue[ConfirmationPrompt] = asyncio.Queue()

    async def ask(self, prompt: ConfirmationPrompt) -> None:
        self.prompts.put_nowait(prompt)


async def _done(_ctx: ToolContext, args: BaseModel) -> str:
    return "done"


def _parts(db: Database) -> tuple[ConfirmationGate, Dispatcher, _Asked]:
    tool = Tool("delete_item", "Delete.", _Args, "ask", _done, confirm=True)
    gate = ConfirmationGate(ConfirmationStore(db), timeout=60)
    asked = _Asked()
    gate.register("slack", asked)
    return gate, Dispatcher(ToolRegistry([tool]), AuditLog(db), confirm=gate), asked


async def _round(
    dispatcher: Dispatcher, asked: _Asked, db: Database, answer: Callable[[str], Awaitable[Any]]
) -> float:
    request = Request(
        platform="slack", tenant="T1", channel="C1", thread="t", user="U1", roles=(), text="q"
    )
    session = open_session(request, Policy.from_dict({"defaults": {"permissions": ["ask"]}}))
    call = ProposedCall("c", "delete_item", json.dumps({"item_id": 1}))
    task = asyncio.create_task(dispatcher.dispatch(ToolContext(session=session, db=db), call))
    prompt = await asked.prompts.get()
    # Clicks come at any moment of the waiter's poll cycle.
    await asyncio.sleep(random.uniform(0.01, DEFAULT_POLL))
    began = time.perf_counter()
    assert (await answer(prompt.id)).counted
    outcome = await task
    assert outcome.ok
    return (time.perf_counter() - began) * 1000


async def measure(url: str, rounds: int) -> dict[str, list[float]]:
    db, other = Database(url), Database(url)
    await db.create_all()
    await other.create_all()
    gate, dispatcher, asked = _parts(db)
    out: dict[str, list[float]] = {"poll": [], "answer": [], "same": [], "other": []}
    elsewhere = ConfirmationStore(other)
    for _ in range(rounds):
        out["same"].append(
            await _round(dispatcher, asked, db, lambda i: gate.answer(i, "U1", True))
        )
        out["other"].append(
            await _round(
                dispatcher, asked, db, lambda i: elsewhere.answer(i, user="U1", approve=True)
            )
        )
    # The bare statements, on rows of their own.
    store = ConfirmationStore(db)
    prompts = [_prompt(n) for n in range(rounds)]
    for prompt in prompts:
        await store.create(prompt)
    for prompt in prompts:
        began = time.perf_counter()
        await store.get(prompt.id)
        out["poll"].append((time.perf_counter() - began) * 1000)
    for prompt in prompts:
        began = time.perf_counter()
        assert (await store.answer(prompt.id, user="U1", approve=False)).counted
        out["answer"].append((time.perf_counter() - began) * 1000)
    await db.dispose()
    await other.dispose()
    return out


def _prompt(n: int) -> ConfirmationPrompt:
    return ConfirmationPrompt(
        id=secrets.token_urlsafe(18),
        request_id=f"bench-{n}",
        platform="slack",
        tenant="T1",
        channel="C1",
        thread="t",
        user="U1",
        tool="t.delete_item",
        arguments='{"item_id": 1}',
        expires_at=datetime.now(UTC) + timedelta(minutes=5),
    )


def _row(name: str, values: list[float]) -> str:
    return (
        f"| {name} | {len(values)} | {percentile(values, 50):.1f} | {percentile(values, 95):.1f} "
        f"| {max(values):.1f} |"
    )


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=40)
    parser.add_argument("--postgres", help="also measure on this PostgreSQL URL")
    parser.add_argument("--append", type=Path, help="append the results to this Markdown file")
    args = parser.parse_args()
    tables = []
    with tempfile.TemporaryDirectory() as tmp:
        backends = {"SQLite": f"sqlite:///{tmp}/bench.db"}
        if args.postgres:
            backends["PostgreSQL"] = args.postgres
        for name, url in backends.items():
            got = await measure(url, args.rounds)
            rows = [
                _row("poll (one look at the row)", got["poll"]),
                _row("answer (conditional UPDATE + read)", got["answer"]),
                _row("answer -> tool ran, same process", got["same"]),
                _row("answer -> tool ran, other process", got["other"]),
            ]
            tables.append(
                f"{name}:\n\n| what | n | p50 (ms) | p95 (ms) | max (ms) |\n"
                "|---|---:|---:|---:|---:|\n" + "\n".join(rows)
            )
    body = "\n\n".join(tables) + (
        f"\n\nPoll interval {DEFAULT_POLL:g} s. The other-process latency is bounded by one "
        "poll interval plus a poll; the same-process one by the wake-up and the tool run."
    )
    print(body)
    if args.append:
        append_results(args.append, "MCP confirmations: SQL cost and answer latency", body)


if __name__ == "__main__":
    asyncio.run(main())
