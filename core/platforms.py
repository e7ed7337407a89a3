"""The registry of chat platform names. Core never lists platforms: `bot/` registers the
built-in ones (Slack, Discord, the console) and a plugin registers its own the same way; what
an adapter must do is `core.adapter.ChatAdapter`."""

from __future__ import annotations

import re
from collections.abc import Iterable

# The shape of a platform name: it labels stored rows (32 characters), metrics and log lines.
NAME = re.compile(r"[a-z][a-z0-9_-]{0,31}")


def check_name(name: str) -> str:
    if not NAME.fullmatch(name):
        raise ValueError(
            "a platform name is 1 to 32 lowercase letters, digits, '-' or '_', "
            f"starting with a letter: {name!r}"
        )
    return name


class Platforms:
    """The platform names this process knows. With it, the outbox refuses messages for other
    platforms, and metrics count them as `other`. Registering a name twice is harmless."""

    def __init__(self, names: Iterable[str] = ()) -> None:
        self._names: set[str] = set()
        for name in names:
            self.register(name)

    def register(self, name: str) -> None:
        self._names.add(check_name(name))

    def known(self, name: str) -> bool:
        return name in self._names

    def names(self) -> tuple[str, ...]:
        return tuple(sorted(self._names))


__all__ = ["NAME", "Platforms", "check_name"]
