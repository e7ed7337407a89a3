"""What a running tool receives besides its arguments. Never shown to the model."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime
from typing import TYPE_CHECKING

from core.session import ToolSession

if TYPE_CHECKING:
    from core.store.engine import Database


@dataclass(frozen=True, slots=True)
class ToolContext:
    session: ToolSession
    db: Database

    @staticmethod
    def now() -> datetime:
        return datetime.now(UTC)
