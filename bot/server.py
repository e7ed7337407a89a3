"""The HTTP server (`threadline serve`): `/healthz`, `/metrics`, and `POST /slack/events` when
Slack HTTP mode is configured; plus `run_socket_mode` for `threadline run` with an app token.
Wherever Slack is served, its outbox messages are delivered too (`bot.delivery`)."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import signal
import sys
from collections.abc import Iterator
from contextlib import AbstractAsyncContextManager
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from starlette.applications import Starlette

    from adapters.slack.app import SlackAdapter
    from bot.app import App

EXIT_CONFIG = 2

log = logging.getLogger(__name__)


def create_http_app(app: App, slack: SlackAdapter | None = None) -> Starlette:
    from starlette.applications import Starlette
    from starlette.requests import Request
    from starlette.responses import JSONResponse, Response
    from starlette.routing import Route

    from bot.readiness import ReadinessProbe

    async def healthz(_: Request) -> Response:
        from sqlalchemy import text

        try:
            async with app.db.session() as s:
                await s.exec(text("SELECT 1"))  # type: ignore[call-overload]
        except Exception:
            log.exception("health check: database unreachable")
            return JSONResponse({"status": "error", "database": "unreachable"}, status_code=503)
        return JSONResponse(
            {"status": "ok", "database": "ok", "model_configured": app.core.model_configured}
        )

    probe = ReadinessProbe(app)

    async def readyz(_: Request) -> Response:
        ready = await probe.check()
        if ready.ok:
            return JSONResponse({"status": "ready", "checks": ready.checks})
        return JSONResponse(
            {"status": "not ready", "failing": ready.failing, "checks": ready.checks},
            status_code=503,
        )

    async def metrics(_: Request) -> Response:
        if app.metrics is None:
            return Response("metrics disabled\n", status_code=404)
        body, content_type = app.metrics.render()
        return Response(body, media_type=content_type)

    routes = [Route("/healthz", healthz), Route("/readyz", readyz), Route("/metrics", metrics)]
    if slack is not None:
        routes.append(Route("/slack/events", slack.endpoint, methods=["POST"]))
    return Starlette(routes=routes)


async def start_slack(app: App, mode: str) -> SlackAdapter | None:
    """The started Slack adapter, or None after printing why it cannot start."""
    from adapters.slack.app import SlackStartupError
    from adapters.slack.web import SlackConfigError
    from bot.app import build_slack

    try:
        slack = build_slack(app, "socket" if mode == "socket" else "http")
        await slack.start()
    except (SlackConfigError, SlackStartupError) as exc:
        print(f"Threadline cannot start: {exc}", file=sys.stderr)
        return None
    return slack


async def serve(app: App, host: str, port: int) -> int:
    import uvicorn

    from bot.app import slack_http_configured

    await app.db.create_all()
    slack = None
    if slack_http_configured(app.settings):
        slack = await start_slack(app, "http")
        if slack is None:
            return EXIT_CONFIG
    config = uvicorn.Config(
        create_http_app(app, slack), host=host, port=port, log_level="info", lifespan="off"
    )
    try:
        # uvicorn drains connections before returning; the outbox delivery stops after it.
        async with _delivering_slack(app, slack):
            await _make_server(config).serve()
    finally:
        if slack is not None:
            await slack.aclose()  # answers already acknowledged are finished, not dropped
    return 0


async def run_socket_mode(app: App) -> int:
    """`threadline run` with SLACK_APP_TOKEN: Slack over Socket Mode until SIGTERM/SIGINT."""
    await app.db.create_all()
    slack = await start_slack(app, "socket")
    if slack is None:
        return EXIT_CONFIG
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(sig, stop.set)
    try:
        async with _delivering_slack(app, slack):
            await slack.run_socket_mode(stop)
    finally:
        for sig in (signal.SIGTERM, signal.SIGINT):
            loop.remove_signal_handler(sig)
        await slack.aclose()
    log.info("Socket Mode stopped")
    return 0


def _delivering_slack(app: App, slack: SlackAdapter | None) -> AbstractAsyncContextManager[None]:
    """Slack's outbox messages (digests, late replies) are posted by the process that serves
    Slack, while it does."""
    if slack is None:
        return contextlib.nullcontext()
    from bot.delivery import delivering

    return delivering(app, "slack", slack.deliver_outbox)


def _make_server(config: Any) -> Any:
    import uvicorn

    class Server(uvicorn.Server):
        """uvicorn, minus its habit of re-raising SIGTERM/SIGINT after a graceful shutdown
        (which kills the process with the signal, skips our cleanup and makes a clean stop
        look like a crash, exit status 143). Here a signal means: drain, clean up, exit 0."""

        @contextlib.contextmanager
        def capture_signals(self) -> Iterator[None]:
            loop = asyncio.get_running_loop()

            def stop() -> None:
                if self.should_exit:  # a second signal: stop without draining
                    self.force_exit = True
                self.should_exit = True

            for sig in (signal.SIGTERM, signal.SIGINT):
                loop.add_signal_handler(sig, stop)
            try:
                yield
            finally:
                for sig in (signal.SIGTERM, signal.SIGINT):
                    loop.remove_signal_handler(sig)

    return Server(config)
