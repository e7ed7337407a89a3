"""The interactive console channel (`threadline chat`, and `threadline run` without tokens)."""

from __future__ import annotations

import asyncio
import os
import sys
import threading
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING

from adapters.console.stream import AnswerView
from adapters.console.translate import (
    PLATFORM,
    ConsoleIdentity,
    save_attachments,
    sources_line,
    to_request,
)
from core.mcp.confirm import FULL_ARGUMENTS
from core.service import Core

if TYPE_CHECKING:
    from rich.console import Console

    from core.mcp.confirm import ConfirmationGate, ConfirmationPrompt

BANNER = (
    "Threadline console — you are {user} in #{channel} (thread {thread}). "
    "Type /help for commands, Ctrl-D or /quit to leave."
)


async def chat(
    core: Core,
    who: ConsoleIdentity,
    attachments_dir: Path,
    confirmations: ConfirmationGate | None = None,
) -> int:
    from rich.console import Console

    console = Console()
    console.print(BANNER.format(user=who.user, channel=who.channel, thread=who.thread), style="dim")
    if not core.model_configured:
        console.print("No language model configured (LLM_BASE_URL / LLM_MODEL).", style="yellow")
    reader = _LineReader(sys.stdin.fileno())
    if confirmations is not None:
        confirmations.register(PLATFORM, ConsoleConfirmer(console, reader, confirmations, who))
    while True:
        console.print("[bold cyan]you>[/] ", end="")
        try:
            line = await reader.readline()
        except (EOFError, KeyboardInterrupt):
            console.print()
            return 0
        if line.strip() in ("/quit", "/exit"):
            return 0
        reply = await AnswerView(console).show(core.stream(to_request(line, who)))
        for path in save_attachments(reply, attachments_dir):
            console.print(f"[attachment saved: {path}]", style="dim")
        for notice in reply.notices:
            console.print(notice, style="yellow")
        if reply.sources:  # model and file text: never read as markup
            console.print(sources_line(reply), style="dim", markup=False)


class ConsoleConfirmer:
    """Asks the console user to confirm a tool call with side effects (`y` to run it). The
    console user is the requesting user, so the answer is passed on as theirs."""

    def __init__(
        self, console: Console, reader: _LineReader, gate: ConfirmationGate, who: ConsoleIdentity
    ) -> None:
        self._console = console
        self._reader = reader
        self._gate = gate
        self._user = who.user
        self._tasks: set[asyncio.Task[None]] = set()

    async def ask(self, prompt: ConfirmationPrompt) -> None:
        # The arguments are the model's text: printed as they are, never read as rich markup
        # (a "[/]" in them would end the prompt with an exception).
        if prompt.abridged:
            self._console.print(f"{FULL_ARGUMENTS}:", style="yellow", markup=False)
            self._console.print(prompt.details, markup=False, highlight=False, soft_wrap=True)
        self._console.print(
            f"{prompt.text} [y/N] ", style="bold yellow", end="", markup=False, highlight=False
        )
        task = asyncio.get_running_loop().create_task(self._wait(prompt))
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    async def _wait(self, prompt: ConfirmationPrompt) -> None:
        left = (prompt.expires_at - datetime.now(UTC)).total_seconds()
        try:
            async with asyncio.timeout(max(0.0, left)):
                line = await self._reader.readline()
        except TimeoutError:
            self._console.print("\n(no answer in time: not run)", style="yellow")
            return
        except EOFError:
            line = ""
        await self._gate.answer(prompt.id, self._user, line.strip().lower() in ("y", "yes"))


class _LineReader:
    """Reads stdin lines for the event loop without `asyncio.to_thread` / `input()`.

    On Ctrl-C, `asyncio.run` waits for its executor's threads, so a thread blocked in
    `input()` kept the process alive until the user pressed Enter; and a daemon thread inside
    `input()` holds the lock of `sys.stdin`'s buffer, which crashes interpreter shutdown. A
    daemon thread doing raw `os.read` on the descriptor has neither problem.
    """

    def __init__(self, fd: int = 0) -> None:
        self._fd = fd
        self._pending = b""
        # A line being read when its reader gave up (a confirmation that timed out) belongs
        # to the next reader: one thread reads at a time, and no typed line is lost.
        self._inflight: asyncio.Future[str] | None = None

    def _read_blocking(self) -> str:
        while b"\n" not in self._pending:
            chunk = os.read(self._fd, 4096)
            if not chunk:  # end of input
                if not self._pending:
                    raise EOFError
                line, self._pending = self._pending, b""
                return line.decode("utf-8", "replace")
            self._pending += chunk
        line, _, self._pending = self._pending.partition(b"\n")
        return line.rstrip(b"\r").decode("utf-8", "replace")

    async def readline(self) -> str:
        if self._inflight is None:
            self._inflight = self._start()
        line = await asyncio.shield(self._inflight)
        self._inflight = None
        return line

    def _start(self) -> asyncio.Future[str]:
        loop = asyncio.get_running_loop()
        done: asyncio.Future[str] = loop.create_future()

        def deliver(line: str | None, error: BaseException | None) -> None:
            if done.done():  # the reader was cancelled meanwhile
                return
            if error is not None:
                done.set_exception(error)
            else:
                done.set_result(line or "")

        def work() -> None:
            try:
                line = self._read_blocking()
            except BaseException as exc:  # EOFError, OSError: handed to the loop
                loop.call_soon_threadsafe(deliver, None, exc)
            else:
                loop.call_soon_threadsafe(deliver, line, None)

        threading.Thread(target=work, name="console-input", daemon=True).start()
        return done
