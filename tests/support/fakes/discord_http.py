"""The fake Discord's HTTP side: how requests are read and answered, as discord.py needs.

- every answer carries `Content-Type` exactly `application/json` (discord.py parses a body as
  JSON only on that exact value; aiohttp's `json_response` would add "; charset=utf-8") and
  the full set of rate-limit headers (`X-RateLimit-Remaining` never without `Reset`/`Reset-After`);
- multipart uploads are read like Discord does: `payload_json` plus `files[n]` parts;
- application command definitions are validated as Discord validates them.
"""

from __future__ import annotations

import json
import re
import time
from dataclasses import dataclass
from typing import Any

from aiohttp import BodyPartReader, web

COMMAND_NAME = re.compile(r"^[-_a-z0-9]{1,32}$")


@dataclass
class UploadedFile:
    field: str
    filename: str
    content_type: str
    data: bytes


@dataclass
class Call:
    method: str
    path: str
    query: dict[str, str]
    body: Any  # parsed JSON (or payload_json of a multipart body), else None
    files: list[UploadedFile]
    at: float  # time.monotonic()


def check_commands(commands: Any) -> str | None:
    """Discord's validation of command definitions, as far as Threadline's use goes."""
    if not isinstance(commands, list):
        return "a list of commands"
    for command in commands:
        problem = check_command(command)
        if problem:
            return problem
    return None


def check_command(item: dict[str, Any], depth: int = 0) -> str | None:
    name, description = item.get("name", ""), item.get("description", "")
    if not COMMAND_NAME.match(str(name)):
        return f"invalid name {name!r}"
    if not 1 <= len(str(description)) <= 100:
        return f"description of {name!r} must be 1-100 characters"
    options = item.get("options") or []
    if len(options) > 25:
        return f"{name!r} has more than 25 options"
    seen_optional = False
    names = set()
    for option in options:
        if option.get("name") in names:
            return f"duplicate option {option.get('name')!r}"
        names.add(option.get("name"))
        if option.get("type") in (1, 2):
            if depth > 1:
                return "sub-commands nest too deep"
        elif option.get("required"):
            if seen_optional:
                return f"required option {option.get('name')!r} after an optional one"
        else:
            seen_optional = True
        problem = check_command(option, depth + 1)
        if problem:
            return problem
    return None


async def read_body(request: web.Request) -> tuple[Any, list[UploadedFile]]:
    content_type = request.headers.get("Content-Type", "")
    if content_type.startswith("multipart/form-data"):
        reader = await request.multipart()
        payload: Any = None
        files: list[UploadedFile] = []
        async for part in reader:
            if not isinstance(part, BodyPartReader):
                continue
            data = await part.read()
            name = part.name or ""
            if name == "payload_json":
                payload = json.loads(data)
            elif part.filename:
                files.append(
                    UploadedFile(
                        name,
                        part.filename,
                        part.headers.get("Content-Type", "application/octet-stream"),
                        bytes(data),
                    )
                )
        return payload, files
    raw = await request.read()
    if not raw:
        return None, []
    if content_type != "application/json":
        return raw.decode("utf-8", "replace"), []
    return json.loads(raw), []


def ratelimit_headers() -> dict[str, str]:
    return {
        "X-RateLimit-Limit": "5",
        "X-RateLimit-Remaining": "4",
        "X-RateLimit-Reset": f"{time.time() + 1:.3f}",  # wall clock: discord.py reads it by its own
        "X-RateLimit-Reset-After": "1.000",
        "X-RateLimit-Bucket": "fake-bucket",
    }


def json_response(status: int, body: Any, headers: dict[str, str] | None = None) -> web.Response:
    # Exactly `application/json`: discord.py compares the header verbatim, and aiohttp's
    # json_response would add "; charset=utf-8".
    out = {**ratelimit_headers(), **(headers or {}), "Content-Type": "application/json"}
    return web.Response(status=status, body=json.dumps(body).encode(), headers=out)


def empty_response() -> web.Response:
    return web.Response(status=204, headers=ratelimit_headers())
