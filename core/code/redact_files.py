"""Which detectors read which file: every token format everywhere, and the keyword rules of
the file's type (detect-secrets' own list; shell scripts, `.env` files, Dockerfiles and the
like count as configuration, so an unquoted `export DB_PASSWORD=...` is caught too)."""

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
    token_rules,
)

# Files whose `KEY=value` lines are configuration (values unquoted): detect-secrets' config
# rules apply to them in addition to its own list (.ini, .cfg, .yaml, .toml, .properties).
_SHELL_SUFFIXES = frozenset({".sh", ".bash", ".zsh", ".ksh", ".env", ".envrc", ".service"})
_SHELL_NAMES = frozenset({"dockerfile", "containerfile", "makefile", "procfile", ".envrc"})


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


def rules_for(path: str) -> tuple[Rule, ...]:
    name = PurePosixPath(path).name.lower()
    suffix = PurePosixPath(name).suffix
    shell = suffix in _SHELL_SUFFIXES or name in _SHELL_NAMES or name.startswith(".env")
    return (*token_rules(), named_rule(suffix, shell))
