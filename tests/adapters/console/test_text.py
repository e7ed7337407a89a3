"""The console boundary (adapters/console/translate.py, bot/cli.py): only valid text passes in,
only valid UTF-8 goes out, whatever bytes the terminal or the file system hand over."""

from __future__ import annotations

import io
import json
import os
import sys

import pytest

from adapters.console.translate import ConsoleIdentity, to_request, valid_text
from bot import cli


def test_lone_surrogates_become_replacement_characters() -> None:
    escaped = os.fsdecode(b"caf\xe9 cr\xe8me")  # how argv holds bytes that are not UTF-8
    assert valid_text(escaped) == "caf\ufffd cr\ufffdme"
    assert valid_text("\ud800 and \udfff") == "\ufffd and \ufffd"  # any lone surrogate
    assert valid_text("café ✓ 😀") == "café ✓ 😀"


def test_requests_carry_only_encodable_text() -> None:
    bad = os.fsdecode(b"\xff")
    who = ConsoleIdentity(tenant=bad, channel=bad, thread=bad, user=bad, roles=(bad,))
    request = to_request(f"hi {bad}", who)
    for text in (request.tenant, request.channel, request.thread, request.user, request.text):
        text.encode("utf-8")  # raises on a surrogate
    assert request.roles == ("\ufffd",)
    assert request.text == "hi \ufffd"


@pytest.mark.parametrize("as_json", [False, True])
def test_printed_surrogates_are_replaced_not_written_as_raw_bytes(
    monkeypatch: pytest.MonkeyPatch, as_json: bool
) -> None:
    # Under a C or UTF-8 locale Python's stdout uses surrogateescape: a lone surrogate from a
    # file name went out as the raw byte, and `--json` output stopped being UTF-8.
    raw = io.BytesIO()
    out = io.TextIOWrapper(raw, encoding="latin-1", errors="surrogateescape")
    monkeypatch.setattr(sys, "stdout", out)
    cli._valid_output(as_json=as_json)
    print(json.dumps({"path": os.fsdecode(b"/srv/caf\xe9")}, ensure_ascii=False))
    sys.stdout.flush()
    text = raw.getvalue().decode("utf-8")  # raises on anything that is not UTF-8
    assert "/srv/caf?" in text
