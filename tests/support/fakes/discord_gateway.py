"""The fake Discord's gateway: a websocket speaking the real protocol (API v10, JSON).

HELLO, heartbeats and their ACKs, IDENTIFY -> READY (+ GUILD_CREATE for the shard that holds
the guild), DISPATCH events with sequence numbers, RESUME -> the missed events and RESUMED,
op 9 (invalid session), close codes 4004 (bad token), 4014 (a privileged intent the bot may
not use) and 4012 (bad version/encoding). Frames are compressed as the client asked in the
URL: `zlib-stream` (one stream per connection, every frame ending in Z_SYNC_FLUSH) or
`zstd-stream` (discord.py asks for it when `zstandard` is installed).

A session outlives its socket: events dispatched while the socket is down are buffered and
delivered on RESUME, as Discord does.
"""

from __future__ import annotations

import asyncio
import importlib
import json
import secrets
import zlib
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from aiohttp import WSMsgType, web

from tests.support.fakes.discord_world import shard_of

if TYPE_CHECKING:
    from adapters.discord.payloads import Message
    from tests.support.fakes.discord_server import FakeDiscord

HEARTBEAT_INTERVAL_MS = 41_250
# Intent bits
GUILDS, GUILD_MESSAGES, DIRECT_MESSAGES, MESSAGE_CONTENT = 1 << 0, 1 << 9, 1 << 12, 1 << 15
GUILD_MESSAGE_REACTIONS, DIRECT_MESSAGE_REACTIONS = 1 << 10, 1 << 13
PRIVILEGED = MESSAGE_CONTENT | (1 << 1) | (1 << 8)  # content, members, presences
NOT_REPLAYED = frozenset({"READY", "GUILD_CREATE", "RESUMED"})


def _zstandard() -> Any:
    return importlib.import_module("zstandard")


class Connection:
    """One websocket, with the compression stream the client asked for."""

    def __init__(self, ws: web.WebSocketResponse, compress: str | None) -> None:
        self.ws = ws
        self._zlib = zlib.compressobj() if compress == "zlib-stream" else None
        self._zstd: Any = None
        if compress == "zstd-stream":
            self._zstd = _zstandard().ZstdCompressor().compressobj()
        self._lock = asyncio.Lock()  # frames of one stream must not interleave

    async def send(self, frame: dict[str, Any]) -> None:
        data = json.dumps(frame).encode()
        async with self._lock:
            if self.ws.closed:
                return
            if self._zlib is not None:
                await self.ws.send_bytes(
                    self._zlib.compress(data) + self._zlib.flush(zlib.Z_SYNC_FLUSH)
                )
            elif self._zstd is not None:
                flush = _zstandard().COMPRESSOBJ_FLUSH_BLOCK
                await self.ws.send_bytes(self._zstd.compress(data) + self._zstd.flush(flush))
            else:
                await self.ws.send_str(data.decode())


@dataclass
class Session:
    id: str
    shard: tuple[int, int]
    intents: int
    seq: int = 0
    sent: list[tuple[int, dict[str, Any]]] = field(default_factory=list)
    conn: Connection | None = None


def _op(op: int, data: Any = None) -> dict[str, Any]:
    return {"op": op, "d": data, "s": None, "t": None}


class FakeGateway:
    def __init__(self, world: FakeDiscord) -> None:
        self.world = world
        self.up = True
        self.identifies: list[dict[str, Any]] = []  # IDENTIFY payloads, token removed
        self.resumes: list[dict[str, Any]] = []  # RESUME payloads, token removed
        self.connections: list[dict[str, str]] = []  # query strings the client dialled
        self.redelivered: list[dict[str, Any]] = []  # frames sent again on a RESUME
        # Close codes of ended connections (1000: the client closed it cleanly; 1006: it
        # dropped without a closing handshake).
        self.closes: list[int | None] = []
        self._sessions: dict[str, Session] = {}
        self._pending: list[tuple[str, Any, bool]] = []
        self._replay = 0
        self._sockets: set[web.WebSocketResponse] = set()

    # -- control -------------------------------------------------------------------------------

    async def dispatch(self, event: str, data: Any, *, dm: bool = False) -> None:
        """Send a DISPATCH to the session of the guild's shard (the event's `guild_id`, else
        the first guild; shard 0 for DMs); queued until a session exists, buffered for RESUME
        while its socket is down."""
        guild = data.get("guild_id") if isinstance(data, dict) else None
        session = self._session_for(dm, guild or self.world.guild_id)
        if session is None:
            self._pending.append((event, data, dm))
            return
        await self._send_dispatch(session, event, data, dm=dm)

    async def disconnect(self, *, code: int = 4000, replay: int = 0) -> None:
        """Drop every socket (4000: the client resumes). On the RESUME the last `replay`
        events the client already had are delivered again (Discord is at-least-once)."""
        self._replay = replay
        for session in self._sessions.values():
            conn, session.conn = session.conn, None
            if conn is not None:
                await conn.ws.close(code=code)

    async def invalidate_session(self) -> None:
        """Op 9, not resumable: the client has to identify again."""
        for session_id, session in list(self._sessions.items()):
            del self._sessions[session_id]
            if session.conn is not None:
                await session.conn.send(_op(9, False))

    async def close(self) -> None:
        for ws in list(self._sockets):
            await ws.close(code=1001)

    # -- the websocket -------------------------------------------------------------------------

    async def handle(self, request: web.Request) -> web.StreamResponse:
        query = dict(request.query)
        self.connections.append(query)
        await self.world.changed()
        if not self.up:
            return web.Response(status=503, text="gateway down")
        ws = web.WebSocketResponse(autoping=True, max_msg_size=0)
        await ws.prepare(request)
        compress = query.get("compress")
        if query.get("v") != "10" or query.get("encoding") != "json":
            await ws.close(code=4012, message=b"Invalid API version or encoding")
            return ws
        if compress not in (None, "zlib-stream", "zstd-stream"):
            await ws.close(code=4000, message=b"Unknown compression")
            return ws
        self._sockets.add(ws)
        conn = Connection(ws, compress)
        await conn.send(_op(10, {"heartbeat_interval": HEARTBEAT_INTERVAL_MS}))
        try:
            async for msg in ws:
                if msg.type is WSMsgType.TEXT:
                    await self._on_frame(conn, json.loads(msg.data))
        finally:
            self._sockets.discard(ws)
            for session in self._sessions.values():
                if session.conn is conn:
                    session.conn = None
            self.closes.append(ws.close_code)
            await self.world.changed()
        return ws

    async def _on_frame(self, conn: Connection, frame: dict[str, Any]) -> None:
        op, data = frame.get("op"), frame.get("d") or {}
        if op == 1:  # heartbeat
            await conn.send(_op(11))
        elif op == 2:
            await self._identify(conn, data)
        elif op == 6:
            await self._resume(conn, data)

    async def _identify(self, conn: Connection, data: dict[str, Any]) -> None:
        world = self.world
        if data.get("token") != world.token:
            await conn.ws.close(code=4004, message=b"Authentication failed.")
            return
        intents = int(data.get("intents", 0))
        if intents & PRIVILEGED and not world.privileged_intents:
            await conn.ws.close(code=4014, message=b"Disallowed intent(s).")
            return
        self.identifies.append({k: v for k, v in data.items() if k != "token"})
        shard_id, count = data.get("shard") or (0, 1)
        session = Session(secrets.token_hex(16), (int(shard_id), int(count)), intents, conn=conn)
        self._sessions[session.id] = session
        await self._send_dispatch(session, "READY", world.ready_payload(session.id, session.shard))
        if intents & GUILDS:
            for guild_id in world.guilds_of(session.shard):
                await self._send_dispatch(session, "GUILD_CREATE", world.guild_payload(guild_id))
        pending, self._pending = self._pending, []
        for event, payload, dm in pending:
            await self.dispatch(event, payload, dm=dm)
        await world.changed()

    async def _resume(self, conn: Connection, data: dict[str, Any]) -> None:
        self.resumes.append({k: v for k, v in data.items() if k != "token"})
        session = self._sessions.get(str(data.get("session_id")))
        if session is None or data.get("token") != self.world.token:
            await conn.send(_op(9, False))
            await self.world.changed()
            return
        session.conn = conn
        seen = int(data.get("seq") or 0)
        again = [f for s, f in session.sent if s <= seen][-self._replay :] if self._replay else []
        missed = [f for s, f in session.sent if s > seen]
        self._replay = 0
        for frame in again:
            if frame["t"] not in NOT_REPLAYED:
                self.redelivered.append(frame)
                await conn.send(frame)
        for frame in missed:
            if frame["t"] not in NOT_REPLAYED:
                await conn.send(frame)
        await self._send_dispatch(session, "RESUMED", {})
        await self.world.changed()

    # -- dispatching ---------------------------------------------------------------------------

    def _session_for(self, dm: bool, guild_id: str) -> Session | None:
        """The newest session of the shard the event belongs to, by the shard count that
        session identified with (as Discord routes)."""
        live = [
            s
            for s in self._sessions.values()
            if s.shard[0] == (0 if dm else shard_of(guild_id, s.shard[1]))
        ]
        return live[-1] if live else None

    async def _send_dispatch(
        self, session: Session, event: str, data: Any, *, dm: bool = False
    ) -> None:
        if event == "MESSAGE_CREATE":
            if not session.intents & (DIRECT_MESSAGES if dm else GUILD_MESSAGES):
                return
            data = self._content_for(session, data, dm)
        if event == "MESSAGE_REACTION_ADD" and not session.intents & (
            DIRECT_MESSAGE_REACTIONS if dm else GUILD_MESSAGE_REACTIONS
        ):
            return
        session.seq += 1
        frame = {"op": 0, "t": event, "s": session.seq, "d": data}
        session.sent.append((session.seq, frame))
        if session.conn is not None:
            await session.conn.send(frame)

    def _content_for(self, session: Session, message: Message, dm: bool) -> Message:
        """Without the Message Content intent, Discord blanks the content of guild messages
        that neither mention the bot nor come from it."""
        bot = self.world.bot["id"]
        if session.intents & MESSAGE_CONTENT or dm or message["author"]["id"] == bot:
            return message
        if any(u["id"] == bot for u in message["mentions"]):
            return message
        return {**message, "content": ""}
