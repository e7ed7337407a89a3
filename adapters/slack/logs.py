"""Loggers for the Slack adapter that never carry request bodies, signatures or tokens.

bolt logs the whole body and signature of a rejected request at INFO, and several warnings
quote request bodies; slack_sdk logs request and response bodies at DEBUG. Our bolt and
slack_sdk loggers get a filter that cuts such details out, and a level that keeps slack_sdk's
DEBUG dumps off even when Threadline runs at DEBUG.
"""

from __future__ import annotations

import logging
import re

_TOKEN = re.compile(r"\bx(?:ox[abpsre]|app)-[A-Za-z0-9-]+")
_SIGNATURE = re.compile(r"v0=[0-9a-f]{16,}")
# "... (signature: v0=..., timestamp: 1, body: token=...)" and "request (...{body}...)".
_DETAILS = re.compile(r"\s*[(\[]?\b(signature|body|headers|json|data|params):.*$", re.DOTALL)
_QUOTED_BODY = re.compile(r"\{['\"](token|type|event|payload|command)['\"].*\}", re.DOTALL)

BOLT_LOGGER = "threadline.slack.bolt"
WEB_LOGGER = "threadline.slack.web"


def redact(message: str) -> str:
    message = _DETAILS.sub(" (details withheld)", message)
    message = _QUOTED_BODY.sub("{...}", message)
    message = _SIGNATURE.sub("v0=[redacted]", message)
    return _TOKEN.sub("[token]", message)


class RedactFilter(logging.Filter):
    """Rewrites each record's message without bodies, signatures and tokens."""

    def filter(self, record: logging.LogRecord) -> bool:
        try:
            message = record.getMessage()
        except Exception:  # a malformed record: keep only its template
            message = str(record.msg)
        cleaned = redact(message)
        if cleaned != message:
            record.msg, record.args = cleaned, ()
        if record.exc_info and record.exc_info[1] is not None:
            # Exception texts from slack_sdk quote responses; keep the type and a redacted line.
            exc = record.exc_info[1]
            record.msg = f"{record.msg} ({type(exc).__name__}: {redact(str(exc))[:300]})"
            record.exc_info = None
            record.exc_text = None
        return True


def quiet_logger(name: str) -> logging.Logger:
    """A logger with the redaction filter, never below INFO (bolt copies both to the loggers
    it creates from its base logger)."""
    logger = logging.getLogger(name)
    if not any(isinstance(f, RedactFilter) for f in logger.filters):
        logger.addFilter(RedactFilter())
    if logger.level < logging.INFO:
        logger.setLevel(logging.INFO)
    return logger
