"""Concurrent synthesis: order, bounded parallelism, retries with backoff, no partial audio."""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, field

import numpy as np
import pytest

from core.tts.audio import Audio
from core.tts.engine import Segment, SynthesisError
from core.tts.synth import RetryPolicy, SpeechFailed, synthesize

FAST = RetryPolicy(attempts=3, initial=0.001, maximum=0.01)


@dataclass
class ScriptedEngine:
    """A SpeechEngine whose segments are a constant level per segment (so order is visible),
    failing `failures[text]` times first."""

    segment_bytes: int = 40
    concurrency: int = 3
    rate: int = 16_000
    failures: dict[str, int] = field(default_factory=dict)
    retryable: bool = True
    calls: list[str] = field(default_factory=list)
    running: int = 0
    most_running: int = 0
    name: str = "scripted"

    async def synthesize(self, text: str) -> Segment:
        self.calls.append(text)
        self.running += 1
        self.most_running = max(self.most_running, self.running)
        try:
            await asyncio.sleep(0.01 * (len(text) % 3))  # finish out of order
            if self.failures.get(text, 0) > 0:
                self.failures[text] -= 1
                raise SynthesisError("boom", retryable=self.retryable)
            level = (hash(text) % 100) / 100
            frames = len(text) * 10
            samples = np.full((frames, 1), level, dtype=np.float32)
            return Segment(Audio(samples, self.rate), ("a note",))
        finally:
            self.running -= 1

    def calls_for(self, text: str) -> list[str]:
        return [c for c in self.calls if c == text]

    async def aclose(self) -> None:
        pass


TEXT = " ".join(f"Sentence number {i} is here." for i in range(20))


async def test_segments_are_merged_in_order_with_the_summed_duration() -> None:
    engine = ScriptedEngine()
    speech = await synthesize(engine, TEXT, FAST)
    parts = [c for c in engine.calls]
    assert speech.segments == len(parts) > 5
    assert speech.audio.frames == sum(len(p) * 10 for p in parts)
    # order: each part's constant level appears where that part belongs
    pos = 0
    for p in sorted(set(parts), key=TEXT.index):
        assert speech.audio.samples[pos, 0] == pytest.approx((hash(p) % 100) / 100)
        pos += len(p) * 10
    assert engine.most_running <= 3
    assert speech.notes == ("a note",)  # once, not once per segment


async def test_a_segment_failing_twice_is_retried() -> None:
    engine = ScriptedEngine()
    first = "Sentence number 0 is here."
    engine.failures[first] = 2
    speech = await synthesize(engine, TEXT, FAST)
    assert len(engine.calls_for(first)) == 3
    assert speech.segments > 5


async def test_a_segment_failing_for_good_fails_the_whole_speech() -> None:
    engine = ScriptedEngine()
    engine.failures["Sentence number 3 is here."] = 5
    with pytest.raises(SpeechFailed):
        await synthesize(engine, TEXT, FAST)
    assert len(engine.calls_for("Sentence number 3 is here.")) == 3


async def test_a_failure_that_cannot_help_is_not_retried() -> None:
    engine = ScriptedEngine(retryable=False)
    engine.failures["Sentence number 3 is here."] = 1
    with pytest.raises(SpeechFailed):
        await synthesize(engine, TEXT, FAST)
    assert len(engine.calls_for("Sentence number 3 is here.")) == 1


async def test_retries_back_off_exponentially() -> None:
    engine = ScriptedEngine(segment_bytes=600)
    engine.failures["Hello."] = 2
    loop = asyncio.get_running_loop()
    started = loop.time()
    await synthesize(engine, "Hello.", RetryPolicy(attempts=3, initial=0.05, maximum=1.0))
    assert loop.time() - started >= 0.05 + 0.1 - 0.01


async def test_nothing_to_read() -> None:
    with pytest.raises(SpeechFailed):
        await synthesize(ScriptedEngine(), "   ", FAST)


async def test_a_segment_that_failed_for_good_ends_the_text_at_once() -> None:
    # One worker: the next segment waits at the gate while the first fails. It must not ask
    # the engine again (a local worker that did not start would be started once more).
    engine = ScriptedEngine(concurrency=1, retryable=False)
    first = "Sentence number 0 is here."
    engine.failures = {first: 1}
    with pytest.raises(SpeechFailed):
        await synthesize(engine, TEXT, FAST)
    assert engine.calls == [first]
