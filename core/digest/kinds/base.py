"""What every digest kind shares: its context, its content and the registry."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from datetime import datetime
from typing import TYPE_CHECKING

from core.session import ToolSession

if TYPE_CHECKING:
    from core.code.repos import RepoStore
    from core.store.engine import Database
    from core.store.models import DigestSubscription


@dataclass(frozen=True, slots=True)
class DigestContext:
    """One period of one subscription, with the trusted session of its channel (built from the
    subscription's platform, tenant and channel and its creator: what the digest may read is
    what that channel may read)."""

    subscription: DigestSubscription
    session: ToolSession
    start: datetime  # exclusive
    end: datetime  # inclusive
    db: Database
    repos: RepoStore


@dataclass(frozen=True, slots=True)
class DigestContent:
    """A period's material. `lines` is the structured digest (Markdown list lines), used as is
    without a model; `material` is what a model summarizes (the same facts, plainer)."""

    lines: list[str]
    material: str
    empty: bool
    notes: list[str] = field(default_factory=list)  # said under the digest either way


Collect = Callable[[DigestContext], Awaitable[DigestContent]]


@dataclass(frozen=True, slots=True)
class Kind:
    name: str
    title: str
    summary: str  # one line for `/digest` help
    collect: Collect
    # What the owner must be allowed in the channel for the kind's data: checked when the
    # digest is added and again before every run (a policy may have changed since).
    permissions: tuple[str, ...] = ()
    needs_repo: bool = False  # `--repo` applies

    def missing(self, session: ToolSession) -> list[str]:
        """The permissions this kind needs that `session` lacks."""
        return [p for p in self.permissions if not session.allows(p)]


KINDS: dict[str, Kind] = {}


def register(kind: Kind) -> Kind:
    if kind.name in KINDS:
        raise ValueError(f"digest kind {kind.name!r} is registered twice")
    KINDS[kind.name] = kind
    return kind


def clip(text: str, limit: int) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 1].rsplit(" ", 1)[0] + "…"
