"""Sharing the embedded vector store with other local processes through the one that holds it.

A Qdrant Edge shard has one owner. When the bot (`run`, `serve`) holds it, a `threadline search`
or `threadline index` in a shell cannot open it; instead it reaches the shard through the
holder: the holder listens on a Unix socket next to the shard (`<collection>.sock`), and the
other process uses a `RemoteBackend` that forwards the store's few operations (point states,
upsert, delete, set payload, query) to it. Everything else runs in the asking process as
usual: embedding (so an index in a shell does not load the bot), SQL, snippets. Writes
through the socket are serialized with the holder's own by the holder's backend. One more
operation, `search`, is a whole search run by the holder (its `CodeSearch` hands the server
the function): `threadline search` asks for it first, with the light client of
`core.code.socket_wire`, and so needs neither the database, the embedder nor NumPy.

Only the local operator gets in: the socket is mode 0600, each connection must present the
token the holder wrote to `<collection>.token` (mode 0600, new for every holder), and on Linux
the peer must run as the same user (SO_PEERCRED). Frames are a 4-byte big-endian length and a
JSON object; dense vectors travel as base64 float32. A greeting that does not come within
10 s, a frame that is too large (the greeting may hold 4 KiB: it is read before the token is
checked) or nested too deeply, and a request with a field out of range (a negative limit, an
id beyond 64 bits) are answered `ok: false` with the reason, and the connection is closed.

The server runs outside any request's context: the store opens on first use, often inside a
request, and its connections' log lines must not carry that request's id, tenant and channel.

A holder that goes away (stopped, crashed) leaves the caller with `HolderGone`: the caller opens
the store again, and then holds it itself (`core.code.search.CodeSearch` does this).

A holder may be one that lets go when asked: `threadline hold-search`, which a `threadline
search` in a shell starts so that the next ones are answered at once (`bot.search_holder`). It
serves with `release`, and the `release` operation, which a bot starting up sends
(`CodeSearch.hold(take_over=True)`), makes it close the store so that the bot holds it instead.
A holder without `release` (a bot) answers that it keeps the store. The server also says how
long it has been idle (`idle_for`), for a holder that leaves when nobody uses it.
"""

from __future__ import annotations

import asyncio
import base64
import contextlib
import hmac
import logging
import os
import secrets
import socket
import struct
import time
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import asdict
from pathlib import Path
from typing import Any

import numpy as np

from core.code.socket_wire import (
    CONNECT_TIMEOUT,
    HEADER,
    MAX_FRAME,
    MAX_HELLO,
    BadFrame,
    Refused,
    addressable,
    available,
    frame,
    frame_size,
    socket_path,
    token_path,
    unframe,
)
from core.code.socket_wire import ask as ask_holder
from core.code.vector_query import (
    Backend,
    Leg,
    PointData,
    PointState,
    QueryPlan,
    Scored,
    SparseQuery,
    VectorStoreError,
    Where,
)
from core.logcontext import detached

log = logging.getLogger(__name__)

# Named here too: other modules and tests reach the socket's paths through this module.
__all__ = [
    "HolderGone",
    "RemoteBackend",
    "SearchFunction",
    "StoreServer",
    "UnknownRepository",
    "addressable",
    "available",
    "plan_from_json",
    "plan_json",
    "socket_path",
    "token_path",
]


class HolderGone(VectorStoreError):
    """The process that held the embedded store is gone: open the store again."""


class UnknownRepository(Exception):
    """A whole search named a repository that is not registered."""

    def __init__(self, name: str, known: Sequence[str]) -> None:
        super().__init__(f"no repository named {name!r}")
        self.name = name
        self.known = list(known)


HELLO_TIMEOUT = 10.0  # seconds a new connection has to send its token
RELEASE_TIMEOUT = 10.0  # seconds a holder has to answer that it lets the store go
MAX_LIMIT = 10_000  # results a query or a whole search may ask for (searches use at most 60)
MAX_POINT_ID = 2**64 - 1  # Qdrant's numeric ids are unsigned 64-bit
MAX_VECTOR_IDS = 4096  # points whose vectors one request may read (about 30 MB of JSON)
MAX_SPARSE_INDEX = 2**32 - 1


class BadRequest(ValueError):
    """A request with a field missing, of the wrong type or out of range; safe to send back."""


def _bounded(value: Any, what: str, low: int, high: int) -> int:
    """`value` if it is an integer in [low, high]: the engine converts to fixed-width integers
    and raises `OverflowError` (not a `ValueError`) on anything else."""
    if isinstance(value, bool) or not isinstance(value, int) or not low <= value <= high:
        raise BadRequest(f"{what} must be an integer from {low} to {high}")
    return value


# The holder's whole search: query, repository names (None: all), k, roles (None: all) -> the
# answer's fields (`repos`: the names searched, `results`: rows). Raises `UnknownRepository`.
SearchFunction = Callable[
    [str, Sequence[str] | None, int, Sequence[str] | None], Awaitable[dict[str, Any]]
]


# -- wire format ----------------------------------------------------------------------------------
async def _send(writer: asyncio.StreamWriter, message: Mapping[str, Any]) -> None:
    writer.write(frame(message))
    await writer.drain()


async def _receive(reader: asyncio.StreamReader, limit: int = MAX_FRAME) -> dict[str, Any]:
    size = frame_size(await reader.readexactly(HEADER.size), limit)
    return unframe(await reader.readexactly(size))


def _floats(values: Sequence[float]) -> str:
    return base64.b64encode(np.asarray(values, dtype="<f4").tobytes()).decode("ascii")


def _unfloats(text: str) -> list[float]:
    values: list[float] = np.frombuffer(base64.b64decode(text), dtype="<f4").tolist()
    return values


def _vector_json(vector: list[float] | SparseQuery) -> dict[str, Any]:
    if isinstance(vector, SparseQuery):
        return {"indices": vector.indices, "values": vector.values}
    return {"dense": _floats(vector)}


def _sparse(data: Mapping[str, Any]) -> SparseQuery:
    indices = [_bounded(i, "a sparse index", 0, MAX_SPARSE_INDEX) for i in data["indices"]]
    values = [float(v) for v in data["values"]]
    # The engine panics (an exception no `except Exception` catches) on either.
    if len(indices) != len(values):
        raise BadRequest("a sparse vector needs as many values as indices")
    if len(set(indices)) != len(indices):
        raise BadRequest("a sparse vector may name each index once")
    return SparseQuery(indices, values)


def _vector(data: Mapping[str, Any]) -> list[float] | SparseQuery:
    if "dense" in data:
        return _unfloats(data["dense"])
    return _sparse(data)


def _tuple(values: Sequence[str] | None) -> tuple[str, ...] | None:
    return tuple(str(v) for v in values) if values is not None else None


def plan_json(plan: QueryPlan) -> dict[str, Any]:
    return {
        "legs": [
            {
                "using": leg.using,
                "vector": _vector_json(leg.vector),
                "where": {
                    "repos": leg.where.repos,
                    "roles": leg.where.roles,
                    "names": leg.where.names,
                },
                "limit": leg.limit,
            }
            for leg in plan.legs
        ],
        "limit": plan.limit,
        "fusion_weights": plan.fusion_weights,
        "fusion": plan.fusion,
    }


def plan_from_json(data: Mapping[str, Any]) -> QueryPlan:
    legs = []
    for leg in data["legs"]:
        using = leg["using"]
        if using not in ("dense", "sparse"):
            raise ValueError(f"unknown vector {using!r}")
        where = leg["where"]
        legs.append(
            Leg(
                using,
                _vector(leg["vector"]),
                Where(_tuple(where["repos"]), _tuple(where["roles"]), _tuple(where["names"])),
                _bounded(leg["limit"], "limit", 1, MAX_LIMIT),
            )
        )
    weights = data["fusion_weights"]
    fusion = data.get("fusion", "rrf")  # absent from an older client: it fused by rank
    if fusion not in ("rrf", "dbsf"):
        raise ValueError(f"unknown fusion {fusion!r}")
    return QueryPlan(
        tuple(legs),
        _bounded(data["limit"], "limit", 1, MAX_LIMIT),
        tuple(float(w) for w in weights) if weights is not None else None,
        fusion,
    )


def _point_json(p: PointData) -> dict[str, Any]:
    return {
        "id": p.id,
        "dense": _floats(p.dense),
        "sparse": {"indices": p.sparse.indices, "values": p.sparse.values},
        "payload": p.payload,
    }


def _point(data: Mapping[str, Any]) -> PointData:
    return PointData(
        _bounded(data["id"], "a point id", 0, MAX_POINT_ID),
        _unfloats(data["dense"]),
        _sparse(data["sparse"]),
        dict(data["payload"]),
    )


def _ids(values: Sequence[Any]) -> list[int]:
    return [_bounded(v, "a point id", 0, MAX_POINT_ID) for v in values]


# -- the holder's side ----------------------------------------------------------------------------
def _peer_is_us(writer: asyncio.StreamWriter) -> bool:
    """Whether the connecting process runs as this user (Linux; elsewhere the token decides)."""
    sock = writer.get_extra_info("socket")
    if sock is None or not hasattr(socket, "SO_PEERCRED"):
        return True
    creds = sock.getsockopt(socket.SOL_SOCKET, socket.SO_PEERCRED, struct.calcsize("3i"))
    _, uid, _ = struct.unpack("3i", creds)
    return bool(uid == os.getuid())


class StoreServer:
    """Serves `backend` on the Unix socket next to `shard` while this process holds it, and
    with `search`, whole searches too (`threadline search` asks for them before loading
    anything heavy)."""

    def __init__(
        self,
        backend: Backend,
        shard: Path,
        *,
        search: SearchFunction | None = None,
        release: Callable[[], None] | None = None,
        hello_timeout: float = HELLO_TIMEOUT,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self._backend = backend
        self._hello_timeout = hello_timeout
        self._search = search
        self._release = release
        self._clock = clock
        self._last_used = clock()
        self._busy = 0  # requests being answered
        self._socket = socket_path(shard)
        self._token_file = token_path(shard)
        self._token = secrets.token_hex(32)
        self._server: asyncio.Server | None = None
        self._clients: set[asyncio.Task[None]] = set()

    async def start(self) -> None:
        # This process holds the shard, so a socket or token file here is a dead holder's.
        for stale in (self._socket, self._token_file):
            stale.unlink(missing_ok=True)
        tmp = self._token_file.with_name(self._token_file.name + ".tmp")
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        with os.fdopen(fd, "w", encoding="ascii") as out:
            out.write(self._token)
        tmp.replace(self._token_file)
        with addressable(self._socket) as address:
            # In a fresh context: the listening socket's callbacks and every connection's task
            # would otherwise copy the context of whoever opened the store (a request).
            self._server = await detached(
                asyncio.start_unix_server(self._serve, path=address, limit=MAX_FRAME)
            )
        os.chmod(self._socket, 0o600)

    def idle_for(self) -> float:
        """Seconds since the last request was answered; 0 while one is being answered. A
        connection counts only by its requests: one that says nothing keeps nobody here."""
        return 0.0 if self._busy else max(0.0, self._clock() - self._last_used)

    async def close(self) -> None:
        server, self._server = self._server, None
        if server is None:
            return
        server.close()
        for task in list(self._clients):
            task.cancel()
        await asyncio.gather(*self._clients, return_exceptions=True)
        await server.wait_closed()
        for path in (self._socket, self._token_file):
            path.unlink(missing_ok=True)

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        task = asyncio.current_task()
        assert task is not None
        self._clients.add(task)
        try:
            await self._converse(reader, writer)
        except (OSError, asyncio.IncompleteReadError) as exc:
            log.debug("vector store client dropped: %s", exc)
        except asyncio.CancelledError:
            # `close()` ends connections this way; ending the task normally keeps asyncio's
            # stream callback (3.11 asks a cancelled task for its exception) from logging it.
            pass
        except Exception:
            log.exception("vector store socket: a request failed")
            with contextlib.suppress(OSError):
                await _send(writer, {"ok": False, "error": "the holder failed"})
        finally:
            self._clients.discard(task)
            writer.close()
            with contextlib.suppress(OSError):
                await writer.wait_closed()

    async def _converse(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        """The greeting, then requests until the client hangs up; the connection ends at the
        first bad frame or bad request, after an answer saying what was wrong."""
        try:
            hello = await asyncio.wait_for(_receive(reader, MAX_HELLO), self._hello_timeout)
        except BadFrame as exc:
            await self._refuse(writer, f"bad frame: {exc}")
            return
        except TimeoutError:
            await self._refuse(writer, f"no greeting within {self._hello_timeout:g} s")
            return
        token = hello.get("token")
        if not (
            isinstance(token, str)
            and _peer_is_us(writer)
            and hmac.compare_digest(token.encode(), self._token.encode())
        ):
            await _send(writer, {"ok": False, "error": "not authorised"})
            return
        await _send(writer, {"ok": True})
        while True:
            try:
                request = await _receive(reader)
            except asyncio.IncompleteReadError:
                return  # the client is done
            except BadFrame as exc:
                await self._refuse(writer, f"bad frame: {exc}")
                return
            self._busy += 1
            try:
                answer = await self._answer(request)
            except (KeyError, TypeError, ValueError, OverflowError) as exc:
                detail = str(exc) if isinstance(exc, BadRequest) else repr(exc)
                await self._refuse(writer, f"bad request: {detail}")
                return
            finally:
                self._busy -= 1
                self._last_used = self._clock()
            await _send(writer, answer)

    @staticmethod
    async def _refuse(writer: asyncio.StreamWriter, error: str) -> None:
        log.info("vector store socket: %s; connection closed", error)
        await _send(writer, {"ok": False, "error": error})

    async def _answer(self, request: Mapping[str, Any]) -> dict[str, Any]:
        """The answer to one request. Raises `BadRequest` (or a KeyError, TypeError,
        ValueError, OverflowError) for a malformed one."""
        b = self._backend
        op = request.get("op")
        try:
            if op == "states":
                repo = request.get("repo")
                states = await b.states(str(repo) if repo is not None else None)
                return {"ok": True, "states": {str(i): asdict(s) for i, s in states.items()}}
            if op == "vectors":
                ids = _ids(request["ids"])
                if len(ids) > MAX_VECTOR_IDS:  # the answer must fit in a frame
                    raise BadRequest(f"at most {MAX_VECTOR_IDS} vectors per request")
                vectors = await b.dense_vectors(ids)
                return {"ok": True, "vectors": {str(i): v for i, v in vectors.items()}}
            if op == "query":
                hits = await b.query(plan_from_json(request["plan"]))
                return {
                    "ok": True,
                    "hits": [{"id": h.id, "score": h.score, "payload": h.payload} for h in hits],
                }
            if op == "search" and self._search is not None:
                return await self._whole_search(self._search, request)
            if op == "release":
                if self._release is None:
                    return {"ok": False, "error": "this holder keeps the store"}
                log.info("vector store socket: asked to let the store go")
                self._release()
                return {"ok": True}
            if op == "upsert":
                await b.upsert([_point(p) for p in request["points"]])
            elif op == "delete":
                await b.delete(_ids(request["ids"]))
            elif op == "set_payload":
                await b.set_payload(_ids(request["ids"]), dict(request["payload"]))
            else:
                return {"ok": False, "error": f"unknown operation {op!r}"}
            return {"ok": True}
        except VectorStoreError as exc:
            return {"ok": False, "error": str(exc)}

    @staticmethod
    async def _whole_search(search: SearchFunction, request: Mapping[str, Any]) -> dict[str, Any]:
        repos, roles = request["repos"], request["roles"]
        k = _bounded(request["k"], "k", 1, MAX_LIMIT)
        try:
            found = await search(
                str(request["query"]),
                [str(r) for r in repos] if repos is not None else None,
                k,
                [str(r) for r in roles] if roles is not None else None,
            )
        except UnknownRepository as exc:
            return {"ok": False, "error": str(exc), "unknown_repo": exc.name, "known": exc.known}
        return {"ok": True, **found}


# -- the other processes' side --------------------------------------------------------------------
class RemoteBackend:
    """A `Backend` that asks the process holding the shard; see the module docstring."""

    def __init__(self, shard: Path) -> None:
        self._shard = shard
        self._socket = socket_path(shard)
        self._token_file = token_path(shard)

    @classmethod
    def connect(cls, shard: Path) -> RemoteBackend:
        """A backend through the holder of `shard`, if one answers; else `VectorStoreError`.
        Blocking (a quick handshake): call it off the event loop."""
        backend = cls(shard)
        backend._probe()
        return backend

    def _token(self) -> str:
        try:
            return self._token_file.read_text(encoding="ascii").strip()
        except OSError as exc:
            raise HolderGone(f"no holder's token at {self._token_file}: {exc.strerror}") from None

    def _probe(self) -> None:
        if not available() or not self._socket.exists():
            raise HolderGone("the process holding the embedded vector store shares no socket")
        self._token()
        try:
            ask_holder(self._shard, None, timeout=CONNECT_TIMEOUT)
        except OSError as exc:
            raise HolderGone(f"the holder does not answer at {self._socket}: {exc}") from None
        except Refused as exc:
            raise VectorStoreError(
                f"the holder of the embedded vector store refused: {exc}"
            ) from None

    @property
    def embedded(self) -> bool:
        return True

    async def _ask(self, request: Mapping[str, Any]) -> dict[str, Any]:
        token = self._token()
        try:
            with addressable(self._socket) as address:
                reader, writer = await asyncio.wait_for(
                    asyncio.open_unix_connection(address, limit=MAX_FRAME), CONNECT_TIMEOUT
                )
            try:
                await _send(writer, {"token": token})
                hello = await _receive(reader)
                if not hello.get("ok"):
                    raise VectorStoreError(
                        f"the holder of the embedded vector store refused: {hello.get('error')}"
                    )
                await _send(writer, request)
                answer = await _receive(reader)
            finally:
                writer.close()
                with contextlib.suppress(OSError):
                    await writer.wait_closed()
        except (OSError, asyncio.IncompleteReadError, TimeoutError) as exc:
            raise HolderGone(
                f"the process holding the embedded vector store went away ({exc!r})"
            ) from None
        if not answer.get("ok"):
            raise VectorStoreError(str(answer.get("error", "the holder failed")))
        return answer

    async def ensure(self, dimension: int) -> None:
        """Nothing to do: the holder made the shard."""

    async def upsert(self, points: Sequence[PointData]) -> None:
        if points:
            await self._ask({"op": "upsert", "points": [_point_json(p) for p in points]})

    async def delete(self, ids: Sequence[int]) -> None:
        if ids:
            await self._ask({"op": "delete", "ids": list(ids)})

    async def set_payload(self, ids: Sequence[int], payload: Mapping[str, Any]) -> None:
        if ids:
            await self._ask({"op": "set_payload", "ids": list(ids), "payload": dict(payload)})

    async def states(self, repo: str | None) -> dict[int, PointState]:
        answer = await self._ask({"op": "states", "repo": repo})
        return {int(i): PointState(**s) for i, s in answer["states"].items()}

    async def dense_vectors(self, ids: Sequence[int]) -> dict[int, list[float]]:
        out: dict[int, list[float]] = {}
        for start in range(0, len(ids), MAX_VECTOR_IDS):
            part = list(ids[start : start + MAX_VECTOR_IDS])
            answer = await self._ask({"op": "vectors", "ids": part})
            out.update({int(i): [float(x) for x in v] for i, v in answer["vectors"].items()})
        return out

    async def query(self, plan: QueryPlan) -> list[Scored]:
        answer = await self._ask({"op": "query", "plan": plan_json(plan)})
        return [Scored(int(h["id"]), float(h["score"]), h["payload"]) for h in answer["hits"]]

    async def release(self) -> bool:
        """Ask the holder to let the store go (a `threadline hold-search` does, a bot does
        not): whether it will. It closes the store moments after answering."""
        try:
            # Bounded: a holder that hangs must not hold up the asking bot's start-up.
            await asyncio.wait_for(self._ask({"op": "release"}), RELEASE_TIMEOUT)
        except HolderGone:
            return True  # gone already
        except (VectorStoreError, TimeoutError):
            return False
        return True

    async def close(self) -> None:
        """Nothing to release: each call has its own connection."""
