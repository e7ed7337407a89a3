"""MkDocs hooks: the configuration reference is generated from config/settings.py at build time.

Each setting's environment name, default and description come from the Settings model's fields,
so a setting cannot be added without its documentation (tests/docs/test_docs.py checks that every
field has a description and that the page names every environment variable). Nothing here
touches the network.
"""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any

from pydantic import AliasChoices, BaseModel
from pydantic.fields import FieldInfo

from config.settings import CONFIG_DIR, ProviderSettings, Settings
from core.mcp.config import McpServerSettings

MARKER = "<!-- settings-reference -->"
# A warning under the `mkdocs` logger fails `mkdocs build --strict`.
log = logging.getLogger("mkdocs.hooks.settings_reference")
REPO_ROOT = CONFIG_DIR.parent

# The raw default of these fields is None (or a number in bytes) while the value used is decided
# elsewhere; the reference shows what a reader would see.
SHOWN_DEFAULTS = {
    "database_url": "SQLite in the data dir",
    "tts_voice": "per engine",
    "slack_api_url": "`https://slack.com/api/`",
    "discord_api_url": "Discord's API",
    "discord_upload_limit": "`10MB`",
}

# Variables read outside the Settings model: the settings file's own name (read before the
# settings), and the port the CLI passes to the HTTP server.
EXTRA_VARIABLES = {
    "THREADLINE_CONFIG": (
        "`config/threadline.toml`",
        "The settings file (TOML; keys are the names on this page in lower case)",
    ),
    "PORT": (
        "`8080`",
        "Port for `threadline serve` (and Slack's HTTP mode under `threadline run`)",
    ),
}

# core/mcp/config.py declares the `[mcp.NAME]` keys without descriptions; they are documented
# here, and the docs test fails when a key is added there without an entry here.
MCP_KEYS = {
    "command": "stdio: the command Threadline starts as a subprocess",
    "args": "Its arguments (a list of strings)",
    "env": "NAMES of Threadline's environment variables the server receives (nothing else, "
    "apart from the SDK's safe basics such as `HOME`, `PATH`, `USER`)",
    "cwd": "Working directory of a stdio server",
    "url": "Streamable HTTP: the server's URL (instead of `command`)",
    "headers": "HTTP headers, each mapped to the NAME of the environment variable that holds "
    "its value (the file holds no secrets)",
    "timeout": "Seconds per call (and per listing)",
    "connect_timeout": "Seconds to start (or reach) the server, shake hands and list its tools",
    "destructive_tools": "Tools that always ask for confirmation before they run",
    "enabled": "`false` keeps the server configured but unused",
}

# Sections of the reference, by the environment name's prefix; the first match wins.
GROUPS: list[tuple[str, tuple[str, ...]]] = [
    ("Model (LLM)", ("LLM_",)),
    ("Code search", ("EMBEDDINGS_", "QDRANT_", "THREADLINE_DEMO_INDEX")),
    ("Voice replies", ("TTS_",)),
    ("MCP", ("MCP", "THREADLINE_MCP_")),
    ("Slack", ("SLACK_",)),
    ("Discord", ("DISCORD_",)),
    ("General", ("",)),
]


def env_name(name: str, field: FieldInfo) -> str:
    """The environment variable a field is read from: its first alias, else its name."""
    alias = field.validation_alias
    if isinstance(alias, AliasChoices) and isinstance(alias.choices[0], str):
        return alias.choices[0]
    if isinstance(alias, str):
        return alias
    return name.upper()


def shown_default(name: str, field: FieldInfo) -> str:
    if name in SHOWN_DEFAULTS:
        return SHOWN_DEFAULTS[name]
    value: Any = field.get_default(call_default_factory=True)
    if value is None or value in ("", (), {}, []):
        return "—"
    if isinstance(value, bool):
        return f"`{str(value).lower()}`"
    if isinstance(value, Path):
        path = value.resolve() if value.is_absolute() else value
        if path.is_absolute() and path.is_relative_to(REPO_ROOT):
            return f"`{path.relative_to(REPO_ROOT)}`"
        return f"`./{path}`"
    if isinstance(value, float) and value.is_integer():
        return f"`{int(value)}`"
    return f"`{value}`"


def _cell(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")


def _table(rows: list[tuple[str, str, str]], head: str) -> list[str]:
    out = [f"| {head} | Default | Meaning |", "|---|---|---|"]
    out += [f"| `{n}` | {_cell(d)} | {_cell(m)} |" for n, d, m in rows]
    return out


def _group(env: str) -> str:
    for title, prefixes in GROUPS:
        if env.startswith(prefixes):
            return title
    return GROUPS[-1][0]


def missing_descriptions() -> list[str]:
    """Settings, provider keys and MCP keys that have nothing to say about themselves."""
    missing = [f"Settings.{n}" for n, f in Settings.model_fields.items() if not f.description]
    missing += [
        f"ProviderSettings.{n}"
        for n, f in ProviderSettings.model_fields.items()
        if not f.description
    ]
    missing += [
        f"McpServerSettings.{n}"
        for n, f in McpServerSettings.model_fields.items()
        if not (f.description or MCP_KEYS.get(n))
    ]
    return missing


def _sub_table(model: type[BaseModel], fallback: dict[str, str]) -> list[str]:
    rows = [
        (n, shown_default(n, f), f.description or fallback.get(n, ""))
        for n, f in model.model_fields.items()
    ]
    return _table(rows, "Key")


def settings_reference() -> str:
    """The Markdown reference of every setting, grouped, in the model's order."""
    grouped: dict[str, list[tuple[str, str, str]]] = {title: [] for title, _ in GROUPS}
    for env, (default, meaning) in EXTRA_VARIABLES.items():
        grouped["General"].append((env, default, meaning))
    for name, field in Settings.model_fields.items():
        if name in ("providers", "mcp"):  # TOML tables, below
            continue
        env = env_name(name, field)
        grouped[_group(env)].append((env, shown_default(name, field), field.description or ""))
    out: list[str] = []
    for title, _ in GROUPS[-1:] + GROUPS[:-1]:
        if not grouped[title]:
            continue
        out += [f"### {title}", "", *_table(grouped[title], "Variable"), ""]
    providers = Settings.model_fields["providers"].description or ""
    mcp = Settings.model_fields["mcp"].description or ""
    out += [
        "### `[providers.NAME]` tables",
        "",
        f"{providers}. Every key is optional; an unset one takes the `LLM_*` setting.",
        "",
        *_sub_table(ProviderSettings, {}),
        "",
        "### `[mcp.NAME]` tables",
        "",
        f"{mcp}. Set either `command` or `url`; see [MCP servers](mcp.md).",
        "",
        *_sub_table(McpServerSettings, MCP_KEYS),
        "",
    ]
    return "\n".join(out)


def on_page_markdown(markdown: str, page: Any, config: Any, files: Any) -> str:
    if MARKER not in markdown:
        return markdown
    for name in missing_descriptions():
        log.warning("%s has no description: add description=... to its Field", name)
    return markdown.replace(MARKER, settings_reference())
