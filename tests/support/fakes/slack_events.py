"""Slack-shaped traffic for the real app: payload builders, Slack's request signing, and the
app served by uvicorn on a local port (in its own thread and event loop).

Requests are signed exactly as Slack signs them: HMAC-SHA256 over `v0:{timestamp}:{body}`
with the signing secret, sent as `X-Slack-Signature: v0=<hex>` and
`X-Slack-Request-Timestamp`.
"""

from __future__ import annotations

import asyncio
import hashlib
import hmac
import json
import threading
import time
import urllib.error
import urllib.request
import uuid
from collections.abc import Awaitable, Callable
from typing import Any
from urllib.parse import urlencode

from tests.support.fakes.slack_api import TS_SEQUENCE, FakeSlack

SIGNING_SECRET = "8f742231b10e8888abcd99yyyzzz85a5"


def sign(body: bytes, secret: str = SIGNING_SECRET, timestamp: int | None = None) -> dict[str, str]:
    now = int(time.time())  # wall clock: slack-bolt checks the signature's age by its own
    ts = str(now if timestamp is None else timestamp)
    base = b"v0:" + ts.encode() + b":" + body
    digest = hmac.new(secret.encode(), base, hashlib.sha256).hexdigest()
    return {"X-Slack-Request-Timestamp": ts, "X-Slack-Signature": f"v0={digest}"}


def new_ts() -> str:
    """A unique Slack message timestamp."""
    # Slack's own stamp, on the same clock as the fake Web API's, so messages keep their order.
    return (
        f"{int(time.time())}.{next(TS_SEQUENCE) % 1_000_000:06d}"  # wall clock: as the fake API's
    )


def event_body(
    event: dict[str, Any],
    *,
    team: str = "T1",
    enterprise: str | None = None,
    event_id: str | None = None,
) -> dict[str, Any]:
    body: dict[str, Any] = {
        "token": "legacy-verification-token",
        "team_id": team,
        "api_app_id": "A0THREADLINE",
        "event": event,
        "type": "event_callback",
        "event_id": event_id or f"Ev{uuid.uuid4().hex[:10].upper()}",
        "event_time": int(time.time()),  # wall clock: Slack's own stamp (nothing reads it)
        "authorizations": [
            {
                "enterprise_id": enterprise,
                "team_id": team,
                "user_id": FakeSlack.bot_user_id,
                "is_bot": True,
            }
        ],
    }
    if enterprise:
        body["enterprise_id"] = enterprise
    return body


def mention(
    text: str,
    *,
    channel: str = "C1",
    ts: str | None = None,
    thread_ts: str | None = None,
    user: str = "U1",
    team: str = "T1",
    enterprise: str | None = None,
    event_id: str | None = None,
    files: list[dict[str, Any]] | None = None,
) -> dict[str, Any]:
    """An `app_mention` event callback: `<@bot> text` (with `files`: their file objects, as
    `FakeSlack.host_file` makes them)."""
    event: dict[str, Any] = {
        "type": "app_mention",
        "user": user,
        "text": f"<@{FakeSlack.bot_user_id}> {text}",
        "ts": ts or new_ts(),
        "channel": channel,
        "event_ts": ts,
    }
    if thread_ts:
        event["thread_ts"] = thread_ts
    if files:
        event["files"] = files
    return event_body(event, team=team, enterprise=enterprise, event_id=event_id)


def message(
    text: str,
    *,
    channel: str = "C1",
    ts: str | None = None,
    thread_ts: str | None = None,
    user: str | None = "U1",
    team: str = "T1",
    channel_type: str = "channel",
    subtype: str | None = None,
    bot_id: str | None = None,
    event_id: str | None = None,
    files: list[dict[str, Any]] | None = None,
) -> dict[str, Any]:
    """A `message` event callback (channel, DM, thread reply, bot message, edit...); with
    `files`, a `file_share` message carrying them."""
    event: dict[str, Any] = {
        "type": "message",
        "text": text,
        "ts": ts or new_ts(),
        "channel": channel,
        "channel_type": channel_type,
    }
    if user:
        event["user"] = user
    if thread_ts:
        event["thread_ts"] = thread_ts
    if subtype:
        event["subtype"] = subtype
    if bot_id:
        event["bot_id"] = bot_id
    if files:
        event["files"] = files
        event.setdefault("subtype", "file_share")
    return event_body(event, team=team, event_id=event_id)


def command(
    text: str,
    *,
    channel: str = "C1",
    user: str = "U1",
    team: str = "T1",
    trigger_id: str | None = None,
    response_url: str = "https://hooks.slack.invalid/commands/none",
) -> dict[str, str]:
    """A `/threadline` slash command (Slack sends it form-encoded)."""
    return {
        "token": "legacy-verification-token",
        "team_id": team,
        "team_domain": "fake",
        "channel_id": channel,
        "channel_name": "general",
        "user_id": user,
        "user_name": "alice",
        "command": "/threadline",
        "text": text,
        "api_app_id": "A0THREADLINE",
        "response_url": response_url,
        "trigger_id": trigger_id or f"{uuid.uuid4().int % 10**12}.{uuid.uuid4().hex[:8]}",
    }


def block_actions(
    posted: dict[str, Any],
    action_id: str,
    *,
    channel: str = "C1",
    user: str = "U1",
    team: str = "T1",
    enterprise: str | None = None,
    value: str | None = None,
    button: dict[str, Any] | None = None,
) -> dict[str, Any]:
    """A `block_actions` interaction: `user` clicked the button `action_id` of the message
    `posted` (as the fake Slack stored it). Slack sends it form-encoded as `payload=<json>`;
    who clicked is in `user` and `team`, the button's own `value` as it was posted (unless a
    forged one is given)."""
    button = (
        button
        if button is not None
        else next(
            e
            for b in posted.get("blocks") or []
            if b.get("type") == "actions"
            for e in b["elements"]
            if e["action_id"] == action_id
        )
    )
    container: dict[str, Any] = {
        "type": "message",
        "message_ts": posted["ts"],
        "channel_id": channel,
        "is_ephemeral": False,
    }
    if posted.get("thread_ts"):
        container["thread_ts"] = posted["thread_ts"]
    message = {k: v for k, v in posted.items() if k != "metadata" and v is not None}
    message["type"] = "message"
    return {
        "type": "block_actions",
        "user": {"id": user, "username": user.lower(), "name": user.lower(), "team_id": team},
        "api_app_id": "A0THREADLINE",
        "token": "legacy-verification-token",
        "container": container,
        "trigger_id": f"{uuid.uuid4().int % 10**12}.{uuid.uuid4().hex[:8]}",
        "team": {"id": team, "domain": "fake"},
        "enterprise": {"id": enterprise, "name": "Grid"} if enterprise else None,
        "is_enterprise_install": False,
        "channel": {"id": channel, "name": "general"},
        "message": message,
        "state": {"values": {}},
        "response_url": f"https://hooks.slack.invalid/actions/{team}/{uuid.uuid4().hex[:8]}",
        "actions": [
            {
                "action_id": action_id,
                "block_id": "threadline_confirm",
                "text": button["text"],
                "value": value if value is not None else button["value"],
                "type": "button",
                "action_ts": "1700000000.000100",  # Slack's stamp; Threadline never reads it
                **({"style": button["style"]} if "style" in button else {}),
            }
        ],
    }


def feedback_click(
    posted: dict[str, Any],
    rating: str,
    *,
    channel: str = "C1",
    user: str = "U1",
    team: str = "T1",
    enterprise: str | None = None,
    value: str | None = None,
) -> dict[str, Any]:
    """A `block_actions` interaction: `user` clicked 👍 (`rating` "up") or 👎 ("down") of
    the `feedback_buttons` under the message `posted`; the button's own value as posted
    (unless a forged one is given)."""
    element = next(
        e
        for b in posted.get("blocks") or []
        if b.get("type") == "context_actions"
        for e in b["elements"]
        if e["type"] == "feedback_buttons"
    )
    button = element["positive_button" if rating == "up" else "negative_button"]
    click = block_actions(
        posted,
        element["action_id"],
        channel=channel,
        user=user,
        team=team,
        enterprise=enterprise,
        button=button,
    )
    click["actions"] = [
        {
            "type": "feedback_buttons",
            "action_id": element["action_id"],
            "block_id": "fb",
            "text": button["text"],
            "value": value if value is not None else button["value"],
            "action_ts": "1700000000.000100",  # Slack's stamp; Threadline never reads it
        }
    ]
    return click


def view_submission(
    view: dict[str, Any],
    values: dict[str, dict[str, str | None]],
    *,
    user: str = "U1",
    team: str = "T1",
) -> dict[str, Any]:
    """A `view_submission` interaction: `user` sent the form `view` (as `views.open` got it)
    with `values` typed: block id -> action id -> text."""
    state = {
        block: {
            action: {"type": "plain_text_input", "value": text} for action, text in inputs.items()
        }
        for block, inputs in values.items()
    }
    return {
        "type": "view_submission",
        "team": {"id": team, "domain": "fake"},
        "enterprise": None,
        "user": {"id": user, "username": user.lower(), "name": user.lower(), "team_id": team},
        "api_app_id": "A0THREADLINE",
        "token": "legacy-verification-token",
        "trigger_id": f"{uuid.uuid4().int % 10**12}.{uuid.uuid4().hex[:8]}",
        "view": {
            **view,
            "team_id": team,
            "app_id": "A0THREADLINE",
            "state": {"values": state},
            "hash": uuid.uuid4().hex[:12],
        },
        "response_urls": [],
        "is_enterprise_install": False,
    }


class Response:
    def __init__(self, status: int, body: str, seconds: float) -> None:
        self.status, self.body, self.seconds = status, body, seconds


def send(
    url: str,
    body: bytes,
    content_type: str,
    *,
    secret: str = SIGNING_SECRET,
    timestamp: int | None = None,
    headers: dict[str, str] | None = None,
    timeout: float = 30.0,
) -> Response:
    all_headers = {"Content-Type": content_type, **sign(body, secret, timestamp), **(headers or {})}
    request = urllib.request.Request(url, data=body, headers=all_headers, method="POST")
    started = time.monotonic()
    try:
        with urllib.request.urlopen(request, timeout=timeout) as resp:
            return Response(resp.status, resp.read().decode(), time.monotonic() - started)
    except urllib.error.HTTPError as err:
        return Response(err.code, err.read().decode(), time.monotonic() - started)


def retry_headers(attempt: int, reason: str = "http_timeout") -> dict[str, str]:
    """What Slack adds when it delivers an event again (attempts 1 to 3, same body and
    event_id, signed anew): after no ack within 3 s, an error status or a failed connection."""
    return {"X-Slack-Retry-Num": str(attempt), "X-Slack-Retry-Reason": reason}


def deliver_event(
    events_url: str, body: dict[str, Any], *, retry: int = 0, timeout: float = 30.0
) -> Response:
    """POST one event callback as Slack does (signed JSON; `retry` > 0: a redelivery)."""
    data = json.dumps(body).encode()
    headers = retry_headers(retry) if retry else None
    return send(events_url, data, "application/json", headers=headers, timeout=timeout)


class ServedApp:
    """The real composition root with the Slack adapter, served by uvicorn on 127.0.0.1."""

    def __init__(
        self,
        settings: Any,
        *,
        setup: Callable[[Any], None] | None = None,
        **tuning: float,
    ) -> None:
        self.settings = settings
        self.setup = setup
        self.tuning = {"progress_after": 30.0, "delivery_backoff": 0.05, **tuning}
        self.port = 0
        self.app: Any = None
        self.slack: Any = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._server: Any = None
        self._ready = threading.Event()
        self._error: BaseException | None = None
        self._thread: threading.Thread | None = None

    def start(self) -> ServedApp:
        self._thread = threading.Thread(target=lambda: asyncio.run(self._main()), daemon=True)
        self._thread.start()
        if not self._ready.wait(30):
            raise RuntimeError("the app did not start within 30 s")
        if self._error is not None:
            raise self._error
        return self

    async def _main(self) -> None:
        import uvicorn

        from bot.app import build_app, build_slack
        from bot.server import create_http_app

        try:
            self._loop = asyncio.get_running_loop()
            self.app = build_app(self.settings, with_metrics=True)
            if self.setup is not None:
                self.setup(self.app)
            await self.app.db.create_all()
            self.slack = build_slack(self.app, "http", **self.tuning)
            await self.slack.start()
            config = uvicorn.Config(
                create_http_app(self.app, self.slack),
                host="127.0.0.1",
                port=0,
                log_level="warning",
                lifespan="off",
            )
            self._server = uvicorn.Server(config)
            serving = asyncio.create_task(self._server.serve())
            deadline = time.monotonic() + 20
            while not self._server.started and not serving.done():
                if time.monotonic() > deadline:
                    raise RuntimeError("uvicorn did not start")
                await asyncio.sleep(0.01)  # start-up poll with a deadline
            self.port = self._server.servers[0].sockets[0].getsockname()[1]
        except BaseException as exc:
            self._error = exc
            self._ready.set()
            if self.app is not None:
                await self.app.aclose()
            return
        self._ready.set()
        try:
            await serving
        finally:
            await self.slack.aclose()
            await self.app.aclose()

    def stop(self) -> None:
        if self._server is not None and self._thread is not None:
            self._server.should_exit = True
            self._thread.join(30)

    @property
    def events_url(self) -> str:
        return f"http://127.0.0.1:{self.port}/slack/events"

    def post_event(self, body: dict[str, Any], **kwargs: Any) -> Response:
        return send(self.events_url, json.dumps(body).encode(), "application/json", **kwargs)

    def post_interaction(self, payload: dict[str, Any], **kwargs: Any) -> Response:
        """A signed interactivity request, form-encoded as Slack sends it."""
        body = urlencode({"payload": json.dumps(payload)}).encode()
        return send(self.events_url, body, "application/x-www-form-urlencoded", **kwargs)

    def post_command(self, fields: dict[str, str], **kwargs: Any) -> Response:
        return send(
            self.events_url,
            urlencode(fields).encode(),
            "application/x-www-form-urlencoded",
            **kwargs,
        )

    def run(self, work: Awaitable[Any], timeout: float = 30.0) -> Any:
        """Run a coroutine (or any awaitable: a file's `fetch`) on the app's event loop (e.g. a
        database check) and return its result."""
        assert self._loop is not None

        async def wait() -> Any:
            return await work

        return asyncio.run_coroutine_threadsafe(wait(), self._loop).result(timeout)

    def idle(self, timeout: float = 30.0) -> None:
        """Block until every acknowledged request has been answered (no sleeping)."""
        self.run(self.slack.idle(), timeout)
