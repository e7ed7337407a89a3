"""The light half of the vector store socket (`core.code.store_socket`): where the socket and
token file of a shard are, the framing (a 4-byte big-endian length and a JSON object), and a
small synchronous client. Standard library only, so that `threadline search` can ask the bot
before importing anything heavy.

A frame is checked before it is parsed: its announced size against the caller's limit (a
greeting, read before the token is checked, gets a small one), then how deeply its arrays and
objects nest (`json` recurses once per level: thousands of `[` would raise `RecursionError`).
Both failures are `BadFrame`, a `ValueError`."""

from __future__ import annotations

import contextlib
import json
import os
import re
import socket
import struct
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

MAX_FRAME = 256 * 1024 * 1024
MAX_HELLO = 4 * 1024  # the greeting: a token, read before anyone is authenticated
MAX_DEPTH = 64  # arrays and objects inside each other; the protocol itself needs about 6
CONNECT_TIMEOUT = 2.0
SOCKET_SUFFIX = ".sock"
TOKEN_SUFFIX = ".token"
HEADER = struct.Struct(">I")
# sun_path holds 108 bytes on Linux; longer paths are reached through /proc/self/fd.
_MAX_SUN_PATH = 100


class Refused(Exception):
    """The holder did not let this process in (a wrong token, another user)."""


class BadFrame(ValueError):
    """A frame that is too large, nested too deeply or not a JSON object; the message says
    which, and is safe to send back."""


# A JSON string (brackets inside it do not nest), or one bracket.
_NESTING = re.compile(rb'"[^"\\]*(?:\\.[^"\\]*)*"|[\[\]{}]')


def socket_path(shard: Path) -> Path:
    return shard.with_name(shard.name + SOCKET_SUFFIX)


def token_path(shard: Path) -> Path:
    return shard.with_name(shard.name + TOKEN_SUFFIX)


def available() -> bool:
    return hasattr(socket, "AF_UNIX")


@contextlib.contextmanager
def addressable(path: Path) -> Iterator[str]:
    """`path` as an address a Unix socket accepts, also when it is longer than sun_path."""
    text = os.fspath(path)
    if len(os.fsencode(text)) <= _MAX_SUN_PATH or not Path("/proc/self/fd").is_dir():
        yield text
        return
    fd = os.open(path.parent, os.O_RDONLY | os.O_DIRECTORY)
    try:
        yield f"/proc/self/fd/{fd}/{path.name}"
    finally:
        os.close(fd)


def frame(message: Mapping[str, Any]) -> bytes:
    body = json.dumps(message, separators=(",", ":")).encode()
    return HEADER.pack(len(body)) + body


def check_depth(body: bytes, limit: int = MAX_DEPTH) -> None:
    """Raise `BadFrame` if arrays and objects nest more than `limit` deep in `body`."""
    if body.count(b"[") + body.count(b"{") <= limit:
        return  # the common case, at C speed: too few brackets to nest that deep
    depth = 0
    for match in _NESTING.finditer(body):
        token = match.group()
        if token in (b"[", b"{"):
            depth += 1
            if depth > limit:
                raise BadFrame(f"nested more than {limit} levels deep")
        elif token in (b"]", b"}"):
            depth -= 1


def unframe(body: bytes) -> dict[str, Any]:
    check_depth(body)
    try:
        message = json.loads(body)
    except RecursionError:  # not expected after check_depth; never let it escape
        raise BadFrame(f"nested more than {MAX_DEPTH} levels deep") from None
    except ValueError as exc:
        raise BadFrame(f"not JSON ({exc})") from None
    if not isinstance(message, dict):
        raise BadFrame("a frame must hold a JSON object")
    return message


def frame_size(header: bytes, limit: int = MAX_FRAME) -> int:
    (size,) = HEADER.unpack(header)
    if size > limit:
        raise BadFrame(f"frame of {size} bytes (at most {limit} here)")
    return int(size)


def read_token(shard: Path) -> str:
    """The token of the process holding `shard` (`OSError` when there is none)."""
    return token_path(shard).read_text(encoding="ascii").strip()


def ask(shard: Path, request: Mapping[str, Any] | None, *, timeout: float) -> dict[str, Any]:
    """One exchange with the holder of `shard`: the token, then `request` (None: only the
    greeting); the answer. Raises `OSError` when no holder answers (`ConnectionError` if it
    hangs up), `Refused` when it does not let this process in, `ValueError` on a bad frame."""
    token = read_token(shard)
    with (
        addressable(socket_path(shard)) as address,
        socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as sock,
    ):
        sock.settimeout(CONNECT_TIMEOUT)
        sock.connect(address)
        sock.sendall(frame({"token": token}))
        hello = _receive(sock)
        if not hello.get("ok"):
            raise Refused(str(hello.get("error", "not authorised")))
        if request is None:
            return hello
        sock.settimeout(timeout)
        sock.sendall(frame(request))
        return _receive(sock)


def _receive(sock: socket.socket) -> dict[str, Any]:
    return unframe(recv_exactly(sock, frame_size(recv_exactly(sock, HEADER.size))))


def recv_exactly(sock: socket.socket, size: int) -> bytes:
    chunks = []
    while size:
        chunk = sock.recv(size)
        if not chunk:
            raise ConnectionResetError("closed by the holder")
        chunks.append(chunk)
        size -= len(chunk)
    return b"".join(chunks)
