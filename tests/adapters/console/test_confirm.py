"""The console's confirmation prompt (adapters/console/repl.py) with the core gate."""

from __future__ import annotations

import asyncio
import io
import os
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta

import pytest
from rich.console import Console

from adapters.console.repl import ConsoleConfirmer, _LineReader
from adapters.console.translate import ConsoleIdentity
from core.mcp.confirm import ConfirmationGate, ConfirmationPrompt
from core.mcp.confirm_store import ConfirmationStore
from core.store.engine import Database


@pytest.fixture
def pipe() -> Iterator[tuple[int, int]]:
    read, write = os.pipe()
    yield read, write
    os.close(read)
    os.close(write)


def _prompt(gate: ConfirmationGate, seconds: float) -> ConfirmationPrompt:
    return ConfirmationPrompt(
        id="p1",
        request_id="r1",
        platform="console",
        tenant="local",
        channel="console",
        thread="t",
        user="alice",
        tool="t.delete_item",
        arguments='{"item_id": 1}',
        expires_at=datetime.now(UTC) + timedelta(seconds=seconds),  # wall clock: repl waits it out
    )


@pytest.mark.parametrize(("typed", "approved"), [(b"y\n", True), (b"no\n", False), (b"\n", False)])
async def test_the_typed_answer_is_passed_to_the_gate(
    pipe: tuple[int, int], typed: bytes, approved: bool
) -> None:
    read, write = pipe
    out = io.StringIO()
    gate = ConfirmationGate(ConfirmationStore(Database("sqlite://")))
    answers: list[tuple[str, str, bool]] = []

    async def answer(confirmation_id: str, user: str, approve: bool) -> str:
        answers.append((confirmation_id, user, approve))
        return "counted"

    gate.answer = answer  # type: ignore[method-assign,assignment]
    reader = _LineReader(read)
    confirmer = ConsoleConfirmer(Console(file=out), reader, gate, ConsoleIdentity(user="alice"))
    await confirmer.ask(_prompt(gate, 5))
    assert "Run `t.delete_item`" in out.getvalue()
    os.write(write, typed)
    async with asyncio.timeout(5):
        while not answers:  # noqa: ASYNC110  (the answer arrives from a reader thread)
            await asyncio.sleep(0.01)
    assert answers == [("p1", "alice", approved)]


async def test_a_line_typed_after_the_prompt_expired_goes_to_the_chat(
    pipe: tuple[int, int],
) -> None:
    read, write = pipe
    out = io.StringIO()
    gate = ConfirmationGate(ConfirmationStore(Database("sqlite://")))
    reader = _LineReader(read)
    confirmer = ConsoleConfirmer(Console(file=out), reader, gate, ConsoleIdentity(user="alice"))
    await confirmer.ask(_prompt(gate, 0.1))
    async with asyncio.timeout(5):
        while "not run" not in out.getvalue():  # noqa: ASYNC110
            await asyncio.sleep(0.01)
    os.write(write, b"next question\n")
    async with asyncio.timeout(5):
        assert await reader.readline() == "next question"
