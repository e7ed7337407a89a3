"""The web console beside the local chat (`threadline run` with no chat platform, `make run`):
served on 127.0.0.1 only, with a sign-in link for the person at the terminal printed at start,
so a newcomer sees the console at once. Nothing is served when the console is off."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import sys
from collections.abc import AsyncIterator
from typing import TYPE_CHECKING, TextIO

from adapters.console.translate import ConsoleIdentity, to_request
from core.errors import PermissionDenied
from core.operator.commands import signin_url
from core.operator.links import LINK_LIFETIME, SignInLinks
from core.session import open_session

if TYPE_CHECKING:
    from bot.app import App

log = logging.getLogger(__name__)
LOOPBACK = "127.0.0.1"
START_TIMEOUT = 10.0


def local_port() -> int | None:
    port = os.environ.get("PORT") or "8080"
    return int(port) if port.isdigit() and 0 < int(port) < 65536 else None


@contextlib.asynccontextmanager
async def local_console(
    app: App, who: ConsoleIdentity, out: TextIO = sys.stdout
) -> AsyncIterator[str | None]:
    """Serves the HTTP app (health, metrics, console) on 127.0.0.1:$PORT for as long as the
    block runs and prints a sign-in link for `who`; yields the console's address, or None when
    the console is off or could not start (the chat goes on without it, saying why)."""
    if not app.settings.console:
        yield None
        return
    import uvicorn

    from bot.server import _make_server, create_http_app

    port = local_port()
    if port is None:
        print("Web console not started: PORT must be a port number.", file=out)
        yield None
        return
    config = uvicorn.Config(
        create_http_app(app),
        host=LOOPBACK,
        port=port,
        log_level="warning",
        lifespan="off",
        access_log=False,
    )
    server = _make_server(config)
    serving = asyncio.create_task(server.serve(), name="local-console")
    try:
        address = await _started(server, serving, port, out)
        if address is not None:
            await _print_link(app, who, address, out)
        yield address
    finally:
        server.should_exit = True
        with contextlib.suppress(Exception):
            await asyncio.wait_for(serving, START_TIMEOUT)


async def _started(
    server: object, serving: asyncio.Task[None], port: int, out: TextIO
) -> str | None:
    loop = asyncio.get_running_loop()
    deadline = loop.time() + START_TIMEOUT
    while not getattr(server, "started", False):
        if serving.done() or loop.time() > deadline:
            # uvicorn exits (SystemExit) when the port is taken; the chat goes on without it.
            with contextlib.suppress(BaseException):
                await serving
            print(
                f"Web console not started: {LOOPBACK}:{port} is not free (set PORT to another "
                "port).",
                file=out,
            )
            return None
        await asyncio.sleep(0.05)
    return f"http://{LOOPBACK}:{port}"


async def _print_link(app: App, who: ConsoleIdentity, address: str, out: TextIO) -> None:
    identity = open_session(to_request("", who), app.core.policy).identity
    try:
        token = await SignInLinks(app.db, app.core.policy, app.clock).issue(identity)
    except PermissionDenied:
        print(
            f"Web console at {address}/console/ (you are not an admin under the policy, so no "
            "sign-in link).",
            file=out,
        )
        return
    minutes = int(LINK_LIFETIME.total_seconds() // 60)
    print(
        f"Web console: {signin_url(address, token)}\n"
        f"  (your sign-in link: works once, for {minutes} minutes; `/console` makes another)",
        file=out,
    )
