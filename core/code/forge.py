"""Links to a repository's files on its forge (GitHub, GitLab, Bitbucket, Gitea/Forgejo), at a
commit and a line range, built from the repository's git remote.

A remote is accepted as `https://[user[:token]@]host[:port]/owner/repo[.git]`, `http://...`,
`ssh://[user@]host[:port]/owner/repo[.git]`, `git://host/owner/repo` and the scp-like
`user@host:owner/repo.git`. Whatever credentials a remote holds never reach a link: only the
host and the repository's path are kept (`clean_remote` is what is stored). A host that is not
recognised gets no link (a wrong link is worse than none):

- `github.com` and hosts named `github.*` (GitHub Enterprise): `/blob/<commit>/<path>#L10-L42`;
- `gitlab.com` and hosts named `gitlab.*`: `/-/blob/<commit>/<path>#L10-42`;
- `bitbucket.org`: `/src/<commit>/<path>#lines-10:42`;
- `codeberg.org` and hosts whose name has a `gitea` or `forgejo` label:
  `/src/commit/<commit>/<path>#L10-L42`;
- any other host an operator names in `THREADLINE_FORGE_HOSTS` (`git.example.org=gitea`).

Links always use https, except for a self-hosted forge whose remote is plain `http://`.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Literal, get_args
from urllib.parse import quote, urlsplit

ForgeKind = Literal["github", "gitlab", "bitbucket", "gitea"]
FORGE_KINDS: tuple[ForgeKind, ...] = get_args(ForgeKind)

_SCP = re.compile(r"^(?:[^@/\s]+@)?(?P<host>[A-Za-z0-9.-]{2,}):(?!//)(?P<path>[^\s]+)$")
_SCHEMES = frozenset({"https", "http", "ssh", "git", "git+ssh", "ssh+git"})
_COMMIT = re.compile(r"^[0-9a-f]{7,64}$")
_SEGMENT = re.compile(r"^[A-Za-z0-9._~-]+$")
_KNOWN: dict[str, ForgeKind] = {
    "github.com": "github",
    "gitlab.com": "gitlab",
    "bitbucket.org": "bitbucket",
    "codeberg.org": "gitea",
}


@dataclass(frozen=True, slots=True)
class Remote:
    """A remote reduced to what a link needs: no user, no password, no token."""

    scheme: Literal["https", "http"]
    host: str  # lower case, with a port only for http(s) remotes that gave one
    path: str  # `owner/repo` (GitLab: `group/subgroup/repo`), without `.git`

    def __str__(self) -> str:
        return f"{self.scheme}://{self.host}/{self.path}"


@dataclass(frozen=True, slots=True)
class Forge:
    """A repository on a forge: `base` is its web address (`https://github.com/team/api`)."""

    kind: ForgeKind
    base: str

    def link(self, commit: str, path: str, start: int, end: int) -> str | None:
        """The file at `commit`, lines `start`-`end` highlighted; None for a commit that is not
        a hex object name or a path that is not a plain relative one."""
        if not _COMMIT.match(commit) or not path or path.startswith("/") or ".." in path.split("/"):
            return None
        start, end = max(1, start), max(1, start, end)
        where = quote(path, safe="/")
        one = start == end
        if self.kind == "github":
            return f"{self.base}/blob/{commit}/{where}#L{start}" + ("" if one else f"-L{end}")
        if self.kind == "gitlab":
            return f"{self.base}/-/blob/{commit}/{where}#L{start}" + ("" if one else f"-{end}")
        if self.kind == "bitbucket":
            return f"{self.base}/src/{commit}/{where}#lines-{start}" + ("" if one else f":{end}")
        return f"{self.base}/src/commit/{commit}/{where}#L{start}" + ("" if one else f"-L{end}")

    def commit_link(self, commit: str) -> str | None:
        """The page of one commit; None for a commit that is not a hex object name."""
        if not _COMMIT.match(commit):
            return None
        if self.kind == "gitlab":
            return f"{self.base}/-/commit/{commit}"
        if self.kind == "bitbucket":
            return f"{self.base}/commits/{commit}"
        return f"{self.base}/commit/{commit}"  # GitHub, Gitea and Forgejo


def parse_remote(remote: str) -> Remote | None:
    """The host and repository path of a git remote URL, credentials dropped; None for a
    local path, a `file://` URL or anything that is not a remote repository."""
    remote = remote.strip()
    if not remote:
        return None
    if "://" in remote:
        try:
            parts = urlsplit(remote)
            port = parts.port
        except ValueError:
            return None
        scheme = parts.scheme.lower()
        if scheme not in _SCHEMES or not parts.hostname:
            return None
        host = parts.hostname.lower()
        web: Literal["https", "http"] = "http" if scheme == "http" else "https"
        if scheme in ("https", "http") and port is not None:
            host = f"{host}:{port}"  # an ssh or git port says nothing about the web one
        path = parts.path
    else:
        match = _SCP.match(remote)
        if match is None:
            return None
        host, path, web = match["host"].lower(), match["path"], "https"
    segments = [s for s in path.strip("/").removesuffix(".git").split("/") if s]
    if len(segments) < 2 or not all(_SEGMENT.match(s) and s not in (".", "..") for s in segments):
        return None
    return Remote(web, host, "/".join(segments))


def clean_remote(remote: str | None) -> str | None:
    """The remote as it may be stored and shown: `https://host/owner/repo`, no credentials;
    None for anything that is not a remote repository."""
    parsed = parse_remote(remote) if remote else None
    return str(parsed) if parsed is not None else None


def forge_kind(host: str, configured: Mapping[str, ForgeKind] | None = None) -> ForgeKind | None:
    """Which forge serves `host` (`host:port` matches a configured `host:port` or `host`)."""
    host = host.lower()
    bare = host.split(":", 1)[0]
    for key in (host, bare):
        if configured and key in configured:
            return configured[key]
    if bare in _KNOWN:
        return _KNOWN[bare]
    labels = bare.split(".")
    if labels[0] == "github":
        return "github"
    if labels[0] == "gitlab":
        return "gitlab"
    if any(label in ("gitea", "forgejo") for label in labels):
        return "gitea"
    return None


def forge_of(remote: str | None, configured: Mapping[str, ForgeKind] | None = None) -> Forge | None:
    """The forge of a repository with this remote; None without a remote or for a host that
    is not recognised."""
    parsed = parse_remote(remote) if remote else None
    if parsed is None:
        return None
    kind = forge_kind(parsed.host, configured)
    if kind is None:
        return None
    return Forge(kind, str(parsed))


def parse_forge_hosts(value: str) -> dict[str, ForgeKind]:
    """`THREADLINE_FORGE_HOSTS`: `git.example.org=gitea,code.corp:8443=gitlab`."""
    hosts: dict[str, ForgeKind] = {}
    for item in value.split(","):
        if not item.strip():
            continue
        host, sep, kind = item.partition("=")
        host, kind = host.strip().lower(), kind.strip().lower()
        if not sep or not host or kind not in FORGE_KINDS:
            choices = ", ".join(FORGE_KINDS)
            raise ValueError(
                f"THREADLINE_FORGE_HOSTS: {item.strip()!r} is not HOST=KIND (KIND: {choices})"
            )
        hosts[host] = kind
    return hosts
