"""Parsing and checking of single setting values: URLs, secrets, id lists, sizes. Each
error names the setting and never echoes a secret."""

from __future__ import annotations

import re

from pydantic import AliasChoices, SecretStr

_WHITESPACE = re.compile(r"\s")

_SIZE = re.compile(r"^(\d+)\s*(b|kb|kib|mb|mib)?$")
_SIZE_UNITS = {"": 1, "b": 1, "kb": 1024, "kib": 1024, "mb": 1024 * 1024, "mib": 1024 * 1024}

# Discord's upload limit for servers without boosts (what Discord calls "10 MB" is 10 MiB).
DEFAULT_DISCORD_UPLOAD_LIMIT = 10 * 1024 * 1024


MAX_PROVIDER_CHARS = 64  # usage_records.provider
MAX_MODEL_CHARS = 128  # usage_records.model


def clean_url(value: object, name: str) -> str | None:
    if value is None:
        return None
    text = str(value).strip().rstrip("/")
    if not text:
        return None
    scheme, sep, rest = text.partition("://")
    if not sep or scheme.lower() not in ("http", "https") or not re.match(r"^[^\s/]+", rest):
        raise ValueError(f"{name} must be an http:// or https:// URL")
    return f"{scheme.lower()}://{rest}"  # schemes are case-insensitive; hosts stay as written


def clean_secret(value: object, name: str) -> str | None:
    if value is None:
        return None
    raw = value.get_secret_value() if isinstance(value, SecretStr) else str(value)
    text = raw.strip()
    if not text:
        return None
    if _WHITESPACE.search(text):
        raise ValueError(
            f"{name} has whitespace or a line break inside it (a bad paste?); "
            "the value is not shown"
        )
    # Tokens travel in HTTP headers, which carry only ASCII: a zero-width space or a typographic
    # dash from a paste would pass start-up and then fail every single request.
    if not (text.isascii() and text.isprintable()):
        raise ValueError(
            f"{name} has a character that is not printable ASCII (an invisible or typographic "
            "character from a bad paste?); the value is not shown"
        )
    return text


def parse_id_list(value: object, name: str) -> tuple[int, ...]:
    """`"1, 2"` (or a list from the TOML file) -> (1, 2)."""
    if value is None:
        return ()
    items = value.split(",") if isinstance(value, str) else value
    if not isinstance(items, list | tuple):
        raise ValueError(f"{name} must be a comma-separated list of numeric ids")
    ids: list[int] = []
    for item in items:
        text = str(item).strip()
        if not text:
            continue
        if not text.isdigit():
            raise ValueError(f"{name} must be a comma-separated list of numeric ids")
        ids.append(int(text))
    return tuple(ids)


def parse_size(value: object, name: str) -> int:
    """`10485760`, `"10MB"`, `"512 KiB"` -> bytes (KB and MB count in 1,024s, as Discord does)."""
    if isinstance(value, int) and not isinstance(value, bool):
        size = value
    else:
        m = _SIZE.match(str(value).strip().lower())
        if m is None:
            raise ValueError(f"{name} must be a size in bytes, or with a unit like 10MB or 512KB")
        size = int(m[1]) * _SIZE_UNITS[m[2] or ""]
    if size < 1:
        raise ValueError(f"{name} must be at least 1 byte")
    return size


def alias(env: str, key: str) -> AliasChoices:
    """A setting read from the environment as `env` and from the settings file as `key`."""
    return AliasChoices(env, key)
