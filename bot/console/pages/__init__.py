"""The console's pages, one module each. A module offers `NAV` (its entry in the navigation,
or None) and `routes(console)`; `bot.console.app` mounts them in the order of `PAGES`."""

from __future__ import annotations

from types import ModuleType

from bot.console.pages import (
    audit,
    conversations,
    digests,
    mcp,
    overview,
    policy,
    repositories,
    signin,
    skills,
    usage,
)

PAGES: tuple[ModuleType, ...] = (
    signin,
    overview,
    usage,
    audit,
    conversations,
    repositories,
    digests,
    mcp,
    skills,
    policy,
)
