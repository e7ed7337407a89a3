"""`threadline map --repo NAME`: the repo map the agent sees, for the operator.

An operator command: no policy applies. The budget is the agent's (1,024 tokens when the focus
names a file, twice that otherwise) unless `--tokens` says otherwise; `--json` is a stable
format documented in the README.
"""

from __future__ import annotations

import json
import sys
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import argparse

    from bot.app import App

EXIT_OK, EXIT_FAILED, EXIT_USAGE = 0, 1, 2


async def map_command(app: App, args: argparse.Namespace) -> int:
    from pathlib import Path

    from core.code.graph.focus import Seeds, seeds
    from core.code.graph.outline import MAX_TOKENS, MIN_TOKENS, build_map, default_budget
    from core.code.graph.rank import load_graph
    from core.memory.tokens import TokenCounter

    if args.tokens is not None and not MIN_TOKENS <= args.tokens <= MAX_TOKENS:
        print(f"map: --tokens must be between {MIN_TOKENS} and {MAX_TOKENS}", file=sys.stderr)
        return EXIT_USAGE
    focus = (args.focus or "").strip()
    if args.focus is not None and not focus:
        print("map: --focus is empty", file=sys.stderr)
        return EXIT_USAGE
    repos = await app.repos.all()
    repo = next((r for r in repos if r.name == args.repo), None)
    if repo is None or repo.id is None:
        known = ", ".join(r.name for r in repos) or "none"
        print(f"map: no repository named {args.repo!r} (known: {known})", file=sys.stderr)
        return EXIT_FAILED
    graph = await load_graph(app.db, repo.id)
    if graph is None:
        print(f"map: {repo.name} has no code graph yet: threadline index {repo.origin}")
        return EXIT_FAILED
    found = Seeds({}, (), ())
    if focus:
        found = seeds(graph, f"`{focus}`")  # quoted: every word of it is meant as code
        if not found.nodes:
            print(f"map: no file or definition in {repo.name} matches {focus!r}", file=sys.stderr)
            return EXIT_FAILED
    budget = args.tokens or default_budget(found)
    built = build_map(graph, Path(repo.root), repo.name, found, budget, TokenCounter().count_text)
    if args.json:
        print(json.dumps(built.as_json(), ensure_ascii=False))
    else:
        print(built.text or f"No definitions in {repo.name}.")
    return EXIT_OK
