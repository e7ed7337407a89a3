"""Log output of the processes: human-readable lines by default, JSON lines with
LOG_FORMAT=json (one object per line: time, level, logger, message, and the request id,
platform, tenant and channel of the request the line belongs to; the traceback as `exc`)."""

from __future__ import annotations

import json
import logging
import sys
from datetime import UTC, datetime
from typing import Literal

from core.logcontext import FIELDS, RequestContextFilter

LogFormat = Literal["text", "json"]


class JsonFormatter(logging.Formatter):
    def format(self, record: logging.LogRecord) -> str:
        entry: dict[str, object] = {
            "ts": datetime.fromtimestamp(record.created, UTC).isoformat(timespec="milliseconds"),
            "level": record.levelname,
            "logger": record.name,
            "message": record.getMessage(),
        }
        for name in FIELDS:
            value = getattr(record, name, None)
            if value is not None:
                entry[name] = value
        if record.exc_info:
            entry["exc"] = self.formatException(record.exc_info)
        return json.dumps(entry, ensure_ascii=False, default=str)


class TextFormatter(logging.Formatter):
    def __init__(self) -> None:
        super().__init__("%(asctime)s %(levelname)s %(name)s: %(message)s")

    def format(self, record: logging.LogRecord) -> str:
        line = super().format(record)
        request_id = getattr(record, "request_id", None)
        if request_id is None:
            return line
        where = "/".join(
            str(getattr(record, n, "") or "-") for n in ("platform", "tenant", "channel")
        )
        head, sep, rest = line.partition(": ")
        return f"{head} [{request_id[:12]} {where}]{sep}{rest}"


def configure_logging(level: str, fmt: LogFormat = "text") -> None:
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(JsonFormatter() if fmt == "json" else TextFormatter())
    handler.addFilter(RequestContextFilter())
    root = logging.getLogger()
    for old in list(root.handlers):
        root.removeHandler(old)
    root.addHandler(handler)
    root.setLevel(level.upper())
