"""Extraction of many files on every core: a small pool of worker processes, reused.

Parsing and the Python passes hold the GIL, so threads cannot share the work; processes can.
`extract_many` is what indexing awaits for the files to parse again:

- few files (below `POOL_MIN_FILES`, a one-file update above all) or one worker: today's
  path, batches in a worker thread of this process, no pool touched;
- many files: batches of `POOL_BATCH` go to the pool, `LANES_PER_WORKER` at a time per
  worker, each file's facts sent back as plain lists, tuples and dicts (`FileFacts.as_json`:
  pickling the dataclasses cost twice as much) with the JSON text the store writes, pickled
  and unpickled while the garbage collector is paused (see `_extract_encoded`);
  `FileFacts.from_json` rebuilds them here;
- the pool is started on first need and kept by its owner, `GraphWorkers` (made once in
  `bot/app.py` and closed with the app). While its workers
  start (an interpreter, our imports, the grammars) this process extracts the first batches
  itself, so the start-up never holds an index up;
- workers are started by forkserver (spawn where it is missing): forking a process that runs
  an event loop and threads can copy a held lock into the child.

A worker that dies (a crash, a file that kills the parser, the OOM killer) breaks the pool:
the batches it had, and those after it, are extracted in this process, the broken pool is
dropped (the next large index starts a new one) and the failure is logged once.
"""

from __future__ import annotations

import asyncio
import json
import logging
import multiprocessing
import os
import pickle
import threading
from collections import deque
from collections.abc import Sequence
from concurrent.futures import Future, ProcessPoolExecutor
from concurrent.futures.process import BrokenProcessPool
from pathlib import Path
from typing import TYPE_CHECKING, Any

from core.code.graph.gcpause import gc_paused

if TYPE_CHECKING:
    from core.code.graph.model import FileFacts

log = logging.getLogger(__name__)

WORKERS = min(2, os.cpu_count() or 1)  # worker processes of a large extraction; 1: no pool
# Files below which a pool does not pay: the batches' round trips and rebuilding the facts
# here cost more than a second core saves (bench/graph_speed.py --workers measures it).
POOL_MIN_FILES = 48
POOL_BATCH = 16  # files per task: small enough that two workers end together
# Batches in flight per worker: while this process rebuilds one batch's facts, the worker
# already parses the next (10% less wall time than one, on Threadline's code).
LANES_PER_WORKER = 2

# Per file: (path, facts as `FileFacts.as_json` gives them, the same as the store encodes
# them), both None for a file that is gone, unreadable, or has no extractor. Both: the store
# writes the text as it is, and facts rebuilt from JSON would hold lists where extraction
# made tuples, and the resolver takes a third longer over those (measured on SQLAlchemy and
# core/).
Encoded = list[tuple[str, dict[str, Any] | None, str | None]]


def encode(facts: FileFacts) -> str:
    """The stored form of a file's facts (what `GraphFile.facts` holds)."""
    return json.dumps(facts.as_json(), separators=(",", ":"))


def _warm() -> None:
    """A worker's start: import every extractor and load every grammar once, before work."""
    from core.code.graph.extract import GRAPH_LANGUAGES
    from core.code.graph.extract_go import extract_go  # noqa: F401
    from core.code.graph.extract_java import extract_java  # noqa: F401
    from core.code.graph.extract_js import extract_js  # noqa: F401
    from core.code.graph.extract_python import extract_python  # noqa: F401
    from core.code.languages import parser_for

    for language in GRAPH_LANGUAGES:
        parser_for(language)


def _ready() -> None:
    """Done by a worker once it has started (and so warmed: the initializer runs first)."""


def _extract_encoded(root: str, paths: list[str]) -> bytes:
    """What a worker runs for one batch: its `Encoded` results, pickled here, while the
    collector is paused. Left to the executor, the unpickling of hundreds of thousands of
    small tuples would run in its thread with the collector on, four times as slow."""
    out: Encoded = []
    from core.code.graph.build import extract_batch

    with gc_paused():
        for path, facts in extract_batch(Path(root), paths).items():
            if facts is None:
                out.append((path, None, None))
            else:
                data = facts.as_json()
                out.append((path, data, json.dumps(data, separators=(",", ":"))))
        return pickle.dumps(out, protocol=pickle.HIGHEST_PROTOCOL)


def _decode(blob: bytes) -> tuple[dict[str, FileFacts | None], dict[str, str]]:
    from core.code.graph.model import FileFacts

    facts: dict[str, FileFacts | None] = {}
    texts: dict[str, str] = {}
    with gc_paused():
        results: Encoded = pickle.loads(blob)
        for path, data, text in results:
            if data is None or text is None:
                facts[path] = None
            else:
                facts[path] = FileFacts.from_json(path, data)
                texts[path] = text
        del results  # what the facts do not keep goes now, not in the collector's next pass
    return facts, texts


class ExtractPool:
    """Worker processes for extraction; `ready` is done once each has started and warmed."""

    def __init__(self, workers: int) -> None:
        context = multiprocessing.get_context(
            "forkserver" if "forkserver" in multiprocessing.get_all_start_methods() else "spawn"
        )
        self.workers = workers
        self.executor = ProcessPoolExecutor(workers, mp_context=context, initializer=_warm)
        # One call per worker: the executor starts a process per call while none is idle.
        self._starts = [self.executor.submit(_ready) for _ in range(workers)]

    def started(self) -> bool:
        return all(f.done() for f in self._starts)

    def pids(self) -> set[int]:
        """The workers' process ids (for the bench's CPU time, and tests)."""
        return set(self.executor._processes or {})

    async def wait_started(self) -> None:
        await asyncio.gather(*(asyncio.wrap_future(f) for f in self._starts))

    def submit(self, root: Path, paths: list[str]) -> Future[bytes]:
        return self.executor.submit(_extract_encoded, str(root), paths)

    def close(self) -> None:
        # Batches already given to it finish: another index may be waiting for them.
        self.executor.shutdown(wait=False)


class GraphWorkers:
    """The extraction workers of one process, owned by the composition root (`bot/app.py`)
    and handed to the indexer: the pool is started on first need and kept; `close()` stops it
    when the app closes. `size` 1 means no pool (batches in a thread of this process)."""

    def __init__(self, size: int = WORKERS) -> None:
        self.size = size
        self._pool: ExtractPool | None = None
        self._unavailable = False  # this process cannot start workers: it stopped trying
        self._lock = threading.Lock()  # cheap, and keeps pool() right from any thread

    def pool(self) -> ExtractPool | None:
        """The pool, started on first call; None where processes cannot be started here."""
        with self._lock:
            if self._unavailable:
                return None
            if self._pool is None:
                try:
                    self._pool = ExtractPool(self.size)
                except (OSError, RuntimeError) as exc:  # no processes or semaphores here
                    log.warning(
                        "code graph: no extraction workers (%s); extracting in-process", exc
                    )
                    self._unavailable = True
                    return None
            return self._pool

    def drop(self, pool: ExtractPool) -> bool:
        """Forget a broken pool (the next large index starts a new one); True for the first
        caller, the one that logs."""
        with self._lock:
            if self._pool is not pool:
                return False
            self._pool = None
        pool.close()
        return True

    def close(self) -> None:
        """Stop the workers; batches not started are cancelled (at exit, in tests, benches)."""
        with self._lock:
            pool, self._pool = self._pool, None
        if pool is not None:
            pool.executor.shutdown(wait=True, cancel_futures=True)


async def extract_many(
    root: Path, paths: Sequence[str], workers: GraphWorkers | None = None, batch: int = 100
) -> tuple[dict[str, FileFacts | None], dict[str, str]]:
    """The facts of each path read from `root` (None: gone, unreadable, or no extractor), and
    the stored text of those that came from a worker (the store writes it as it is). Without
    `workers` (or with one), batches run in a thread of this process."""
    from core.code.graph.build import extract_batch

    facts: dict[str, FileFacts | None] = {}
    texts: dict[str, str] = {}
    ordered = list(paths)
    if workers is None or workers.size <= 1 or len(ordered) < POOL_MIN_FILES:
        for start in range(0, len(ordered), batch):
            facts.update(
                await asyncio.to_thread(extract_batch, root, ordered[start : start + batch])
            )
        return facts, texts

    pool = workers.pool()
    if pool is None:
        return await extract_many(root, ordered, None, batch)
    queue = deque(
        ordered[start : start + POOL_BATCH] for start in range(0, len(ordered), POOL_BATCH)
    )
    broken = False

    async def here(part: list[str]) -> None:
        try:
            facts.update(await asyncio.to_thread(extract_batch, root, part))
        except BaseException:  # the index fails as it would in one thread: no lane goes on
            queue.clear()
            raise

    async def local_lane() -> None:
        # Only while the workers start: then two cores are theirs.
        while queue and not pool.started() and not broken:
            await here(queue.popleft())

    async def pool_lane() -> None:
        nonlocal broken
        try:
            await pool.wait_started()
        except Exception as exc:  # workers that cannot start: this process does it all
            if workers.drop(pool):
                log.warning(
                    "code graph: extraction workers failed to start (%s); extracting in-process",
                    exc,
                )
            broken = True
        while queue:
            part = queue.popleft()
            if broken:
                await here(part)
                continue
            try:
                results = await asyncio.wrap_future(pool.submit(root, part))
            except BrokenProcessPool as exc:  # a worker died: its batch is done here
                if workers.drop(pool):
                    log.warning(
                        "code graph: an extraction worker failed (%s: %s); extracting the "
                        "rest of this index in-process",
                        type(exc).__name__,
                        exc,
                    )
                broken = True
                await here(part)
                continue
            except Exception:  # what the batch raises in a worker, it raises here (as today)
                await here(part)
                continue
            got, text = await asyncio.to_thread(_decode, results)
            facts.update(got)
            texts.update(text)

    lanes = workers.size * LANES_PER_WORKER
    await asyncio.gather(local_lane(), *(pool_lane() for _ in range(lanes)))
    return facts, texts
