"""Reading a local git work tree with the `git` command, without letting the repository run
anything: no fsmonitor hook from its config, no prompt, no index lock taken. Every failure
(no git, not a work tree, a repository git refuses as unsafe, a timeout) is None, never an
error: what is asked here only refines an answer that stands without git.
"""

from __future__ import annotations

import logging
import os
import subprocess
from pathlib import Path

log = logging.getLogger(__name__)

GIT_TIMEOUT = 10.0
# Variables that point git at another repository, index or work tree than `-C root` names
# (set when Threadline itself runs from a git hook, say): never passed on.
REDIRECTING = frozenset(
    {"GIT_DIR", "GIT_WORK_TREE", "GIT_INDEX_FILE", "GIT_OBJECT_DIRECTORY", "GIT_COMMON_DIR"}
)


def run_git(
    root: Path, *args: str, timeout: float = GIT_TIMEOUT, errors: str = "surrogateescape"
) -> subprocess.CompletedProcess[str] | None:
    """`git -C root args...`, its output as text. By default bytes that are not UTF-8, as in
    a file name, come through as lone surrogates, the way `os.scandir` names them; text meant
    for people (a commit subject) takes `errors="replace"`."""
    env = {
        **{k: v for k, v in os.environ.items() if k not in REDIRECTING},
        "GIT_TERMINAL_PROMPT": "0",
        "GIT_OPTIONAL_LOCKS": "0",  # `status` must not take the index lock of a live checkout
    }
    try:
        return subprocess.run(
            # No fsmonitor hook: a repository's own config must not run a program here.
            ["git", "-c", "core.fsmonitor=false", "-C", str(root), *args],
            env=env,
            stdin=subprocess.DEVNULL,
            capture_output=True,
            encoding="utf-8",
            errors=errors,
            timeout=timeout,
            check=False,
        )
    except (OSError, subprocess.SubprocessError) as exc:
        log.debug("git %s failed in %s: %s", args[0], root, type(exc).__name__)
        return None


def git_output(done: subprocess.CompletedProcess[str] | None) -> str | None:
    """The stripped output of a git command that succeeded, else None."""
    if done is None or done.returncode != 0:
        return None
    return done.stdout.strip()


def _paths(done: subprocess.CompletedProcess[str] | None) -> list[str] | None:
    if done is None or done.returncode != 0:
        return None
    return [p for p in done.stdout.split("\0") if p]


def tracked_files(root: Path) -> frozenset[str] | None:
    """The files git tracks under `root` (paths relative to it, "/"-separated), or None when
    `root` is in no git work tree git will read. Blocks on `git`: call it in a thread."""
    found = _paths(run_git(root, "ls-files", "-z", "--cached"))
    return frozenset(found) if found is not None else None


def tracked_but_ignored(root: Path) -> list[str] | None:
    """The tracked files under `root` that a `.gitignore` matches (git reads them anyway; so
    does Threadline), by git's own reading of the `.gitignore` files only (not
    `.git/info/exclude` or a global excludes file, which the walk does not read either)."""
    args = ("ls-files", "-z", "--cached", "--ignored", "--exclude-per-directory=.gitignore")
    return _paths(run_git(root, *args))
