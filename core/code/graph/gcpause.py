"""Cyclic garbage collection paused around CPU-bound graph work.

Extraction allocates hundreds of thousands of small objects per file (tree nodes, tuples,
bindings), and each of them counts towards the collector's thresholds: without a pause, full
collections keep walking every object still alive (all the facts built so far) and take a
third of the build time. The pause is per unit of work (one file's extraction, one file's
edges), so the garbage of a file is collected soon after it, and reference-counted across
threads: the collector runs again once the last pause ends, if it was enabled at the first.
"""

from __future__ import annotations

import gc
import threading
from collections.abc import Iterator
from contextlib import contextmanager

_lock = threading.Lock()
_depth = 0
_was_enabled = False


@contextmanager
def gc_paused() -> Iterator[None]:
    global _depth, _was_enabled
    with _lock:
        if _depth == 0:
            _was_enabled = gc.isenabled()
            gc.disable()
        _depth += 1
    try:
        yield
    finally:
        with _lock:
            _depth -= 1
            if _depth == 0 and _was_enabled:
                gc.enable()
