"""`/index NAME`: re-index a registered repository from chat (needs `code.index`), and
`/graph SYMBOL`: the code graph around a definition (needs `code.read`), with `--image` also
as a PNG attached to the reply.

The repository must be one this conversation may read (the policy's `repos` key); any other
name gets the same "no repository" answer. A cloned repository is fetched first. Progress goes
to the thread as status lines, at most one per `PROGRESS_EVERY` seconds (adapters throttle
their edits further).
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Annotated, Any

from pydantic import BeforeValidator

from core.code import messages
from core.code.graph.query import MAX_DEPTH, SECTIONS, Section
from core.code.graph.render import BAD_DEPTH, GRAPH_USAGE
from core.code.indexer import Indexer, Stage
from core.code.repos import RepoError, RepoStore
from core.commands import Command, CommandArgs, CommandContext, declared, flag, option, word
from core.request import Attachment, Reply

if TYPE_CHECKING:
    from core.code.graph.query import Neighbourhood

log = logging.getLogger(__name__)

PROGRESS_EVERY = 2.0
DEFAULT_DEPTH = 2  # of `/graph`, as `threadline graph` has it


class _ThreadProgress:
    """Turns the indexer's synchronous progress calls into throttled async status lines."""

    def __init__(self, name: str, send: Callable[[str], Awaitable[None]] | None) -> None:
        self._name = name
        self._send = send
        self._last = 0.0
        self._pending: set[asyncio.Task[None]] = set()

    def __call__(self, stage: Stage, done: int, total: int) -> None:
        now = time.monotonic()
        if self._send is None or (now - self._last < PROGRESS_EVERY and done < total):
            return
        self._last = now
        task = asyncio.get_running_loop().create_task(
            self._post(messages.index_progress(self._name, stage, done, total))
        )
        self._pending.add(task)
        task.add_done_callback(self._pending.discard)

    async def _post(self, text: str) -> None:
        assert self._send is not None
        await self._send(text)

    async def drain(self) -> None:
        if self._pending:
            await asyncio.gather(*self._pending, return_exceptions=True)


async def _with_picture(
    ctx: CommandContext, text: str, view: Neighbourhood, *, confident: bool = False
) -> Reply:
    """The text graph with its picture attached (drawn off the event loop). A picture that
    cannot be drawn leaves the text answer standing, with a line saying so."""
    from core.code.graph.picture import draw
    from core.code.graph.render import PICTURE_FAILED, picture_filename, picture_note

    try:
        picture = await asyncio.to_thread(lambda: draw(view, hide_low=confident))
    except Exception:
        log.exception("drawing the graph failed (request %s)", ctx.session.request_id)
        return Reply(f"{text}\n{PICTURE_FAILED}")
    if picture.omitted:
        text = f"{text}\n{picture_note(view.focus.symbol, picture.omitted)}"
    image = Attachment("image", picture_filename(view.focus.symbol), picture.png, "image/png")
    return Reply(text, attachments=(image,))


def _overlong_repo(name: str) -> str | None:
    from core import messages as core_messages
    from core.store.limits import column_limit
    from core.store.models import Repo

    limit = column_limit(Repo, "name")
    if len(name) <= limit:
        return None
    return core_messages.too_long("a repository name", len(name), limit)


class IndexArgs(CommandArgs):
    quotes = False  # a repository name is one word as typed
    name: str = word("NAME")


def _depth(value: Any) -> Any:
    if not (isinstance(value, str) and value.isdigit() and 1 <= int(value) <= MAX_DEPTH):
        raise ValueError(BAD_DEPTH)
    return int(value)


class GraphArgs(CommandArgs):
    quotes = False  # a symbol is one word as typed
    symbol: str = word("SYMBOL")
    repo: str | None = option("NAME")
    depth: Annotated[int | None, BeforeValidator(_depth)] = option("N")
    callers: bool = flag()
    callees: bool = flag()
    hierarchy: bool = flag()
    image: bool = flag()
    confident: bool = flag()  # the picture leaves out edges found only by a guess

    @property
    def sections(self) -> tuple[Section, ...]:
        """The sections asked for (in the order `threadline graph` shows them), else all."""
        wanted: tuple[Section, ...] = ("callers", "callees", "hierarchy")
        return tuple(s for s in wanted if getattr(self, s)) or SECTIONS


def code_commands(store: RepoStore, indexer: Indexer) -> list[Command]:
    async def index(ctx: CommandContext, args: IndexArgs) -> Reply:
        name = args.name
        if (long := _overlong_repo(name)) is not None:
            return Reply(long, ok=False, ephemeral=True)
        repo = await store.find(ctx.session, name)
        if repo is None:
            available = [r.name for r in await store.visible(ctx.session)]
            return Reply(messages.repo_not_found_reply(name, available), ok=False)
        progress = _ThreadProgress(name, ctx.progress)
        try:
            await store.update_checkout(repo)
            report = await indexer.index(repo, progress=progress)
        except RepoError as exc:
            return Reply(f"Re-indexing `{name}` failed: {exc}", ok=False)
        except Exception:
            log.exception("re-indexing %s failed (request %s)", name, ctx.session.request_id)
            return Reply(messages.INDEX_FAILED, ok=False)
        finally:
            await progress.drain()
        return Reply(messages.index_done(name, report.summary(), report.vectors_error))

    async def graph(ctx: CommandContext, args: GraphArgs) -> Reply:
        from core.code.graph.render import describe

        if args.repo is not None:
            if (long := _overlong_repo(args.repo)) is not None:
                return Reply(long, ok=False, ephemeral=True)
            repo = await store.find(ctx.session, args.repo)
            if repo is None:
                available = [r.name for r in await store.visible(ctx.session)]
                return Reply(messages.repo_not_found_reply(args.repo, available), ok=False)
            repos = [repo]
        else:
            repos = await store.visible(ctx.session)
        if not repos:
            return Reply(messages.NO_REPOS, ok=False)
        answer = await describe(
            store.db,
            {r.id: r.name for r in repos if r.id is not None},
            args.symbol,
            depth=args.depth or DEFAULT_DEPTH,
            sections=args.sections,
        )
        if not args.image or answer.view is None:
            return Reply(answer.text, ok=answer.found)
        return await _with_picture(ctx, answer.text, answer.view, confident=args.confident)

    return [
        declared(
            "index",
            "re-index a code repository and report what changed",
            IndexArgs,
            index,
            permission="code.index",
            # A large repository takes minutes; it reports progress in the thread, and work cut
            # off at the request deadline would only be redone by the next `/index`.
            timed=False,
            usage=messages.INDEX_USAGE,
        ),
        declared(
            "graph",
            "where a symbol is defined, what it extends, who calls it and what it calls",
            GraphArgs,
            graph,
            permission="code.read",
            usage=GRAPH_USAGE,
        ),
    ]
