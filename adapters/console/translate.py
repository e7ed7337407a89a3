"""Console <-> core translation.

The console identity is the local OS user on platform `console`; the `--tenant/--channel/
--thread/--user/--role` flags stand in for a verified identity because whoever runs the process
is the local operator. The policy still applies to it like to any other identity.
"""

from __future__ import annotations

import getpass
import re
import uuid
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from adapters.text import source_text
from core.request import Reply, Request

PLATFORM = "console"


def _os_user() -> str:
    try:
        return getpass.getuser()
    except Exception:  # no login name (some containers): still a stable local identity
        return "local"


@dataclass(frozen=True, slots=True)
class ConsoleIdentity:
    tenant: str = "local"
    channel: str = "console"
    thread: str = field(default_factory=lambda: uuid.uuid4().hex[:12])
    user: str = field(default_factory=_os_user)
    roles: tuple[str, ...] = ()


_SURROGATE = re.compile("[\ud800-\udfff]")


def valid_text(text: str) -> str:
    """`text` with every lone surrogate replaced by U+FFFD.

    Bytes that are not UTF-8 (a Latin-1 terminal, a stray byte in a pipe) reach Python as lone
    surrogates in argv (surrogateescape); database drivers, JSON and HTTP clients refuse those,
    so core must only ever see text that encodes. One U+FFFD per undecodable byte, as
    `bytes.decode("utf-8", "replace")` gives for stdin.
    """
    return _SURROGATE.sub("\ufffd", text)


def to_request(text: str, who: ConsoleIdentity) -> Request:
    return Request(
        platform=PLATFORM,
        tenant=valid_text(who.tenant),
        channel=valid_text(who.channel),
        thread=valid_text(who.thread),
        user=valid_text(who.user),
        roles=tuple(valid_text(r) for r in who.roles),
        text=valid_text(text),
    )


def save_attachments(reply: Reply, directory: Path) -> list[Path]:
    """The console cannot show audio or images inline, so attachments become files."""
    paths = []
    for att in reply.attachments:
        directory.mkdir(parents=True, exist_ok=True)
        # Only the last name component, so a name cannot climb out of the folder.
        name = Path(att.filename).name.lstrip(".") or "attachment"
        path = directory / name
        n = 1
        while path.exists():  # keep earlier answers' files
            path = directory / f"{Path(name).stem}-{n}{Path(name).suffix}"
            n += 1
        path.write_bytes(att.data)
        paths.append(path)
    return paths


def render_text(reply: Reply, saved: list[Path]) -> str:
    parts = [reply.text]
    parts += [f"[attachment saved: {p}]" for p in saved]
    parts += [f"({n})" for n in reply.notices]
    if reply.sources:
        parts.append(sources_line(reply))
    return "\n".join(parts)


def sources_line(reply: Reply) -> str:
    """`Sources: api/auth.py:10-42 (https://...) · from channel memory`: plain text (a
    terminal shows a URL as it is, and may make it clickable)."""
    shown = [f"{source_text(s)} ({s.url})" if s.url else source_text(s) for s in reply.sources]
    return "Sources: " + " · ".join(shown)


def render_json(reply: Reply, saved: list[Path]) -> dict[str, Any]:
    """The stable `--json` shape documented in the README."""
    attachments = []
    for att, path in zip(reply.attachments, saved, strict=False):
        attachments.append({**att.describe(), "path": str(path)})
    return {
        "ok": reply.ok,
        "text": reply.text,
        "attachments": attachments,
        "tool_calls": [{"name": c.name, "ok": c.ok, "error": c.error} for c in reply.tool_calls],
        "usage": {
            "prompt_tokens": reply.usage.prompt_tokens,
            "completion_tokens": reply.usage.completion_tokens,
            "cached_tokens": reply.usage.cached_tokens,
        },
        "notices": list(reply.notices),
        "sources": [{"kind": s.kind, "label": s.label, "url": s.url} for s in reply.sources],
        # The answer's id where answers are rated (`THREADLINE_FEEDBACK`); null for commands.
        "answer_id": reply.answer_id,
    }
