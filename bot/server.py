"""The HTTP server (`threadline serve`): health and metrics now; the Slack endpoint later."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import signal
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from starlette.applications import Starlette

    from bot.app import App

log = logging.getLogger(__name__)


def create_http_app(app: App) -> Starlette:
    from starlette.applications import Starlette
    from starlette.requests import Request
    from starlette.responses import JSONResponse, Response
    from starlette.routing import Route

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

    async def metrics(_: Request) -> Response:
        if app.metrics is None:
            return Response("metrics disabled\n", status_code=404)
        body, content_type = app.metrics.render()
        return Response(body, media_type=content_type)

    return Starlette(routes=[Route("/healthz", healthz), Route("/metrics", metrics)])


async def serve(app: App, host: str, port: int) -> int:
    import uvicorn

    await app.db.create_all()
    config = uvicorn.Config(
        create_http_app(app), host=host, port=port, log_level="info", lifespan="off"
    )
    # uvicorn drains connections before returning.
    await _make_server(config).serve()
    return 0


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
