"""Which request a log line belongs to: request id, platform, tenant and channel.

`Core.handle` opens a `request_scope`; every log record made while it runs (in tasks it starts
too: asyncio copies the context) carries those four fields through `RequestContextFilter`, so
JSON logs can be filtered per request. Only identifiers go here, never message text.

What a request starts but does not own (a server, a reaper that outlives it) runs in a fresh
context through `detached`, or its log lines would name that request for good.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Coroutine, Iterator
from contextlib import contextmanager
from contextvars import Context, ContextVar
from dataclasses import dataclass
from typing import Any, TypeVar

T = TypeVar("T")


@dataclass(frozen=True, slots=True)
class RequestContext:
    request_id: str
    platform: str
    tenant: str
    channel: str


_current: ContextVar[RequestContext | None] = ContextVar("threadline_request", default=None)
FIELDS = ("request_id", "platform", "tenant", "channel")


@contextmanager
def request_scope(context: RequestContext) -> Iterator[None]:
    token = _current.set(context)
    try:
        yield
    finally:
        _current.reset(token)


def detached(coro: Coroutine[Any, Any, T], *, name: str | None = None) -> asyncio.Task[T]:
    """A task run outside any request's context (an empty one), for work that outlives the
    request that happens to start it."""
    return asyncio.get_running_loop().create_task(coro, name=name, context=Context())


class RequestContextFilter(logging.Filter):
    """Adds the current request's fields to every record (None outside a request)."""

    def filter(self, record: logging.LogRecord) -> bool:
        ctx = _current.get()
        for name in FIELDS:
            if not hasattr(record, name):
                setattr(record, name, getattr(ctx, name) if ctx is not None else None)
        return True
