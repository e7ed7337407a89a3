"""The chat platforms Threadline ships with, registered by name (`core.platforms`): core lists
none of them. A process knows all of them whichever it serves, since any process may enqueue
a message for another platform's drainer (a digest run in `serve` for a Discord channel)."""

from __future__ import annotations

from adapters.console.translate import PLATFORM as CONSOLE
from adapters.discord.translate import PLATFORM as DISCORD
from adapters.slack.translate import PLATFORM as SLACK
from core.platforms import Platforms

BUILT_IN = (SLACK, DISCORD, CONSOLE)


def builtin_platforms() -> Platforms:
    return Platforms(BUILT_IN)
