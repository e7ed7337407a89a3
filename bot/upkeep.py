"""Background upkeep of long-running processes (`run`, `serve`, `worker`).

Skills follow their files: every `SKILLS_CHECK_EVERY` seconds the skill folders' and SKILL.md
files' modification times are compared with the loaded set (a few `stat` calls, in a worker
thread), and a change reloads them, so an edited playbook is used without a restart and no
request ever waits on the disk for it.

Vectors catch up with chunks: an index whose embedding failed (a Qdrant server or an
embeddings endpoint was down, the store was being handed over between processes) leaves files
and chunks indexed but vectors behind, and a new or rebuilt embedded shard starts empty. Every
`VECTOR_CATCH_UP_EVERY` seconds this process syncs each repository whose vectors are not known
to be in step; where nothing changed that costs one small query per repository. (A
`threadline index` in a shell beside this process embeds through this process's store socket.)

The embedded store is held from the start: `HOLD_STORE_AFTER` seconds after start-up, when a
repository is registered, this process opens the embedded shard in the background and keeps it
(`core.code.search.CodeSearch.hold`), so that a `threadline search` in a shell is answered
through this process's store socket instead of opening the shard itself (and keeping this
process from holding it). A `threadline hold-search` that a shell search started holds it
until asked: this process asks it to let go (`hold(take_over=True)`) and holds the store
moments later. An open that fails is logged and tried again by each catch-up pass, and so is
one that found the shard held by a one-shot command in a shell (retried sooner, every
`HOLD_STORE_RETRY`, for the first `HOLD_STORE_RETRIES` times: such a command ends within
seconds). With QDRANT_URL there is nothing to hold.

The process board: this process writes its heartbeat (command, host, pid and the chat
platforms it has connected) every `BEAT_EVERY` and removes it when it stops; the console's
overview lists the live processes and each platform's state from it.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import socket
from dataclasses import replace
from typing import TYPE_CHECKING

from core.code.vectors import VectorStoreError
from core.operator.processes import BEAT_EVERY, ProcessBoard, ProcessInfo
from core.outbox.drain import owner_id
from core.shielded import to_the_end

if TYPE_CHECKING:
    from bot.app import App

log = logging.getLogger(__name__)

VECTOR_CATCH_UP_EVERY = 60.0
HOLD_STORE_AFTER = 0.2
HOLD_STORE_RETRY = 2.0
HOLD_STORE_RETRIES = 5
SKILLS_CHECK_EVERY = 2.0
GAUGES_EVERY = 15.0


async def catch_up_vectors(app: App) -> int:
    """One pass: sync every repository whose vectors are behind; returns chunks embedded."""
    embedded = 0
    for repo in await app.repos.all():
        if await app.search.in_sync(repo):
            continue
        try:
            result = await app.search.sync(repo)
        except VectorStoreError as exc:  # held by another process, server down: next time
            log.debug("vectors of %s not caught up: %s", repo.name, exc)
            return embedded
        if result.embedded or result.deleted or result.reused:
            log.info(
                "vectors of %s caught up: %d embedded, %d reused, %d deleted",
                repo.name,
                result.embedded,
                result.reused,
                result.deleted,
            )
        embedded += result.embedded
    return embedded


async def hold_vector_store(app: App) -> bool | None:
    """Open the embedded store and hold it, if a repository is registered (module docstring):
    True when this process holds it, False when another process does for now (try again
    soon), None when there is nothing to hold or opening it failed (logged; the next catch-up
    pass tries again)."""
    if app.settings.qdrant_url:
        return None
    if app.search.held:
        return True
    try:
        if not await app.repos.all():
            return None
        held = await app.search.hold(take_over=True)
    except Exception as exc:  # VectorStoreError, a database blip: never the process's end
        log.warning("the vector store is not held by this process yet: %s", exc)
        return None
    if held:
        log.info("vector store held: searches in a shell beside this process go through it")
    else:
        log.debug("the vector store is held by another process for now")
    return held


async def hold_from_start(
    app: App,
    after: float = HOLD_STORE_AFTER,
    retry: float = HOLD_STORE_RETRY,
    retries: int = HOLD_STORE_RETRIES,
) -> None:
    # Wait first, as the loops do, if briefly (a shell search right after start should find
    # the store held): a process that fails at once stops without opening it.
    await asyncio.sleep(after)
    for _ in range(retries):
        # To the end when the process stops meanwhile: the store's open finishes in its
        # thread anyway, and the app's close waits for it.
        if await to_the_end(hold_vector_store(app)) is not False:
            return
        await asyncio.sleep(retry)


async def keep_vectors_in_step(app: App, every: float = VECTOR_CATCH_UP_EVERY) -> None:
    await hold_from_start(app)
    while True:
        await asyncio.sleep(every)
        try:
            await to_the_end(hold_vector_store(app))
            await catch_up_vectors(app)
        except Exception:  # the loop must outlive one bad pass (database blip...)
            log.exception("catching up vectors failed")


async def refresh_skills(app: App) -> bool:
    """One check: reload the skills if their files changed; True if they did."""
    changed = await asyncio.to_thread(app.skills.library.refresh)
    if changed:
        log.info("skills reloaded: %d loaded", len(app.skills.library.all()))
    return changed


async def keep_skills_fresh(app: App, every: float = SKILLS_CHECK_EVERY) -> None:
    while True:
        await asyncio.sleep(every)
        try:
            await refresh_skills(app)
        except Exception:
            log.exception("checking the skill folders failed")


async def refresh_gauges(app: App) -> None:
    """Metrics read from the database: the outbox backlog per platform."""
    if app.metrics is None:
        return
    platforms = app.outbox.platforms
    for platform in platforms.names() if platforms is not None else ():
        app.metrics.outbox_backlog.labels(platform).set(await app.outbox.backlog(platform))


async def keep_gauges_fresh(app: App, every: float = GAUGES_EVERY) -> None:
    # Wait first, like the other loops: a process that fails to start stops within its first
    # seconds, and cancelling a query in flight leaves the pool a connection to clean up.
    while True:
        await asyncio.sleep(every)
        try:
            await refresh_gauges(app)
        except Exception:
            log.warning("refreshing metrics failed", exc_info=True)


async def keep_beating(app: App, command: str) -> None:
    """This process on the process board (`core.operator.processes`) from now until it stops:
    a row every BEAT_EVERY with the platforms it has connected, deleted on the way out."""
    board = ProcessBoard(app.db, app.clock)
    me = ProcessInfo(
        id=owner_id(),
        command=command,
        host=socket.gethostname(),
        pid=os.getpid(),
        started_at=app.clock(),
    )
    try:
        while True:
            try:
                await board.beat(replace(me, platforms=app.presence.states()))
            except Exception:
                log.warning("writing this process's heartbeat failed", exc_info=True)
            await app.presence.changed(within=BEAT_EVERY.total_seconds())
    finally:
        # Off the board on the way out, within a few seconds whatever the database does.
        with contextlib.suppress(Exception):
            async with asyncio.timeout(5):
                await board.gone(me.id)


async def upkeep(app: App, command: str = "serve") -> None:
    async with asyncio.TaskGroup() as tasks:
        tasks.create_task(keep_beating(app, command))
        tasks.create_task(keep_vectors_in_step(app))
        tasks.create_task(keep_skills_fresh(app))
        if app.metrics is not None:
            tasks.create_task(keep_gauges_fresh(app))


def start_upkeep(app: App, command: str = "serve") -> asyncio.Task[None]:
    return asyncio.get_running_loop().create_task(upkeep(app, command), name="upkeep")
