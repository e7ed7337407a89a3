"""The `ChatAdapter` protocol: what a chat platform's adapter does for the process that
serves it. Adapters translate, core decides: core needs an adapter to connect, to post an
outbox message it is handed, to say when the answers it started have finished, and to stop.
Slack, Discord and the console implement it; so can a plugin's platform (register its name in
`core.platforms.Platforms`, then drain its outbox with `bot.delivery.delivering`)."""

from __future__ import annotations

from typing import Protocol, runtime_checkable

from core.outbox.types import OutboxItem


@runtime_checkable
class ChatAdapter(Protocol):
    @property
    def platform(self) -> str:
        """Its registered platform name (`Request.platform`, `OutboxMessage.platform`)."""
        ...

    async def start(self) -> object:
        """Connect and verify the credentials; once it returns, outbox messages can be posted.
        Raises, with a reason an operator can act on, when the platform cannot be served."""
        ...

    async def deliver_outbox(self, item: OutboxItem) -> str:
        """Post one outbox message; returns a reference to what was posted. Raises
        `core.outbox.DeliveryError` when the platform refuses it (`retry=False` when retrying
        cannot help); anything else it raises is retried."""
        ...

    async def idle(self) -> None:
        """Wait until the answers it started (and those started meanwhile) have finished."""
        ...

    async def stop(self, grace: float) -> int:
        """Take no new work, let answers in flight finish for up to `grace` seconds, then
        disconnect; returns how many answers were cut."""
        ...


__all__ = ["ChatAdapter"]
