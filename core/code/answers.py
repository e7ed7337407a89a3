"""Answering a free-text question without a language model: the best code search hits.

With no LLM configured Threadline still helps where it honestly can: a question in a
conversation that may read code gets the top hybrid search results, introduced as what they
are (search results, not an answer). Anywhere else the caller falls back to the plain "no model"
reply. The hits obey what the code tools obey: `CodeSearch` redacts snippets and leaves out a
hit whose file is no longer readable (ignored or renamed since it was indexed).
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable

from core.code.repos import RepoStore
from core.code.results import CodeResult
from core.code.search import CodeSearch
from core.code.vectors import VectorStoreError
from core.request import Reply
from core.session import ToolSession

log = logging.getLogger(__name__)

OFFLINE_HITS = 5
HEADER = (
    "No language model is configured, so I can't answer in words, but here is the code that "
    "best matches your question:"
)
FOOTER = "An operator can set LLM_BASE_URL and LLM_MODEL (see the README) to get real answers."

OfflineAnswer = Callable[[ToolSession, str], Awaitable[Reply | None]]


def render_hits(results: list[CodeResult]) -> str:
    parts = [HEADER]
    for i, r in enumerate(results, 1):
        fence = "````" if "```" in r.snippet else "```"
        parts.append(
            f"{i}. `{r.repo}` {r.path}:{r.start_line}-{r.end_line} — {r.kind} `{r.symbol}`\n"
            f"{fence}\n{r.snippet}\n{fence}"
        )
    parts.append(FOOTER)
    return "\n\n".join(parts)


def offline_answer(repos: RepoStore, search: CodeSearch) -> OfflineAnswer:
    async def answer(session: ToolSession, text: str) -> Reply | None:
        if not session.allows("code.read"):
            return None
        visible = [r.name for r in await repos.visible(session)]
        if not visible:
            return None
        try:
            results = await search.search(text, visible, k=OFFLINE_HITS)
        except VectorStoreError as exc:
            log.info("no offline search answer: %s", exc)
            return None
        if not results:
            return None
        return Reply(render_hits(results))

    return answer
