"""`threadline index`, `repos`, `search` and `graph`: registering, indexing, listing, searching
code and walking its graph.

Operator commands: they act for whoever runs the process, so no policy applies (the policy's
`repos` key decides what chat conversations may read). Progress goes to stderr, results to
stdout; `repos --json` is a stable format documented in the README.
"""

from __future__ import annotations

import asyncio
import json
import logging
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import argparse
    from collections.abc import Awaitable, Sequence
    from pathlib import Path

    from bot.app import App
    from config.settings import Settings
    from core.code.embeddings import Embedder
    from core.code.graph.query import Section
    from core.code.results import CodeResult
    from core.code.search import CodeSearch
    from core.store.models import Repo

log = logging.getLogger(__name__)

EXIT_OK, EXIT_FAILED, EXIT_USAGE = 0, 1, 2
# How long `threadline search` waits for the bot's answer (it may be busy indexing).
HOLDER_TIMEOUT = 30.0


async def index_command(app: App, source: str, name: str | None) -> int:
    from rich.console import Console
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn

    from adapters.console.translate import valid_text
    from core.code import messages
    from core.code.indexer import Stage
    from core.code.repos import RepoError

    err = Console(stderr=True)
    if valid_text(source) != source:
        # The path is stored as text and shown in replies; a lossy copy would name another
        # directory, so a name that is not UTF-8 is refused instead of guessed at.
        print(
            f"Cannot index {valid_text(source)}: the path is not UTF-8 text; rename it",
            file=sys.stderr,
        )
        return EXIT_FAILED
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
        tasks = {
            "files": bar.add_task(f"{repo.name}: files", total=None),
            "vectors": bar.add_task(f"{repo.name}: embedding", total=None, visible=False),
        }

        def progress(stage: Stage, done: int, total: int) -> None:
            bar.update(tasks[stage], completed=done, total=total, visible=True)

        report = await app.indexer.index(repo, progress=progress)
    text = messages.index_done(repo.name, report.summary(), report.vectors_error)
    print(text.replace("`", ""))
    return EXIT_OK


@dataclass(frozen=True, slots=True)
class SearchAsk:
    """What `threadline search` was asked (`roles`: only files of these roles)."""

    query: str
    repo: str | None
    k: int
    as_json: bool
    roles: Sequence[str] | None = None


def search(settings: Settings, ask: SearchAsk) -> int:
    """`threadline search`: the operator's view of hybrid search over every repository. The
    process holding the embedded store (the bot) answers it when one runs; otherwise this
    process searches (`search_alone`)."""
    problem = search_usage_error(ask.query, ask.k)
    if problem is not None:
        print(problem, file=sys.stderr)
        return EXIT_USAGE
    answered = search_through_holder(settings, ask)
    if answered is None and _may_start_holder(settings):
        from bot.search_holder import start_holder

        if start_holder(settings):
            answered = search_through_holder(settings, ask)
    if answered is not None:
        return answered
    return asyncio.run(search_alone(settings, ask))


def _may_start_holder(settings: Settings) -> bool:
    """Whether a search with no holder starts `threadline hold-search` (bot.search_holder):
    only for the embedded store, and only where a registered repository's shard exists (a
    data directory nothing was indexed into gets no process for nothing)."""
    from core.code import socket_wire

    if settings.search_linger <= 0 or settings.qdrant_url or not socket_wire.available():
        return False
    return embedded_shard(settings).exists()


async def search_alone(settings: Settings, ask: SearchAsk) -> int:
    """The search in this process, with the database and the store opened here. It builds
    only what search needs (`bot.code_parts`), not the app: the chat model, the features and
    their commands would cost more to import than the search takes."""
    from bot.code_parts import build_embedder, code_search
    from bot.dispatch_cli import EXIT_CONFIG, database_ready
    from core.code.repos import RepoStore
    from core.code.vectors import VectorStoreError
    from core.errors import ConfigError
    from core.store.engine import Database

    try:
        db = Database(settings.database)
        embedder = build_embedder(settings)
    except ConfigError as exc:
        print(f"Threadline cannot start: {exc}", file=sys.stderr)
        return EXIT_CONFIG
    search = code_search(settings, db, embedder)
    try:
        early = asyncio.create_task(_open_early(search, embedder))
        if not await database_ready(db):
            return EXIT_FAILED
        await early
        names = [r.name for r in await RepoStore(db, settings.data_dir / "repos").all()]
        if ask.repo is not None:
            if ask.repo not in names:
                return _unknown_repo(ask.repo, names)
            names = [ask.repo]
        try:
            results = await search.search(ask.query, names, k=ask.k, roles=ask.roles)
        except VectorStoreError as exc:
            print(f"search: {exc}", file=sys.stderr)
            return EXIT_FAILED
        return print_results(results, as_json=ask.as_json, searched=bool(names))
    finally:
        await search.aclose()
        await db.dispose()


async def _open_early(search: CodeSearch, embedder: Embedder) -> None:
    """Open the store and load a local model in worker threads while the schema is checked:
    their file reads and native code overlap the imports the check makes on the main thread
    (the two were about a quarter of a one-shot search, bench/RESULTS.md). A failure is left
    for the search to meet and say."""
    from core.code.embeddings import LocalMiniLM

    jobs: list[Awaitable[object]] = [search.store()]
    if isinstance(embedder, LocalMiniLM):  # a remote model has nothing to load
        jobs.append(asyncio.to_thread(embedder.load))
    await asyncio.gather(*jobs, return_exceptions=True)


def search_usage_error(query: str, k: int) -> str | None:
    """What is wrong with `threadline search`'s arguments, checked before any I/O."""
    from core.code.results import MAX_TOP_K

    if not query.strip():
        return "search: the query is empty"
    if not 1 <= k <= MAX_TOP_K:
        return f"search: --k must be between 1 and {MAX_TOP_K}"
    return None


def search_through_holder(settings: Settings, ask: SearchAsk) -> int | None:
    """`threadline search` answered by the process holding the embedded vector store (the
    bot), before this one imports the database, NumPy or the embedder; None when no holder
    answered it (none runs, it refused, anything failed): then search in this process."""
    from core.code import socket_wire
    from core.code.results import CodeResult

    if settings.qdrant_url or not socket_wire.available():
        return None
    shard = embedded_shard(settings)
    if not socket_wire.socket_path(shard).exists():
        return None
    request = {
        "op": "search",
        "query": ask.query,
        "repos": [ask.repo] if ask.repo is not None else None,
        "k": ask.k,
        "roles": list(ask.roles) if ask.roles is not None else None,
    }
    try:
        answer = socket_wire.ask(shard, request, timeout=HOLDER_TIMEOUT)
        results: list[CodeResult] | None = None
        if answer.get("ok"):
            results = [CodeResult.from_wire(row) for row in answer["results"]]
            searched = bool(answer["repos"])
        elif ask.repo is not None and answer.get("unknown_repo") == ask.repo:
            known = [str(name) for name in answer["known"]]
        else:
            log.debug("the holder could not search: %s", answer.get("error"))
            return None
    except (OSError, socket_wire.Refused, ValueError, KeyError, TypeError) as exc:
        log.debug("no search through the holder of the vector store: %r", exc)
        return None
    if results is None:
        assert ask.repo is not None
        return _unknown_repo(ask.repo, known)
    return print_results(results, as_json=ask.as_json, searched=searched)


def embedded_shard(settings: Settings) -> Path:
    """Where the configured embedding model's embedded store is (as `VectorStore.local` under
    DATA_DIR/qdrant-edge), known without building the embedder (`bot.app.build_embedder`)."""
    from core.code.collection import DIMENSION, EDGE_DIR, MODEL_NAME, collection_for

    model, dimension = MODEL_NAME, DIMENSION
    if settings.embeddings_provider == "openai":
        assert settings.embeddings_model and settings.embeddings_dimension  # checked by Settings
        model, dimension = settings.embeddings_model, settings.embeddings_dimension
    return settings.data_dir / EDGE_DIR / collection_for(model, dimension)


def _unknown_repo(repo: str, names: Sequence[str]) -> int:
    known = ", ".join(names) or "none"
    print(f"search: no repository named {repo!r} (known: {known})", file=sys.stderr)
    return EXIT_FAILED


def print_results(results: Sequence[CodeResult], *, as_json: bool, searched: bool) -> int:
    """`threadline search`'s output, wherever the search ran (`searched`: whether there was
    any repository to search)."""
    if as_json:
        print(json.dumps({"results": [r.as_json() for r in results]}, ensure_ascii=False))
        return EXIT_OK
    if not searched:
        print("No repositories yet: threadline index PATH_OR_GIT_URL")
        return EXIT_OK
    if not results:
        print("No results.")
        return EXIT_OK
    for i, r in enumerate(results, 1):
        print(f"{i}. {r.repo}:{r.path}:{r.start_line}-{r.end_line}  {r.kind} {r.symbol}")
        print(f"   {r.role}, score {r.score:.4f}")
        for line in r.snippet.splitlines()[:6]:
            print(f"   | {line}")
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


async def graph_command(app: App, args: argparse.Namespace) -> int:
    """`threadline graph SYMBOL ...` (the neighbourhood of a definition; `--image FILE` also
    draws it as a PNG) or `threadline graph --repo NAME --edges` (every edge; `--json` is the
    documented, stable dump)."""
    from core.code.graph.query import MAX_DEPTH, SECTIONS, all_edges
    from core.code.graph.render import describe

    if not 1 <= args.depth <= MAX_DEPTH:
        print(f"graph: --depth must be between 1 and {MAX_DEPTH}", file=sys.stderr)
        return EXIT_USAGE
    repos = await app.repos.all()
    if args.repo is not None:
        chosen = [r for r in repos if r.name == args.repo]
        if not chosen:
            known = ", ".join(r.name for r in repos) or "none"
            print(f"graph: no repository named {args.repo!r} (known: {known})", file=sys.stderr)
            return EXIT_FAILED
        repos = chosen
    if args.edges:
        if args.repo is None or args.symbol is not None or args.image is not None:
            print("graph: --edges takes --repo NAME and no SYMBOL or --image", file=sys.stderr)
            return EXIT_USAGE
        assert repos[0].id is not None
        edges = await all_edges(app.db, repos[0].id)
        if args.json:
            print(json.dumps({"edges": [e.as_json() for e in edges]}, ensure_ascii=False))
            return EXIT_OK
        for e in edges:
            target = (
                f"{e.target_path}:{e.target_symbol}" if e.target_path is not None else e.target_name
            )
            print(
                f"{e.kind:10} {e.source_path}:{e.source_line} {e.source_symbol} -> {target}"
                f"  ({e.confidence:.1f})"
            )
        return EXIT_OK
    if not args.symbol:
        print("graph: give a SYMBOL, or --repo NAME --edges", file=sys.stderr)
        return EXIT_USAGE
    wanted: tuple[Section, ...] = ("callers", "callees", "hierarchy")
    sections = tuple(name for name in wanted if getattr(args, name))
    answer = await describe(
        app.db,
        {r.id: r.name for r in repos if r.id is not None},
        args.symbol,
        depth=args.depth,
        sections=sections or SECTIONS,
    )
    text = answer.text
    if args.image is not None and answer.view is not None:
        from core.code.graph.picture import draw
        from core.code.graph.render import picture_note

        view = answer.view
        picture = await asyncio.to_thread(lambda: draw(view, hide_low=args.confident))
        try:
            await asyncio.to_thread(Path(args.image).write_bytes, picture.png)
        except OSError as exc:
            print(f"graph: cannot write {args.image}: {exc.strerror or exc}", file=sys.stderr)
            return EXIT_FAILED
        if picture.omitted:
            text = f"{text}\n{picture_note(answer.view.focus.symbol, picture.omitted)}"
        print(f"graph: picture written to {args.image}", file=sys.stderr)
    if args.json:
        print(json.dumps(answer.data, ensure_ascii=False))
    else:
        print(text.replace("`", ""))
    return EXIT_OK if answer.found else EXIT_FAILED
