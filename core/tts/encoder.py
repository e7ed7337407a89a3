"""Encoding while the later segments are still being synthesized.

Opus and MP3 encoding of a long answer takes about as long as synthesizing it with a fast
engine, so segments are written to one encoder as soon as they and every segment before them
are ready: at the end only the last segment is left to encode. There is still exactly one
encoder and one file, whose headers libsndfile writes; segments are converted to the first
one's rate and channels on the way in, as `merge` would.
"""

from __future__ import annotations

import asyncio
import io
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import numpy as np

from core.tts.audio import (
    MP3_RATE,
    MP3_RATES,
    OPUS_RATE,
    OPUS_RATES,
    Audio,
    AudioFormat,
    convert,
)

_CONTAINERS: dict[AudioFormat, tuple[str, str]] = {
    "ogg": ("OGG", "OPUS"),
    "mp3": ("MP3", "MPEG_LAYER_III"),
    "wav": ("WAV", "PCM_16"),
}


def encoding_rate(fmt: AudioFormat, rate: int) -> int:
    if fmt == "ogg" and rate not in OPUS_RATES:
        return OPUS_RATE
    if fmt == "mp3" and rate not in MP3_RATES:
        return MP3_RATE
    return rate


class StreamingEncoder:
    """`await add(i, audio)` for segments 0..n-1 in any order, then `await finish()`. All
    encoding runs in one background thread, in segment order."""

    def __init__(self, fmt: AudioFormat) -> None:
        self.fmt = fmt
        self._pending: dict[int, Audio] = {}
        self._next = 0
        self._buf = io.BytesIO()
        self._file: Any = None
        self._source: tuple[int, int] | None = None  # the first segment's rate and channels
        self._written: list[Audio] = []  # as the engine made them (for duration and waveform)
        self._thread = ThreadPoolExecutor(1, thread_name_prefix="tts-encode")
        self._writes: list[asyncio.Future[None]] = []

    async def add(self, index: int, audio: Audio) -> None:
        self._pending[index] = audio
        loop = asyncio.get_running_loop()
        while self._next in self._pending:
            part = self._pending.pop(self._next)
            self._next += 1
            self._writes.append(loop.run_in_executor(self._thread, self._write, part))

    def _write(self, part: Audio) -> None:
        import soundfile as sf

        if self._source is None:
            self._source = (part.rate, part.channels)
            container, subtype = _CONTAINERS[self.fmt]
            self._file = sf.SoundFile(
                self._buf,
                "w",
                samplerate=encoding_rate(self.fmt, part.rate),
                channels=part.channels,
                format=container,
                subtype=subtype,
            )
        rate, channels = self._source
        source = convert(part, rate, channels)
        self._written.append(source)
        self._file.write(convert(source, self._file.samplerate, channels).samples)

    async def finish(self) -> tuple[bytes, Audio]:
        """The encoded file and the whole sound (at the first segment's rate)."""
        try:
            await asyncio.gather(*self._writes)
            if self._pending or self._file is None:
                raise ValueError("segments are missing: the encoding cannot be finished")
            await asyncio.get_running_loop().run_in_executor(self._thread, self._file.close)
        finally:
            self._thread.shutdown(wait=False)
        assert self._source is not None
        samples = np.concatenate([a.samples for a in self._written], axis=0)
        return self._buf.getvalue(), Audio(samples, self._source[0])

    async def abort(self) -> None:
        """Drop everything (a segment failed): no file comes out of this encoder."""
        await asyncio.gather(*self._writes, return_exceptions=True)
        if self._file is not None:
            await asyncio.get_running_loop().run_in_executor(self._thread, self._file.close)
        self._thread.shutdown(wait=False)
        self._buf = io.BytesIO()
