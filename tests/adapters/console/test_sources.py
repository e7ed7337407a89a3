"""An answer's sources on the console: a plain line after the notices (`ask`), and a list in
`ask --json`."""

from __future__ import annotations

from adapters.console.translate import render_json, render_text, sources_line
from core.request import Reply, Source

URL = "https://github.com/team/api/blob/abc1234/api/retry.py#L10-L42"
SOURCES = (
    Source("code", "api/retry.py:10-42", URL),
    Source("code", "cmd/main.go:3"),
    Source("memory", "channel memory"),
    Source("skill", "incident-triage skill"),
)


def test_sources_are_one_line_after_the_notices() -> None:
    reply = Reply("Retries back off.", notices=("80% used.",), sources=SOURCES)
    assert render_text(reply, []) == (
        "Retries back off.\n(80% used.)\n"
        f"Sources: api/retry.py:10-42 ({URL}) · cmd/main.go:3 · from channel memory · "
        "following the incident-triage skill"
    )
    assert sources_line(reply).startswith("Sources: api/retry.py:10-42")


def test_a_reply_without_sources_renders_as_before() -> None:
    assert render_text(Reply("Hi."), []) == "Hi."
    assert render_json(Reply("Hi."), [])["sources"] == []


def test_json_lists_each_source() -> None:
    out = render_json(Reply("x", sources=SOURCES[:1] + SOURCES[2:3]), [])
    assert out["sources"] == [
        {"kind": "code", "label": "api/retry.py:10-42", "url": URL},
        {"kind": "memory", "label": "channel memory", "url": None},
    ]
