"""The heap of long-running processes: the C allocator's arenas bounded, and the start-up
heap kept out of the garbage collector's way.

glibc's malloc gives each thread that allocates while another holds the lock an arena of its
own, up to eight per core. Indexing allocates large, short-lived NumPy arrays from worker
threads beside the tokenizer's and the vector store's native threads; every arena kept its own
high-water mark, and freed memory in one did not serve another. Bounded to `MALLOC_ARENAS`
(the `MALLOC_ARENA_MAX` that operators of such services often set by hand), the peak RSS of a
13,869-chunk index fell from 547 to 452 MB (bench/RESULTS.md). An operator's own
MALLOC_ARENA_MAX is left alone, and so is any other C library.

By the time a process serves, it holds a few hundred thousand long-lived objects (the imported
libraries, the policy, templates, the ORM's mappers). CPython's full collections walk all of
them: a request that allocates many rows (the console's usage page over 90 days) met one such
collection in ten and waited 100+ ms for it. `gc.freeze()` moves what exists at start-up to a
generation the collector never scans; everything made later is collected as before.
"""

from __future__ import annotations

import gc
import os
import sys

MALLOC_ARENAS = 2
_M_ARENA_MAX = -8  # glibc's malloc.h


def limit_malloc_arenas(arenas: int = MALLOC_ARENAS) -> bool:
    """Bound glibc's malloc arenas (module docstring); True if this call set the bound. Call it
    before the process starts threads: an arena, once made, stays."""
    if not sys.platform.startswith("linux") or "MALLOC_ARENA_MAX" in os.environ:
        return False
    import ctypes  # only here: the one-shot commands that never call this skip its import

    try:
        mallopt = ctypes.CDLL(None).mallopt
    except (OSError, AttributeError):  # a C library without mallopt
        return False
    mallopt.argtypes = [ctypes.c_int, ctypes.c_int]
    mallopt.restype = ctypes.c_int
    return bool(mallopt(_M_ARENA_MAX, arenas) == 1)


def freeze_start_up_heap() -> None:
    """Collect what start-up left as garbage, then freeze the rest (call once, when built)."""
    gc.collect()
    gc.freeze()
