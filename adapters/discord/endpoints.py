"""Where discord.py connects: the REST base URL and the gateway URL, both overridable.

discord.py keeps both as class attributes: `http.Route.BASE` (every REST call, including the
interaction webhooks) and `gateway.DiscordWebSocket.DEFAULT_GATEWAY` — the URL a plain
`Client` always dials first, and the one both client kinds fall back to after an invalid
session. With `DISCORD_API_URL` set (tests, proxies), the REST base is replaced before login
and the gateway URL is taken from *that* server's `GET /gateway/bot` before connecting, so no
connection ever leaves for discord.com. The overrides are process-wide (one Discord client
per process) and `restore()` puts the defaults back.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import TYPE_CHECKING

from adapters.discord.lib import discord

if TYPE_CHECKING:
    import yarl

API_VERSION = 10
_VERSIONED = re.compile(r"/api/v\d+$")


def api_base(url: str) -> str:
    """`https://proxy.example` -> `https://proxy.example/api/v10`; a URL that already ends in
    `/api/vN` is used as it is."""
    url = url.rstrip("/")
    return url if _VERSIONED.search(url) else f"{url}/api/v{API_VERSION}"


@dataclass
class Endpoints:
    """The URLs in force before an override, to put back."""

    rest: str
    gateway: yarl.URL

    @classmethod
    def current(cls) -> Endpoints:
        return cls(discord.http.Route.BASE, discord.gateway.DiscordWebSocket.DEFAULT_GATEWAY)

    def restore(self) -> None:
        discord.http.Route.BASE = self.rest
        discord.gateway.DiscordWebSocket.DEFAULT_GATEWAY = self.gateway


def use_rest_base(url: str) -> Endpoints:
    """Send every REST call to `url` from now on; returns what to restore."""
    saved = Endpoints.current()
    discord.http.Route.BASE = api_base(url)
    return saved


async def follow_gateway(http: discord.http.HTTPClient) -> str:
    """Ask the REST server (`GET /gateway/bot`) where its gateway is and dial that from now on,
    also after an invalid session. Raises `discord.GatewayNotFound` when it does not say."""
    import yarl

    _shards, url, _limits = await http.get_bot_gateway()
    discord.gateway.DiscordWebSocket.DEFAULT_GATEWAY = yarl.URL(url)
    return url
