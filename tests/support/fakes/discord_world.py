"""Discord API v10 objects as the fake Discord serves them: pure builders of the JSON that
discord.py parses (every field its models read without a default is present)."""

from __future__ import annotations

import itertools
import re
import time
from collections.abc import Callable, Iterable
from typing import Any

from adapters.discord.payloads import Channel, Member, Message, Role, User

DISCORD_EPOCH_MS = 1_420_070_400_000
TIMESTAMP = "2025-01-01T00:00:00.000000+00:00"
ALL_PERMISSIONS = "1071698660929"
TEXT, DM, PUBLIC_THREAD = 0, 1, 11


def snowflake_factory() -> Callable[[], str]:
    """Ids like Discord's: milliseconds since Discord's epoch, shifted, plus a counter (so
    discord.py's snowflake arithmetic — message age, ordering — works on them)."""
    counter = itertools.count()
    last = 0

    def make() -> str:
        nonlocal last
        ms = int(time.time() * 1000) - DISCORD_EPOCH_MS  # wall clock: discord.py ages ids by it
        # Always increasing, as Discord's are: a wrapped counter within one millisecond (many
        # messages seeded at once) moves on to the next id instead.
        last = max((ms << 22) | (next(counter) % 4096), last + 1)
        return str(last)

    return make


def shard_of(snowflake: str, shard_count: int) -> int:
    """Discord's sharding rule: a guild's events go to shard (guild_id >> 22) % shard_count."""
    return (int(snowflake) >> 22) % shard_count


def snowflake_on_shard(snowflake: str, shard: int, shard_count: int) -> str:
    """The same id moved forward by the fewest milliseconds that put it on `shard`."""
    value = int(snowflake)
    ms = (value >> 22) + (shard - shard_of(snowflake, shard_count)) % shard_count
    return str((ms << 22) | (value & 0x3FFFFF))


def user(user_id: str, name: str, *, bot: bool = False) -> User:
    out: User = {
        "id": user_id,
        "username": name,
        "discriminator": "0",
        "global_name": name.title(),
        "avatar": None,
    }
    if bot:
        out["bot"] = True
    return out


def role(role_id: str, name: str, *, position: int = 1, managed: bool = False) -> Role:
    return {
        "id": role_id,
        "name": name,
        "color": 0,
        "hoist": False,
        "position": position,
        "permissions": ALL_PERMISSIONS,
        "managed": managed,
        "mentionable": True,
        "flags": 0,
    }


def member(of: User, roles: list[str]) -> Member:
    return {
        "user": of,
        "nick": None,
        "roles": roles,
        "joined_at": TIMESTAMP,
        "deaf": False,
        "mute": False,
        "flags": 0,
        "pending": False,
    }


def text_channel(channel_id: str, guild_id: str, name: str, position: int) -> Channel:
    return {
        "id": channel_id,
        "type": TEXT,
        "guild_id": guild_id,
        "name": name,
        "position": position,
        "parent_id": None,
        "permission_overwrites": [],
        "nsfw": False,
        "topic": None,
        "last_message_id": None,
        "rate_limit_per_user": 0,
        "flags": 0,
    }


def thread(thread_id: str, guild_id: str, parent: str, name: str, owner: str) -> Channel:
    return {
        "id": thread_id,
        "type": PUBLIC_THREAD,
        "guild_id": guild_id,
        "parent_id": parent,
        "owner_id": owner,
        "name": name,
        "thread_metadata": {
            "archived": False,
            "auto_archive_duration": 1440,
            "archive_timestamp": TIMESTAMP,
            "locked": False,
        },
        "message_count": 0,
        "member_count": 1,
        "rate_limit_per_user": 0,
        "flags": 0,
        "last_message_id": None,
    }


def archived(channel: Channel) -> bool:
    metadata = channel.get("thread_metadata")
    return bool(metadata and metadata["archived"])


def message(
    message_id: str, channel_id: str, author: User, content: str, known: dict[str, User]
) -> Message:
    """A message; `mentions` are the known users its content mentions, as Discord resolves."""
    mentioned = [known[uid] for uid in re.findall(r"<@!?(\d+)>", content) if uid in known]
    return {
        "id": message_id,
        "channel_id": channel_id,
        "author": author,
        "content": content,
        "timestamp": TIMESTAMP,
        "edited_timestamp": None,
        "tts": False,
        "mention_everyone": False,
        "mentions": mentioned,
        "mention_roles": re.findall(r"<@&(\d+)>", content),
        "attachments": [],
        "embeds": [],
        "pinned": False,
        "type": 0,
        "flags": 0,
    }


def guild(
    guild_id: str,
    owner_id: str,
    *,
    roles: Iterable[Role],
    members: list[Member],
    member_count: int,
    channels: Iterable[Channel],
) -> dict[str, Any]:
    """GUILD_CREATE: the guild with its roles, text channels and active threads."""
    listed = list(channels)
    return {
        "id": guild_id,
        "name": "Fake Guild",
        "icon": None,
        "splash": None,
        "discovery_splash": None,
        "owner_id": owner_id,
        "afk_channel_id": None,
        "afk_timeout": 300,
        "verification_level": 0,
        "default_message_notifications": 0,
        "explicit_content_filter": 0,
        "roles": list(roles),
        "emojis": [],
        "stickers": [],
        "features": [],
        "mfa_level": 0,
        "application_id": None,
        "system_channel_id": None,
        "system_channel_flags": 0,
        "rules_channel_id": None,
        "vanity_url_code": None,
        "description": None,
        "banner": None,
        "premium_tier": 0,
        "premium_subscription_count": 0,
        "preferred_locale": "en-US",
        "public_updates_channel_id": None,
        "nsfw_level": 0,
        "premium_progress_bar_enabled": False,
        "joined_at": TIMESTAMP,
        "large": False,
        "unavailable": False,
        "member_count": member_count,
        "members": members,
        "channels": [c for c in listed if c["type"] == TEXT],
        "threads": [c for c in listed if c["type"] == PUBLIC_THREAD and not archived(c)],
        "voice_states": [],
        "presences": [],
        "stage_instances": [],
        "guild_scheduled_events": [],
        "soundboard_sounds": [],
    }
