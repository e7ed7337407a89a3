"""What `/digest` and the digests it posts say to people (the digest feature's user-facing
strings)."""

from __future__ import annotations

from collections.abc import Sequence


def _names(permissions: Sequence[str]) -> str:
    return ", ".join(f"`{p}`" for p in permissions)


def kind_needs(kind: str, permissions: Sequence[str]) -> str:
    what = "permission" if len(permissions) == 1 else "permissions"
    return (
        f"A `{kind}` digest needs the {_names(permissions)} {what}, which you do not have in "
        "this channel, so it cannot be added here."
    )


def owner_may_not_read(permissions: Sequence[str]) -> str:
    return (
        "This digest was not built: the person who added it may no longer read what it lists "
        f"here ({_names(permissions)}). Someone who may can add it again; remove this one with "
        "`/digest remove`."
    )


def too_long(what: str, size: int, limit: int) -> str:
    return f"{what} is {size:,} characters long; at most {limit:,} fit."


def field_too_long(field: str, size: int, limit: int) -> str:
    return (
        f"This cannot be stored: its `{field}` is {size:,} characters long; at most {limit:,} fit."
    )
