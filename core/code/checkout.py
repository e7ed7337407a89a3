"""Links for the code an answer relied on (`core.agent.sources`): which commit a repository's
checkout is at, where its remote is, and whether a file still reads as it does there.

The code tools read the work tree, so a link points at the commit checked out when the answer
was written (for a clone, the commit the last `/index` fetched and indexed), and only when
the forge can show it:

- the commit is on some remote-tracking branch (`refs/remotes/...`): a local commit that was
  never pushed would be a broken link;
- the file has no uncommitted change (`git status`): a changed file's lines would not match;
- the remote is on a forge `core.code.forge` recognises; credentials in it never reach a link.

A repository indexed from a subfolder of a git work tree links with that folder's prefix.
Everything here is read locally: no network, and any failure just means no link.
"""

from __future__ import annotations

import asyncio
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from core.code.forge import Forge, ForgeKind, forge_of
from core.code.git_local import git_output, run_git
from core.code.repos import is_git_url

if TYPE_CHECKING:
    from core.code.repos import RepoStore
    from core.session import ToolSession


@dataclass(frozen=True, slots=True)
class Lines:
    """Lines `start`-`end` of `path` in repository `repo` (a name)."""

    repo: str
    path: str
    start: int
    end: int


@dataclass(frozen=True, slots=True)
class Checkout:
    commit: str | None  # HEAD, when a remote-tracking branch has it
    remote: str | None  # remote.origin.url as configured (may hold credentials: never shown)
    prefix: str  # the repository root's folder inside the git work tree ("" at the top)


def read_checkout(root: Path) -> Checkout:
    head = git_output(run_git(root, "rev-parse", "--verify", "--quiet", "HEAD^{commit}"))
    pushed = git_output(run_git(root, "branch", "--remotes", "--contains", head)) if head else None
    remote = git_output(run_git(root, "config", "--get", "remote.origin.url"))
    prefix = git_output(run_git(root, "rev-parse", "--show-prefix")) or ""
    return Checkout(head if pushed else None, remote or None, prefix.strip("/"))


def head_commit(root: Path) -> str | None:
    """The commit the work tree at `root` has checked out, or None (no git, not a repository).
    Blocks on `git`: call it in a thread."""
    return git_output(run_git(root, "rev-parse", "--verify", "--quiet", "HEAD^{commit}"))


def unchanged(root: Path, path: str) -> bool:
    """`path` (relative to `root`) is tracked and has no change against HEAD."""
    done = run_git(root, "status", "--porcelain", "--untracked-files=all", "--", path)
    return done is not None and done.returncode == 0 and not done.stdout.strip()


class CodeLinks:
    """Forge links for lines of the repositories a session may read."""

    def __init__(self, repos: RepoStore, hosts: Mapping[str, ForgeKind] | None = None) -> None:
        self._repos = repos
        self._hosts = dict(hosts or {})

    async def links(self, session: ToolSession, wanted: Sequence[Lines]) -> list[str | None]:
        """A link for each of `wanted`, or None where there is none to give."""
        out: list[str | None] = [None] * len(wanted)
        for name in dict.fromkeys(w.repo for w in wanted):
            repo = await self._repos.find(session, name)
            if repo is None:
                continue
            mine = [i for i, w in enumerate(wanted) if w.repo == name]
            found = await asyncio.to_thread(
                self._link_repo, Path(repo.root), repo.origin, [wanted[i] for i in mine]
            )
            for i, link in zip(mine, found, strict=True):
                out[i] = link
        return out

    def _link_repo(self, root: Path, origin: str, wanted: list[Lines]) -> list[str | None]:
        checkout = read_checkout(root)
        # A clone's origin is what the operator registered (stored without credentials); a
        # local folder's is what its git config says.
        remote = origin if is_git_url(origin) else checkout.remote
        forge: Forge | None = forge_of(remote, self._hosts)
        if forge is None or checkout.commit is None:
            return [None] * len(wanted)
        links: list[str | None] = []
        clean: dict[str, bool] = {}
        for w in wanted:
            if w.path not in clean:
                clean[w.path] = unchanged(root, w.path)
            if not clean[w.path]:
                links.append(None)
                continue
            path = f"{checkout.prefix}/{w.path}" if checkout.prefix else w.path
            links.append(forge.link(checkout.commit, path, w.start, w.end))
        return links
