"""Which request a log line belongs to: request id, platform, tenant and channel.

`Core.handle` opens a `request_scope`; every log record made while it runs (in tasks it starts
too: asyncio copies the context) carries those four fields through `RequestContextFilter`, so
JSON logs can be filtered per request. Only identifiers go here, never message text.
"""

from __future__ import annotations

import logging
from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass


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


class RequestContextFilter(logging.Filter):
    """Adds the current request's fields to every record (None outside a request)."""

    def filter(self, record: logging.LogRecord) -> bool:
        ctx = _current.get()
        for name in FIELDS:
            if not hasattr(record, name):
                setattr(record, name, getattr(ctx, name) if ctx is not None else None)
        return True
