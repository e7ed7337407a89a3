"""What people see while a tool runs: a short line fit to show in a thread.

The model chose the arguments, so nothing of them is shown raw: a tool's `activity` template
("Searching code for `{pattern}`") is filled from its *validated* arguments, each value made
one line, without backticks, cut short and secret-redacted as code results are. A call that
does not validate, a tool without a template, or a name no tool has (a model's invention could
say anything) gets a plain line.
"""

from __future__ import annotations

from core.code.redact import redact
from core.tools.dispatcher import ProposedCall
from core.tools.registry import ToolRegistry

MAX_VALUE_CHARS = 40
MAX_LINE_CHARS = 100
UNKNOWN_TOOL = "Trying a tool that does not exist"


def shown(value: object, limit: int = MAX_VALUE_CHARS) -> str:
    """An argument value made safe to show inside backticks."""
    text = " ".join(redact(str(value)).split()).replace("`", "'")
    return text if len(text) <= limit else text[: limit - 1] + "…"


def describe(registry: ToolRegistry, call: ProposedCall) -> str:
    tool = registry.get(call.name)
    if tool is None:
        return UNKNOWN_TOOL
    plain = f"Running `{shown(tool.shown_name, 64)}`"
    if tool.activity is None or tool.parameters is not None:
        return plain
    try:
        args = tool.args.model_validate_json(call.arguments)
        values = {k: shown(v) for k, v in args.model_dump().items()}
        line = " ".join(tool.activity.format_map(values).split())
    except Exception:  # invalid arguments are the dispatcher's to report, not this line's
        return plain
    return line if len(line) <= MAX_LINE_CHARS else line[: MAX_LINE_CHARS - 1] + "…"
