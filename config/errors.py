"""Settings errors as people read them: one line per problem, naming the variable (or the
settings file's key) to fix, never the offending value."""

from __future__ import annotations

import difflib
from pathlib import Path

from pydantic import ValidationError

from config.providers import ProviderSettings
from core.errors import ConfigError
from core.mcp.config import McpServerSettings
from core.policy import toml_kind


class SettingsError(ConfigError, ValueError):
    """Settings cannot be used; `str()` is a readable multi-line message without secrets."""


_ENV_NAMES = {
    "data_dir": "THREADLINE_DATA_DIR",
    "policy_file": "THREADLINE_POLICY",
    "max_message_chars": "THREADLINE_MAX_MESSAGE_CHARS",
    "tool_max_args_chars": "THREADLINE_TOOL_MAX_ARGS_CHARS",
    "tool_max_result_chars": "THREADLINE_TOOL_MAX_RESULT_CHARS",
    "request_deadline": "THREADLINE_REQUEST_DEADLINE",
    "max_concurrent_requests": "THREADLINE_MAX_CONCURRENT_REQUESTS",
    "mcp_confirm_timeout": "THREADLINE_MCP_CONFIRM_TIMEOUT",
    "shutdown_grace": "THREADLINE_SHUTDOWN_GRACE",
    "persona": "THREADLINE_PERSONA",
    "skills_dirs": "THREADLINE_SKILLS_DIRS",
    "skills_index_share": "THREADLINE_SKILLS_INDEX_SHARE",
    "thread_context_share": "THREADLINE_THREAD_CONTEXT_SHARE",
    "skills_examples": "THREADLINE_SKILLS_EXAMPLES",
    "log_level": "THREADLINE_LOG_LEVEL",
    "log_format": "LOG_FORMAT",
}


def describe_error(exc: ValidationError, settings_file: Path) -> str:
    """One line per problem, naming the variable; never the offending value."""
    lines = ["Threadline cannot start: the configuration has problems."]
    for err in exc.errors():
        field = ".".join(str(p) for p in err["loc"])
        head = str(err["loc"][0]) if err["loc"] else ""
        name = _ENV_NAMES.get(head, head.upper()) if head else ""
        msg = str(err["msg"]).removeprefix("Value error, ")
        if err["type"].endswith("_type"):  # a typed (TOML) value of the wrong type
            msg += f", not {toml_kind(err['input'])}"
        if field and head == "providers":
            name = f"[providers] {field.removeprefix('providers.')} in the settings file"
            if err["type"] == "extra_forbidden":
                close = difflib.get_close_matches(
                    str(err["loc"][-1]), sorted(ProviderSettings.model_fields), n=1
                )
                msg = "unknown key" + (f" (did you mean {close[0]}?)" if close else "")
        if field and head == "mcp":
            name = f"[mcp] {field.removeprefix('mcp.')} in the settings file"
            if err["type"] == "extra_forbidden":
                close = difflib.get_close_matches(
                    str(err["loc"][-1]), sorted(McpServerSettings.model_fields), n=1
                )
                msg = "unknown key" + (f" (did you mean {close[0]}?)" if close else "")
        lines.append(f"  - {name}: {msg}" if name else f"  - {msg}")
    lines.append(f"(settings file: {settings_file})")
    return "\n".join(lines)
