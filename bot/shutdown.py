"""The shutdown sequence of the long-running processes (`run`, `serve`, `worker`).

One bound for every process kind, `THREADLINE_SHUTDOWN_GRACE` seconds from the first
SIGTERM/SIGINT: new work is refused at once (Slack HTTP answers 503 and `/readyz` says
"shutting down", Discord stops dispatching), work in flight gets what is left of the bound,
then leases and claims are handed back and connections closed. Every step asks `remaining()`
for its share, so the steps together stay inside the bound.

Exit status: 0 after a clean drain; 1 when the bound passed and work in flight was cut (a
cancelled request writes nothing of its turn: the thread keeps only whole turns); 128 + the
signal number (130 for SIGINT, 143 for SIGTERM) when a second signal stops the process at
once. Open transactions of a process stopped at once are rolled back by the database.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import signal
import sys
import time
from collections.abc import Callable, Iterator

log = logging.getLogger(__name__)

EXIT_CUT = 1
# After the bound, closing the pool and the vector store is all that is left; a process
# still alive this much later is stopped by the backstop (a hung close, a stuck thread).
BACKSTOP_MARGIN = 3.0
SIGNALS = (signal.SIGTERM, signal.SIGINT)


class Shutdown:
    """The first signal starts the sequence and its clock; the second ends the process."""

    def __init__(
        self,
        grace: float,
        *,
        clock: Callable[[], float] = time.monotonic,
        backstop_margin: float = BACKSTOP_MARGIN,
    ) -> None:
        self.grace = grace
        self.requested = asyncio.Event()
        self._clock = clock
        self._deadline: float | None = None
        self._backstop_margin = backstop_margin
        self._backstop: asyncio.TimerHandle | None = None
        self._cut: list[str] = []
        self._on_begin: list[Callable[[], None]] = []

    def on_begin(self, callback: Callable[[], None]) -> None:
        """Call `callback` when the sequence starts (at once if it has): a part that only
        needs to stop taking work (a scheduler) and has no task to wait on."""
        self._on_begin.append(callback)
        if self.requested.is_set():
            callback()

    def begin(self, why: str = "asked to stop") -> None:
        """Start the sequence (a signal, or a part of the process that cannot go on)."""
        if self._deadline is not None:
            return
        self._deadline = self._clock() + self.grace
        log.info(
            "shutting down (%s): no new work; work in flight may take up to %g s "
            "(a second signal stops at once)",
            why,
            self.grace,
        )
        self.requested.set()
        for callback in self._on_begin:
            try:
                callback()
            except Exception:  # one part failing to stop must not keep the others going
                log.exception("shutdown: stopping %r failed", callback)
        self._backstop = asyncio.get_running_loop().call_later(
            self.grace + self._backstop_margin, self._overdue
        )

    def remaining(self) -> float:
        """Seconds left of the bound (the whole grace before the sequence started)."""
        if self._deadline is None:
            return self.grace
        return max(0.0, self._deadline - self._clock())

    def cut(self, what: str) -> None:
        """Record work stopped at the bound (a count and a kind: "2 Slack answers")."""
        self._cut.append(what)

    def finished(self) -> int:
        """Close the sequence: one line on what was cut, and the exit status it means."""
        if self._backstop is not None:
            self._backstop.cancel()
        if self._deadline is None:
            return 0
        if self._cut:
            log.warning(
                "shutdown: the %g s bound passed; cut: %s",
                self.grace,
                ", ".join(self._cut),
            )
            return EXIT_CUT
        log.info("shutdown: clean, within the %g s bound", self.grace)
        return 0

    @contextlib.contextmanager
    def signals(self) -> Iterator[None]:
        """SIGTERM/SIGINT start the sequence while the block runs; a second one exits."""
        loop = asyncio.get_running_loop()
        for sig in SIGNALS:
            loop.add_signal_handler(sig, self._on_signal, sig)
        try:
            yield
        finally:
            for sig in SIGNALS:
                loop.remove_signal_handler(sig)

    def _on_signal(self, sig: signal.Signals) -> None:
        if not self.requested.is_set():
            self.begin(sig.name)
            return
        log.warning("second %s: stopping at once, without waiting for work in flight", sig.name)
        _exit_now(128 + sig.value)

    def _overdue(self) -> None:
        log.error(
            "shutdown: still running %g s after the %g s bound; stopping at once",
            self._backstop_margin,
            self.grace,
        )
        _exit_now(EXIT_CUT)


def _exit_now(status: int) -> None:
    """Leave without unwinding: cleanup is what this exit skips. Logs and output are
    flushed first so the reason is not lost."""
    logging.shutdown()
    for stream in (sys.stdout, sys.stderr):
        with contextlib.suppress(OSError, ValueError):
            stream.flush()
    os._exit(status)
