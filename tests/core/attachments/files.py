"""Incoming files for tests: bytes served by a small async closure, as an adapter's fetch
would serve them (reading at most `max_bytes`), or a fetch that fails as adapters' do."""

from __future__ import annotations

import gzip
import io

from core.request import FileFetchError, IncomingFile


def served(
    name: str,
    data: bytes,
    mime_type: str = "application/octet-stream",
    *,
    size: int | None = -1,
    voice: bool = False,
    calls: list[str] | None = None,
) -> IncomingFile:
    """A file whose fetch serves `data`; `size` is what the platform claims (-1: the truth)."""

    async def fetch(*, max_bytes: int, timeout: float) -> bytes:  # noqa: ASYNC109 (Fetch)
        if calls is not None:
            calls.append(name)
        if len(data) > max_bytes:
            raise FileFetchError(f"`{name}` is larger than the {max_bytes:,} bytes I read.")
        return data

    claimed = len(data) if size == -1 else size
    return IncomingFile(name, claimed, mime_type, fetch, voice)


def refused(name: str, reason: str) -> IncomingFile:
    async def fetch(*, max_bytes: int, timeout: float) -> bytes:  # noqa: ASYNC109 (Fetch)
        raise FileFetchError(f"`{name}`: {reason}")

    return IncomingFile(name, 10, "text/plain", fetch)


def png(width: int = 64, height: int = 48, color: tuple[int, int, int] = (200, 30, 30)) -> bytes:
    from PIL import Image

    buf = io.BytesIO()
    Image.new("RGB", (width, height), color).save(buf, "PNG")
    return buf.getvalue()


def gif(frames: int = 3) -> bytes:
    from PIL import Image

    images = [Image.new("RGB", (32, 32), (i * 60, 0, 0)) for i in range(frames)]
    buf = io.BytesIO()
    images[0].save(buf, "GIF", save_all=True, append_images=images[1:])
    return buf.getvalue()


def wav() -> bytes:
    import wave

    buf = io.BytesIO()
    with wave.open(buf, "wb") as w:
        w.setnchannels(1)
        w.setsampwidth(2)
        w.setframerate(8000)
        w.writeframes(b"\x00\x01" * 800)
    return buf.getvalue()


def zipped(name: str, text: str) -> bytes:
    import zipfile

    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w") as z:
        z.writestr(name, text)
    return buf.getvalue()


def gz(data: bytes) -> bytes:
    return gzip.compress(data, mtime=0)  # no wall clock in the bytes (or in test ids)


def log_with_traceback(lines: int, at: int) -> str:
    """A log of `lines` ordinary lines with a Python traceback after line `at`."""
    out = [
        f"2026-12-03 10:{i // 60 % 60:02d}:{i % 60:02d} INFO worker handled job {i}"
        for i in range(lines)
    ]
    out[at:at] = [
        "2026-12-03 11:00:00 ERROR job 77 failed",
        "Traceback (most recent call last):",
        '  File "/srv/app/jobs.py", line 88, in run',
        "    result = handler(payload)",
        '  File "/srv/app/handlers.py", line 12, in handler',
        "    return payload['customer']['id']",
        "KeyError: 'customer'",
    ]
    return "\n".join(out)
