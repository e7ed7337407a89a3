"""The code tools (permission `code.read`): the exact `grep_code`, `glob_files`, `read_file`,
and `search_code`, hybrid semantic search for vague questions.

Every tool reaches repositories through `RepoStore.visible` / `RepoStore.find`, so the policy's
`repos` key filters everything, and a repository the session may not read answers exactly like
one that does not exist. Paths are repo-relative: absolute paths and `..` are refused, a path
is resolved (symlinks followed) and must stay inside the repository root.

Every tool reads exactly the files indexing reads (`core.code.selection`): ripgrep's hits are
filtered through the same rules whatever `path_glob` or pattern the model passes (a glob only
narrows), `read_file` checks the resolved path, search results are re-checked. File content
leaves only through `core.code.redact`: grep lines, read_file lines and search snippets show
`[redacted secret]` where a key, token or password was, on the same line numbers.
"""

from __future__ import annotations

import asyncio
import json
import re
import shutil
import subprocess
import sysconfig
from collections.abc import AsyncIterator, Iterator
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath
from typing import TYPE_CHECKING, Any, Literal

from pydantic import Field

from core.code import messages
from core.code.graph.query import SECTIONS
from core.code.redact import redact
from core.code.repos import RepoStore
from core.code.roles import Role
from core.code.secrets import looks_secret
from core.code.selection import MAX_FILE_BYTES, SKIPPED_DIRS, Refusal, Selection
from core.code.walk import walk
from core.errors import ToolError
from core.session import ToolSession
from core.tools.context import ToolContext
from core.tools.registry import Tool, ToolArgs, tool

if TYPE_CHECKING:
    from core.code.results import CodeResult
    from core.code.search import CodeSearch
    from core.store.models import Repo

MAX_GREP_RESULTS = 200
MAX_CONTEXT_LINES = 5
GREP_TIMEOUT = 10.0  # seconds for the whole search; results found by then are returned
MAX_GLOB_RESULTS = 200
MAX_READ_LINES = 400
MAX_LINE_CHARS = 300
# ripgrep writes one JSON line per reported line, and JSON spells a control character in six
# bytes (`\u0001`): room for any line of a file within the size limit, twice (its text and the
# submatches'). A longer one is skipped, never fatal (`read_lines`).
RG_LINE_LIMIT = 12 * MAX_FILE_BYTES + (1 << 16)
_DRIVE = re.compile(r"^[A-Za-z]:")


class RipgrepMissing(RuntimeError):
    pass


def ripgrep_binary() -> str:
    """The `rg` the `ripgrep` wheel installs next to this interpreter, else one on PATH."""
    beside = Path(sysconfig.get_path("scripts")) / "rg"
    if beside.is_file():
        return str(beside)
    found = shutil.which("rg")
    if found is None:
        raise RipgrepMissing("ripgrep (rg) is not installed: pip install ripgrep==14.1.0")
    return found


# -- paths -----------------------------------------------------------------------------------


def clean_relative(path: str, what: str = "path") -> str:
    """A repo-relative path in "/" form; raises ToolError for absolute paths and `..`."""
    raw = path.strip().replace("\\", "/")
    if "\0" in raw:
        raise ToolError(f"refused: the {what} contains a NUL character")
    if raw.startswith("/") or _DRIVE.match(raw) or raw.startswith("~"):
        raise ToolError(f"refused: the {what} must be relative to the repository root")
    parts = [p for p in PurePosixPath(raw).parts if p != "."]
    if ".." in parts:
        raise ToolError(f"refused: the {what} may not contain '..'")
    return "/".join(parts)


def confine(root: Path, rel: str) -> tuple[Path, str]:
    """Resolve `rel` under `root` following symlinks; it must stay inside `root`. Returns the
    resolved path and its repo-relative form (what a symlink really points at)."""
    base = root.resolve()
    target = (base / rel).resolve()
    if not target.is_relative_to(base):
        raise ToolError("refused: that path leads outside the repository")
    return target, target.relative_to(base).as_posix()


def _refuse_secret(rel: str) -> None:
    if looks_secret(rel):
        raise ToolError(f"refused: {rel} looks like it holds secrets (keys, credentials, .env)")


def _line(text: str) -> str:
    text = text.rstrip("\r\n")
    return text if len(text) <= MAX_LINE_CHARS else text[:MAX_LINE_CHARS] + " […]"


def split_lines(text: str) -> list[str]:
    """Lines as ripgrep and the chunker count them: only "\n" ends a line (splitlines would
    also break at form feeds and other separators and shift every number after them)."""
    lines = text.split("\n")
    if lines and lines[-1] == "":
        lines.pop()
    return [line.removesuffix("\r") for line in lines]


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


# -- grep ------------------------------------------------------------------------------------


@dataclass
class _FileHits:
    repo: str
    path: str
    lines: list[tuple[int, bool, str]] = field(default_factory=list)  # (number, is_match, text)


@dataclass
class _GrepRun:
    limit: int
    files: list[_FileHits] = field(default_factory=list)
    matches: int = 0
    stopped: bool = False  # more matches existed than `limit`
    timed_out: bool = False
    skipped_lines: int = 0  # reported lines too long to read
    errors: list[str] = field(default_factory=list)


def _text(obj: dict[str, Any]) -> str:
    if "text" in obj:
        return str(obj["text"])
    return "<non-UTF-8 text>"  # a path that is not UTF-8: Selection finds no such file


def rg_command(pattern: str, path_glob: str | None, context_lines: int) -> list[str]:
    """ripgrep, told to skip what the walk skips so it does not search in vain. What it
    reports still goes through `Selection` (its gitignore dialect differs in corners, and
    `--glob` overrides ignore rules), so the glob here only narrows the search."""
    cmd = [
        ripgrep_binary(),
        "--json",
        "--no-config",
        "--hidden",  # like the walk: dot-folders such as .github are code too ...
        "--no-follow",  # ... but symlinks are not followed
        "--no-require-git",  # .gitignore applies even where there is no .git
        # Ignore files the walk does not read: .ignore / .rgignore, the user's global
        # gitignore, .git/info/exclude, and .gitignore files above the repository root.
        "--no-ignore-dot",
        "--no-ignore-global",
        "--no-ignore-exclude",
        "--no-ignore-parent",
        "--max-filesize",
        str(MAX_FILE_BYTES),
        "--context",
        str(context_lines),
    ]
    if path_glob:
        cmd += ["--glob", path_glob]
    for name in sorted(SKIPPED_DIRS):  # after the caller's glob: later globs win
        cmd += ["--glob", f"!{name}/"]
    return [*cmd, "--regexp", pattern, "--", "."]


async def read_lines(stream: asyncio.StreamReader) -> AsyncIterator[bytes | None]:
    """The lines of `stream`; a line longer than the stream's limit is dropped and stands as
    one None, so one monstrous line costs that line, not the whole search."""
    skipping = False
    while True:
        try:
            line = await stream.readuntil(b"\n")
        except asyncio.IncompleteReadError as exc:  # the last line, without its newline
            if exc.partial and not skipping:
                yield exc.partial
            return
        except asyncio.LimitOverrunError as exc:  # what is buffered so far stays: drop it
            await stream.readexactly(max(1, exc.consumed))
            if not skipping:
                skipping = True
                yield None
            continue
        if skipping:  # the end of the dropped line
            skipping = False
            continue
        yield line


async def _grep_repo(repo: Repo, cmd: list[str], run: _GrepRun) -> None:
    selection = Selection(Path(repo.root))
    proc = await asyncio.create_subprocess_exec(
        *cmd,
        cwd=repo.root,
        stdin=asyncio.subprocess.DEVNULL,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
        limit=RG_LINE_LIMIT,
    )
    assert proc.stdout is not None and proc.stderr is not None
    current: _FileHits | None = None
    try:
        async for line in read_lines(proc.stdout):
            if line is None:
                run.skipped_lines += 1
                continue
            event = json.loads(line)
            kind, data = event.get("type"), event.get("data", {})
            if kind not in ("match", "context"):
                continue
            rel = _text(data["path"]).removeprefix("./")
            allowed = selection.known(rel)
            if allowed is None:  # first hit in this file: stats, maybe a .gitignore read
                allowed = await asyncio.to_thread(selection.allows, rel)
            if not allowed:
                continue
            if kind == "match":
                if run.matches >= run.limit:
                    run.stopped = True
                    break
                run.matches += 1
            if current is None or current.path != rel or current.repo != repo.name:
                current = _FileHits(repo.name, rel)
                run.files.append(current)
            number = int(data.get("line_number") or 0)
            # The text shown is the file's own line, redacted (`redact_hits`), not ripgrep's.
            current.lines.append((number, kind == "match", ""))
        else:
            stderr = (await proc.stderr.read()).decode("utf-8", "replace")
            if await proc.wait() == 2 and stderr.strip():
                run.errors.append(stderr.strip().splitlines()[-1][:300])
    finally:
        if proc.returncode is None:
            proc.kill()
            await proc.wait()


def redact_hits(run: _GrepRun, roots: dict[str, Path], pattern: str) -> None:
    """Show each reported line as the file's redacted line of that number: a secret never
    leaves, even on a line that matched only through it, and a private-key block is
    recognised across lines (ripgrep sees one line at a time). A match whose line changed
    under redaction is kept only if the redacted line still matches the pattern by itself:
    otherwise a pattern could probe a secret a character at a time."""
    files: list[tuple[_FileHits, list[str]]] = []
    suspects: list[tuple[int, int]] = []  # (index in `files`, line number) redaction changed
    for hits in run.files:
        try:
            text = (roots[hits.repo] / hits.path).read_text(encoding="utf-8", errors="replace")
        except OSError:  # gone since ripgrep read it
            run.matches -= sum(is_match for _, is_match, _ in hits.lines)
            continue
        original = split_lines(text)
        lines = split_lines(redact(text, hits.path))
        hits.lines = [(n, m, t) for n, m, t in hits.lines if 0 < n <= len(lines)]
        suspects += [
            (len(files), n) for n, m, _ in hits.lines if m and lines[n - 1] != original[n - 1]
        ]
        files.append((hits, lines))
    matching = _matching_lines(pattern, [files[i][1][n - 1] for i, n in suspects])
    withheld = {suspects[j] for j in range(len(suspects)) if j not in matching}
    kept: list[_FileHits] = []
    for index, (hits, lines) in enumerate(files):
        shown = []
        for number, is_match, _ in hits.lines:
            if (index, number) in withheld:
                run.matches -= 1
                continue
            shown.append((number, is_match, _line(lines[number - 1])))
        hits.lines = shown
        if any(is_match for _, is_match, _ in shown):
            kept.append(hits)  # context lines alone would still tell that something matched
    run.files = kept


def _matching_lines(pattern: str, lines: list[str]) -> set[int]:
    """The indexes of `lines` that `pattern` matches, by ripgrep itself (same syntax, linear
    time): one run over all of them. On any failure, none."""
    if not lines:
        return set()
    cmd = [ripgrep_binary(), "--no-config", "--line-number", "--max-columns", "1"]
    try:
        done = subprocess.run(
            [*cmd, "--regexp", pattern, "-"],
            input="\n".join(lines).encode("utf-8", "replace"),
            capture_output=True,
            timeout=GREP_TIMEOUT,
            check=False,
        )
    except (OSError, subprocess.TimeoutExpired):
        return set()
    found = set()
    for out in done.stdout.splitlines():
        number, sep, _ = out.partition(b":")
        if sep and number.isdigit():
            found.add(int(number) - 1)
    return found


def format_grep(run: _GrepRun, pattern: str) -> str:
    if not run.files:
        text = f"No matches for /{pattern}/."
        if run.timed_out:
            text += f" (The search timed out after {GREP_TIMEOUT:.0f} s.)"
        if run.skipped_lines:
            text += f" ({run.skipped_lines} line(s) too long to read were skipped.)"
        return text
    out = [f"{run.matches} match{'es' * (run.matches != 1)} in {len(run.files)} file(s):"]
    for hits in run.files:
        out.append(f"## {hits.repo}: {hits.path}")
        previous = None
        for number, is_match, text in hits.lines:
            if previous is not None and number > previous + 1:
                out.append("--")
            out.append(f"{number}{':' if is_match else '-'} {text}")
            previous = number
    if run.stopped:
        out.append(f"[stopped at {run.limit} matches; narrow the pattern or path_glob]")
    if run.timed_out:
        out.append(f"[the search timed out after {GREP_TIMEOUT:.0f} s; results are partial]")
    if run.skipped_lines:
        out.append(f"[{run.skipped_lines} line(s) too long to read were skipped]")
    return "\n".join(out)


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

    @tool(permission="code.read", timeout=GREP_TIMEOUT + 10, available=any_repo)
    async def grep_code(ctx: ToolContext, args: GrepArgs) -> str:
        """Regex search (ripgrep) in the team's code repositories: use it first for exact
        names, error strings, config keys. Output: `## repo: path`, then `N:` matching and
        `N-` context lines."""
        if args.path_glob is not None:
            clean_relative(args.path_glob.removeprefix("!"), "path_glob")
            if args.path_glob.startswith("!"):
                raise ToolError("refused: path_glob must select files, not exclude them")
        repos = await _repos(store, ctx, args.repo)
        cmd = rg_command(args.pattern, args.path_glob, args.context_lines)
        run = _GrepRun(args.max_results)
        try:
            async with asyncio.timeout(GREP_TIMEOUT):
                for repo in repos:
                    await _grep_repo(repo, cmd, run)
                    if run.stopped:  # one match past the limit was seen: there are more
                        break
        except TimeoutError:
            run.timed_out = True
        roots = {r.name: Path(r.root) for r in repos}
        await asyncio.to_thread(redact_hits, run, roots, args.pattern)
        if run.errors and not run.files:
            raise ToolError(f"the search failed: {run.errors[0]}")
        return format_grep(run, args.pattern)

    @tool(permission="code.read", available=any_repo)
    async def glob_files(ctx: ToolContext, args: GlobArgs) -> str:
        """List repository files whose path matches a gitignore-style glob ('*.proto' at any
        depth, 'src/**/*.ts' from the root)."""
        pattern = clean_relative(args.pattern, "pattern")
        if not pattern:
            raise ToolError("refused: the pattern is empty")
        repos = await _repos(store, ctx, args.repo)
        return await asyncio.to_thread(format_glob, repos, pattern)

    @tool(permission="code.read", available=any_repo)
    async def read_file(ctx: ToolContext, args: ReadArgs) -> str:
        """Read numbered lines of a repository file (repo and path as grep_code or glob_files
        show them), at most 400 lines per call."""
        (repo,) = await _repos(store, ctx, args.repo)
        return await asyncio.to_thread(_read, repo, args)

    @tool(permission="code.read", timeout=60, available=any_repo)
    async def search_code(ctx: ToolContext, args: SearchArgs) -> str:
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
        return format_search(results, args.query)

    @tool(permission="code.read", available=any_repo)
    async def code_graph(ctx: ToolContext, args: GraphArgs) -> str:
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
        return answer.text

    tools = [grep_code, glob_files, read_file, code_graph]
    tools += [search_code] if search is not None else []
    return tools


def format_search(results: list[CodeResult], query: str) -> str:
    if not results:
        return f"No indexed code matched {query!r}."
    parts = []
    for i, r in enumerate(results, 1):
        body = "\n".join(_line(line) for line in r.snippet.splitlines())
        parts.append(
            f"{i}. {r.repo}: {r.path}:{r.start_line}-{r.end_line} {r.kind} {r.symbol}"
            f" ({r.role}, score {r.score:.3f})\n{body}"
        )
    return "\n\n".join(parts)


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


def _refusal_message(refusal: Refusal, rel: str, repo: str) -> str:
    return {
        "secret": f"refused: {rel} looks like it holds secrets (keys, credentials, .env)",
        "missing": f"no file {rel!r} in {repo}; use glob_files to find it",
        "ignored": f"refused: {rel} is ignored (.gitignore or a vendored folder)",
        "symlink": f"refused: {rel} is or goes through a symbolic link; read the real path",
        "large": f"refused: {rel} is larger than {MAX_FILE_BYTES:,} bytes",
        "binary": f"refused: {rel} is a binary file",
    }[refusal]


def _read(repo: Repo, args: ReadArgs) -> str:
    rel = clean_relative(args.path)
    if not rel:
        raise ToolError("refused: give a file path, not the repository root")
    _refuse_secret(rel)
    root = Path(repo.root).resolve()
    target, real = confine(root, rel)
    # The real path first: a harmless-looking symlink to a secret is refused as a secret. Then
    # the path as given: like the walk, no symlink is followed, even to a readable file.
    selection = Selection(root)
    refusal = selection.refusal(real) or selection.refusal(rel)
    if refusal is not None:
        raise ToolError(_refusal_message(refusal, rel, repo.name))
    text = target.read_text(encoding="utf-8", errors="replace")
    return format_read(
        repo.name, rel, split_lines(redact(text, real)), args.start_line, args.end_line
    )


def format_read(repo: str, rel: str, lines: list[str], start: int, end: int | None) -> str:
    total = len(lines)
    if total == 0:
        return f"## {repo}: {rel} (empty file)"
    if start > total:
        raise ToolError(f"{rel} has only {total} lines")
    last = min(total, end if end is not None else total, start + MAX_READ_LINES - 1)
    if last < start:
        raise ToolError("end_line must not be before start_line")
    width = len(str(last))
    out = [f"## {repo}: {rel} (lines {start}-{last} of {total})"]
    out += [f"{n:>{width}} | {_line(lines[n - 1])}" for n in range(start, last + 1)]
    if last < total:
        out.append(f"[more: read_file with start_line={last + 1}]")
    return "\n".join(out)
