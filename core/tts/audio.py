"""PCM audio in memory: conversion, merging, encoding, and the numbers Discord wants.

Samples are float32 in [-1, 1], shaped (frames, channels). Resampling uses soxr (a proper
band-limited resampler: dropping or repeating samples aliases audibly) and encoding uses
soundfile's bundled libsndfile, which writes the container headers itself: the merged file is
encoded once from the merged samples, never stitched or patched.
"""

from __future__ import annotations

import base64
import io
import math
from dataclasses import dataclass
from typing import Literal

import numpy as np
import numpy.typing as npt

AudioFormat = Literal["ogg", "mp3", "wav"]
FORMATS: tuple[AudioFormat, ...] = ("ogg", "mp3", "wav")

MIME_TYPES: dict[AudioFormat, str] = {"ogg": "audio/ogg", "mp3": "audio/mpeg", "wav": "audio/wav"}
# Opus encodes only at these rates; 48 kHz is what Discord's own voice messages use.
OPUS_RATES = (8_000, 12_000, 16_000, 24_000, 48_000)
OPUS_RATE = 48_000
# MPEG audio has a fixed set of rates; others are resampled to 24 kHz (speech needs no more).
MP3_RATES = (8_000, 11_025, 12_000, 16_000, 22_050, 24_000, 32_000, 44_100, 48_000)
MP3_RATE = 24_000
MAX_WAVEFORM = 256  # Discord's limit for a voice message's waveform, in bytes

Samples = npt.NDArray[np.float32]


@dataclass(frozen=True, slots=True)
class Audio:
    samples: Samples  # (frames, channels), float32
    rate: int

    @property
    def channels(self) -> int:
        return int(self.samples.shape[1])

    @property
    def frames(self) -> int:
        return int(self.samples.shape[0])

    @property
    def duration(self) -> float:
        return self.frames / self.rate

    @staticmethod
    def from_int16(pcm: bytes, rate: int, channels: int = 1) -> Audio:
        data = np.frombuffer(pcm, dtype="<i2").astype(np.float32) / 32768.0
        return Audio(data.reshape(-1, channels), rate)

    @staticmethod
    def silence(seconds: float, rate: int, channels: int = 1) -> Audio:
        return Audio(np.zeros((round(seconds * rate), channels), dtype=np.float32), rate)


def convert(audio: Audio, rate: int, channels: int) -> Audio:
    """The same sound at another rate and channel count."""
    samples = audio.samples
    if audio.channels != channels:
        mono = samples.mean(axis=1, keepdims=True, dtype=np.float32)
        samples = mono if channels == 1 else np.repeat(mono, channels, axis=1)
    if audio.rate != rate and len(samples):
        import soxr

        samples = soxr.resample(samples, audio.rate, rate, quality="HQ").astype(np.float32)
        samples = samples.reshape(-1, channels)
    return Audio(np.ascontiguousarray(samples, dtype=np.float32), rate)


def merge(parts: list[Audio]) -> Audio:
    """The parts one after another, in order, at the first part's rate and the most channels
    any part has (segments may come from engines or voices with different formats)."""
    if not parts:
        raise ValueError("nothing to merge")
    rate = parts[0].rate
    channels = max(p.channels for p in parts)
    converted = [convert(p, rate, channels) for p in parts]
    return Audio(np.concatenate([p.samples for p in converted], axis=0), rate)


def encode(audio: Audio, fmt: AudioFormat) -> bytes:
    """Encode the whole sound as one file: OGG/Opus, MP3 or 16-bit WAV."""
    import soundfile as sf

    buf = io.BytesIO()
    if fmt == "ogg":
        if audio.rate not in OPUS_RATES:
            audio = convert(audio, OPUS_RATE, audio.channels)
        sf.write(buf, audio.samples, audio.rate, format="OGG", subtype="OPUS")
    elif fmt == "mp3":
        if audio.rate not in MP3_RATES:
            audio = convert(audio, MP3_RATE, audio.channels)
        sf.write(buf, audio.samples, audio.rate, format="MP3", subtype="MPEG_LAYER_III")
    else:
        sf.write(buf, audio.samples, audio.rate, format="WAV", subtype="PCM_16")
    return buf.getvalue()


def decode(data: bytes) -> Audio:
    """Any format libsndfile reads (WAV, FLAC, OGG, MP3) to samples."""
    import soundfile as sf

    samples, rate = sf.read(io.BytesIO(data), dtype="float32", always_2d=True)
    return Audio(np.ascontiguousarray(samples, dtype=np.float32), int(rate))


def waveform(audio: Audio, points: int | None = None) -> bytes:
    """Discord's voice-message waveform: one byte (0-255) of loudness per slice of the sound,
    at most 256 slices (about ten a second for short messages), scaled to the loudest slice."""
    if points is None:
        points = max(1, min(MAX_WAVEFORM, math.ceil(audio.duration * 10)))
    points = max(1, min(points, MAX_WAVEFORM, audio.frames or 1))
    mono = np.abs(audio.samples).mean(axis=1) if audio.frames else np.zeros(1, np.float32)
    slices = np.array_split(mono, points)
    rms = np.array([math.sqrt(float(np.mean(s * s))) if len(s) else 0.0 for s in slices])
    peak = float(rms.max()) if len(rms) else 0.0
    if peak <= 0:
        return bytes(points)
    return bytes(int(v) for v in np.clip(np.round(rms / peak * 255), 0, 255))


def waveform_b64(audio: Audio) -> str:
    return base64.b64encode(waveform(audio)).decode("ascii")
