"""Every sentence Threadline says to users about itself, in one place."""

from __future__ import annotations

from datetime import datetime

from core.failures import LLMErrorKind

INTERNAL_ERROR = "Sorry, something went wrong on my side while answering. It has been logged."
ANSWER_CUT = (
    "Threadline was restarting and had to stop before finishing this answer. Please ask again."
)
ANSWER_CUT_UNFINISHED = (
    "The answer above stops where it stops: Threadline stopped before finishing it. "
    "Please ask again."
)
VOICE_NOT_SET_UP = "Voice replies are not set up here, so the answer is text only."
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
TOOL_CALLS_DROPPED = (
    "[Threadline: {extra} more tool call(s) in this response were not run: the limit is {n} "
    "tool calls per request.]"
)
NOT_RUN_DEADLINE = "[not run: the request ran out of time]"


def permission_denied(permission: str) -> str:
    return f"You don't have the `{permission}` permission here, so I can't do that."


def message_too_long(size: int, limit: int) -> str:
    return (
        f"Your message is {size:,} characters long; I accept at most {limit:,}. "
        "Please shorten it or attach the content as a file."
    )


def too_long(what: str, length: int, limit: int) -> str:
    """A value longer than the column it would be stored in (`core.store.limits`)."""
    return f"That is too long: {what} may have at most {limit:,} characters, not {length:,}."


def id_too_long(part: str, length: int, limit: int) -> str:
    return (
        f"Sorry, I cannot answer here: the {part} id is {length:,} characters long, and I can "
        f"keep at most {limit:,}. Use a shorter {part} name."
    )


def unknown_command(name: str) -> str:
    return f"Unknown command `/{name}`. Try /help."


def budget_exhausted(
    label: str,
    needed: int,
    remaining: int,
    limit: int,
    unit: str,
    resets_at: datetime,
    now: datetime,
) -> str:
    """The budget cannot cover this request: what it needed and what is left, since "used up"
    next to a count below the limit reads as a bug."""
    return (
        f"Sorry, {label} has not enough left for this request: it needs about {needed:,} "
        f"{unit}, and {remaining:,} of {limit:,} are left. "
        f"It resets at {resets_at:%H:%M} UTC ({until(resets_at, now)})."
    )


def request_deadline(seconds: float, tools_run: int) -> str:
    done = (
        f" I had run {tools_run} tool call(s); they are kept in this thread." if tools_run else ""
    )
    return (
        f"Sorry, I ran out of time: a request may take at most {seconds:.0f} s, and the "
        f"language model or a tool was too slow.{done} Ask again to continue."
    )


def command_deadline(seconds: float, command: str | None) -> str:
    what = f"`/{command}`" if command else "this request"
    return (
        f"Sorry, I ran out of time: a request may take at most {seconds:g} s, and {what} took "
        "longer, so it was stopped and nothing was posted. Please try again later."
    )


VOICE_OUT_OF_TIME = (
    "No audio this time: the request ran out of time before the recording was ready."
)


def budget_warning(label: str, used: int, limit: int) -> str:
    pct = int(100 * used / limit) if limit else 100
    return f"Heads-up: {pct}% of {label} is used ({used:,} of {limit:,})."


def llm_failure(kind: LLMErrorKind) -> str:
    reasons: dict[LLMErrorKind, str] = {
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


# -- long-term memory (/save, /memory) -------------------------------------------------------

SAVE_USAGE = (
    "Usage: `/save FACT` (for this channel), `/save --global FACT` (for the whole "
    "workspace/server), `/save --me FACT` (only for you)."
)
MEMORY_USAGE = "Usage: `/memory list`, `/memory search QUERY` or `/memory delete ID`."
MEMORY_EMPTY = (
    "There is nothing to save: write the fact after `/save`, e.g. `/save we deploy with Helm`."
)
MEMORY_SAVE_FAILED = (
    "Not saved: storing the fact failed on my side (it has been logged). Please try again later."
)
MEMORY_NONE_VISIBLE = "No memory items are visible here yet. Save one with `/save FACT`."
_MEMORY_AUDIENCE = {
    "channel": "visible in this channel",
    "global": "visible everywhere in this workspace/server",
    "user": "visible only to you",
}


def memory_saved(item_id: int, scope: str) -> str:
    return f"Saved as #{item_id} ({scope} scope, {_MEMORY_AUDIENCE.get(scope, scope)})."


def memory_known(item_id: int, scope: str) -> str:
    return (
        f"Already known as #{item_id} ({scope} scope): merged with the existing item, "
        "nothing new was stored."
    )


def memory_not_saved(reason: str) -> str:
    return f"Not saved. {reason}"


def memory_too_long(size: int, limit: int) -> str:
    return f"That fact is {size:,} characters long; a memory item holds at most {limit:,}."


def memory_unknown_scope(scope: str) -> str:
    return f"Unknown memory scope {scope!r}; use channel, global or user."


def memory_bad_option(option: str) -> str:
    return f"Unknown option `{option}`. {SAVE_USAGE}"


def memory_not_found(item_id: object) -> str:
    return f"No memory item #{item_id} here."


def memory_deleted(item_id: int, scope: str) -> str:
    return f"Deleted memory item #{item_id} ({scope} scope)."


def memory_no_match(query: str) -> str:
    return f"No memory item visible here matches “{query}”."


def progress_tool(name: str, step: int) -> str:
    return f"Working on it… running `{name}` (step {step})"


# -- chat adapters (Slack) --------------------------------------------------------------------

ANSWER_AS_FILE = "My answer was too long for a chat message, so here it is as a file."


def command_header(user_ref: str, command: str) -> str:
    """The line above a slash command's public answer, so the channel sees what was asked."""
    return f"{user_ref} used `{command}`"


# -- chat adapters (Discord) ------------------------------------------------------------------

DISCORD_COMMAND_DESCRIPTION = "Ask Threadline a question, or run one of its commands"
DISCORD_FILE_OPTION_DESCRIPTION = "A file to ask about (a log, a screenshot, a voice note)"
DISCORD_THREAD_NAME = "Threadline"  # a thread's name when the question gives none
DISCORD_POST_FAILED = (
    "Sorry, Discord refused my answer here, so I could not post it. It has been logged."
)
DISCORD_NO_ANSWER = "I have nothing to add to that."
DISCORD_SENT_PRIVATELY = "That answer is personal, so I sent it to you in a direct message."
DISCORD_CANNOT_DM = (
    "That answer is personal, and I can't send you a direct message (your privacy settings "
    "block it). Use `/threadline` instead: its personal answers are shown only to you."
)


def discord_file_too_large(filename: str, size: int, limit: int) -> str:
    return (
        f"I could not attach `{filename}`: it is {human_size(size)}, and files posted here "
        f"may be at most {human_size(limit)}."
    )


def human_size(size: int) -> str:
    """Bytes as Discord shows them (1 MB = 1,024 KB)."""
    if size < 1024:
        return f"{size} bytes"
    if size < 1024 * 1024:
        return f"{size / 1024:.1f} KB"
    return f"{size / (1024 * 1024):.1f} MB"


# -- files attached to a message (adapters raise FileFetchError with these) -------------------


def incoming_file_too_large(name: str, limit: int) -> str:
    return f"`{name}` is larger than the {human_size(limit)} I can read."


def incoming_file_too_slow(name: str, seconds: float) -> str:
    return f"`{name}` did not finish downloading within {seconds:g} seconds."


def incoming_file_not_from_platform(name: str, platform: str) -> str:
    return f"`{name}` is not from {platform}'s file host, so I did not download it."


def incoming_file_unreadable(name: str, reason: str) -> str:
    return f"`{name}` could not be downloaded ({reason})."


SKILLS_USAGE = "Usage: `/skills`, `/skills show NAME` or `/skills reload` (admins)."
SKILL_USAGE = "Usage: `/skill NAME [what you need]` (see `/skills` for the names)."
NO_SKILLS_HERE = "No skills are available in this channel."
SKILLS_HINT = "Run one with `/skill NAME [text]` (or `/NAME [text]`)."
SKILLS_HINT_MODEL = " I also use them on my own when a question calls for one."


def unknown_skill(name: str) -> str:
    return f"There is no skill `{name[:64]}` in this channel. `/skills` lists the ones there are."


def skill_default_request(name: str) -> str:
    return f"Follow the {name} skill."


def skill_without_model(name: str) -> str:
    return (
        f"No language model is configured, so I cannot run the `{name}` skill for you; "
        "here is the playbook itself:"
    )


FEEDBACK_OFF = "Ratings are not recorded here."
FEEDBACK_REASON_NOTED = "Thanks, your reason is noted with your 👎."


def feedback_thanks(value: str, previous: str | None) -> str:
    mark = "👍" if value == "up" else "👎"
    if previous == value:
        return f"You had already rated this answer {mark}."
    if previous is not None:
        return f"Changed your rating to {mark}. Thanks."
    if value == "down":
        return "Thanks for the 👎. The people who look after me will see it."
    return "Thanks for the 👍."
