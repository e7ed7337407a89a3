"""`repo-changes`: commits in the period in the repositories the channel may read (the git log
of the indexed checkouts), grouped by area (top-level folder), with authors, and links where
the remote is a known forge."""

from __future__ import annotations

import asyncio
from collections import defaultdict
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path

from core.code.forge import Forge, forge_of
from core.code.git_local import run_git
from core.digest.kinds.base import DigestContent, DigestContext, Kind, clip, register

MAX_COMMITS = 200  # per repository and period
MAX_SHOWN = 40
GIT_TIMEOUT = 30.0
_SEP = "\x1f"


@dataclass
class Commit:
    sha: str
    author: str
    subject: str
    areas: set[str] = field(default_factory=set)


def _git(root: Path, *args: str) -> str:
    # The project's one way to run git on a checkout: no hook from the repository's config,
    # no GIT_DIR from the environment pointing elsewhere.
    result = run_git(root, *args, timeout=GIT_TIMEOUT, errors="replace")
    if result is None:
        raise RuntimeError(f"git did not run or took longer than {GIT_TIMEOUT:.0f} s")
    if result.returncode != 0:
        raise RuntimeError(
            result.stderr.strip().splitlines()[-1] if result.stderr else "git failed"
        )
    return result.stdout


def read_log(root: Path, start: datetime, end: datetime) -> tuple[list[Commit], Forge | None]:
    """Commits committed in (start, end], newest first, and the forge of the remote (None:
    not a forge Threadline can link to)."""
    out = _git(
        root,
        "log",
        f"--since={start.isoformat()}",
        f"--until={end.isoformat()}",
        "--no-merges",
        f"--max-count={MAX_COMMITS}",
        f"--format=%x1e%H{_SEP}%an{_SEP}%s",
        "--name-only",
    )
    commits: list[Commit] = []
    for block in out.split("\x1e"):
        head, _, files = block.strip("\n").partition("\n")
        parts = head.split(_SEP)
        if len(parts) != 3:
            continue
        commit = Commit(parts[0], parts[1], parts[2])
        for path in files.splitlines():
            path = path.strip()
            if path:
                commit.areas.add(path.split("/", 1)[0] if "/" in path else "(top level)")
        commits.append(commit)
    try:
        forge = forge_of(_git(root, "config", "--get", "remote.origin.url"))
    except RuntimeError:
        forge = None
    return commits, forge


async def collect(ctx: DigestContext) -> DigestContent:
    sub = ctx.subscription
    notes: list[str] = []
    repos = await ctx.repos.visible(ctx.session)
    if sub.repo:
        repos = [r for r in repos if r.name == sub.repo]
        if not repos:
            notes.append(f"The repository {sub.repo!r} is not registered or not readable here.")
    lines: list[str] = []
    material: list[str] = []
    total = 0
    for repo in repos:
        root = Path(repo.root)
        if not (root / ".git").exists():
            notes.append(f"{repo.name}: not a git checkout, no history to read.")
            continue
        try:
            commits, forge = await asyncio.to_thread(read_log, root, ctx.start, ctx.end)
        except RuntimeError as exc:  # run_git turns OSError and timeouts into None
            notes.append(f"{repo.name}: the git log could not be read ({clip(str(exc), 120)}).")
            continue
        if not commits:
            continue
        total += len(commits)
        by_area: dict[str, list[Commit]] = defaultdict(list)
        for c in commits:
            for area in sorted(c.areas) or ["(no files)"]:
                by_area[area].append(c)
        authors = sorted({c.author for c in commits})
        lines.append(
            f"**{repo.name}**: {len(commits)} commit(s) by {', '.join(authors[:8])}"
            + (f" and {len(authors) - 8} more" if len(authors) > 8 else "")
        )
        shown = 0
        for area, items in sorted(by_area.items(), key=lambda kv: -len(kv[1])):
            if shown >= MAX_SHOWN:
                break
            lines.append(f"- `{area}` ({len(items)})")
            for c in items[:5]:
                url = forge.commit_link(c.sha) if forge is not None else None
                link = f" ([{c.sha[:8]}]({url}))" if url else f" (`{c.sha[:8]}`)"
                lines.append(f"  - {clip(c.subject, 100)} — {c.author}{link}")
                shown += 1
            if len(items) > 5:
                lines.append(f"  - … {len(items) - 5} more in `{area}`")
        material.append(
            f"Repository {repo.name}:\n"
            + "\n".join(
                f"- [{', '.join(sorted(c.areas))}] {c.subject} ({c.author})" for c in commits
            )
        )
    if total == 0:
        return DigestContent([], "", empty=True, notes=notes)
    return DigestContent(lines, "\n\n".join(material), empty=False, notes=notes)


register(
    Kind(
        "repo-changes",
        "Repository changes",
        "commits since the last digest in the repositories this channel may read",
        collect,
        permissions=("code.read",),
        needs_repo=True,
    )
)
