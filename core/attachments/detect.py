"""What a file is, by its bytes first: magic numbers for images, audio, compressed files,
archives and executables; for the rest, whether it reads as text (no NUL bytes, valid UTF-8 or
UTF-16 with a byte-order mark, few control characters). The name only refines what the bytes
say (a zip named `.docx` is an Office document); it never makes binary bytes text."""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import PurePosixPath
from typing import Literal

Kind = Literal["text", "image", "audio", "gzip", "unsupported"]

SNIFF_BYTES = 64 * 1024  # text is judged on this much of the start
# Control characters text does not have (tab, newlines, form feed, backspace and the escape
# of terminal colours are allowed).
_CONTROLS = re.compile("[\x00-\x07\x0e-\x1a\x1c-\x1f]")
_MAX_BAD_SHARE = 0.01  # replacement or control characters a text file may have


@dataclass(frozen=True, slots=True)
class Sniffed:
    kind: Kind
    # image: png / jpeg / gif / webp; audio: ogg / wav / mp3 / flac / m4a / webm; text: the
    # encoding; unsupported: what it is, in the plural for people ("archives").
    detail: str = ""


_OFFICE = frozenset({".docx", ".xlsx", ".pptx", ".odt", ".ods", ".odp"})


def sniff(name: str, data: bytes) -> Sniffed:
    """What `data` (a file called `name`) is."""
    head = data[:16]
    if head.startswith(b"\x89PNG\r\n\x1a\n"):
        return Sniffed("image", "png")
    if head.startswith(b"\xff\xd8\xff"):
        return Sniffed("image", "jpeg")
    if head.startswith((b"GIF87a", b"GIF89a")):
        return Sniffed("image", "gif")
    if head.startswith(b"RIFF") and head[8:12] == b"WEBP":
        return Sniffed("image", "webp")
    audio = _audio(head)
    if audio:
        return Sniffed("audio", audio)
    if head.startswith(b"\x1f\x8b"):
        return Sniffed("gzip")
    what = _unsupported(name, data)
    if what:
        return Sniffed("unsupported", what)
    encoding = text_encoding(data[:SNIFF_BYTES])
    if encoding:
        return Sniffed("text", encoding)
    return Sniffed("unsupported", "binary files of an unknown kind")


def _audio(head: bytes) -> str:
    if head.startswith(b"OggS"):
        return "ogg"
    if head.startswith(b"RIFF") and head[8:12] == b"WAVE":
        return "wav"
    if head.startswith(b"ID3") or (len(head) > 1 and head[0] == 0xFF and head[1] & 0xE6 == 0xE2):
        return "mp3"  # an ID3 tag, or an MPEG audio frame header (layer III)
    if head.startswith(b"fLaC"):
        return "flac"
    if head[4:8] == b"ftyp" and head[8:11] in (b"M4A", b"M4B", b"mp4", b"iso", b"3gp", b"qt "):
        return "m4a"
    if head.startswith(b"\x1a\x45\xdf\xa3"):
        return "webm"
    return ""


def _unsupported(name: str, data: bytes) -> str:
    head = data[:8]
    suffix = PurePosixPath(name.lower()).suffix
    if head.startswith((b"PK\x03\x04", b"PK\x05\x06", b"PK\x07\x08")):
        return "Office documents" if suffix in _OFFICE else "archives"
    if (
        head.startswith(
            (b"7z\xbc\xaf\x27\x1c", b"Rar!\x1a\x07", b"BZh", b"\xfd7zXZ\x00", b"\x28\xb5\x2f\xfd")
        )
        or data[257:262] == b"ustar"
    ):
        return "archives"
    if head.startswith(
        (
            b"\x7fELF",
            b"MZ",
            b"\xfe\xed\xfa\xce",
            b"\xfe\xed\xfa\xcf",
            b"\xce\xfa\xed\xfe",
            b"\xcf\xfa\xed\xfe",
            b"\xca\xfe\xba\xbe",
            b"\x00asm",
        )
    ):
        return "executables"
    if head.startswith(b"%PDF-"):
        return "PDF documents"
    if head.startswith(b"SQLite format 3\x00"):
        return "databases"
    return ""


def text_encoding(sample: bytes) -> str:
    """ "utf-8" or "utf-16" when `sample` (a file's start) reads as text, else ""."""
    if sample.startswith((b"\xff\xfe", b"\xfe\xff")):
        try:
            decoded = sample[: len(sample) // 2 * 2].decode("utf-16")
        except UnicodeDecodeError:
            return ""
        return "utf-16" if _mostly_printable(decoded) else ""
    if b"\x00" in sample:
        return ""
    # The sample may end inside a character: what is cut there is not an error.
    decoded = sample.decode("utf-8", "replace")
    if len(sample) == SNIFF_BYTES:
        decoded = decoded[:-3]
    if decoded.count("\ufffd") > _MAX_BAD_SHARE * max(len(decoded), 1):
        return ""
    return "utf-8" if _mostly_printable(decoded) else ""


def _mostly_printable(text: str) -> bool:
    controls = len(_CONTROLS.findall(text))
    return controls <= _MAX_BAD_SHARE * max(len(text), 1)
