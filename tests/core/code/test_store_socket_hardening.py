"""The vector store socket (core/code/store_socket.py) against hostile or broken clients, on a
real Qdrant Edge shard: frames nested past any sensible depth (before the token is even
checked), numbers out of range, and log lines that must not carry the request that happened to
open the store. Every refusal is an answer (`ok: false` and why) and a closed connection, never
an unhandled exception or a traceback in the logs."""

from __future__ import annotations

import asyncio
import base64
import json
import logging
import struct
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from core.code.edge_store import EdgeBackend
from core.code.socket_wire import MAX_DEPTH
from core.code.sparse import encode_query
from core.code.store_socket import (
    MAX_VECTOR_IDS,
    StoreServer,
    addressable,
    plan_from_json,
    plan_json,
    socket_path,
    token_path,
)
from core.code.vectors import plan_search
from core.logcontext import RequestContext, RequestContextFilter, request_scope

DIMENSION = 4
IN_A_REQUEST = RequestContext("req-unrelated", "slack", "T-OTHER", "C-OTHER")


@pytest.fixture
async def shard(tmp_path: Path) -> AsyncIterator[Path]:
    path = tmp_path / "vectors" / "code"
    path.parent.mkdir()
    backend = await asyncio.to_thread(EdgeBackend.open, path, DIMENSION)
    # Started while a request is being handled, as `CodeSearch.store()` does on first use.
    with request_scope(IN_A_REQUEST):
        server = StoreServer(backend, path)
        await server.start()
    try:
        yield path
    finally:
        await server.close()
        await backend.close()


@pytest.fixture
def logged(caplog: pytest.LogCaptureFixture) -> pytest.LogCaptureFixture:
    caplog.set_level(logging.DEBUG)
    caplog.handler.addFilter(RequestContextFilter())
    return caplog


class Client:
    def __init__(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.reader = reader
        self.writer = writer

    async def send_raw(self, body: bytes) -> None:
        self.writer.write(struct.pack(">I", len(body)) + body)
        await self.writer.drain()

    async def send(self, message: dict[str, Any]) -> None:
        await self.send_raw(json.dumps(message).encode())

    async def answer(self) -> dict[str, Any]:
        (size,) = struct.unpack(">I", await asyncio.wait_for(self.reader.readexactly(4), 10))
        answer: dict[str, Any] = json.loads(await self.reader.readexactly(size))
        return answer

    async def closed(self) -> bool:
        return await asyncio.wait_for(self.reader.read(1), 10) == b""

    async def aclose(self) -> None:
        self.writer.close()
        await self.writer.wait_closed()


async def connect(shard: Path, *, hello: bool = True) -> Client:
    with addressable(socket_path(shard)) as address:
        reader, writer = await asyncio.open_unix_connection(address)
    client = Client(reader, writer)
    if hello:
        await client.send({"token": token_path(shard).read_text()})
        assert await client.answer() == {"ok": True}
    return client


def no_tracebacks(caplog: pytest.LogCaptureFixture) -> None:
    for record in caplog.records:
        assert record.exc_info is None, record.getMessage()
        assert "Unhandled" not in record.getMessage(), record.getMessage()
        assert record.levelno < logging.ERROR, record.getMessage()


def dense() -> str:
    return base64.b64encode(struct.pack("<4f", 0.1, 0.2, 0.3, 0.4)).decode()


def plan(limit: int, leg_limit: int) -> dict[str, Any]:
    where = {"repos": None, "roles": None, "names": None}
    leg = {"using": "dense", "vector": {"dense": dense()}, "where": where, "limit": leg_limit}
    return {"legs": [leg], "limit": limit, "fusion_weights": None}


@pytest.mark.parametrize(
    "body",
    [
        b"[" * 100_000,
        b'{"token":' + b"[" * 3_000 + b"]" * 3_000 + b"}",
        b'{"a":' * 2_000 + b"1" + b"}" * 2_000,
    ],
    ids=["open-brackets", "nested-token", "nested-objects"],
)
async def test_deep_nesting_before_the_token_is_a_protocol_error(
    shard: Path, logged: pytest.LogCaptureFixture, body: bytes
) -> None:
    client = await connect(shard, hello=False)
    await client.send_raw(body)
    answer = await client.answer()
    assert answer["ok"] is False and "bad frame" in answer["error"], answer
    assert await client.closed()
    await client.aclose()
    no_tracebacks(logged)
    await (await connect(shard)).aclose()  # the holder still serves others


async def test_a_large_frame_before_the_token_is_refused_unread(
    shard: Path, logged: pytest.LogCaptureFixture
) -> None:
    client = await connect(shard, hello=False)
    client.writer.write(struct.pack(">I", 64 * 1024 * 1024))  # announced, never sent
    await client.writer.drain()
    answer = await client.answer()
    assert answer["ok"] is False and "bad frame" in answer["error"], answer
    assert await client.closed()
    await client.aclose()
    no_tracebacks(logged)


async def test_nesting_within_the_limit_is_fine_after_the_token(shard: Path) -> None:
    client = await connect(shard)
    point = {"id": 1, "dense": dense(), "sparse": {"indices": [], "values": []}, "payload": {}}
    await client.send({"op": "upsert", "points": [point]})
    assert (await client.answer())["ok"] is True
    payload: Any = "leaf [with {brackets} in a string]"
    for _ in range(MAX_DEPTH - 3):
        payload = {"x": payload}
    await client.send({"op": "set_payload", "ids": [1], "payload": payload})
    answer = await client.answer()
    assert answer["ok"] is True, answer
    await client.aclose()


@pytest.mark.parametrize(
    "request_",
    [
        {"op": "query", "plan": plan(-1, 5)},
        {"op": "query", "plan": plan(5, -1)},
        {"op": "query", "plan": plan(10**30, 5)},
        {"op": "query", "plan": plan(0, 5)},
        {"op": "query", "plan": {**plan(5, 5), "limit": True}},
        {"op": "delete", "ids": [-1]},
        {"op": "delete", "ids": [2**64]},
        {"op": "set_payload", "ids": [-5], "payload": {"a": 1}},
        {"op": "vectors", "ids": list(range(1, MAX_VECTOR_IDS + 2))},
        {"op": "vectors", "ids": [-1]},
        {"op": "vectors", "ids": "12"},
        {
            "op": "upsert",
            "points": [
                {
                    "id": 1,
                    "dense": dense(),
                    "sparse": {"indices": [-3], "values": [1.0]},
                    "payload": {},
                }
            ],
        },
        {
            "op": "upsert",
            "points": [
                {
                    "id": 1,
                    "dense": dense(),
                    "sparse": {"indices": [1, 2], "values": [1.0]},
                    "payload": {},
                }
            ],
        },
        {
            "op": "query",
            "plan": {
                **plan(5, 5),
                "legs": [
                    {
                        "using": "sparse",
                        "vector": {"indices": [7, 7], "values": [1.0, 2.0]},
                        "where": {"repos": None, "roles": None, "names": None},
                        "limit": 5,
                    }
                ],
            },
        },
    ],
    ids=[
        "limit-negative",
        "leg-limit-negative",
        "limit-huge",
        "limit-zero",
        "limit-bool",
        "id-negative",
        "id-huge",
        "payload-id-negative",
        "vectors-too-many",
        "vectors-id-negative",
        "vectors-ids-not-a-list",
        "sparse-index-negative",
        "sparse-lengths-differ",
        "sparse-index-repeated",
    ],
)
async def test_fields_out_of_range_are_a_protocol_error(
    shard: Path, logged: pytest.LogCaptureFixture, request_: dict[str, Any]
) -> None:
    client = await connect(shard)
    await client.send(request_)
    answer = await client.answer()
    assert answer["ok"] is False and "bad request" in answer["error"], answer
    assert await client.closed()
    await client.aclose()
    no_tracebacks(logged)


async def test_log_lines_do_not_carry_an_unrelated_request(
    shard: Path, logged: pytest.LogCaptureFixture
) -> None:
    """The server was started inside a request: its connections' log lines are not that
    request's (asyncio copies the context into tasks and into the listening socket's
    callbacks)."""
    client = await connect(shard, hello=False)
    await client.send_raw(b"not json")
    await client.answer()
    await client.aclose()
    mine = [r for r in logged.records if r.name == "core.code.store_socket"]
    assert mine, "the server logs a refused frame"
    for record in mine:
        assert getattr(record, "request_id", None) is None, record.getMessage()
        assert getattr(record, "tenant", None) is None, record.getMessage()


async def test_a_client_that_never_greets_is_let_go(
    tmp_path: Path, logged: pytest.LogCaptureFixture
) -> None:
    """Connections that never send their token would otherwise each hold a task for good."""
    path = tmp_path / "quiet"
    backend = await asyncio.to_thread(EdgeBackend.open, path, DIMENSION)
    server = StoreServer(backend, path, hello_timeout=0.2)
    await server.start()
    try:
        client = await connect(path, hello=False)
        answer = await client.answer()
        assert answer["ok"] is False and "no greeting" in answer["error"], answer
        assert await client.closed()
        await client.aclose()
    finally:
        await server.close()
        await backend.close()
    no_tracebacks(logged)


def test_a_plan_keeps_its_fusion_over_the_wire() -> None:
    sparse = encode_query("retry webhook")
    hybrid = plan_search(
        [0.5, 0.5], sparse, ["retry"], repos=["a"], roles=None, limit=5, mode="hybrid"
    )
    assert hybrid is not None and hybrid.fusion == "dbsf"
    assert plan_from_json(json.loads(json.dumps(plan_json(hybrid)))) == hybrid
    older = plan_json(hybrid)
    del older["fusion"]  # a client from before DBSF fused by rank
    assert plan_from_json(older).fusion == "rrf"
    with pytest.raises(ValueError, match="unknown fusion 'mean'"):
        plan_from_json({**plan_json(hybrid), "fusion": "mean"})


async def test_a_holder_that_hangs_on_release_is_given_up_on(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A bot starting up asks the holder to let the store go; one that lets it in and then
    never answers must not hold up the bot's start-up."""
    from core.code import store_socket
    from core.code.store_socket import RemoteBackend

    shard = tmp_path / "code"
    token_path(shard).write_text("t0ken")
    asked: list[dict[str, Any]] = []
    done = asyncio.Event()
    handlers: list[asyncio.Task[Any]] = []

    async def hang(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        task = asyncio.current_task()
        assert task is not None
        handlers.append(task)
        try:
            for answer in ({"ok": True}, None):
                (size,) = struct.unpack(">I", await reader.readexactly(4))
                asked.append(json.loads(await reader.readexactly(size)))
                if answer is not None:
                    body = json.dumps(answer).encode()
                    writer.write(struct.pack(">I", len(body)) + body)
                    await writer.drain()
            await done.wait()  # the release request is never answered
        finally:
            writer.close()

    with addressable(socket_path(shard)) as address:
        server = await asyncio.start_unix_server(hang, path=address)
    monkeypatch.setattr(store_socket, "RELEASE_TIMEOUT", 0.5)
    try:
        assert await RemoteBackend(shard).release() is False
        assert asked == [{"token": "t0ken"}, {"op": "release"}]
    finally:
        done.set()
        await asyncio.gather(*handlers, return_exceptions=True)
        server.close()
        await server.wait_closed()
