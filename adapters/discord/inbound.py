"""What the gateway session verified, read off discord.py's models into `translate`'s plain
types (`Origin`, `Names`). `translate` itself stays free of discord.py; this is its other half.
"""

from __future__ import annotations

from typing import Any

from adapters.discord.lib import discord
from adapters.discord.translate import Names, Origin, RoleRef


def describe(exc: Exception) -> str:
    if isinstance(exc, discord.HTTPException):
        return f"HTTP {exc.status}, code {exc.code}"
    return type(exc).__name__


def mentions_me(message: discord.Message, me: discord.ClientUser) -> bool:
    """Threadline is mentioned: as a user (a reply that pings it counts), or by its own
    managed role, which Discord's mention picker offers too."""
    if any(user.id == me.id for user in message.mentions):
        return True
    own_role = message.guild.self_role if message.guild is not None else None
    return own_role is not None and own_role in message.role_mentions


def origin_of(
    author: discord.User | discord.Member,
    guild: discord.Guild | None,
    channel: Any,
    *,
    channel_id: int | None = None,
) -> Origin:
    """What the gateway session verified: the guild, where it was said (a thread's parent
    channel too), who said it and the roles they hold (ids and names)."""
    roles: tuple[RoleRef, ...] = ()
    if isinstance(author, discord.Member):
        roles = tuple(RoleRef(r.id, r.name) for r in author.roles if not r.is_default())
    parent = channel.parent_id if isinstance(channel, discord.Thread) else None
    return Origin(
        guild_id=guild.id if guild is not None else None,
        channel_id=channel.id if channel is not None else (channel_id or author.id),
        user_id=author.id,
        parent_id=parent,
        roles=roles,
    )


def names_of(message: discord.Message) -> Names:
    return Names(
        users={u.id: u.display_name for u in message.mentions},
        roles={r.id: r.name for r in message.role_mentions},
        channels={c.id: getattr(c, "name", str(c.id)) for c in message.channel_mentions},
    )


__all__ = ["describe", "mentions_me", "names_of", "origin_of"]
