"""A fake Slack Web API: a real aiohttp server on 127.0.0.1 (port 0), driven by the real
slack_sdk client, answering like Slack and recording every call.

    fake = FakeSlack().start()
    settings: SLACK_BOT_TOKEN=fake.bot_token, SLACK_API_URL=fake.api_url
    fake.wait_calls("chat.postMessage", 1)       # blocks until recorded, with a deadline
    fake.fail_next("chat.postMessage", error="msg_too_long")
    fake.fail_next("chat.postMessage", status=429, headers={"Retry-After": "1"})
    fake.drop_next("chat.postMessage")           # posts, then loses the response
    fake.refuse_streaming(team="T2")             # chat.startStream: feature_not_enabled there
    fake.expire_streams_after(2)                 # a stream stops taking calls after 2 appends
    fake.refuse_updates()                        # chat.update: cant_update_message
    fake.limit_rate("chat.update", per_second=1) # 429 beyond that, per channel; see `throttled`

It keeps the messages it was asked to post (per channel, with thread_ts and metadata) so
`conversations.replies` / `conversations.history` answer from them (paged like Slack, top-level
messages only in the history, metadata only with `include_all_metadata`), rejects texts over 4,000
characters with `msg_too_long` as Slack does, serves the files upload v2 flow, and a Socket
Mode websocket (`apps.connections.open` + `send_envelope`).

Streamed messages (`chat.startStream` / `appendStream` / `stopStream`) are stored like posted
ones: their `text` grows with each `markdown_text` chunk, `chunks` records every chunk as sent,
`tasks` each task's statuses in order, `streaming` whether the stream is still open.
`assistant.threads.setStatus` is recorded (and refused when told). Forms opened with `views.open`
are checked against a modal's limits and kept in `views`. The server runs in its own thread
and event loop, so sync tests and apps on other loops can use it alike.

Files people attach, and the threads they write in:

    f = fake.host_file("log.txt", b"...", "text/plain")   # a Slack file object for `files[]`
    fake.host_file(..., chunked=True)           # served without Content-Length
    fake.host_file(..., redirect_to=url)        # answers 302 to `url` instead
    {"id": f["id"], "file_access": "check_file_info"}  # a partial file: files.info has it
    fake.forged_file("x.txt")                   # a file object whose URLs point at another
    fake.elsewhere_calls()                      #   127.0.0.1 port, which records every request
    fake.add_message("C1", "text", user="U1", thread_ts=root, files=[f])  # in the thread
    fake.set_user("U1", "alice")                # users.info's display name

A file is served at `/files-pri/...` only with the bot token as `Authorization: Bearer` (else
Slack's sign-in page, as HTML with status 200, as Slack does); each download is a `files-pri`
call. Stored messages are what `conversations.replies` pages through.
"""

from __future__ import annotations

import asyncio
import itertools
import json
import threading
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import parse_qsl

from aiohttp import WSMsgType, web

# The sequence part of every message timestamp, the fake API's and the test events' alike
# (`slack_events.new_ts`): two counters made the same stamp within one second, and an answer
# then had its question's ts.
TS_SEQUENCE = itertools.count(1)

MAX_TEXT = 4_000  # where Slack answers msg_too_long in practice


@dataclass
class Call:
    method: str
    args: dict[str, Any]
    at: float  # time.monotonic() when received
    token: str | None


@dataclass
class _Failure:
    status: int = 200
    error: str | None = None
    headers: dict[str, str] = field(default_factory=dict)
    drop: bool = False  # process the call, then close the connection without answering
    skip: int = 0  # let this many calls through first


class FakeSlack:
    bot_token = "xoxb-fake-bot-token"
    app_token = "xapp-fake-app-token"
    bot_user_id = "U0THREADLINE"
    bot_id = "B0THREADLINE"
    team_id = "T0HOME"

    def __init__(self, clock: Callable[[], float] | None = None) -> None:
        # Message timestamps come from Slack's clock, here the real one (processes under test
        # read theirs), or the test's pinned clock when the bot under test is given one.
        self.clock: Callable[[], float] = clock or time.time
        self._calls: list[Call] = []
        self._cond = threading.Condition()
        self._failures: dict[str, list[_Failure]] = {}
        self._messages: dict[str, list[dict[str, Any]]] = {}
        self._uploads: dict[str, bytes] = {}
        self._acks: dict[str, dict[str, Any]] = {}
        self._ts = itertools.count(1)
        self._no_stream: dict[str | None, str] = {}  # team (None: every team) -> error
        self._expire_after: int | None = None
        self._no_updates: str | None = None
        self._no_status: str | None = None
        self._rates: dict[str, float] = {}  # method -> calls per second allowed per channel
        self._recent: dict[tuple[str, str], list[float]] = {}
        self.throttled = 0  # 429s answered (scripted ones and rate limits)
        self._loop: asyncio.AbstractEventLoop | None = None
        self._thread: threading.Thread | None = None
        self._runner: web.AppRunner | None = None
        self._sockets: list[web.WebSocketResponse] = []
        self.port = 0
        self._files: dict[str, _HostedFile] = {}
        self._file_objects: dict[str, dict[str, Any]] = {}  # files.info, by file id
        self._users: dict[str, dict[str, Any]] = {}
        self._elsewhere_runner: web.AppRunner | None = None
        self.views: list[dict[str, Any]] = []  # forms opened with `views.open`, in order
        self.elsewhere_port = 0

    # -- lifecycle ---------------------------------------------------------------------------
    def start(self) -> FakeSlack:
        ready = threading.Event()

        def run() -> None:
            loop = asyncio.new_event_loop()
            self._loop = loop
            loop.run_until_complete(self._serve())
            ready.set()
            loop.run_forever()
            loop.run_until_complete(self._shutdown())
            loop.close()

        self._thread = threading.Thread(target=run, name="fake-slack", daemon=True)
        self._thread.start()
        if not ready.wait(10):
            raise RuntimeError("the fake Slack server did not start")
        return self

    async def _serve(self) -> None:
        app = web.Application(client_max_size=50 * 1024 * 1024)
        app.router.add_post("/api/{method}", self._api)
        app.router.add_get("/api/{method}", self._api)
        app.router.add_post("/upload/{file_id}", self._upload)
        app.router.add_post("/response/{hook}", self._response_url)
        app.router.add_get("/link", self._websocket)
        app.router.add_get("/files-pri/{path:.*}", self._file)
        self._runner = web.AppRunner(app, access_log=None, handle_signals=False)
        await self._runner.setup()
        site = web.TCPSite(self._runner, "127.0.0.1", 0)
        await site.start()
        self.port = int(self._runner.addresses[0][1])
        # Another host (another port of 127.0.0.1) that would serve anything asked of it.
        elsewhere = web.Application()
        elsewhere.router.add_route("*", "/{path:.*}", self._elsewhere)
        self._elsewhere_runner = web.AppRunner(elsewhere, access_log=None, handle_signals=False)
        await self._elsewhere_runner.setup()
        await web.TCPSite(self._elsewhere_runner, "127.0.0.1", 0).start()
        self.elsewhere_port = int(self._elsewhere_runner.addresses[0][1])

    async def _shutdown(self) -> None:
        for ws in list(self._sockets):
            await ws.close()
        if self._runner is not None:
            await self._runner.cleanup()
        if self._elsewhere_runner is not None:
            await self._elsewhere_runner.cleanup()

    def stop(self) -> None:
        if self._loop is not None and self._thread is not None:
            self._loop.call_soon_threadsafe(self._loop.stop)
            self._thread.join(10)
            self._loop = None

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    @property
    def api_url(self) -> str:
        return f"{self.url}/api/"

    def response_url(self, name: str = "hook") -> str:
        return f"{self.url}/response/{name}"

    # -- scripting ---------------------------------------------------------------------------
    def fail_next(
        self,
        method: str,
        *,
        error: str | None = None,
        status: int = 200,
        headers: dict[str, str] | None = None,
        after: int = 0,
    ) -> None:
        """After `after` more successful calls, the next call of `method` fails (a Slack
        error code and/or an HTTP status)."""
        error = error or ("ratelimited" if status == 429 else None)
        with self._cond:
            self._failures.setdefault(method, []).append(
                _Failure(status, error, headers or {}, skip=after)
            )

    def drop_next(self, method: str) -> None:
        """The next call of `method` takes effect, but its response is lost."""
        with self._cond:
            self._failures.setdefault(method, []).append(_Failure(drop=True))

    def refuse_streaming(self, team: str | None = None, error: str = "feature_not_enabled") -> None:
        """`chat.startStream` fails with `error` for streams to `team` (None: every team)."""
        with self._cond:
            self._no_stream[team] = error

    def expire_streams_after(self, appends: int | None) -> None:
        """A stream takes `appends` appends, then answers `message_not_in_streaming_state`
        (Slack expires streams left open; None: never)."""
        with self._cond:
            self._expire_after = appends

    def refuse_updates(self, error: str | None = "cant_update_message") -> None:
        with self._cond:
            self._no_updates = error

    def refuse_status(self, error: str | None = "not_allowed") -> None:
        with self._cond:
            self._no_status = error

    def limit_rate(self, method: str, per_second: float) -> None:
        """More than `per_second` calls of `method` in a channel within a second get a 429
        with Retry-After: 1 (counted in `throttled`)."""
        with self._cond:
            self._rates[method] = per_second

    # -- files and threads ---------------------------------------------------------------------
    def host_file(
        self,
        name: str,
        data: bytes,
        mimetype: str = "application/octet-stream",
        *,
        subtype: str | None = None,
        chunked: bool = False,
        redirect_to: str | None = None,
        team: str = "T1",
    ) -> dict[str, Any]:
        """Serve `data` as a Slack file; returns its file object as events carry it."""
        file_id = f"F{uuid.uuid4().hex[:10].upper()}"
        path = f"{team}-{file_id}/download/{name}"
        out = self._file_object(file_id, name, len(data), mimetype, subtype, self.url, path)
        with self._cond:
            self._files[path] = _HostedFile(data, mimetype, chunked, redirect_to)
            self._file_objects[file_id] = out
        return out

    def _m_files_info(self, args: dict[str, Any]) -> dict[str, Any]:
        with self._cond:
            found = self._file_objects.get(str(args.get("file") or ""))
        if found is None:
            return {"ok": False, "error": "file_not_found"}
        return {"ok": True, "file": found}

    def forged_file(self, name: str, mimetype: str = "text/plain") -> dict[str, Any]:
        """A file object whose URLs point at another port of 127.0.0.1 (`elsewhere_calls`)."""
        file_id = f"F{uuid.uuid4().hex[:10].upper()}"
        base = f"http://127.0.0.1:{self.elsewhere_port}"
        return self._file_object(file_id, name, 10, mimetype, None, base, f"T1-{file_id}/{name}")

    def elsewhere_url(self, path: str = "stolen") -> str:
        return f"http://127.0.0.1:{self.elsewhere_port}/{path}"

    def elsewhere_calls(self) -> list[Call]:
        """Requests the other host received (each a Call named `elsewhere`)."""
        return self.calls("elsewhere")

    @staticmethod
    def _file_object(
        file_id: str,
        name: str,
        size: int,
        mimetype: str,
        subtype: str | None,
        base: str,
        path: str,
    ) -> dict[str, Any]:
        out: dict[str, Any] = {
            "id": file_id,
            "name": name,
            "title": name,
            "mimetype": mimetype,
            "filetype": name.rsplit(".", 1)[-1],
            "size": size,
            "mode": "hosted",
            "url_private": f"{base}/files-pri/{path.replace('/download/', '/')}",
            "url_private_download": f"{base}/files-pri/{path}",
        }
        if subtype:
            out["subtype"] = subtype
        return out

    def add_message(
        self,
        channel: str,
        text: str,
        *,
        user: str | None = "U1",
        ts: str | None = None,
        thread_ts: str | None = None,
        files: list[dict[str, Any]] | None = None,
        bot_id: str | None = None,
        username: str | None = None,
        subtype: str | None = None,
    ) -> str:
        """A message somebody wrote (not through the API), for `conversations.replies`."""
        message: dict[str, Any] = {"ts": ts or self._new_ts(), "text": text}
        message["thread_ts"] = thread_ts
        for key, value in (
            ("user", user),
            ("files", files),
            ("bot_id", bot_id),
            ("username", username),
            ("subtype", subtype),
        ):
            if value:
                message[key] = value
        with self._cond:
            self._messages.setdefault(channel, []).append(message)
        return str(message["ts"])

    def set_user(self, user: str, display_name: str, real_name: str = "") -> None:
        with self._cond:
            self._users[user] = {
                "id": user,
                "name": display_name.lower(),
                "real_name": real_name or display_name,
                "profile": {"display_name": display_name, "real_name": real_name or display_name},
            }

    def _m_users_info(self, args: dict[str, Any]) -> dict[str, Any]:
        with self._cond:
            user = self._users.get(str(args.get("user") or ""))
        if user is None:
            return {"ok": False, "error": "user_not_found"}
        return {"ok": True, "user": user}

    async def _file(self, request: web.Request) -> web.StreamResponse:
        path = request.match_info["path"]
        auth = request.headers.get("Authorization", "")
        token = auth.removeprefix("Bearer ") if auth.startswith("Bearer ") else None
        with self._cond:
            self._calls.append(Call("files-pri", {"path": path}, time.monotonic(), token))
            self._cond.notify_all()
            hosted = self._files.get(path) or self._files.get(_download_path(path))
        if token != self.bot_token:  # Slack's sign-in page, with a 200
            return web.Response(text="<html>Sign in to Slack</html>", content_type="text/html")
        if hosted is None:
            return web.Response(status=404)
        if hosted.redirect_to:
            raise web.HTTPFound(hosted.redirect_to)
        if not hosted.chunked:
            return web.Response(body=hosted.data, content_type=hosted.mimetype)
        response = web.StreamResponse(headers={"Content-Type": hosted.mimetype})
        response.enable_chunked_encoding()
        await response.prepare(request)
        for start in range(0, len(hosted.data), 16 * 1024):
            await response.write(hosted.data[start : start + 16 * 1024])
        await response.write_eof()
        return response

    async def _elsewhere(self, request: web.Request) -> web.StreamResponse:
        auth = request.headers.get("Authorization", "")
        token = auth.removeprefix("Bearer ") if auth.startswith("Bearer ") else None
        with self._cond:
            args = {"path": request.match_info["path"], "method": request.method}
            self._calls.append(Call("elsewhere", args, time.monotonic(), token))
            self._cond.notify_all()
        return web.Response(body=b"elsewhere", content_type="text/plain")

    # -- inspection --------------------------------------------------------------------------
    def calls(self, method: str | None = None) -> list[Call]:
        with self._cond:
            return [c for c in self._calls if method is None or c.method == method]

    def wait_calls(self, method: str, n: int = 1, timeout: float = 15.0) -> list[Call]:
        """At least `n` calls of `method` (the condition's lock is reentrant)."""
        self.wait_for(lambda: len(self.calls(method)) >= n, timeout, f"{n} x {method}")
        return self.calls(method)

    def wait_for(self, check: Callable[[], bool], timeout: float = 15.0, what: str = "") -> bool:
        with self._cond:
            if not self._cond.wait_for(check, timeout):
                seen = [c.method for c in self._calls]
                raise TimeoutError(f"waited {timeout} s for {what or check}; calls: {seen}")
        return True

    def posted(self, channel: str | None = None) -> list[dict[str, Any]]:
        """Messages currently in the fake's store (deleted ones are gone)."""
        with self._cond:
            return [m for ch, msgs in self._messages.items() if channel in (None, ch) for m in msgs]

    def shown(self, channel: str | None = None) -> list[str]:
        """What people see of each stored message: its markdown block, else its text."""
        return [shown_text(m) for m in self.posted(channel)]

    def upload(self, file_id: str) -> bytes:
        with self._cond:
            return self._uploads[file_id]

    # -- Socket Mode ---------------------------------------------------------------------------
    def send_envelope(self, kind: str, payload: dict[str, Any], timeout: float = 15.0) -> str:
        """Send an envelope over the Socket Mode connection (waits for one to exist)."""
        self.wait_for(lambda: bool(self._sockets), timeout, "a Socket Mode connection")
        envelope_id = uuid.uuid4().hex
        message = {
            "envelope_id": envelope_id,
            "type": kind,
            "accepts_response_payload": kind != "events_api",
            "retry_attempt": 0,
            "retry_reason": "",
            "payload": payload,
        }
        assert self._loop is not None
        asyncio.run_coroutine_threadsafe(self._sockets[-1].send_json(message), self._loop).result(
            timeout
        )
        return envelope_id

    def wait_ack(self, envelope_id: str, timeout: float = 15.0) -> dict[str, Any]:
        self.wait_for(lambda: envelope_id in self._acks, timeout, f"ack of {envelope_id}")
        with self._cond:
            return self._acks[envelope_id]

    async def _websocket(self, request: web.Request) -> web.StreamResponse:
        ws = web.WebSocketResponse(autoping=True)
        await ws.prepare(request)
        with self._cond:
            self._sockets.append(ws)
            self._cond.notify_all()
        await ws.send_json({"type": "hello", "num_connections": 1, "debug_info": {}})
        async for msg in ws:
            if msg.type == WSMsgType.TEXT:
                data = json.loads(msg.data)
                if "envelope_id" in data:
                    with self._cond:
                        self._acks[data["envelope_id"]] = data
                        self._cond.notify_all()
        with self._cond:
            if ws in self._sockets:
                self._sockets.remove(ws)
        return ws

    # -- the API -------------------------------------------------------------------------------
    async def _api(self, request: web.Request) -> web.StreamResponse:
        method = request.match_info["method"]
        args: dict[str, Any] = dict(request.query)
        raw = await request.read()
        if raw:
            if request.content_type == "application/json":
                args.update(json.loads(raw))
            else:
                args.update(parse_qsl(raw.decode(), keep_blank_values=True))
        auth = request.headers.get("Authorization", "")
        token = auth.removeprefix("Bearer ") if auth.startswith("Bearer ") else args.get("token")
        with self._cond:
            now = time.monotonic()
            self._calls.append(Call(method, args, now, token))
            failure = self._take_failure(method) or self._over_rate(method, args, now)
            if failure is not None and failure.status == 429:
                self.throttled += 1
            self._cond.notify_all()
        if failure is not None and not failure.drop:
            body = {"ok": False, "error": failure.error or "internal_error"}
            return web.json_response(body, status=failure.status, headers=failure.headers)
        expected = self.app_token if method == "apps.connections.open" else self.bot_token
        if token != expected:
            return web.json_response({"ok": False, "error": "invalid_auth"})
        handler = getattr(self, "_m_" + method.replace(".", "_"), None)
        result = handler(args) if handler else {"ok": True}
        with self._cond:
            self._cond.notify_all()
        if failure is not None and failure.drop:
            assert request.transport is not None
            request.transport.close()  # the call took effect; the answer never arrives
            return web.Response()
        return web.json_response(result)

    def _take_failure(self, method: str) -> _Failure | None:
        queue = self._failures.get(method)
        if not queue:
            return None
        if queue[0].skip > 0:
            queue[0].skip -= 1
            return None
        return queue.pop(0)

    def _over_rate(self, method: str, args: dict[str, Any], now: float) -> _Failure | None:
        rate = self._rates.get(method)
        if rate is None:
            return None
        key = (method, str(args.get("channel") or args.get("channel_id") or ""))
        recent = [t for t in self._recent.get(key, []) if now - t < 1.0]
        if len(recent) >= rate:
            self._recent[key] = recent
            return _Failure(429, "ratelimited", {"Retry-After": "1"})
        self._recent[key] = [*recent, now]
        return None

    def _new_ts(self) -> str:
        return f"{int(self.clock())}.{next(TS_SEQUENCE) % 1_000_000:06d}"

    def _m_auth_test(self, _: dict[str, Any]) -> dict[str, Any]:
        return {
            "ok": True,
            "url": "https://fake.slack.test/",
            "team": "Fake",
            "user": "threadline",
            "team_id": self.team_id,
            "user_id": self.bot_user_id,
            "bot_id": self.bot_id,
            "is_enterprise_install": False,
        }

    def _m_apps_connections_open(self, _: dict[str, Any]) -> dict[str, Any]:
        return {"ok": True, "url": f"ws://127.0.0.1:{self.port}/link"}

    def _m_chat_postMessage(self, args: dict[str, Any]) -> dict[str, Any]:
        text = str(args.get("text") or "")
        if not args.get("channel"):
            return {"ok": False, "error": "channel_not_found"}
        if not text and not args.get("blocks"):
            return {"ok": False, "error": "no_text"}
        if len(text) > MAX_TEXT:
            return {"ok": False, "error": "msg_too_long"}
        metadata = args.get("metadata")
        if isinstance(metadata, str):
            metadata = json.loads(metadata)
        message = {
            "ts": self._new_ts(),
            "text": text,
            "user": self.bot_user_id,
            "bot_id": self.bot_id,
            "thread_ts": args.get("thread_ts"),
            "metadata": metadata,
            "blocks": _blocks(args.get("blocks")),
        }
        with self._cond:
            self._messages.setdefault(args["channel"], []).append(message)
        return {"ok": True, "channel": args["channel"], "ts": message["ts"], "message": message}

    def _m_chat_update(self, args: dict[str, Any]) -> dict[str, Any]:
        with self._cond:
            if self._no_updates:
                return {"ok": False, "error": self._no_updates}
            for m in self._messages.get(args.get("channel", ""), []):
                if m["ts"] == args.get("ts"):
                    m["streaming"] = False  # an edit ends a stream (as the helper's docs use it)
                    m["text"] = args.get("text", "")
                    if "blocks" in args:  # as Slack: blocks left out are kept
                        m["blocks"] = _blocks(args["blocks"])
                    return {"ok": True, "channel": args["channel"], "ts": m["ts"]}
        return {"ok": False, "error": "message_not_found"}

    def _m_chat_delete(self, args: dict[str, Any]) -> dict[str, Any]:
        with self._cond:
            msgs = self._messages.get(args.get("channel", ""), [])
            for m in msgs:
                if m["ts"] == args.get("ts"):
                    msgs.remove(m)
                    return {"ok": True, "channel": args["channel"], "ts": m["ts"]}
        return {"ok": False, "error": "message_not_found"}

    def _m_chat_postEphemeral(self, args: dict[str, Any]) -> dict[str, Any]:
        if len(str(args.get("text") or "")) > MAX_TEXT:
            return {"ok": False, "error": "msg_too_long"}
        if not args.get("user"):
            return {"ok": False, "error": "user_not_in_channel"}
        return {"ok": True, "message_ts": self._new_ts()}

    def _m_views_open(self, args: dict[str, Any]) -> dict[str, Any]:
        """A form opened with a click's `trigger_id` (kept in `views`), checked against the
        limits Slack enforces on a modal."""
        view = args.get("view")
        if isinstance(view, str):
            view = json.loads(view)
        if not args.get("trigger_id"):
            return {"ok": False, "error": "invalid_trigger_id"}
        problem = _modal_problem(view)
        if problem is not None or not isinstance(view, dict):
            return {"ok": False, "error": "invalid_arguments", "response_metadata": problem}
        opened = {**view, "id": f"V{next(self._ts):08d}", "trigger_id": args["trigger_id"]}
        with self._cond:
            self.views.append(opened)
        return {"ok": True, "view": opened}

    # -- streaming ---------------------------------------------------------------------------

    def _m_chat_startStream(self, args: dict[str, Any]) -> dict[str, Any]:
        channel, team = str(args.get("channel") or ""), args.get("recipient_team_id")
        if not channel or not args.get("thread_ts"):
            return {"ok": False, "error": "invalid_arguments"}
        with self._cond:
            refused = self._no_stream.get(team) or self._no_stream.get(None)
        if refused:
            return {"ok": False, "error": refused}
        if channel[0] in "CG" and not (team and args.get("recipient_user_id")):
            # Slack needs the recipient when streaming into a channel.
            return {"ok": False, "error": "missing_recipient"}
        message: dict[str, Any] = {
            "ts": self._new_ts(),
            "text": "",
            "user": self.bot_user_id,
            "bot_id": self.bot_id,
            "thread_ts": args["thread_ts"],
            "metadata": None,
            "blocks": None,
            "streaming": True,
            "appends": 0,
            "chunks": [],
            "tasks": {},
            "task_display_mode": args.get("task_display_mode"),
            "recipient": (team, args.get("recipient_user_id")),
        }
        with self._cond:
            self._add_chunks(message, args)
            self._messages.setdefault(channel, []).append(message)
        return {"ok": True, "channel": channel, "ts": message["ts"]}

    def _m_chat_appendStream(self, args: dict[str, Any]) -> dict[str, Any]:
        with self._cond:
            message, error = self._open_stream(args)
            if message is None:
                return {"ok": False, "error": error}
            message["appends"] += 1
            self._add_chunks(message, args)
        return {"ok": True, "channel": args["channel"], "ts": message["ts"]}

    def _m_chat_stopStream(self, args: dict[str, Any]) -> dict[str, Any]:
        with self._cond:
            message, error = self._open_stream(args)
            if message is None:
                return {"ok": False, "error": error}
            self._add_chunks(message, args)
            message["streaming"] = False
            if args.get("metadata"):
                meta = args["metadata"]
                message["metadata"] = json.loads(meta) if isinstance(meta, str) else meta
            if args.get("blocks"):
                message["blocks"] = _blocks(args["blocks"])
        return {"ok": True, "channel": args["channel"], "ts": message["ts"], "message": message}

    def _open_stream(self, args: dict[str, Any]) -> tuple[dict[str, Any] | None, str]:
        for m in self._messages.get(str(args.get("channel") or ""), []):
            if m["ts"] == args.get("ts"):
                if "streaming" not in m:
                    return None, "message_not_streaming"
                expired = self._expire_after is not None and m["appends"] >= self._expire_after
                if not m["streaming"] or (expired and m["streaming"]):
                    m["streaming"] = False
                    return None, "message_not_in_streaming_state"
                return m, ""
        return None, "message_not_found"

    def _add_chunks(self, message: dict[str, Any], args: dict[str, Any]) -> None:
        chunks = args.get("chunks") or []
        if isinstance(chunks, str):
            chunks = json.loads(chunks)
        if args.get("markdown_text"):
            chunks = [{"type": "markdown_text", "text": args["markdown_text"]}, *chunks]
        for chunk in chunks:
            message["chunks"].append(chunk)
            if chunk.get("type") == "markdown_text":
                message["text"] += chunk.get("text", "")
            elif chunk.get("type") == "task_update":
                statuses = message["tasks"].setdefault(chunk["id"], [])
                statuses.append((chunk.get("title"), chunk.get("status")))

    def streams(self, channel: str | None = None) -> list[dict[str, Any]]:
        """The streamed messages (open or stopped), oldest first."""
        return [m for m in self.posted(channel) if "streaming" in m]

    def _m_assistant_threads_setStatus(self, args: dict[str, Any]) -> dict[str, Any]:
        with self._cond:
            refused = self._no_status
        if refused:
            return {"ok": False, "error": refused}
        return {"ok": True}

    def message(self, channel: str, ts: str) -> dict[str, Any]:
        """One stored message (as posted, then updated)."""
        with self._cond:
            return next(m for m in self._messages.get(channel, []) if m["ts"] == ts)

    def _m_reactions_add(self, args: dict[str, Any]) -> dict[str, Any]:
        return {"ok": True}

    def _m_reactions_remove(self, args: dict[str, Any]) -> dict[str, Any]:
        return {"ok": True}

    def _m_conversations_replies(self, args: dict[str, Any]) -> dict[str, Any]:
        """A thread, oldest first: its parent, then the replies."""
        with self._cond:
            msgs = [
                m
                for m in self._messages.get(args.get("channel", ""), [])
                if m["ts"] == args.get("ts") or m.get("thread_ts") == args.get("ts")
            ]
        msgs.sort(key=lambda m: tuple(int(p) for p in str(m["ts"]).split(".")))
        return self._page(msgs, args)

    def _m_conversations_history(self, args: dict[str, Any]) -> dict[str, Any]:
        """Top-level messages of a channel (thread replies are not in its history), newest
        first."""
        with self._cond:
            msgs = [
                m
                for m in self._messages.get(args.get("channel", ""), [])
                if m.get("thread_ts") in (None, m["ts"])
            ]
        return self._page(list(reversed(msgs)), args)

    def _page(self, msgs: list[dict[str, Any]], args: dict[str, Any]) -> dict[str, Any]:
        """As Slack pages: `oldest`/`latest` (exclusive, or inclusive with `inclusive`),
        `limit`, `cursor`; message metadata only with `include_all_metadata`."""
        inclusive = str(args.get("inclusive")) in ("1", "true", "True")
        if args.get("oldest"):
            oldest = float(args["oldest"])
            msgs = [
                m
                for m in msgs
                if float(m["ts"]) > oldest or (inclusive and float(m["ts"]) == oldest)
            ]
        if args.get("latest"):
            latest = float(args["latest"])
            msgs = [
                m
                for m in msgs
                if float(m["ts"]) < latest or (inclusive and float(m["ts"]) == latest)
            ]
        start = int(args.get("cursor") or 0)
        limit = int(args.get("limit") or 100)
        page = msgs[start : start + limit]
        if str(args.get("include_all_metadata")) not in ("1", "true", "True"):
            page = [{k: v for k, v in m.items() if k != "metadata"} for m in page]
        more = start + limit < len(msgs)
        return {
            "ok": True,
            "messages": page,
            "has_more": more,
            "response_metadata": {"next_cursor": str(start + limit) if more else ""},
        }

    def _m_files_getUploadURLExternal(self, args: dict[str, Any]) -> dict[str, Any]:
        file_id = f"F{uuid.uuid4().hex[:10].upper()}"
        return {"ok": True, "upload_url": f"{self.url}/upload/{file_id}", "file_id": file_id}

    def _m_files_completeUploadExternal(self, args: dict[str, Any]) -> dict[str, Any]:
        files = json.loads(args.get("files") or "[]")
        out = [{"id": f["id"], "title": f.get("title"), "name": f.get("title")} for f in files]
        with self._cond:
            missing = [f["id"] for f in files if f["id"] not in self._uploads]
        if missing:
            return {"ok": False, "error": "file_not_found"}
        return {"ok": True, "files": out}

    async def _upload(self, request: web.Request) -> web.StreamResponse:
        data = await request.read()
        file_id = request.match_info["file_id"]
        with self._cond:
            self._uploads[file_id] = data
            self._calls.append(
                Call("upload", {"file_id": file_id, "size": len(data)}, time.monotonic(), None)
            )
            self._cond.notify_all()
        return web.Response(text=f"OK - {len(data)}", content_type="text/plain")

    async def _response_url(self, request: web.Request) -> web.StreamResponse:
        body = json.loads(await request.read() or b"{}")
        with self._cond:
            self._calls.append(Call("response_url", body, time.monotonic(), None))
            self._cond.notify_all()
        return web.Response(text="ok", content_type="text/plain")


@dataclass
class _HostedFile:
    data: bytes
    mimetype: str
    chunked: bool = False
    redirect_to: str | None = None


def _download_path(path: str) -> str:
    """`url_private`'s path to the `url_private_download` one it was made from."""
    head, _, name = path.rpartition("/")
    return f"{head}/download/{name}"


def shown_text(message: dict[str, Any]) -> str:
    """A message's markdown block if it has one (what Slack renders), else its text."""
    for block in message.get("blocks") or []:
        if block.get("type") == "markdown":
            return str(block.get("text", ""))
    return str(message.get("text", ""))


def _blocks(value: Any) -> list[dict[str, Any]] | None:
    """Blocks arrive as JSON in a JSON body, or as a JSON string in a form body."""
    if isinstance(value, str):
        return list(json.loads(value))
    return list(value) if value else None


def _modal_problem(view: Any) -> dict[str, Any] | None:
    """What Slack would refuse in a modal view (title, buttons, metadata, inputs)."""
    if not isinstance(view, dict) or view.get("type") != "modal":
        return {"messages": ["a modal view is required"]}
    for key in ("title", "submit", "close"):
        text = (view.get(key) or {}).get("text", "")
        if (key == "title" and not text) or len(text) > 24:
            return {"messages": [f"{key} must be 1-24 characters"]}
    if len(view.get("private_metadata") or "") > 3000 or len(view.get("callback_id") or "") > 255:
        return {"messages": ["private_metadata or callback_id too long"]}
    for block in view.get("blocks") or []:
        element = block.get("element") or {}
        if block.get("type") == "input" and not 0 < int(element.get("max_length", 3000)) <= 3000:
            return {"messages": ["max_length must be 1-3000"]}
    return None
