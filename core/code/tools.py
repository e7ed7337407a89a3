"""The code tools (permission `code.read`): the exact `grep_code`, `glob_files`, `read_file`,
and `search_code`, hybrid semantic search for vague questions.

Every tool reaches repositories through `RepoStore.visible` / `RepoStore.find`, so the policy's
`repos` key filters everything, and a repository the session may not read answers exactly like
one that does not exist. Paths are repo-relative: absolute paths and `..` are refused, a path
is resolved (symlinks followed) and must stay inside the repository root (`core.code.paths`).
Exact search runs ripgrep (`core.code.ripgrep`).

Every tool reads exactly the files indexing reads (`core.code.selection`): ripgrep's hits are
filtered through the same rules whatever `path_glob` or pattern the model passes (a glob only
narrows), `read_file` checks the resolved path, search results are re-checked. File content
leaves only through `core.code.redact`: grep lines, read_file lines and search snippets show
`[redacted secret]` where a key, token or password was, on the same line numbers.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Literal

from pydantic import Field

from core.code import messages
from core.code.graph.query import SECTIONS
from core.code.paths import clean_relative, confine, refusal_message, refuse_secret
from core.code.redact import redact
from core.code.repos import RepoStore
from core.code.ripgrep import GREP_TIMEOUT, clip_line, grep, grep_result, split_lines
from core.code.roles import Role
from core.code.selection import Selection
from core.code.walk import walk
from core.errors import ToolError
from core.session import ToolSession
from core.tools.context import ToolContext
from core.tools.registry import Tool, ToolArgs, tool
from core.tools.result import CodeLocation, ToolResult

if TYPE_CHECKING:
    from core.code.results import CodeResult
    from core.code.search import CodeSearch
    from core.store.models import Repo

MAX_GREP_RESULTS = 200
MAX_CONTEXT_LINES = 5
MAX_GLOB_RESULTS = 200
MAX_READ_LINES = 400
# read_file reports the lines it shows in blocks of this many, so a result cut to fit the
# model's window names (nearly) only the lines the model saw.
READ_BLOCK_LINES = 10


# -- repository choice -----------------------------------------------------------------------


async def _repos(store: RepoStore, ctx: ToolContext, name: str | None) -> list[Repo]:
    if name is not None:
        repo = await store.find(ctx.session, name)
        if repo is None:
            available = [r.name for r in await store.visible(ctx.session)]
            raise ToolError(messages.repo_not_found(name, available))
        return [repo]
    repos = await store.visible(ctx.session)
    if not repos:
        raise ToolError(messages.NO_REPOS)
    return repos


# -- glob ------------------------------------------------------------------------------------


def _glob(root: Path, pattern: str, limit: int) -> Iterator[str]:
    import pathspec

    spec = pathspec.GitIgnoreSpec.from_lines([pattern])
    found = 0
    for f in walk(root):
        if spec.match_file(f.path):
            yield f.path
            found += 1
            if found > limit:
                return


# -- argument models -------------------------------------------------------------------------


class GrepArgs(ToolArgs):
    pattern: str = Field(min_length=1, max_length=500, description="Regex (Rust syntax).")
    path_glob: str | None = Field(None, max_length=200, description="e.g. '*.py', 'src/**'")
    repo: str | None = Field(None, max_length=64, description="Default: all repositories.")
    max_results: int = Field(50, ge=1, le=MAX_GREP_RESULTS)
    context_lines: int = Field(0, ge=0, le=MAX_CONTEXT_LINES)


class GlobArgs(ToolArgs):
    pattern: str = Field(min_length=1, max_length=200)
    repo: str | None = Field(None, max_length=64, description="Default: all repositories.")


class SearchArgs(ToolArgs):
    query: str = Field(min_length=1, max_length=500, description="What the code does, in words.")
    repo: str | None = Field(None, max_length=64, description="Default: all repositories.")
    top_k: int = Field(5, ge=1, le=30)
    role: Role | None = Field(
        None,
        description="Only files of this role. Default: all, source first (tests, docs and "
        "examples rank first only when the query asks for them).",
    )


class GraphArgs(ToolArgs):
    symbol: str = Field(
        min_length=1,
        max_length=300,
        description="A name (`run`), a qualified one (`Job.run`) or `path:symbol`.",
    )
    repo: str | None = Field(None, max_length=64, description="Default: all repositories.")
    depth: int = Field(2, ge=1, le=5, description="How far callers/callees are followed.")
    include: list[Literal["callers", "callees", "hierarchy", "imports"]] | None = Field(
        None, description="Sections to show. Default: all."
    )


class ReadArgs(ToolArgs):
    repo: str = Field(min_length=1, max_length=64)
    path: str = Field(min_length=1, max_length=500, description="Relative to the repo root.")
    start_line: int = Field(1, ge=1)
    end_line: int | None = Field(None, ge=1)


# -- the tools -------------------------------------------------------------------------------


def code_tools(store: RepoStore, search: CodeSearch | None = None) -> list[Tool]:
    # Offered to the model only where some repository is readable: no schema tokens otherwise.
    async def any_repo(session: ToolSession) -> bool:
        return bool(await store.visible(session))

    @tool(
        permission="code.read",
        timeout=GREP_TIMEOUT + 10,
        available=any_repo,
        activity="Searching code for `{pattern}`",
    )
    async def grep_code(ctx: ToolContext, args: GrepArgs) -> ToolResult:
        """Regex search (ripgrep) in the team's code repositories: use it first for exact
        names, error strings, config keys. Output: `## repo: path`, then `N:` matching and
        `N-` context lines."""
        if args.path_glob is not None:
            clean_relative(args.path_glob.removeprefix("!"), "path_glob")
            if args.path_glob.startswith("!"):
                raise ToolError("refused: path_glob must select files, not exclude them")
        repos = await _repos(store, ctx, args.repo)
        run = await grep(repos, args.pattern, args.path_glob, args.context_lines, args.max_results)
        if run.errors and not run.files:
            raise ToolError(f"the search failed: {run.errors[0]}")
        return grep_result(run, args.pattern)

    @tool(permission="code.read", available=any_repo, activity="Listing files matching `{pattern}`")
    async def glob_files(ctx: ToolContext, args: GlobArgs) -> str:
        """List repository files whose path matches a gitignore-style glob ('*.proto' at any
        depth, 'src/**/*.ts' from the root)."""
        pattern = clean_relative(args.pattern, "pattern")
        if not pattern:
            raise ToolError("refused: the pattern is empty")
        repos = await _repos(store, ctx, args.repo)
        return await asyncio.to_thread(format_glob, repos, pattern)

    @tool(permission="code.read", available=any_repo, activity="Reading `{path}`")
    async def read_file(ctx: ToolContext, args: ReadArgs) -> ToolResult:
        """Read numbered lines of a repository file (repo and path as grep_code or glob_files
        show them), at most 400 lines per call."""
        (repo,) = await _repos(store, ctx, args.repo)
        return await asyncio.to_thread(_read, repo, args)

    @tool(
        permission="code.read",
        timeout=60,
        available=any_repo,
        activity="Searching the code index for `{query}`",
    )
    async def search_code(ctx: ToolContext, args: SearchArgs) -> ToolResult:
        """Semantic + keyword search over the indexed code: use it when the question is vague
        ("where do we retry webhooks?") or exact search found nothing. Returns the best
        chunks (repo, path, lines, symbol, snippet); read_file shows more."""
        from core.code.vectors import VectorStoreError

        repos = await _repos(store, ctx, args.repo)
        assert search is not None
        try:
            results = await search.search(
                args.query,
                [r.name for r in repos],
                k=args.top_k,
                roles=[args.role] if args.role is not None else None,
            )
        except VectorStoreError as exc:
            raise ToolError(f"{exc}; use grep_code instead") from None
        return search_result(results, args.query)

    @tool(
        permission="code.read",
        available=any_repo,
        activity="Following `{symbol}` in the code graph",
    )
    async def code_graph(ctx: ToolContext, args: GraphArgs) -> str | ToolResult:
        """The code graph around a definition: where it is, what it extends/implements and
        what extends it, what it imports, who calls it (callers) and what it calls (callees),
        each edge with file:line. Use it for impact questions ("what breaks if I change X?").
        An ambiguous name lists candidates: ask again with `path:symbol`."""
        from core.code.graph.render import describe

        repos = await _repos(store, ctx, args.repo)
        answer = await describe(
            store.db,
            {r.id: r.name for r in repos if r.id is not None},
            args.symbol,
            depth=args.depth,
            sections=tuple(args.include) if args.include else SECTIONS,
        )
        if answer.view is None:
            return answer.text
        # The definition it is about, named at the top: a source when the answer names it.
        d = answer.view.focus
        found = CodeLocation(d.repo, d.path, d.line, max(d.line, d.end_line), "graph", d.symbol)
        return ToolResult(answer.text, (found,))

    tools = [grep_code, glob_files, read_file, code_graph]
    tools += [search_code] if search is not None else []
    return tools


def format_search(results: list[CodeResult], query: str) -> str:
    return search_result(results, query).text


def search_result(results: list[CodeResult], query: str) -> ToolResult:
    """The hits for the model, and each hit's file and lines (and symbol) as data."""
    if not results:
        return ToolResult(f"No indexed code matched {query!r}.")
    parts: list[str] = []
    locations: list[CodeLocation] = []
    at = 0
    for i, r in enumerate(results, 1):
        body = "\n".join(clip_line(line) for line in r.snippet.splitlines())
        parts.append(
            f"{i}. {r.repo}: {r.path}:{r.start_line}-{r.end_line} {r.kind} {r.symbol}"
            f" ({r.role}, score {r.score:.3f})\n{body}"
        )
        locations.append(
            CodeLocation(r.repo, r.path, r.start_line, r.end_line, "search", r.symbol, at=at)
        )
        at += len(parts[-1]) + 2
    return ToolResult("\n\n".join(parts), tuple(locations))


def format_glob(repos: list[Repo], pattern: str) -> str:
    out: list[str] = []
    total = 0
    for repo in repos:
        paths = list(_glob(Path(repo.root), pattern, MAX_GLOB_RESULTS - total))
        if not paths:
            continue
        out.append(f"## {repo.name}")
        out.extend(paths[: MAX_GLOB_RESULTS - total])
        total += len(paths)
        if total > MAX_GLOB_RESULTS:
            out.append(f"[stopped at {MAX_GLOB_RESULTS} files; use a narrower pattern]")
            break
    if not out:
        return f"No files match {pattern!r}."
    return "\n".join(out)


def _read(repo: Repo, args: ReadArgs) -> ToolResult:
    rel = clean_relative(args.path)
    if not rel:
        raise ToolError("refused: give a file path, not the repository root")
    refuse_secret(rel)
    root = Path(repo.root).resolve()
    target, real = confine(root, rel)
    # The real path first: a harmless-looking symlink to a secret is refused as a secret. Then
    # the path as given: like the walk, no symlink is followed, even to a readable file.
    selection = Selection(root)
    refusal = selection.refusal(real) or selection.refusal(rel)
    if refusal is not None:
        raise ToolError(refusal_message(refusal, rel, repo.name))
    text = target.read_text(encoding="utf-8", errors="replace")
    return read_result(
        repo.name, rel, split_lines(redact(text, real)), args.start_line, args.end_line
    )


def format_read(repo: str, rel: str, lines: list[str], start: int, end: int | None) -> str:
    return read_result(repo, rel, lines, start, end).text


def read_result(repo: str, rel: str, lines: list[str], start: int, end: int | None) -> ToolResult:
    """Numbered lines of a file for the model, and the lines shown as data (in blocks of
    `READ_BLOCK_LINES`, each where it begins in the text)."""
    total = len(lines)
    if total == 0:
        return ToolResult(f"## {repo}: {rel} (empty file)")
    if start > total:
        raise ToolError(f"{rel} has only {total} lines")
    last = min(total, end if end is not None else total, start + MAX_READ_LINES - 1)
    if last < start:
        raise ToolError("end_line must not be before start_line")
    width = len(str(last))
    out = [f"## {repo}: {rel} (lines {start}-{last} of {total})"]
    locations: list[CodeLocation] = []
    at = len(out[0]) + 1
    for n in range(start, last + 1):
        if (n - start) % READ_BLOCK_LINES == 0:
            block_end = min(last, n + READ_BLOCK_LINES - 1)
            locations.append(CodeLocation(repo, rel, n, block_end, "read", at=at))
        out.append(f"{n:>{width}} | {clip_line(lines[n - 1])}")
        at += len(out[-1]) + 1
    if last < total:
        out.append(f"[more: read_file with start_line={last + 1}]")
    return ToolResult("\n".join(out), tuple(locations))
