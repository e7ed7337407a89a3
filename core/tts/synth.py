"""Prepared text -> one merged sound: segments synthesized concurrently, merged in order.

Concurrency is bounded by the engine (a local engine has one worker process per core). Each
segment is retried with exponential backoff when its failure is retryable; if one still fails,
the whole synthesis fails and nothing is returned, so a partial file is never posted.
"""

from __future__ import annotations

import asyncio
import logging
import math
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass

from tenacity import (
    AsyncRetrying,
    RetryError,
    retry_if_exception,
    stop_after_attempt,
    wait_exponential,
)

from core.tts.audio import Audio, merge
from core.tts.engine import EngineUnavailable, Segment, SpeechEngine, SynthesisError
from core.tts.segment import segment

log = logging.getLogger(__name__)

# Segments are made smaller than the engine's limit when that keeps every worker busy: with
# two workers, three 600-byte segments take two rounds while six of 300 bytes share evenly.
SEGMENTS_PER_WORKER = 2
MIN_BALANCED_BYTES = 160  # below this, per-request overhead outweighs the better balance


@dataclass(frozen=True, slots=True)
class RetryPolicy:
    attempts: int = 3  # tries per segment, the first included
    initial: float = 0.5  # seconds before the first retry, doubled each time
    maximum: float = 4.0


@dataclass(frozen=True, slots=True)
class Speech:
    audio: Audio
    notes: tuple[str, ...]
    segments: int
    first_audio: float  # seconds until the first segment was ready
    elapsed: float


class SpeechFailed(Exception):
    """A segment failed for good; the message is for logs, not users."""


def segment_limit(engine: SpeechEngine, text: str) -> int:
    """The engine's segment limit, or less when that spreads the text over all its workers."""
    share = math.ceil(
        len(text.encode("utf-8")) / (max(1, engine.concurrency) * SEGMENTS_PER_WORKER)
    )
    return min(engine.segment_bytes, max(MIN_BALANCED_BYTES, share))


def _retryable(exc: BaseException) -> bool:
    return isinstance(exc, SynthesisError) and exc.retryable


async def synthesize(
    engine: SpeechEngine,
    text: str,
    retry: RetryPolicy = RetryPolicy(),
    on_segment: Callable[[int, Audio], Awaitable[None]] | None = None,
) -> Speech:
    """`on_segment(index, audio)` is called as each segment is ready (in any order), e.g. to
    encode while later segments are still being synthesized. Raises `SpeechFailed`, or
    `EngineUnavailable` when the engine cannot run here at all."""
    parts = [p.strip() for p in segment(text, segment_limit(engine, text))]
    parts = [p for p in parts if p]
    if not parts:
        raise SpeechFailed("nothing to read aloud")
    started = time.monotonic()
    first: list[float] = []
    gate = asyncio.Semaphore(max(1, engine.concurrency))
    failed: list[Exception] = []

    async def one(index: int, piece: str) -> Segment:
        async with gate:
            # A segment that failed for good ends the text: the next one waiting at the gate
            # must not ask the engine again (a worker that did not start would be started
            # once more, and its start timeout waited out again).
            if failed:
                raise failed[0]
            retrying = AsyncRetrying(
                stop=stop_after_attempt(retry.attempts),
                wait=wait_exponential(multiplier=retry.initial, max=retry.maximum),
                retry=retry_if_exception(_retryable),
                reraise=True,
            )
            try:
                async for attempt in retrying:
                    with attempt:
                        tries = attempt.retry_state.attempt_number
                        if tries > 1:
                            log.info("%s: segment %d, attempt %d", engine.name, index, tries)
                        result = await engine.synthesize(piece)
            except Exception as exc:
                failed.append(exc)
                raise
            if not first:
                first.append(time.monotonic() - started)
            if on_segment is not None:
                await on_segment(index, result.audio)
            return result

    tasks = [asyncio.create_task(one(i, p)) for i, p in enumerate(parts)]
    try:
        results = await asyncio.gather(*tasks)
    except (SynthesisError, RetryError) as exc:
        for t in tasks:
            t.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
        if isinstance(exc, EngineUnavailable):
            raise
        raise SpeechFailed(f"{engine.name}: {exc}") from exc
    except BaseException:
        for t in tasks:
            t.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
        raise
    notes: list[str] = []
    for r in results:
        notes.extend(n for n in r.notes if n not in notes)
    audio = await asyncio.to_thread(merge, [r.audio for r in results])
    return Speech(
        audio=audio,
        notes=tuple(notes),
        segments=len(parts),
        first_audio=first[0] if first else 0.0,
        elapsed=time.monotonic() - started,
    )
