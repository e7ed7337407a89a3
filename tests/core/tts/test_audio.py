"""Audio conversion, merging, encoding and the voice-message waveform."""

from __future__ import annotations

import io

import numpy as np
import pytest
import soundfile as sf

from core.tts.audio import Audio, convert, decode, encode, merge, waveform


def tone(seconds: float, rate: int, channels: int = 1, freq: float = 220.0) -> Audio:
    t = np.arange(round(seconds * rate)) / rate
    mono = (0.4 * np.sin(2 * np.pi * freq * t) * (0.3 + np.abs(np.sin(2 * np.pi * t)))).astype(
        np.float32
    )
    return Audio(np.repeat(mono[:, None], channels, axis=1), rate)


def test_merged_duration_is_the_sum_of_the_parts_across_rates_and_channels() -> None:
    parts = [tone(1.0, 22_050), tone(0.5, 24_000), tone(0.25, 16_000, channels=2)]
    merged = merge(parts)
    assert merged.rate == 22_050
    assert merged.channels == 2
    assert merged.duration == pytest.approx(1.75, abs=0.002)


def test_resampling_keeps_the_pitch() -> None:
    a = convert(tone(1.0, 22_050, freq=440.0), 48_000, 1)
    spectrum = np.abs(np.fft.rfft(a.samples[:, 0]))
    peak = np.argmax(spectrum) * a.rate / len(a.samples)
    assert peak == pytest.approx(440.0, abs=2.0)


@pytest.mark.parametrize(
    ("fmt", "container", "subtype"),
    [("ogg", "OGG", "OPUS"), ("mp3", "MP3", "MPEG_LAYER_III"), ("wav", "WAV", "PCM_16")],
)
def test_encoding_writes_real_files(fmt: str, container: str, subtype: str) -> None:
    audio = tone(2.0, 22_050)
    data = encode(audio, fmt)  # type: ignore[arg-type]
    info = sf.info(io.BytesIO(data))
    assert info.format == container
    assert info.subtype == subtype
    assert info.duration == pytest.approx(2.0, abs=0.1)
    if fmt == "ogg":
        assert info.samplerate == 48_000  # Opus takes no 22,050 Hz
    assert decode(data).duration == pytest.approx(2.0, abs=0.1)


def test_opus_is_much_smaller_than_wav() -> None:
    audio = tone(10.0, 22_050)
    assert len(encode(audio, "ogg")) * 4 < len(encode(audio, "wav"))


def test_waveform_fits_discord_and_follows_loudness() -> None:
    long = waveform(tone(60.0, 8_000))
    assert len(long) == 256
    assert max(long) == 255
    assert len(set(long)) > 10  # not flat
    short = waveform(tone(1.0, 8_000))
    assert 1 <= len(short) <= 256
    assert waveform(Audio.silence(1.0, 8_000)) == bytes(10)


def test_from_int16_round_trip() -> None:
    pcm = (np.array([0, 16384, -16384, 32767], dtype="<i2")).tobytes()
    a = Audio.from_int16(pcm, 16_000)
    assert a.frames == 4
    assert a.samples[1, 0] == pytest.approx(0.5)
