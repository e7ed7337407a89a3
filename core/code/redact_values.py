"""What a found secret becomes (`REDACTED`), and the values that are not secrets: stand-ins
(`changeme`, `your-token-here`), values too short, or made of letters only (names, paths,
prose). The detectors (`redact_detectors`) drop what these say is not a secret."""

from __future__ import annotations

import re

REDACTED = "[redacted secret]"
MIN_SECRET_CHARS = 4

_PLACEHOLDER_WORDS = frozenset(
    {
        "changeit",
        "none",
        "null",
        "nil",
        "true",
        "false",
        "undefined",
        "todo",
        "fixme",
        "empty",
        "default",
        "string",
        "value",
        "admin",
        "root",
        "user",
        "username",
        "pass",
        "required",
        "optional",
    }
)
# A value holding one of these is a stand-in (`"my-secret"`, `"your-token-here"`, `"hf_..."`).
_PLACEHOLDER_PARTS = (
    "secret",
    "password",
    "passwd",
    "token",
    "api-key",
    "api_key",
    "apikey",
    "example",
    "sample",
    "placeholder",
    "changeme",
    "change_me",
    "change-me",
    "dummy",
    "fake",
    "mock",
    "your",
    "redacted",
    "xxxx",
    "****",
    "...",
    "<",
    "%s",
    "%(",
    "{{",
    "#{",
)
_ONE_CHAR = re.compile(r"(.)\1*")
# Only letters, maybe in several words: a name, a path or prose (`CustomPrivateKeySign`,
# `DB_PASSWORD`, `JSON Web Token`, `HARDWARE\System`, `warn`), not a credential. The price: a
# password made of letters alone (`tiger`) is not recognised; one with a digit or symbol is.
_WORDS = re.compile(r"[A-Za-z]+(?:[\s\-_./\\:,]+[A-Za-z]+)*[.!?:]?")
_INNER_SPACE = re.compile(r"\S\s+\S")


def placeholder(value: str) -> bool:
    low = value.lower()
    return (
        low in _PLACEHOLDER_WORDS
        or any(part in low for part in _PLACEHOLDER_PARTS)
        or _ONE_CHAR.fullmatch(value) is not None
    )


def not_a_value(value: str) -> bool:
    """For values assigned to secret-sounding names (not for token formats, which are
    recognisable on their own)."""
    return (
        len(value) < MIN_SECRET_CHARS
        or placeholder(value)
        or _WORDS.fullmatch(value) is not None
        or _INNER_SPACE.search(value) is not None
        or value.startswith("$")
        or (value[0], value[-1]) in (("{", "}"), ("<", ">"), ("[", "]"))
    )


def quoted_in(value: str, line: str) -> bool:
    return any(f"{q}{value}{q}" in line for q in "\"'`")
