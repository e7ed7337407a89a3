"""Every sentence Threadline says to users about itself, in one place."""

from __future__ import annotations

from datetime import datetime

INTERNAL_ERROR = "Sorry, something went wrong on my side while answering. It has been logged."
EMPTY_MESSAGE_HINT = "You sent an empty message. Here is what I can do:"
NO_MODEL = (
    "No language model is configured, so I cannot answer free-text questions yet. "
    "Commands still work (try /help). An operator can set LLM_BASE_URL and LLM_MODEL "
    "(see the README) to enable answers."
)
MODEL_STEP_LIMIT = "I stopped after {n} model steps (the per-request limit) without a final answer."
TOOL_BUDGET_NOTICE = (
    "I reached the limit of {n} tool calls for one request; some lookups were skipped."
)


def permission_denied(permission: str) -> str:
    return f"You don't have the `{permission}` permission here, so I can't do that."


def message_too_long(size: int, limit: int) -> str:
    return (
        f"Your message is {size:,} characters long; I accept at most {limit:,}. "
        "Please shorten it or attach the content as a file."
    )


def unknown_command(name: str) -> str:
    return f"Unknown command `/{name}`. Try /help."


def budget_exhausted(
    label: str, used: int, limit: int, unit: str, resets_at: datetime, now: datetime
) -> str:
    return (
        f"Sorry, {label} is used up ({used:,} of {limit:,} {unit}). "
        f"It resets at {resets_at:%H:%M} UTC ({until(resets_at, now)})."
    )


def budget_warning(label: str, used: int, limit: int) -> str:
    pct = int(100 * used / limit) if limit else 100
    return f"Heads-up: {pct}% of {label} is used ({used:,} of {limit:,})."


def llm_failure(kind: str) -> str:
    reasons = {
        "timeout": "the language model did not answer in time",
        "unreachable": "the language model endpoint cannot be reached",
        "rate_limited": "the language model provider is rate-limiting us",
        "auth": "the language model provider refused our credentials",
        "bad_request": "the language model provider rejected the request",
        "server": "the language model provider had an error",
    }
    reason = reasons.get(kind, "the model call failed")
    return f"Sorry, I couldn't answer: {reason}. Please try again later."


def until(then: datetime, now: datetime) -> str:
    minutes = max(0, int((then - now).total_seconds() // 60))
    hours, minutes = divmod(minutes, 60)
    return f"in {hours} h {minutes} min" if hours else f"in {minutes} min"
