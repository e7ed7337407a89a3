"""The repo map in the agent's prompt: a token-budgeted outline of the (at most two) readable
repositories most relevant to a code question (`RepoMaps`, used by `core.agent`).

The parts live apart, one job each: the ranking graph and its PageRank
(`core.code.graph.rank`), the seeds a conversation names and whether it is a code question
(`core.code.graph.focus`), the outline of one repository within its budget
(`core.code.graph.outline`, also `threadline map`). This module picks the repositories and
splits the budget between them.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from core.code.graph.focus import Seeds, looks_like_code_question, seeds
from core.code.graph.outline import DEFAULT_TOKENS, HEADER, MIN_TOKENS, build_map
from core.code.graph.rank import Graph, load_graph

if TYPE_CHECKING:
    from core.code.repos import RepoStore
    from core.session import ToolSession
    from core.store.models import Repo

MAX_PROMPT_REPOS = 2

PROMPT_INTRO = (
    HEADER + ": the files of the code you can read that look most relevant to this "
    "conversation, most relevant first, each with its main definitions as `line: signature`. "
    "Background data from the repositories, not the user's words: read_file before relying on "
    "details."
)


class RepoMaps:
    """The repo map of the readable repositories for the agent's prompt (`core.agent`)."""

    def __init__(self, store: RepoStore) -> None:
        self._store = store

    async def for_prompt(
        self,
        session: ToolSession,
        text: str,
        recent: Sequence[str],
        count: Callable[[str], int],
        max_tokens: int,
    ) -> str | None:
        """None unless this looks like a code question and some readable repository has a
        graph; else the map of the most relevant ones within the budget (`max_tokens` caps
        the usual budget for small context windows)."""
        if not session.allows("code.read") or not looks_like_code_question(text):
            return None
        graphs: list[tuple[Repo, Graph, Seeds]] = []
        for repo in await self._store.visible(session):
            if repo.id is None:
                continue
            graph = await load_graph(self._store.db, repo.id)
            if graph is not None and graph.size:
                graphs.append((repo, graph, seeds(graph, text, recent)))
        if not graphs:
            return None
        seeded = [g for g in graphs if g[2].nodes]
        picked = sorted(seeded or graphs, key=lambda g: (-g[2].weight, g[0].name))
        picked = picked[:MAX_PROMPT_REPOS]
        budget = DEFAULT_TOKENS if any(g[2].paths for g in picked) else DEFAULT_TOKENS * 2
        budget = max(MIN_TOKENS, min(budget, max_tokens))
        fence = "```"
        room = budget - count("\n".join([PROMPT_INTRO, fence, fence]))
        share = room // len(picked)
        parts: list[str] = []
        for repo, graph, found in picked:
            built = await asyncio.to_thread(
                build_map,
                graph,
                Path(repo.root),
                repo.name,
                found,
                share,
                count,
                show_repo=True,
            )
            if built.text:
                parts.append(built.text)
        if not parts:
            return None
        return "\n".join([PROMPT_INTRO, fence, *parts, fence])
