"""The serving processes' heap after start-up, kept out of the garbage collector's way.

By the time a process serves, it holds a few hundred thousand long-lived objects (the imported
libraries, the policy, templates, the ORM's mappers). CPython's full collections walk all of
them: a request that allocates many rows (the console's usage page over 90 days) met one such
collection in ten and waited 100+ ms for it. `gc.freeze()` moves what exists at start-up to a
generation the collector never scans; everything made later is collected as before.
"""

from __future__ import annotations

import gc


def freeze_start_up_heap() -> None:
    """Collect what start-up left as garbage, then freeze the rest (call once, when built)."""
    gc.collect()
    gc.freeze()
