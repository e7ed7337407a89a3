"""A fake OpenAI-compatible server: a real HTTP server on 127.0.0.1, driven by the real client.

Tests script what the "model" answers, in order:

    fake.reply("hello")
    fake.tool_calls(("current_time", {}), ("recent_tool_calls", {"limit": 5}))
    fake.error(429, headers={"retry-after-ms": "10"})

Each POST /v1/chat/completions takes the next scripted item (or a default answer when the
script is empty) and records the request body in `fake.requests`.

POST /v1/embeddings answers deterministic vectors (`fake_embedding(text, dimension)`, unit
length, `fake.embedding_dimension` wide unless the request sends `dimensions`), records the
request body in `fake.embedding_requests` (not in `fake.requests`), and sends the queued
`fake.embedding_error(...)` responses first.

POST /v1/audio/speech answers WAV (or 16-bit PCM for `response_format: "pcm"`): a tone of
`fake.speech_seconds_per_char` seconds per input character at `fake.speech_rate` Hz, louder and
softer along the way (so a waveform of it is not flat). A voice outside `SPEECH_VOICES` is
refused with 400 and `param: "voice"`, as OpenAI does. Requests are recorded in
`fake.speech_requests`; `fake.speech_error(...)` queues failures.

POST /v1/audio/transcriptions (multipart, as the real client sends it) answers
`{"text": fake.transcript}` and records `{"model", "filename", "size", "content_type"}` in
`fake.transcription_requests`; `fake.transcription_error(...)` queues failures.

A request with `stream: true` is answered as server-sent events, as OpenAI does: the text in
pieces of about four characters (`fake.stream_rate` pieces per second after
`fake.first_token_delay` seconds; no pauses by default), tool calls in pieces, the finish
reason, then (with `stream_options.include_usage`) a usage chunk and `[DONE]`.
`fake.refuse_stream = True` answers such requests 400 like a server that cannot stream;
`fake.break_stream_after = N` drops the connection after N chunks.

A test that cannot know the order of requests in advance (compaction inserts summarization
calls) may set `fake.responder`: a function of the request body that returns the response
(built with `answer`, `tool_use` or `failure`), or None to fall back to the script.
"""

from __future__ import annotations

import hashlib
import io
import json
import math
import struct
import threading
import time
import uuid
import wave
from collections import deque
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from tests.support.clocks import PINNED

CREATED = int(PINNED.timestamp())  # a completion's `created`: nothing reads it, so a fixed one


@dataclass
class Scripted:
    status: int = 200
    body: dict[str, Any] | str | bytes | None = None
    headers: dict[str, str] = field(default_factory=dict)
    delay: float = 0.0
    content_type: str = "application/json"
    raw: bool = False  # sent as is, streamed request or not


def answer(
    text: str,
    *,
    usage: dict[str, Any] | None = None,
    prompt_tokens: int | None = None,
    completion_tokens: int | None = None,
    delay: float = 0.0,
) -> Scripted:
    """A completion with text (see `FakeOpenAI.reply`)."""
    return Scripted(
        body={"text": text, "usage": usage, "pt": prompt_tokens, "ct": completion_tokens},
        delay=delay,
    )


def tool_use(
    *proposed: tuple[str, dict[str, Any] | str],
    usage: dict[str, Any] | None = None,
    text: str = "",
) -> Scripted:
    """A completion proposing tool calls (see `FakeOpenAI.tool_calls`)."""
    return Scripted(body={"text": text, "calls": list(proposed), "usage": usage})


def failure(
    status: int, message: str = "error", *, headers: dict[str, str] | None = None
) -> Scripted:
    """An HTTP error response (see `FakeOpenAI.error`)."""
    return Scripted(
        status=status,
        body={"error": {"message": message, "type": "fake", "code": None}},
        headers=headers or {},
    )


def fake_embedding(text: str, dimension: int) -> list[float]:
    """The fake server's vector for `text`: deterministic, unit length."""
    raw = b""
    counter = 0
    while len(raw) < 4 * dimension:
        raw += hashlib.sha256(f"{counter}:{text}".encode()).digest()
        counter += 1
    ints = struct.unpack(f"<{dimension}I", raw[: 4 * dimension])
    values = [v / 2**32 - 0.5 for v in ints]
    norm = math.sqrt(sum(v * v for v in values)) or 1.0
    return [v / norm for v in values]


# The request body -> the response to send, or None for "take the next scripted item".
Responder = Callable[[dict[str, Any]], Scripted | None]


def _usage(prompt: int, completion: int, extra: dict[str, Any] | None) -> dict[str, Any]:
    usage: dict[str, Any] = {
        "prompt_tokens": prompt,
        "completion_tokens": completion,
    }
    usage.update(extra or {})
    # Keep the total consistent when the script overrides prompt or completion tokens.
    usage.setdefault("total_tokens", usage["prompt_tokens"] + usage["completion_tokens"])
    return usage


SPEECH_VOICES = frozenset(
    {"alloy", "ash", "ballad", "coral", "echo", "fable", "nova", "onyx", "sage", "shimmer"}
)


def speech_wav(text: str, seconds_per_char: float, rate: int) -> bytes:
    """A tone as long as the text would take to say, its loudness rising and falling."""
    import numpy as np

    frames = max(1, round(len(text) * seconds_per_char * rate))
    t = np.arange(frames) / rate
    envelope = 0.2 + 0.7 * np.abs(np.sin(2 * np.pi * 1.5 * t))
    tone = np.sin(2 * np.pi * (180 + len(text) % 60) * t) * envelope * 0.5
    buf = io.BytesIO()
    with wave.open(buf, "wb") as w:
        w.setnchannels(1)
        w.setsampwidth(2)
        w.setframerate(rate)
        w.writeframes((tone * 32767).astype("<i2").tobytes())
    return buf.getvalue()


def _has_text(chunk: dict[str, Any]) -> bool:
    return any((c.get("delta") or {}).get("content") for c in chunk.get("choices") or [])


def last_user_text(request: dict[str, Any]) -> str:
    for message in reversed(request.get("messages") or []):
        if message.get("role") == "user" and isinstance(message.get("content"), str):
            return str(message["content"])
    return ""


class FakeOpenAI:
    def __init__(self) -> None:
        self.requests: list[dict[str, Any]] = []
        self._script: deque[Scripted] = deque()
        self.responder: Responder | None = None
        self.models_status = 200  # what GET /v1/models answers (readiness checks)
        self._cond = threading.Condition()
        self._server: ThreadingHTTPServer | None = None
        self._thread: threading.Thread | None = None
        self.embedding_requests: list[dict[str, Any]] = []
        self.embedding_dimension = 8
        self._embedding_errors: deque[Scripted] = deque()
        self.speech_requests: list[dict[str, Any]] = []
        self.speech_rate = 24_000
        self.speech_seconds_per_char = 0.01
        self._speech_errors: deque[Scripted] = deque()
        self.transcription_requests: list[dict[str, Any]] = []
        self.transcript = "what was said"
        self._transcription_errors: deque[Scripted] = deque()
        self.stream_rate: float | None = None  # text pieces per second (None: at once)
        self.first_token_delay = 0.0
        self.refuse_stream = False
        self.break_stream_after: int | None = None
        self.stream_requests = 0  # streamed requests answered
        # (last user message, perf_counter of the first and of the last text piece sent)
        self.stream_log: list[tuple[str, float, float]] = []

    # -- lifecycle ---------------------------------------------------------------------------
    def start(self) -> FakeOpenAI:
        fake = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args: Any) -> None:  # keep test output clean
                pass

            def do_GET(self) -> None:
                if self.path.rstrip("/") != "/v1/models":
                    self._send(404, {"error": {"message": "not found"}}, {})
                elif fake.models_status != 200:
                    self._send(fake.models_status, {"error": {"message": "no"}}, {})
                else:
                    self._send(200, {"object": "list", "data": [{"id": "fake-model"}]}, {})

            def do_POST(self) -> None:
                length = int(self.headers.get("Content-Length") or 0)
                raw = self.rfile.read(length)
                if self.path.rstrip("/") == "/v1/audio/transcriptions":
                    heard = fake._transcription(self.headers.get("Content-Type") or "", raw)
                    self._send(heard.status, heard.body, heard.headers)
                    return
                try:
                    body = json.loads(raw or b"{}")
                except json.JSONDecodeError:
                    body = {"_raw": raw.decode("utf-8", "replace")}
                if self.path.rstrip("/") == "/v1/embeddings":
                    embedded = fake._embeddings(body)
                    self._send(embedded.status, embedded.body, embedded.headers)
                    return
                if self.path.rstrip("/") == "/v1/audio/speech":
                    spoken = fake._speech(body)
                    self._send(spoken.status, spoken.body, spoken.headers, spoken.content_type)
                    return
                if self.path.rstrip("/") != "/v1/chat/completions":
                    self._send(404, {"error": {"message": "not found"}}, {})
                    return
                if body.get("stream") and fake.refuse_stream:
                    with fake._cond:
                        fake.requests.append(body)
                        fake._cond.notify_all()
                    error = {"message": "stream is not supported by this server", "code": None}
                    self._send(400, {"error": error}, {})
                    return
                item = fake._next(body)
                if item.delay:
                    time.sleep(item.delay)
                if (
                    body.get("stream")
                    and item.status == 200
                    and not item.raw
                    and isinstance(item.body, dict)
                ):
                    self._stream(body, item.body)
                    return
                self._send(item.status, item.body, item.headers, item.content_type)

            def _stream(self, request: dict[str, Any], completion: dict[str, Any]) -> None:
                self.send_response(200)
                self.send_header("Content-Type", "text/event-stream")
                self.send_header("Cache-Control", "no-cache")
                first = last = 0.0
                try:
                    self.end_headers()
                    for n, chunk in enumerate(fake._chunks(request, completion)):
                        if fake.break_stream_after is not None and n >= fake.break_stream_after:
                            self.connection.shutdown(2)  # the connection breaks mid-answer
                            return
                        if chunk is None:  # a pause between pieces of text
                            continue
                        self.wfile.write(f"data: {json.dumps(chunk)}\n\n".encode())
                        self.wfile.flush()
                        if _has_text(chunk):
                            last = time.perf_counter()
                            first = first or last
                    self.wfile.write(b"data: [DONE]\n\n")
                    self.wfile.flush()
                except (BrokenPipeError, ConnectionResetError, OSError):
                    pass
                with fake._cond:
                    fake.stream_requests += 1
                    if first:
                        fake.stream_log.append((last_user_text(request), first, last))

            def _send(
                self,
                status: int,
                body: Any,
                headers: dict[str, str],
                content_type: str = "application/json",
            ) -> None:
                if isinstance(body, bytes):
                    data = body
                elif isinstance(body, str):
                    data = body.encode()
                else:
                    data = json.dumps(body).encode()
                self.send_response(status)
                self.send_header("Content-Type", content_type)
                self.send_header("Content-Length", str(len(data)))
                for k, v in headers.items():
                    self.send_header(k, v)
                try:
                    self.end_headers()
                    self.wfile.write(data)
                except (BrokenPipeError, ConnectionResetError):
                    pass  # the client gave up first (a timeout test): nothing to report

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._server.daemon_threads = True
        # A short poll interval: stop() waits for the serving loop to notice, and the default
        # (0.5 s) would add half a second to every test's teardown.
        self._thread = threading.Thread(
            target=self._server.serve_forever, kwargs={"poll_interval": 0.02}, daemon=True
        )
        self._thread.start()
        return self

    def stop(self) -> None:
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
            self._server = None

    @property
    def url(self) -> str:
        assert self._server is not None, "start() first"
        port = self._server.server_address[1]
        return f"http://127.0.0.1:{port}/v1"

    # -- scripting ---------------------------------------------------------------------------
    def reply(
        self,
        text: str,
        *,
        usage: dict[str, Any] | None = None,
        prompt_tokens: int | None = None,
        completion_tokens: int | None = None,
        delay: float = 0.0,
    ) -> None:
        self._push(
            answer(
                text,
                usage=usage,
                prompt_tokens=prompt_tokens,
                completion_tokens=completion_tokens,
                delay=delay,
            )
        )

    def tool_calls(
        self,
        *calls: tuple[str, dict[str, Any] | str],
        usage: dict[str, Any] | None = None,
        text: str = "",
    ) -> None:
        self._push(tool_use(*calls, usage=usage, text=text))

    def error(
        self, status: int, message: str = "error", *, headers: dict[str, str] | None = None
    ) -> None:
        self._push(failure(status, message, headers=headers))

    def raw(
        self, status: int, body: dict[str, Any] | str, *, content_type: str = "application/json"
    ) -> None:
        """Send `body` as is (a str verbatim), e.g. a malformed completion or an HTML page."""
        self._push(Scripted(status=status, body={"raw": body}, content_type=content_type))

    def embedding_error(
        self, status: int, message: str = "error", *, headers: dict[str, str] | None = None
    ) -> None:
        """The next POST /v1/embeddings fails with `status`."""
        with self._cond:
            self._embedding_errors.append(failure(status, message, headers=headers))

    def _embeddings(self, request: dict[str, Any]) -> Scripted:
        with self._cond:
            self.embedding_requests.append(request)
            self._cond.notify_all()
            if self._embedding_errors:
                return self._embedding_errors.popleft()
        inputs = request.get("input", [])
        if isinstance(inputs, str):
            inputs = [inputs]
        dimension = int(request.get("dimensions") or self.embedding_dimension)
        data = [
            {"object": "embedding", "index": i, "embedding": fake_embedding(str(t), dimension)}
            for i, t in enumerate(inputs)
        ]
        tokens = sum(max(1, len(str(t)) // 4) for t in inputs)
        return Scripted(
            body={
                "object": "list",
                "data": data,
                "model": request.get("model", "fake"),
                "usage": {"prompt_tokens": tokens, "total_tokens": tokens},
            }
        )

    def speech_error(
        self, status: int, message: str = "error", *, headers: dict[str, str] | None = None
    ) -> None:
        """The next POST /v1/audio/speech fails with `status`."""
        with self._cond:
            self._speech_errors.append(failure(status, message, headers=headers))

    def _speech(self, request: dict[str, Any]) -> Scripted:
        with self._cond:
            self.speech_requests.append(request)
            self._cond.notify_all()
            if self._speech_errors:
                return self._speech_errors.popleft()
        voice, text = request.get("voice"), request.get("input")
        if voice not in SPEECH_VOICES:
            message = f"Invalid value for 'voice': {voice!r} is not a supported voice."
            error = {"message": message, "type": "invalid_request_error", "param": "voice"}
            return Scripted(status=400, body={"error": error})
        if not isinstance(text, str) or not text or len(text) > 4096:
            error = {"message": "input must be 1-4096 characters", "param": "input"}
            return Scripted(status=400, body={"error": error})
        wav = speech_wav(text, self.speech_seconds_per_char, self.speech_rate)
        if request.get("response_format") == "pcm":
            return Scripted(body=wav[44:], content_type="audio/pcm")
        return Scripted(body=wav, content_type="audio/wav")

    def transcription_error(self, status: int, message: str = "error") -> None:
        """The next POST /v1/audio/transcriptions fails with `status`."""
        with self._cond:
            self._transcription_errors.append(failure(status, message))

    def _transcription(self, content_type: str, raw: bytes) -> Scripted:
        from email.parser import BytesParser
        from email.policy import HTTP

        head = f"Content-Type: {content_type}\r\n\r\n".encode()
        form = BytesParser(policy=HTTP).parsebytes(head + raw)
        fields: dict[str, Any] = {}
        for part in form.iter_parts():
            name = part.get_param("name", header="content-disposition")
            payload = part.get_payload(decode=True)
            data = payload if isinstance(payload, bytes) else b""
            if part.get_filename() is not None:
                fields["filename"] = part.get_filename()
                fields["size"] = len(data)
                fields["content_type"] = part.get_content_type()
            elif isinstance(name, str):
                fields[name] = data.decode("utf-8", "replace")
        with self._cond:
            self.transcription_requests.append(fields)
            self._cond.notify_all()
            if self._transcription_errors:
                return self._transcription_errors.popleft()
        if not fields.get("model") or not fields.get("size"):
            error = {"message": "model and file are required", "param": "file"}
            return Scripted(status=400, body={"error": error})
        return Scripted(body={"text": self.transcript})

    def _push(self, item: Scripted) -> None:
        with self._cond:
            self._script.append(item)

    def wait_for_requests(self, n: int, timeout: float = 10.0) -> list[dict[str, Any]]:
        with self._cond:
            if not self._cond.wait_for(lambda: len(self.requests) >= n, timeout):
                raise TimeoutError(f"expected {n} requests, got {len(self.requests)}")
            return list(self.requests)

    @property
    def pending(self) -> int:
        with self._cond:
            return len(self._script)

    # -- building responses --------------------------------------------------------------------
    def _next(self, request: dict[str, Any]) -> Scripted:
        with self._cond:
            self.requests.append(request)
            self._cond.notify_all()
            responder = self.responder
        # Outside the lock: a responder may look at `requests` or push script items.
        item = responder(request) if responder is not None else None
        if item is None:
            with self._cond:
                item = self._script.popleft() if self._script else answer("ok")
        if item.status != 200:
            return item
        assert isinstance(item.body, dict)
        if "raw" in item.body:
            return Scripted(
                status=item.status,
                body=item.body["raw"],
                delay=item.delay,
                content_type=item.content_type,
                raw=True,
            )
        return Scripted(body=self._completion(request, item.body), delay=item.delay)

    def _chunks(
        self, request: dict[str, Any], completion: dict[str, Any]
    ) -> Iterator[dict[str, Any] | None]:
        """The completion as stream chunks (None where the server pauses)."""
        base = {k: completion[k] for k in ("id", "created", "model")}
        base["object"] = "chat.completion.chunk"
        choice = completion["choices"][0]
        message = choice["message"]

        def chunk(delta: dict[str, Any], finish: str | None = None) -> dict[str, Any]:
            return {**base, "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]}

        yield chunk({"role": "assistant", "content": ""})
        text = message.get("content") or ""
        pieces = [text[i : i + 4] for i in range(0, len(text), 4)]
        for i, piece in enumerate(pieces):
            wait = self.first_token_delay if i == 0 else 0.0
            if self.stream_rate and i > 0:
                wait = 1.0 / self.stream_rate
            if wait:
                time.sleep(wait)
                yield None
            yield chunk({"content": piece})
        for index, call in enumerate(message.get("tool_calls") or []):
            function = call["function"]
            first = {"index": index, "id": call["id"], "type": "function"}
            yield chunk(
                {"tool_calls": [{**first, "function": {"name": function["name"], "arguments": ""}}]}
            )
            arguments = function["arguments"]
            half = len(arguments) // 2
            for part in (arguments[:half], arguments[half:]):
                yield chunk({"tool_calls": [{"index": index, "function": {"arguments": part}}]})
        yield chunk({}, choice["finish_reason"])
        options = request.get("stream_options") or {}
        if options.get("include_usage") and "usage" in completion:
            yield {**base, "choices": [], "usage": completion["usage"]}

    @staticmethod
    def _completion(request: dict[str, Any], spec: dict[str, Any]) -> dict[str, Any]:
        message: dict[str, Any] = {"role": "assistant", "content": spec.get("text") or None}
        finish = "stop"
        if spec.get("calls"):
            message["tool_calls"] = [
                {
                    "id": f"call_{uuid.uuid4().hex[:10]}",
                    "type": "function",
                    "function": {
                        "name": name,
                        "arguments": args if isinstance(args, str) else json.dumps(args),
                    },
                }
                for name, args in spec["calls"]
            ]
            finish = "tool_calls"
        # `is None`, not `or`: a script may ask for 0 tokens.
        prompt = spec.get("pt")
        if prompt is None:
            # Tool schemas are prompt too, as every real provider counts them.
            tools = request.get("tools")
            chars = len(json.dumps(request.get("messages", []))) + (
                len(json.dumps(tools)) if tools else 0
            )
            prompt = max(1, chars // 4)
        completion = spec.get("ct")
        if completion is None:
            completion = max(1, len(spec.get("text") or "") // 4)
        body: dict[str, Any] = {
            "id": f"chatcmpl-{uuid.uuid4().hex[:12]}",
            "object": "chat.completion",
            "created": CREATED,
            "model": request.get("model", "fake"),
            "choices": [{"index": 0, "message": message, "finish_reason": finish}],
        }
        usage = spec.get("usage")
        if usage != {"omit": True}:
            body["usage"] = _usage(prompt, completion, usage)
        return body
