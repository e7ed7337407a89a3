"""The error code of a failed Slack Web API call, for log lines and messages."""

from __future__ import annotations


def error_code(exc: Exception) -> str:
    """`channel_not_found`, `ratelimited`...: what Slack answered, else the exception's type
    (no response: the call never reached Slack). Never the response body, which may echo
    what was sent."""
    response = getattr(exc, "response", None)
    try:
        return str(response.get("error") or "unknown_error") if response else type(exc).__name__
    except Exception:
        return "unknown_error"
