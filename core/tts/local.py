"""Local engines (Piper, eSpeak NG) through a pool of worker processes (`core.tts.worker`).

Threadline's own process never imports the GPL engines; it only reads PCM from the workers.
The pool starts on first use, one worker per parallel segment, each with its voice loaded once,
and stops again after `idle_timeout` seconds without a request (a Piper worker holds ~400 MB).
A worker that crashes or hangs past the timeout is killed and replaced on the next request, and
its segment fails as retryable, so the synthesizer's retry runs it on a fresh worker. A worker
that does not start within the timeout is killed too, but that failure is final for the request:
a voice that cannot load in time will not load on the next try either, and retrying it for every
segment held `/tts` for minutes.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import os
import sys
import time
from dataclasses import dataclass, field
from typing import Any

from core.logcontext import detached
from core.tts.audio import Audio
from core.tts.engine import EngineUnavailable, Segment, SynthesisError

log = logging.getLogger(__name__)

INSTALL_HINT = "install the optional voice engines: pip install 'threadline[voice]'"
# Loading a voice gets the segment timeout, at most this long (TTS_TIMEOUT goes up to 600 s).
MAX_START_TIMEOUT = 60.0


@dataclass
class _Worker:
    process: asyncio.subprocess.Process
    note: str | None

    @property
    def pid(self) -> int:
        return self.process.pid


@dataclass
class LocalEngine:
    """A `SpeechEngine` for `engine` = "piper" or "espeak" with `workers` processes."""

    engine: str
    voice: str
    workers: int = 2
    segment_bytes: int = 600
    timeout: float = 60.0  # seconds per segment
    idle_timeout: float = 600.0  # stop the workers after this long unused (0: never)
    python: str = sys.executable
    _idle: asyncio.Queue[_Worker] | None = field(default=None, init=False, repr=False)
    _all: list[_Worker] = field(default_factory=list, init=False, repr=False)
    _missing: str | None = field(default=None, init=False, repr=False)
    _starting: asyncio.Lock | None = field(default=None, init=False, repr=False)
    _start_attempts: int = field(default=0, init=False, repr=False)
    _start_failure: SynthesisError | None = field(default=None, init=False, repr=False)
    _busy: int = field(default=0, init=False, repr=False)
    _last_used: float = field(default=0.0, init=False, repr=False)
    _reaper: asyncio.Task[None] | None = field(default=None, init=False, repr=False)

    @property
    def name(self) -> str:
        return self.engine

    @property
    def concurrency(self) -> int:
        return self.workers

    def pids(self) -> list[int]:
        return [w.pid for w in self._all if w.process.returncode is None]

    @property
    def start_timeout(self) -> float:
        return min(self.timeout, MAX_START_TIMEOUT)

    async def start(self) -> None:
        """Start all workers now (otherwise the first request does): they load in parallel.
        Concurrent first requests wait for the same start-up, and all see its failure (the
        segments of one text would otherwise each wait out the start timeout in turn)."""
        if self._starting is None:
            self._starting = asyncio.Lock()
        attempts = self._start_attempts
        async with self._starting:
            if self._idle is not None:
                return
            if self._start_attempts != attempts and self._start_failure is not None:
                raise SynthesisError(str(self._start_failure), retryable=False)
            self._start_attempts += 1
            self._start_failure = None
            spawns = [asyncio.create_task(self._spawn()) for _ in range(self.workers)]
            try:
                started = await asyncio.gather(*spawns, return_exceptions=True)
            except BaseException:
                # Cancelled (the request's deadline): each spawn kills its own process.
                for task in spawns:
                    task.cancel()
                await asyncio.gather(*spawns, return_exceptions=True)
                raise
            workers = [w for w in started if isinstance(w, _Worker)]
            if not workers:
                failure = started[0]
                assert isinstance(failure, BaseException)
                if isinstance(failure, SynthesisError):
                    self._start_failure = failure
                raise failure
            idle: asyncio.Queue[_Worker] = asyncio.Queue()
            for w in workers:
                idle.put_nowait(w)
            self._idle = idle
            self._last_used = time.monotonic()
            if self.idle_timeout > 0 and (self._reaper is None or self._reaper.done()):
                # Outlives the request that started the workers: not that request's log lines.
                self._reaper = detached(self._stop_when_idle(), name=f"{self.engine}-reaper")

    async def _stop_when_idle(self) -> None:
        """Stop the workers once no request has used them for `idle_timeout` seconds; the
        next request starts them again."""
        while self._idle is not None:
            unused = time.monotonic() - self._last_used
            if self._busy == 0 and unused >= self.idle_timeout:
                # Nothing is in flight, so no request holds a worker or waits for one.
                workers, self._all, self._idle = self._all, [], None
                log.info("%s: %d idle workers stopped", self.engine, len(workers))
                await asyncio.gather(*(_stop(w) for w in workers))
                return
            await asyncio.sleep(max(0.05, self.idle_timeout - unused if not self._busy else 1.0))

    async def synthesize(self, text: str) -> Segment:
        self._busy += 1
        try:
            return await self._synthesize(text)
        finally:
            self._busy -= 1
            self._last_used = time.monotonic()

    async def _synthesize(self, text: str) -> Segment:
        if self._missing is not None:
            raise EngineUnavailable(self._missing)
        await self.start()
        idle = self._idle
        assert idle is not None
        worker = await idle.get()
        try:
            if worker.process.returncode is not None:
                worker = await self._replace(worker)
        except BaseException:
            idle.put_nowait(worker)  # dead: the next request tries to replace it again
            raise
        try:
            audio = await asyncio.wait_for(self._ask(worker, text), self.timeout)
        except (TimeoutError, OSError, asyncio.IncompleteReadError, ValueError) as exc:
            log.warning("%s worker %d failed: %s", self.engine, worker.pid, exc)
            await _kill(worker)  # replaced when next taken from the queue
            raise SynthesisError(f"{self.engine} worker failed: {type(exc).__name__}") from None
        except BaseException:
            if not isinstance(sys.exc_info()[1], SynthesisError):
                await _kill(worker)  # cancelled mid-answer: its output is out of step now
            raise
        finally:
            idle.put_nowait(worker)
        return Segment(audio, (worker.note,) if worker.note else ())

    async def _ask(self, worker: _Worker, text: str) -> Audio:
        proc = worker.process
        assert proc.stdin is not None and proc.stdout is not None
        proc.stdin.write(json.dumps({"text": text}).encode() + b"\n")
        await proc.stdin.drain()
        header = await _header(proc)
        if not header.get("ok"):
            raise SynthesisError(f"{self.engine}: {header.get('error', 'failed')}")
        pcm = await proc.stdout.readexactly(int(header["bytes"]))
        return Audio.from_int16(pcm, int(header["rate"]), int(header["channels"]))

    async def _replace(self, old: _Worker) -> _Worker:
        with contextlib.suppress(ValueError):
            self._all.remove(old)
        return await self._spawn()

    async def _spawn(self) -> _Worker:
        env = dict(os.environ)
        # Each worker is single-threaded (see core.tts.worker): no thread pools to oversubscribe.
        env.update(OMP_NUM_THREADS="1", OPENBLAS_NUM_THREADS="1")
        proc = await asyncio.create_subprocess_exec(
            self.python,
            "-m",
            "core.tts.worker",
            self.engine,
            self.voice,
            stdin=asyncio.subprocess.PIPE,
            stdout=asyncio.subprocess.PIPE,
            env=env,
        )
        try:
            ready = await asyncio.wait_for(_header(proc), self.start_timeout)
        except (TimeoutError, ValueError, asyncio.IncompleteReadError) as exc:
            await _kill(_Worker(proc, None))
            reason = (
                f"no answer in {self.start_timeout:g} s" if isinstance(exc, TimeoutError) else exc
            )
            log.warning("%s worker %d did not start: %s", self.engine, proc.pid, reason)
            raise SynthesisError(
                f"{self.engine} worker did not start: {reason}", retryable=False
            ) from None
        except BaseException:
            await _kill(_Worker(proc, None))  # cancelled: a half-started worker must not linger
            raise
        if not ready.get("ready"):
            await _kill(_Worker(proc, None))
            if ready.get("missing"):
                self._missing = f"{self.engine} is not installed ({INSTALL_HINT})"
                raise EngineUnavailable(self._missing)
            raise SynthesisError(str(ready.get("error", "worker failed to start")), retryable=False)
        worker = _Worker(proc, ready.get("note"))
        if worker.note:
            log.warning("%s: %s", self.engine, worker.note)
        self._all.append(worker)
        return worker

    async def aclose(self) -> None:
        workers, self._all, self._idle = self._all, [], None
        if self._reaper is not None:
            self._reaper.cancel()
            await asyncio.gather(self._reaper, return_exceptions=True)
            self._reaper = None
        await asyncio.gather(*(_stop(w) for w in workers))


async def _header(proc: asyncio.subprocess.Process) -> dict[str, Any]:
    assert proc.stdout is not None
    line = await proc.stdout.readline()
    if not line:
        raise ValueError("the worker exited")
    data = json.loads(line)
    if not isinstance(data, dict):
        raise ValueError("the worker sent something else than a header")
    return data


async def _stop(worker: _Worker) -> None:
    """Close its input (it exits at end of input); kill it if it does not within 2 s."""
    proc = worker.process
    if proc.returncode is not None:
        return
    if proc.stdin is not None:
        proc.stdin.close()
    try:
        await asyncio.wait_for(proc.wait(), 2.0)
    except TimeoutError:
        await _kill(worker)


async def _kill(worker: _Worker) -> None:
    proc = worker.process
    if proc.returncode is None:
        with contextlib.suppress(ProcessLookupError):
            proc.kill()
        await proc.wait()
