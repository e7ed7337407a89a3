"""A digest worker process for the multi-process tests (not a test module itself).

    python -m tests.support.digest_worker URL OWNER TIME [TIME ...] [--hang]

Runs `DigestRunner.run_due(now=TIME)` for each TIME (ISO 8601) against the database at URL
and prints one line per outcome. `--hang`: the first digest it builds never finishes (the
process is then killed by the test, mid-run, holding its claim).
"""

from __future__ import annotations

import asyncio
import sys
import tempfile
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any


async def main(url: str, owner: str, times: list[datetime], hang: bool) -> None:
    from core.code.repos import RepoStore
    from core.digest.runner import standalone_runner
    from core.policy import Policy
    from core.store.engine import Database

    db = Database(url)
    now = times[0]

    def clock() -> datetime:
        return now

    runner = standalone_runner(
        db,
        policy=Policy.from_dict({"defaults": {"permissions": ["ask"]}}),
        repos=RepoStore(db, Path(tempfile.mkdtemp())),
        owner=owner,
        clock=clock,
        lease=timedelta(minutes=2),
    )
    if hang:

        async def never(*_args: Any) -> Any:
            print("hanging", flush=True)
            await asyncio.Event().wait()

        runner.build = never  # type: ignore[method-assign,assignment]
    for t in times:
        now = t
        for outcome in await runner.run_due(t):
            print(f"{t.isoformat()} {outcome}", flush=True)
    await db.dispose()


if __name__ == "__main__":
    args = [a for a in sys.argv[1:] if a != "--hang"]
    asyncio.run(
        main(args[0], args[1], [datetime.fromisoformat(a) for a in args[2:]], "--hang" in sys.argv)
    )
