"""The demo repository: on `threadline run`, Threadline's own source is indexed as `threadline`
(in the background, with progress on stderr) so a newcomer can ask about code at once.

It runs when no repository is registered yet, or when the only one is this demo (then the
incremental re-index is quick and catches up anything a previous run left unfinished). Set
THREADLINE_DEMO_INDEX=0 to turn it off.
"""

from __future__ import annotations

import asyncio
import logging
import sys
import time
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from bot.app import App
    from core.code.indexer import Stage

log = logging.getLogger(__name__)

DEMO_NAME = "threadline"
PROGRESS_EVERY = 5.0
SOURCE_ROOT = Path(__file__).resolve().parent.parent


def demo_root() -> Path | None:
    """This checkout, if Threadline runs from one (not from an installed wheel)."""
    return SOURCE_ROOT if (SOURCE_ROOT / "pyproject.toml").is_file() else None


async def should_index_demo(app: App) -> bool:
    if not app.settings.demo_index or demo_root() is None:
        return False
    repos = await app.repos.all()
    return not repos or (
        len(repos) == 1 and repos[0].name == DEMO_NAME and Path(repos[0].root) == demo_root()
    )


def _say(text: str) -> None:
    print(f"[threadline] {text}", file=sys.stderr, flush=True)


async def index_demo(app: App) -> None:
    """Register and index the demo repository, telling the operator how it goes."""
    from core.code import messages
    from core.code.repos import RepoError

    root = demo_root()
    assert root is not None
    last = 0.0

    def progress(stage: Stage, done: int, total: int) -> None:
        nonlocal last
        now = time.monotonic()
        if now - last >= PROGRESS_EVERY or done == total:
            last = now
            _say(messages.index_progress(DEMO_NAME, stage, done, total))

    try:
        repo = await app.repos.register(str(root), DEMO_NAME)
        _say(f"indexing this checkout as the demo repository `{DEMO_NAME}` in the background")
        report = await app.indexer.index(repo, progress=progress)
    except RepoError as exc:
        _say(f"the demo index failed: {exc}")
        return
    except Exception:
        log.exception("the demo index failed")
        _say("the demo index failed; details are in the log")
        return
    if report.vectors_error:
        _say(f"demo indexed without semantic search: {report.vectors_error}")
    else:
        _say(
            f"demo ready: {report.files.files} files indexed. Ask about the code, e.g. "
            '"where are Slack requests verified?"'
        )


def start_demo(app: App) -> asyncio.Task[None]:
    return asyncio.get_running_loop().create_task(index_demo(app), name="demo-index")
