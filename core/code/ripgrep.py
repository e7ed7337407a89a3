"""The ripgrep driver behind `grep_code`: the command line, reading its JSON stream one
bounded line at a time, and showing hits only as the file's redacted lines.

What ripgrep reports is filtered through `core.code.selection` (a `--glob` only narrows), and
every line shown is the file's own line after `core.code.redact`, on the same line number.
"""

from __future__ import annotations

import asyncio
import json
import shutil
import subprocess
import sysconfig
from collections.abc import AsyncIterator, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from core.code.git_local import tracked_but_ignored
from core.code.redact import redact
from core.code.selection import MAX_FILE_BYTES, SKIPPED_DIRS, Selection, skipped_dir
from core.tools.result import CodeLocation, ToolResult

if TYPE_CHECKING:
    from core.store.models import Repo

GREP_TIMEOUT = 10.0  # seconds for the whole search; results found by then are returned
MAX_LINE_CHARS = 300
# ripgrep writes one JSON line per reported line, and JSON spells a control character in six
# bytes (`\u0001`): room for any line of a file within the size limit, twice (its text and the
# submatches'). A longer one is skipped, never fatal (`read_lines`).
RG_LINE_LIMIT = 12 * MAX_FILE_BYTES + (1 << 16)
# Tracked files a .gitignore matches, named to ripgrep one by one (`tracked_paths`); past this
# many, or this many characters of names (a command line has a size limit, and a hostile
# repository can have 4,096-character paths), ripgrep reads ignored folders too and
# `Selection` drops what git does not track.
MAX_NAMED_FILES = 1_000
MAX_NAMED_CHARS = 100_000


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


def clip_line(text: str) -> str:
    text = text.rstrip("\r\n")
    return text if len(text) <= MAX_LINE_CHARS else text[:MAX_LINE_CHARS] + " […]"


def split_lines(text: str) -> list[str]:
    """Lines as ripgrep and the chunker count them: only "\n" ends a line (splitlines would
    also break at form feeds and other separators and shift every number after them)."""
    lines = text.split("\n")
    if lines and lines[-1] == "":
        lines.pop()
    return [line.removesuffix("\r") for line in lines]


@dataclass
class FileHits:
    repo: str
    path: str
    lines: list[tuple[int, bool, str]] = field(default_factory=list)  # (number, is_match, text)


@dataclass
class GrepRun:
    limit: int
    files: list[FileHits] = field(default_factory=list)
    matches: int = 0
    stopped: bool = False  # more matches existed than `limit`
    timed_out: bool = False
    skipped_lines: int = 0  # reported lines too long to read
    errors: list[str] = field(default_factory=list)


def _text(obj: dict[str, Any]) -> str:
    if "text" in obj:
        return str(obj["text"])
    return "<non-UTF-8 text>"  # a path that is not UTF-8: Selection finds no such file


def tracked_paths(root: Path, path_glob: str | None) -> list[str]:
    """The files git tracks under `root` that a .gitignore matches, and the walk reads, that
    `path_glob` admits. ripgrep knows only the ignore files, so it is given these by name (a
    file named on its command line is searched whatever the ignore rules say). Blocks on git."""
    import pathspec

    found = tracked_but_ignored(root) or []
    kept = [p for p in found if not any(skipped_dir(part) for part in p.split("/")[:-1])]
    if path_glob:
        negated = path_glob.startswith("!")
        try:
            spec = pathspec.GitIgnoreSpec.from_lines([path_glob.removeprefix("!")])
        except ValueError:  # not a pattern ("\\"): ripgrep reports its own error for it
            return []
        kept = [p for p in kept if spec.match_file(p) != negated]
    return kept


def rg_command(
    pattern: str, path_glob: str | None, context_lines: int, tracked: Sequence[str] = ()
) -> list[str]:
    """ripgrep, told to skip what the walk skips so it does not search in vain. What it
    reports still goes through `Selection` (its gitignore dialect differs in corners, and
    `--glob` overrides ignore rules), so the glob here only narrows the search. `tracked`:
    the files `tracked_paths` found, which ripgrep would leave out."""
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
    if len(tracked) > MAX_NAMED_FILES or sum(len(p) + 1 for p in tracked) > MAX_NAMED_CHARS:
        return [*cmd, "--no-ignore-vcs", "--regexp", pattern, "--", "."]
    return [*cmd, "--regexp", pattern, "--", ".", *tracked]


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


async def grep_repo(repo: Repo, cmd: list[str], run: GrepRun) -> None:
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
    current: FileHits | None = None
    # A file named on the command line and also found in its folder is searched twice: each
    # search is one begin..end block in the output, and only a file's first block counts.
    searched: set[str] = set()
    repeat = False
    try:
        async for line in read_lines(proc.stdout):
            if line is None:
                run.skipped_lines += 1
                continue
            event = json.loads(line)
            kind, data = event.get("type"), event.get("data", {})
            if kind == "begin":
                rel = _text(data["path"]).removeprefix("./")
                repeat = rel in searched
                searched.add(rel)
            if kind not in ("match", "context") or repeat:
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
                current = FileHits(repo.name, rel)
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


def redact_hits(run: GrepRun, roots: dict[str, Path], pattern: str) -> None:
    """Show each reported line as the file's redacted line of that number: a secret never
    leaves, even on a line that matched only through it, and a private-key block is
    recognised across lines (ripgrep sees one line at a time). A match whose line changed
    under redaction is kept only if the redacted line still matches the pattern by itself:
    otherwise a pattern could probe a secret a character at a time."""
    files: list[tuple[FileHits, list[str]]] = []
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
    kept: list[FileHits] = []
    for index, (hits, lines) in enumerate(files):
        shown = []
        for number, is_match, _ in hits.lines:
            if (index, number) in withheld:
                run.matches -= 1
                continue
            shown.append((number, is_match, clip_line(lines[number - 1])))
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


async def grep(
    repos: list[Repo], pattern: str, path_glob: str | None, context_lines: int, limit: int
) -> GrepRun:
    """Search `repos` in order, stopping past `limit` matches or at `GREP_TIMEOUT` (what was
    found by then is kept), with every reported line redacted (`redact_hits`)."""
    run = GrepRun(limit)
    try:
        async with asyncio.timeout(GREP_TIMEOUT):
            for repo in repos:
                tracked = await asyncio.to_thread(tracked_paths, Path(repo.root), path_glob)
                cmd = rg_command(pattern, path_glob, context_lines, tracked)
                await grep_repo(repo, cmd, run)
                if run.stopped:  # one match past the limit was seen: there are more
                    break
    except TimeoutError:
        run.timed_out = True
    roots = {r.name: Path(r.root) for r in repos}
    await asyncio.to_thread(redact_hits, run, roots, pattern)
    return run


def format_grep(run: GrepRun, pattern: str) -> str:
    return grep_result(run, pattern).text


def grep_result(run: GrepRun, pattern: str) -> ToolResult:
    """The grep output for the model, and the lines it shows as data: one location per run
    of consecutive lines (matches and their context)."""
    if not run.files:
        text = f"No matches for /{pattern}/."
        if run.timed_out:
            text += f" (The search timed out after {GREP_TIMEOUT:.0f} s.)"
        if run.skipped_lines:
            text += f" ({run.skipped_lines} line(s) too long to read were skipped.)"
        return ToolResult(text)
    out = [f"{run.matches} match{'es' * (run.matches != 1)} in {len(run.files)} file(s):"]
    at = len(out[0]) + 1  # where the next line of `out` begins in the text
    locations: list[CodeLocation] = []
    block: CodeLocation | None = None

    def add(line: str) -> None:
        nonlocal at
        out.append(line)
        at += len(line) + 1

    for hits in run.files:
        add(f"## {hits.repo}: {hits.path}")
        previous = None
        for number, is_match, text in hits.lines:
            if previous is not None and number > previous + 1:
                add("--")
            if block is not None and previous is not None and number == previous + 1:
                block = replace(block, end=number)
            else:
                if block is not None:
                    locations.append(block)
                block = CodeLocation(hits.repo, hits.path, number, number, "grep", at=at)
            add(f"{number}{':' if is_match else '-'} {text}")
            previous = number
        if block is not None:
            locations.append(block)
            block = None
    if run.stopped:
        out.append(f"[stopped at {run.limit} matches; narrow the pattern or path_glob]")
    if run.timed_out:
        out.append(f"[the search timed out after {GREP_TIMEOUT:.0f} s; results are partial]")
    if run.skipped_lines:
        out.append(f"[{run.skipped_lines} line(s) too long to read were skipped]")
    return ToolResult("\n".join(out), tuple(locations))
