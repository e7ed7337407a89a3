"""The console's conversations: a tenant's threads (newest activity first, keyset-paged) and one
thread's turns with what made each answer, read from what core already stores.

- `thread_messages`: the turns (a turn starts at a user message and holds what the model did
  after it); messages are kept after compaction, `thread_summaries` says which ones the model
  now sees only as a summary.
- `answers` and `answer_ratings`: who asked, the model, skills and sources of each answer, its
  👍/👎. An answer stores no text and no message id: it is matched to its turn by time.
- `audit_log`: each tool call's outcome and duration, by thread and request id.
- `usage_records`: tokens by request id. They name no thread, so a turn's tokens are known only
  when its request id is (a turn that called tools); the list shows no tokens.

Sources (code lines and their links, memory scopes, skills) are known for answers stored since
migration 0010; older answers show none.

The modules: `listing` (the list of threads and its figures), `turns` (a page of one thread),
`matching` (answers, tool calls and tokens matched to that page's turns), `rows` (what a
thread's page is made of). `Conversations` is the one entry the console's pages use.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime

from core.operator.conversations import listing, turns
from core.operator.conversations.listing import Cursor, ThreadFilter, ThreadPage
from core.operator.conversations.rows import ThreadView
from core.store.engine import Database

EVERY_THREAD = ThreadFilter()


class Conversations:
    """The tenant-scoped reads behind the console's Conversations pages."""

    def __init__(self, db: Database, clock: Callable[[], datetime]) -> None:
        self._db = db
        self._clock = clock

    async def threads(
        self,
        platform: str,
        tenant: str,
        where: ThreadFilter = EVERY_THREAD,
        after: Cursor | None = None,
    ) -> ThreadPage:
        """A page of the tenant's threads, newest activity first (`listing.threads`)."""
        return await listing.threads(self._db, platform, tenant, where, after)

    async def channels(self, platform: str, tenant: str) -> list[str]:
        """The channels the list's filter offers (`listing.channels`)."""
        return await listing.channels(self._db, platform, tenant)

    async def thread(
        self,
        platform: str,
        tenant: str,
        channel: str,
        thread: str,
        *,
        after: int | None = None,
        before: int | None = None,
    ) -> ThreadView | None:
        """A page of one thread's turns, None when the tenant has no such thread
        (`turns.thread_page`)."""
        return await turns.thread_page(
            self._db, platform, tenant, channel, thread, after=after, before=before
        )
