"""Which detectors read which file: every token format everywhere, and the keyword rules of
the file's type (detect-secrets' own list; shell scripts, `.env` files, Dockerfiles and the
like count as configuration, so an unquoted `export DB_PASSWORD=...` is caught too). Logs and
text dumps (`app.log`, `out.txt`, and any file read `log=True`, as attached files are) also
have their secret-named `key=value` / `key: value` pairs redacted, quoted or not."""

from __future__ import annotations

import re
from collections.abc import Iterator
from functools import cache
from pathlib import PurePosixPath

from core.code.redact_detectors import (
    SECRET_NAMES,
    Rule,
    entropy_finder,
    keyword_finder,
    log_pair,
    token_rules,
)

# Files whose `KEY=value` lines are configuration (values unquoted): detect-secrets' config
# rules apply to them in addition to its own list (.ini, .cfg, .yaml, .toml, .properties).
_SHELL_SUFFIXES = frozenset({".sh", ".bash", ".zsh", ".ksh", ".env", ".envrc", ".service"})
_SHELL_NAMES = frozenset({"dockerfile", "containerfile", "makefile", "procfile", ".envrc"})
# Logs and plain-text dumps: `key=value` and `key: value` pairs of secret-named keys are read
# there too, quoted or not (`log_pair`); never in code, where `name = value` is any assignment.
_LOG_SUFFIXES = frozenset({".log", ".txt", ".out", ".err", ".trace", ".stdout", ".stderr"})
LOG_RULE = Rule(SECRET_NAMES, True, (log_pair,))


@cache
def named_rule(suffix: str, shell: bool) -> Rule:
    """High-entropy strings and the keyword detector, on lines that name a secret; the keyword
    rules are those of the file's type."""
    from detect_secrets.plugins.keyword import (
        CONFIG_DENYLIST_REGEX_TO_GROUP,
        DENYLIST,
        QUOTES_REQUIRED_DENYLIST_REGEX_TO_GROUP,
        REGEX_BY_FILETYPE,
    )
    from detect_secrets.util.filetype import determine_file_type

    if shell:
        groups = CONFIG_DENYLIST_REGEX_TO_GROUP
    else:
        kind = determine_file_type(f"x{suffix}")
        groups = REGEX_BY_FILETYPE.get(kind, QUOTES_REQUIRED_DENYLIST_REGEX_TO_GROUP)
    keyword = keyword_finder(groups)
    entropy = entropy_finder()
    # The keyword detector is the costly one: only where one of its own words is on the line.
    denylist = re.compile("|".join(DENYLIST))

    def find(line: str) -> Iterator[str]:
        yield from entropy(line)
        if denylist.search(line.lower()):
            yield from keyword(line)

    return Rule(SECRET_NAMES, True, (find,))


def is_log_name(name: str) -> bool:
    """A log or text dump by its name: `app.log`, `app.log.1`, `out.txt`, `build.stderr`."""
    parts = PurePosixPath(name.lower()).suffixes
    while parts and parts[-1].lstrip(".").isdigit():  # rotated logs: app.log.1
        parts.pop()
    return bool(parts) and parts[-1] in _LOG_SUFFIXES


def rules_for(path: str, *, log: bool = False) -> tuple[Rule, ...]:
    """The rules for a file at `path`; `log` reads it as a log whatever its name says."""
    name = PurePosixPath(path).name.lower()
    suffix = PurePosixPath(name).suffix
    shell = suffix in _SHELL_SUFFIXES or name in _SHELL_NAMES or name.startswith(".env")
    if log or is_log_name(name):
        return (*token_rules(), named_rule(suffix, shell), LOG_RULE)
    return (*token_rules(), named_rule(suffix, shell))
