"""Registered code repositories: a local directory (indexed in place) or a git URL (cloned with
the system `git` under the data dir, `DATA_DIR/repos/NAME`).

Repositories belong to the installation: the operator registers them (`threadline index`), and
the policy's `repos` key decides which conversations may read which. `visible` and `find` are
the only ways tools and commands reach a repository, and a repository the session may not read
is reported exactly like one that does not exist.
"""

from __future__ import annotations

import asyncio
import os
import re
import subprocess
from datetime import UTC
from pathlib import Path
from typing import TYPE_CHECKING
from urllib.parse import urlsplit, urlunsplit

from core.errors import Refusal
from core.session import ToolSession

if TYPE_CHECKING:
    from core.store.engine import Database
    from core.store.models import Repo

NAME_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$")
_URL_RE = re.compile(r"^(?P<scheme>[A-Za-z][A-Za-z0-9+.-]*)://")
_SCP_RE = re.compile(r"^[\w.-]+@[\w.-]+:(?!//)")  # git@github.com:team/api.git
GIT_SCHEMES = frozenset({"https", "http", "ssh", "git", "file"})
GIT_TIMEOUT = 600.0


class RepoError(Refusal):
    """A repository cannot be registered or updated as asked; the message is safe to show."""


def validate_name(name: str) -> str:
    if not NAME_RE.match(name) or name.endswith(".") or ".." in name:
        raise RepoError(
            f"invalid repository name {name!r}: use 1-64 letters, digits, '.', '_' or '-', "
            "starting with a letter or digit"
        )
    return name


def is_git_url(source: str) -> bool:
    match = _URL_RE.match(source)
    if match:
        return True
    return bool(_SCP_RE.match(source))


def redact_url(source: str) -> str:
    """The URL without a password or token (`https://user:tok@host/x` -> `https://host/x`)."""
    if not _URL_RE.match(source):
        return source
    parts = urlsplit(source)
    if parts.username is None and parts.password is None:
        return source
    host = parts.hostname or ""
    netloc = f"{host}:{parts.port}" if parts.port else host
    return urlunsplit((parts.scheme, netloc, parts.path, parts.query, parts.fragment))


def default_name(source: str) -> str:
    """`https://host/team/api.git` -> `api`; `/src/web/` -> `web`."""
    tail = source.rstrip("/").replace(":", "/").rsplit("/", 1)[-1]
    tail = tail.removesuffix(".git")
    cleaned = re.sub(r"[^A-Za-z0-9._-]+", "-", tail).strip("-.")
    return cleaned[:64] or "repo"


def _git(*args: str, cwd: Path | None = None) -> None:
    env = {
        **os.environ,
        "GIT_TERMINAL_PROMPT": "0",  # never wait for a password on a terminal
        "GIT_ALLOW_PROTOCOL": "file:git:http:https:ssh",  # no ext:: or fd:: transports
    }
    try:
        subprocess.run(
            ["git", *args],
            cwd=cwd,
            env=env,
            stdin=subprocess.DEVNULL,
            capture_output=True,
            text=True,
            timeout=GIT_TIMEOUT,
            check=True,
        )
    except FileNotFoundError:
        raise RepoError("the `git` command is not installed") from None
    except subprocess.TimeoutExpired:
        raise RepoError(f"git {args[0]} took longer than {GIT_TIMEOUT:.0f} s") from None
    except subprocess.CalledProcessError as exc:
        lines = [ln for ln in (exc.stderr or "").splitlines() if ln.strip()]
        reason = redact_url(lines[-1].strip()) if lines else f"exit status {exc.returncode}"
        raise RepoError(f"git {args[0]} failed: {reason}") from None


class RepoStore:
    def __init__(self, db: Database, clone_dir: Path) -> None:
        self._db = db
        self.clone_dir = clone_dir

    @property
    def db(self) -> Database:
        """The database the repositories (and what indexing derives from them) live in."""
        return self._db

    # -- registering ---------------------------------------------------------------------------

    async def register(self, source: str, name: str | None = None) -> Repo:
        """Register `source` (a local directory or git URL) as `name`, or return the repository
        already registered from the same source (a git clone is updated first). Raises
        `RepoError` for a bad name, a missing directory, a failed clone or a name taken by
        another source."""
        if is_git_url(source):
            return await self._register_git(source, name)
        return await self._register_local(source, name)

    async def _register_local(self, source: str, name: str | None) -> Repo:
        root = await asyncio.to_thread(lambda: Path(source).expanduser().resolve())
        if not await asyncio.to_thread(root.is_dir):
            raise RepoError(f"{source} is not a directory (nor a git URL)")
        name = validate_name(name or default_name(str(root)))
        existing = await self.get(name)
        if existing is not None:
            if existing.root != str(root):
                raise RepoError(_taken(name, existing.origin))
            return existing
        return await self._insert(name, root, str(root))

    async def _register_git(self, source: str, name: str | None) -> Repo:
        scheme = (_URL_RE.match(source) or {"scheme": "ssh"})["scheme"].lower()
        if scheme not in GIT_SCHEMES:
            raise RepoError(f"unsupported git URL scheme {scheme!r}; use https, ssh or file")
        name = validate_name(name or default_name(source))
        origin = redact_url(source)
        existing = await self.get(name)
        if existing is not None:
            if existing.origin != origin:
                raise RepoError(_taken(name, existing.origin))
            await self.update_checkout(existing)
            return existing
        dest = (self.clone_dir / name).resolve()
        if dest.exists():
            raise RepoError(f"{dest} already exists but is not a registered repository")
        dest.parent.mkdir(parents=True, exist_ok=True)
        await asyncio.to_thread(_git, "clone", "--quiet", "--depth", "1", "--", source, str(dest))
        return await self._insert(name, dest, origin)

    async def update_checkout(self, repo: Repo) -> None:
        """Bring a clone up to date with its origin (local directories are read as they are)."""
        if not is_git_url(repo.origin):
            return
        root = Path(repo.root)
        await asyncio.to_thread(_git, "fetch", "--quiet", "--depth", "1", "origin", cwd=root)
        await asyncio.to_thread(_git, "reset", "--quiet", "--hard", "FETCH_HEAD", cwd=root)

    async def _insert(self, name: str, root: Path, origin: str) -> Repo:
        from sqlalchemy.exc import IntegrityError

        from core.store.models import Repo

        repo = Repo(name=name, root=str(root), origin=origin)
        try:
            async with self._db.session() as s:
                s.add(repo)
        except IntegrityError:
            raise RepoError(f"a repository named {name!r} was registered meanwhile") from None
        return repo

    # -- reading -------------------------------------------------------------------------------

    async def all(self) -> list[Repo]:
        from sqlmodel import col, select

        from core.store.models import Repo

        async with self._db.session() as s:
            return [_aware(r) for r in (await s.exec(select(Repo).order_by(col(Repo.name)))).all()]

    async def get(self, name: str) -> Repo | None:
        from sqlmodel import col, select

        from core.store.models import Repo

        async with self._db.session() as s:
            repo = (await s.exec(select(Repo).where(col(Repo.name) == name))).first()
        return _aware(repo) if repo is not None else None

    async def visible(self, session: ToolSession) -> list[Repo]:
        """The repositories this session may read, by name."""
        return [r for r in await self.all() if session.allows_repo(r.name)]

    async def find(self, session: ToolSession, name: str) -> Repo | None:
        """The repository `name` if it exists *and* the session may read it; else None (the
        caller cannot tell the two apart, by design)."""
        if not session.allows_repo(name):
            return None
        return await self.get(name)


def _aware(repo: Repo) -> Repo:
    """SQLite hands timestamps back without a zone; they are UTC like everywhere else."""
    if repo.created_at.tzinfo is None:
        repo.created_at = repo.created_at.replace(tzinfo=UTC)
    if repo.last_indexed_at is not None and repo.last_indexed_at.tzinfo is None:
        repo.last_indexed_at = repo.last_indexed_at.replace(tzinfo=UTC)
    return repo


def _taken(name: str, origin: str) -> str:
    return (
        f"a repository named {name!r} is already registered from {origin}; "
        "choose another name with --name"
    )
