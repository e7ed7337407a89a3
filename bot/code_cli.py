"""`threadline index` and `threadline repos`: registering, indexing and listing repositories.

Operator commands: they act for whoever runs the process, so no policy applies (the policy's
`repos` key decides what chat conversations may read). Progress goes to stderr, results to
stdout; `repos --json` is a stable format documented in the README.
"""

from __future__ import annotations

import json
import sys
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from bot.app import App
    from core.store.models import Repo

EXIT_OK, EXIT_FAILED = 0, 1


async def index_command(app: App, source: str, name: str | None) -> int:
    from rich.console import Console
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn

    from core.code import messages
    from core.code.repos import RepoError
    from core.code.walk import index_repo

    err = Console(stderr=True)
    try:
        repo = await app.repos.register(source, name)
    except RepoError as exc:
        print(f"Cannot index {source}: {exc}", file=sys.stderr)
        return EXIT_FAILED
    with Progress(
        TextColumn("[bold]{task.description}"),
        BarColumn(),
        MofNCompleteColumn(),
        console=err,
        transient=True,
    ) as bar:
        task = bar.add_task(f"indexing {repo.name}", total=None)

        def progress(done: int, total: int) -> None:
            bar.update(task, completed=done, total=total)

        result = await index_repo(app.db, repo, progress=progress)
    print(messages.index_done(repo.name, result.summary()).replace("`", ""))
    return EXIT_OK


def repo_json(repo: Repo, chunks: int) -> dict[str, Any]:
    return {
        "name": repo.name,
        "origin": repo.origin,
        "root": repo.root,
        "files": repo.file_count,
        "chunks": chunks,
        "last_indexed_at": repo.last_indexed_at.isoformat() if repo.last_indexed_at else None,
    }


async def repos_command(app: App, as_json: bool) -> int:
    from core.code.chunk_store import chunk_counts

    repos = await app.repos.all()
    chunks = await chunk_counts(app.db)
    if as_json:
        rows = [repo_json(r, chunks.get(r.id or 0, 0)) for r in repos]
        print(json.dumps({"repos": rows}, ensure_ascii=False))
        return EXIT_OK
    if not repos:
        print("No repositories yet: threadline index PATH_OR_GIT_URL")
        return EXIT_OK
    from rich.console import Console
    from rich.table import Table

    table = Table("name", "origin", "files", "chunks", "last indexed (UTC)", box=None)
    for r in repos:
        when = f"{r.last_indexed_at:%Y-%m-%d %H:%M}" if r.last_indexed_at else "never"
        table.add_row(r.name, r.origin, str(r.file_count), str(chunks.get(r.id or 0, 0)), when)
    Console(width=200).print(table)
    return EXIT_OK
