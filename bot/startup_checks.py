"""Start-up checks of the serving processes (`run`, `serve`, `worker`) for setups that only
one of them can use: a SQLite database file and the embedded Qdrant Edge store.

Each serving process holds an exclusive `flock` on `<resource>.serving.lock` (beside the
SQLite file; beside `DATA_DIR/qdrant-edge`) for as long as it runs, with its pid and command
written in it. A second serving process on the same file or folder finds the lock held and
refuses at start, naming the holder and what to set, instead of failing later with "database
is locked" or a vector store it can only reach through the holder. The OS drops the lock of a
process that died, so a crash never leaves a stale refusal.

One-shot commands (`ask`, `search`, `index`, ...) take no lock: beside a running bot they work
as before (SQLite gives them short transactions; the vector store answers over the holder's
socket). `threadline run` alone is the supported one-process setup; `serve` on SQLite is fine
as the only serving process too.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from core.errors import ConfigError

if TYPE_CHECKING:
    from config.settings import Settings

LOCK_SUFFIX = ".serving.lock"
EDGE_DIR = "qdrant-edge"  # as core.code.collection.EDGE_DIR; not imported: it pulls NumPy


@dataclass(frozen=True, slots=True)
class OneProcessResource:
    what: str  # "the SQLite database /srv/data/threadline.db"
    lock: Path
    instead: str  # the setting that makes several processes possible


class SharedResourceError(ConfigError):
    """Another serving process uses a resource only one process can use; `str()` says which
    process and what to set."""


def one_process_resources(settings: Settings) -> list[OneProcessResource]:
    """What these settings give this process that no second serving process may share."""
    found = []
    sqlite = sqlite_file(settings.database)
    if sqlite is not None:
        found.append(
            OneProcessResource(
                f"the SQLite database {sqlite}",
                sqlite.with_name(sqlite.name + LOCK_SUFFIX),
                "DATABASE_URL=postgresql://user@host:5432/threadline",
            )
        )
    if not settings.qdrant_url:
        edge = settings.data_dir.resolve() / EDGE_DIR
        found.append(
            OneProcessResource(
                f"the embedded vector store {edge}",
                edge.with_name(edge.name + LOCK_SUFFIX),
                "QDRANT_URL=http://qdrant-host:6333",
            )
        )
    return found


def sqlite_file(url: str) -> Path | None:
    """The file of a SQLite URL (None for PostgreSQL or an in-memory database)."""
    scheme, _, rest = url.strip().partition("://")
    if not scheme.lower().startswith("sqlite"):
        return None
    path = rest.partition("?")[0].removeprefix("/")  # sqlite:///rel, sqlite:////abs
    if not path or path == ":memory:":
        return None
    return Path(path).resolve()


@contextlib.contextmanager
def held_alone(settings: Settings, command: str) -> Iterator[None]:
    """Hold the serving locks of this process's one-process resources while the block runs.
    Raises `SharedResourceError` when another serving process holds one."""
    with contextlib.ExitStack() as stack:
        refusals = []
        for resource in one_process_resources(settings):
            holder = stack.enter_context(_Lock(resource.lock, command))
            if holder is not None:
                refusals.append((resource, holder))
        if refusals:
            raise SharedResourceError(_explain(command, refusals))
        yield


def _explain(command: str, refusals: list[tuple[OneProcessResource, str]]) -> str:
    lines = [f"Threadline cannot start `{command}`: another Threadline process is serving here."]
    for resource, holder in refusals:
        lines.append(f"  {resource.what} is in use by {holder}")
    settings = " and ".join(r.instead for r, _ in refusals)
    lines.append(
        "Several processes (serve + worker, or more than one of each) need shared servers: "
        f"set {settings}. For one process, run `threadline run` alone (or only one "
        "`serve`/`worker`)."
    )
    return "\n".join(lines)


class _Lock:
    """An exclusive, non-blocking flock held while the context is open. `__enter__` returns
    None when taken, else who holds it (from the lock file's text)."""

    def __init__(self, path: Path, command: str) -> None:
        self.path = path
        self.command = command
        self.fd: int | None = None

    def __enter__(self) -> str | None:
        try:
            import fcntl
        except ImportError:  # not POSIX: nothing to lock with, nothing refused
            return None
        self.path.parent.mkdir(parents=True, exist_ok=True)
        fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o600)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            holder = _read(fd)
            os.close(fd)
            return holder or "another process"
        except BaseException:
            os.close(fd)
            raise
        self.fd = fd
        os.ftruncate(fd, 0)
        os.pwrite(fd, f"pid {os.getpid()} (threadline {self.command})\n".encode(), 0)
        return None

    def __exit__(self, *_: object) -> None:
        if self.fd is not None:
            # The file stays (removing it would race with a process opening it); closing
            # the descriptor releases the lock.
            with contextlib.suppress(OSError):
                os.ftruncate(self.fd, 0)
            os.close(self.fd)
            self.fd = None


def _read(fd: int) -> str:
    try:
        text = os.pread(fd, 200, 0).decode("utf-8", "replace")
    except OSError:
        return ""
    return text.strip()
