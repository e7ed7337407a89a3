"""What a file is, by its bytes (core/attachments/detect.py)."""

from __future__ import annotations

import pytest

from core.attachments.detect import sniff
from tests.core.attachments.files import gif, gz, png, wav, zipped


@pytest.mark.parametrize(
    ("name", "data", "kind", "detail"),
    [
        ("shot.png", png(), "image", "png"),
        ("no-extension", png(), "image", "png"),  # bytes decide, not the name
        ("anim.gif", gif(), "image", "gif"),
        ("photo.jpg", b"\xff\xd8\xff\xe0" + b"\x00" * 20, "image", "jpeg"),
        ("pic.webp", b"RIFF\x10\x00\x00\x00WEBPVP8 ", "image", "webp"),
        ("voice.ogg", b"OggS\x00\x02" + b"\x00" * 20, "audio", "ogg"),
        ("memo.wav", wav(), "audio", "wav"),
        ("clip.m4a", b"\x00\x00\x00\x20ftypM4A \x00\x00", "audio", "m4a"),
        ("app.log.gz", gz(b"hello"), "gzip", ""),
        ("logs.zip", zipped("a.log", "x"), "unsupported", "archives"),
        ("report.docx", zipped("word/document.xml", "x"), "unsupported", "Office documents"),
        ("tool", b"\x7fELF\x02\x01\x01" + b"\x00" * 40, "unsupported", "executables"),
        ("setup.exe", b"MZ\x90\x00" + b"\x00" * 40, "unsupported", "executables"),
        ("spec.pdf", b"%PDF-1.7\n%\xe2\xe3", "unsupported", "PDF documents"),
        ("blob.bin", bytes(range(256)) * 4, "unsupported", "binary files of an unknown kind"),
        ("app.log", b"2026-12-03 INFO started\n", "text", "utf-8"),
        ("data", b'{"a": 1, "b": [true, null]}', "text", "utf-8"),  # no name to go by
        ("notes.txt", "Grüße, 日本語\n".encode(), "text", "utf-8"),
        ("win.log", "\ufeffline one\r\n".encode("utf-16"), "text", "utf-16"),
        ("colours.log", b"\x1b[31mERROR\x1b[0m boom\n", "text", "utf-8"),
    ],
)
def test_kinds(name: str, data: bytes, kind: str, detail: str) -> None:
    got = sniff(name, data)
    assert (got.kind, got.detail) == (kind, detail)


def test_a_text_name_does_not_make_binary_text() -> None:
    assert sniff("innocent.txt", b"abc\x00\x01\x02def" * 10).kind == "unsupported"


def test_text_cut_inside_a_character_is_still_text() -> None:
    from core.attachments.detect import SNIFF_BYTES

    data = ("é" * SNIFF_BYTES).encode()  # the sample ends in the middle of an `é`
    assert sniff("a.txt", data).kind == "text"
