"""The streaming encoder: segments written in order whatever order they arrive in, one file."""

from __future__ import annotations

import io

import numpy as np
import pytest
import soundfile as sf

from core.tts.audio import Audio, merge
from core.tts.encoder import StreamingEncoder


def level(value: float, seconds: float, rate: int, channels: int = 1) -> Audio:
    return Audio(np.full((round(seconds * rate), channels), value, dtype=np.float32), rate)


async def test_out_of_order_segments_come_out_in_order() -> None:
    parts = [level(0.1, 0.5, 16_000), level(0.4, 0.25, 16_000), level(0.7, 0.5, 16_000)]
    encoder = StreamingEncoder("wav")
    for i in (2, 0, 1):
        await encoder.add(i, parts[i])
    data, audio = await encoder.finish()
    assert audio.duration == pytest.approx(1.25)
    np.testing.assert_array_equal(audio.samples, merge(parts).samples)
    decoded, rate = sf.read(io.BytesIO(data), dtype="float32")
    assert rate == 16_000
    assert decoded[0] == pytest.approx(0.1, abs=1e-3)
    assert decoded[9_000] == pytest.approx(0.4, abs=1e-3)
    assert decoded[-1] == pytest.approx(0.7, abs=1e-3)


async def test_segments_of_other_rates_and_channels_are_converted() -> None:
    encoder = StreamingEncoder("ogg")
    await encoder.add(0, level(0.3, 1.0, 22_050))
    await encoder.add(1, level(0.3, 0.5, 24_000, channels=2))
    data, audio = await encoder.finish()
    assert (audio.rate, audio.channels) == (22_050, 1)
    assert audio.duration == pytest.approx(1.5, abs=0.01)
    info = sf.info(io.BytesIO(data))
    assert (info.format, info.subtype, info.samplerate) == ("OGG", "OPUS", 48_000)
    assert info.duration == pytest.approx(1.5, abs=0.05)


async def test_a_missing_segment_fails_and_abort_leaves_nothing() -> None:
    encoder = StreamingEncoder("mp3")
    await encoder.add(1, level(0.2, 0.5, 16_000))
    with pytest.raises(ValueError, match="missing"):
        await encoder.finish()
    other = StreamingEncoder("mp3")
    await other.add(0, level(0.2, 0.5, 16_000))
    await other.abort()
