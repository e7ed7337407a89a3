"""`/index NAME`: re-index a registered repository from chat (needs `code.index`).

The repository must be one this conversation may read (the policy's `repos` key); any other
name gets the same "no repository" answer. A cloned repository is fetched first.
"""

from __future__ import annotations

import logging

from core.code import messages
from core.code.repos import RepoError, RepoStore
from core.code.walk import index_repo
from core.commands import Command, CommandContext
from core.request import Reply
from core.store.engine import Database

log = logging.getLogger(__name__)


def code_commands(store: RepoStore, db: Database) -> list[Command]:
    async def index(ctx: CommandContext, args: str) -> Reply:
        name = args.strip()
        if not name or len(name.split()) != 1:
            return Reply(messages.INDEX_USAGE, ok=False, ephemeral=True)
        repo = await store.find(ctx.session, name)
        if repo is None:
            available = [r.name for r in await store.visible(ctx.session)]
            return Reply(messages.repo_not_found_reply(name, available), ok=False)
        try:
            await store.update_checkout(repo)
            result = await index_repo(db, repo)
        except RepoError as exc:
            return Reply(f"Re-indexing `{name}` failed: {exc}", ok=False)
        except Exception:
            log.exception("re-indexing %s failed (request %s)", name, ctx.session.request_id)
            return Reply(messages.INDEX_FAILED, ok=False)
        return Reply(messages.index_done(name, result.summary()))

    return [
        Command(
            "index",
            "/index NAME",
            "re-index a code repository and report what changed",
            index,
            "code.index",
        )
    ]
