"""The HTTP server (`threadline serve`): `/healthz`, `/metrics`, and `POST /slack/events` when
Slack HTTP mode is configured; plus `run_socket_mode` for `threadline run` with an app token.
Wherever Slack is served, its outbox messages are delivered too (`bot.delivery`)."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import math
import sys
from collections.abc import Coroutine, Iterator
from contextlib import AbstractAsyncContextManager
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from starlette.applications import Starlette

    from adapters.slack.app import SlackAdapter
    from bot.app import App
    from bot.shutdown import Shutdown

EXIT_CONFIG = 2

log = logging.getLogger(__name__)


def create_http_app(
    app: App, slack: SlackAdapter | None = None, shutdown: Shutdown | None = None
) -> Starlette:
    from starlette.applications import Starlette
    from starlette.requests import Request
    from starlette.responses import JSONResponse, Response
    from starlette.routing import Mount, Route

    from bot.readiness import ReadinessProbe

    async def healthz(_: Request) -> Response:
        from sqlalchemy import text

        try:
            async with app.db.session() as s:
                # sqlmodel types `exec` for its own selects; raw SQL goes to the connection.
                await (await s.connection()).execute(text("SELECT 1"))
        except Exception:
            log.exception("health check: database unreachable")
            return JSONResponse({"status": "error", "database": "unreachable"}, status_code=503)
        return JSONResponse(
            {"status": "ok", "database": "ok", "model_configured": app.core.model_configured}
        )

    probe = ReadinessProbe(app)

    def stopping() -> bool:
        return shutdown is not None and shutdown.requested.is_set()

    async def readyz(_: Request) -> Response:
        if stopping():  # a load balancer stops sending work here while it drains
            return JSONResponse(
                {
                    "status": "not ready",
                    "failing": ["process"],
                    "checks": {"process": "shutting down"},
                },
                status_code=503,
            )
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

    routes: list[Route | Mount] = [
        Route("/healthz", healthz),
        Route("/readyz", readyz),
        Route("/metrics", metrics),
    ]
    if slack is not None:
        endpoint = slack.endpoint

        async def slack_events(request: Request) -> Response:
            if stopping():
                # Not acknowledged and not claimed: Slack retries the event, and another
                # process (or this one, restarted) answers it; duplicates are claimed away.
                return Response("shutting down\n", status_code=503)
            return await endpoint(request)

        routes.append(Route("/slack/events", slack_events, methods=["POST"]))
    if app.settings.console:  # the operator console (bot/console), off by default
        from bot.console.app import create_console_app

        routes.append(Mount("/console", create_console_app(app)))
    return Starlette(routes=routes)


async def start_slack(app: App, mode: str) -> SlackAdapter | None:
    """The started Slack adapter, or None after printing why it cannot start."""
    from bot.app import build_slack
    from core.errors import ConfigError

    try:
        slack = build_slack(app, "socket" if mode == "socket" else "http")
        await slack.start()
    except ConfigError as exc:  # SlackConfigError, SlackStartupError
        print(f"Threadline cannot start: {exc}", file=sys.stderr)
        return None
    app.presence.track("slack")  # auth.test passed: events reach this process from now on
    return slack


async def serve(app: App, host: str, port: int, shutdown: Shutdown) -> int:
    """Serve until `shutdown` starts; then, while the port still answers (`/healthz` 200,
    `/readyz` 503, Slack events 503), let acknowledged answers finish within the bound, stop
    the HTTP server, and hand back the outbox leases."""
    import uvicorn

    from bot.app import slack_http_configured

    await app.db.create_all()
    slack = None
    if slack_http_configured(app.settings):
        slack = await start_slack(app, "http")
        if slack is None:
            return EXIT_CONFIG
    config = uvicorn.Config(
        create_http_app(app, slack, shutdown),
        host=host,
        port=port,
        log_level="info",
        lifespan="off",
    )
    server = _make_server(config)

    async def drain_then_stop() -> None:
        await shutdown.requested.wait()
        if slack is not None:
            await _settled(slack.idle(), shutdown.remaining())
        # uvicorn then closes the port and waits for open requests, within what is left.
        config.timeout_graceful_shutdown = max(1, math.ceil(shutdown.remaining()))
        server.should_exit = True

    stopper = asyncio.create_task(drain_then_stop(), name="shutdown-serve")
    try:
        async with _delivering_slack(app, slack, shutdown):
            await server.serve()
    finally:
        stopper.cancel()
        await asyncio.gather(stopper, return_exceptions=True)
        if slack is not None:
            # Answers still running now have used up the bound: they are cancelled.
            app.presence.drop("slack")
            cut = await slack.aclose(grace=shutdown.remaining())
            if cut:
                shutdown.cut(f"{cut} Slack answer(s)")
    return 0


async def run_socket_mode(app: App, shutdown: Shutdown) -> int:
    """`threadline run` with SLACK_APP_TOKEN: Slack over Socket Mode until `shutdown` starts;
    then the connection is closed (no new events), and answers in flight get the bound."""
    await app.db.create_all()
    slack = await start_slack(app, "socket")
    if slack is None:
        return EXIT_CONFIG
    try:
        async with _delivering_slack(app, slack, shutdown):
            await slack.run_socket_mode(shutdown.requested)
    finally:
        app.presence.drop("slack")
        cut = await slack.aclose(grace=shutdown.remaining())
        if cut:
            shutdown.cut(f"{cut} Slack answer(s)")
    log.info("Socket Mode stopped")
    return 0


async def _settled(work: Coroutine[Any, Any, None], seconds: float) -> None:
    """Wait for `work` up to `seconds`; it is cancelled (not what it waited for) after."""
    with contextlib.suppress(TimeoutError):
        await asyncio.wait_for(work, seconds)


def _delivering_slack(
    app: App, slack: SlackAdapter | None, shutdown: Shutdown
) -> AbstractAsyncContextManager[None]:
    """Slack's outbox messages (digests, late replies) are posted by the process that serves
    Slack, while it does."""
    if slack is None:
        return contextlib.nullcontext()
    from bot.delivery import delivering

    return delivering(
        app.outbox,
        slack,
        stop=shutdown.requested,
        grace=shutdown.remaining,
        cut=shutdown.cut,
    )


def _make_server(config: Any) -> Any:
    import uvicorn

    class Server(uvicorn.Server):
        """uvicorn without signal handling of its own: `bot.shutdown` owns SIGTERM/SIGINT
        (uvicorn would stop listening at once, and re-raise the signal after its shutdown,
        which skips our cleanup and makes a clean stop look like a crash)."""

        @contextlib.contextmanager
        def capture_signals(self) -> Iterator[None]:
            yield

    return Server(config)
