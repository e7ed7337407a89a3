"""Downloading a message's files: all at once, within one time bound, each reading at most the
per-file cap whatever size the platform claims, and together within the per-message cap. What
is not downloaded comes back with the reason, for the reply's notices."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Sequence
from dataclasses import dataclass

from core.attachments import notices
from core.attachments.limits import AttachmentLimits
from core.request import FileFetchError, IncomingFile

log = logging.getLogger(__name__)


@dataclass(frozen=True, slots=True)
class Fetched:
    file: IncomingFile
    data: bytes | None  # None: refused, see `notice`
    notice: str | None = None


async def fetch_all(files: Sequence[IncomingFile], limits: AttachmentLimits) -> list[Fetched]:
    """Every file of `files`, downloaded or refused with a notice, in their order. At most
    `limits.max_files` are downloaded; the others are refused in one notice (on the first)."""
    wanted = list(files[: limits.max_files])
    extra = [f.name for f in files[limits.max_files :]]
    out: list[Fetched | None] = [None] * len(wanted)
    todo: list[int] = []
    claimed = 0
    for i, f in enumerate(wanted):
        # What the platform claims is enough to refuse without downloading (never to accept).
        if f.size is not None and f.size > limits.max_file_bytes:
            out[i] = Fetched(f, None, notices.file_too_large(f.name, limits.max_file_bytes))
        elif f.size is not None and claimed + f.size > limits.max_message_bytes:
            out[i] = Fetched(f, None, notices.message_too_large(f.name, limits.max_message_bytes))
        else:
            claimed += f.size or 0
            todo.append(i)
    results = await asyncio.gather(*(_fetch(wanted[i], limits) for i in todo))
    total = 0
    for i, fetched in zip(todo, results, strict=True):
        size = len(fetched.data) if fetched.data is not None else 0
        if size and total + size > limits.max_message_bytes:
            notice = notices.message_too_large(fetched.file.name, limits.max_message_bytes)
            fetched = Fetched(fetched.file, None, notice)
        else:
            total += size
        out[i] = fetched
    done = [f for f in out if f is not None]
    if extra:
        notice = notices.too_many(limits.max_files, extra)
        done.append(Fetched(files[limits.max_files], None, notice))
    return done


async def _fetch(f: IncomingFile, limits: AttachmentLimits) -> Fetched:
    timeout = limits.fetch_timeout
    cap = min(limits.max_file_bytes, limits.max_message_bytes)  # one file never reads more
    try:
        # The adapter's fetch has its own timeout; this bound holds even if it does not.
        async with asyncio.timeout(timeout + 1.0):
            data = await f.fetch(max_bytes=cap, timeout=timeout)
    except FileFetchError as exc:
        return Fetched(f, None, str(exc) or notices.fetch_failed(f.name))
    except TimeoutError:
        return Fetched(f, None, notices.fetch_timed_out(f.name, timeout))
    except asyncio.CancelledError:
        raise
    except Exception:
        log.warning("downloading an attached file failed", exc_info=True)
        return Fetched(f, None, notices.fetch_failed(f.name))
    if len(data) > cap:  # a fetch that read more than it was asked
        return Fetched(f, None, notices.file_too_large(f.name, cap))
    if not data:
        return Fetched(f, None, notices.empty(f.name))
    return Fetched(f, data)
