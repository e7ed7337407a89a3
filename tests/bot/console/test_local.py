"""`threadline run` with the console on (as `make run` starts it): the web console is served
on 127.0.0.1 beside the local chat, and a sign-in link for the person at the terminal is
printed at start."""

from __future__ import annotations

import asyncio
import re
from collections.abc import Callable
from pathlib import Path

import httpx

from tests.conftest import POLICY_ALL
from tests.support.console import WEB_SECRET, signin_post
from tests.support.processes import base_env, free_port, threadline_command

LOCAL_LINK = re.compile(r"Web console: (http://127\.0\.0\.1:\d+)(/console/signin/[A-Za-z0-9_-]+)")


async def test_threadline_run_serves_the_console_on_loopback_and_prints_a_link(
    tmp_path: Path, write_policy: Callable[[str], Path]
) -> None:
    empty = tmp_path / "empty.toml"
    empty.write_text("")
    # The shipped policy makes the local operator an admin; the test policy's rule does too.
    policy = POLICY_ALL + '\n[[rules]]\nmatch = { platform = "console" }\ngrant = ["admin"]\n'
    env = base_env(
        THREADLINE_DATA_DIR=str(tmp_path / "data"),
        THREADLINE_POLICY=str(write_policy(policy)),
        THREADLINE_CONFIG=str(empty),
        THREADLINE_CONSOLE="true",
        THREADLINE_CONSOLE_SECRET=WEB_SECRET,
        PORT=str(free_port()),
        PYTHONUNBUFFERED="1",
    )
    proc = await asyncio.create_subprocess_exec(
        *threadline_command(),
        "run",
        env=env,
        cwd=tmp_path,
        stdin=asyncio.subprocess.PIPE,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
    )
    assert proc.stdin is not None and proc.stdout is not None and proc.stderr is not None
    try:
        seen = ""
        found = None
        while found is None:
            line = await asyncio.wait_for(proc.stdout.readline(), 60)
            assert line, seen + (await proc.stderr.read()).decode()
            seen += line.decode()
            found = LOCAL_LINK.search(seen)
        base, path = found.groups()
        assert base == f"http://127.0.0.1:{env['PORT']}"
        async with httpx.AsyncClient(base_url=base) as web:
            signed_in = await signin_post(web, path)
            assert signed_in.status_code == 303, signed_in.text
            overview = await web.get("/console/")
            assert overview.status_code == 200 and "<h1>Overview</h1>" in overview.text
            assert (await web.get("/healthz")).status_code == 200
        proc.stdin.close()  # end of input ends the chat, and the console with it
        assert await asyncio.wait_for(proc.wait(), 30) == 0
    finally:
        if proc.returncode is None:
            proc.kill()
            await proc.wait()
