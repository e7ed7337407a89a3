"""Links to the forge: each forge's shape, each remote form, credentials never in a link."""

from __future__ import annotations

import pytest

from core.code.forge import (
    Forge,
    clean_remote,
    forge_kind,
    forge_of,
    parse_forge_hosts,
    parse_remote,
)

COMMIT = "4f2c9e1d0b7a8c6e5f4d3c2b1a0918273645abcd"


@pytest.mark.parametrize(
    ("remote", "link"),
    [
        (
            "https://github.com/team/api.git",
            f"https://github.com/team/api/blob/{COMMIT}/api/auth.py#L10-L42",
        ),
        (
            "git@gitlab.com:group/sub/api.git",
            f"https://gitlab.com/group/sub/api/-/blob/{COMMIT}/api/auth.py#L10-42",
        ),
        (
            "ssh://git@bitbucket.org/team/api.git",
            f"https://bitbucket.org/team/api/src/{COMMIT}/api/auth.py#lines-10:42",
        ),
        (
            "https://codeberg.org/team/api",
            f"https://codeberg.org/team/api/src/commit/{COMMIT}/api/auth.py#L10-L42",
        ),
        (
            "git@gitea.example.org:team/api.git",
            f"https://gitea.example.org/team/api/src/commit/{COMMIT}/api/auth.py#L10-L42",
        ),
        (
            "https://code.forgejo.example.org/team/api.git",
            f"https://code.forgejo.example.org/team/api/src/commit/{COMMIT}/api/auth.py#L10-L42",
        ),
        (
            "https://github.corp.example/team/api.git",  # GitHub Enterprise
            f"https://github.corp.example/team/api/blob/{COMMIT}/api/auth.py#L10-L42",
        ),
    ],
)
def test_each_forge_links_to_the_lines_at_the_commit(remote: str, link: str) -> None:
    forge = forge_of(remote)
    assert forge is not None
    assert forge.link(COMMIT, "api/auth.py", 10, 42) == link


def test_one_line_is_linked_without_a_range() -> None:
    links = {
        kind: Forge(kind, "https://h/o/r").link(COMMIT, "a.py", 7, 7)
        for kind in ("github", "gitlab", "bitbucket", "gitea")
    }
    assert links == {
        "github": f"https://h/o/r/blob/{COMMIT}/a.py#L7",
        "gitlab": f"https://h/o/r/-/blob/{COMMIT}/a.py#L7",
        "bitbucket": f"https://h/o/r/src/{COMMIT}/a.py#lines-7",
        "gitea": f"https://h/o/r/src/commit/{COMMIT}/a.py#L7",
    }


@pytest.mark.parametrize(
    "remote",
    [
        "https://x-access-token:ghp_SECRETTOKEN123@github.com/team/api.git",
        "https://oauth2:glpat-SECRETTOKEN123@gitlab.com/team/api.git",
        "https://ghp_SECRETTOKEN123@github.com/team/api.git",
        "ssh://deploy:SECRETTOKEN123@github.com:2222/team/api.git",
        "https://github.com/team/api.git?token=SECRETTOKEN123#SECRETTOKEN123",
    ],
)
def test_credentials_never_reach_a_link_or_the_stored_remote(remote: str) -> None:
    forge = forge_of(remote)
    assert forge is not None
    link = forge.link(COMMIT, "a.py", 1, 2)
    assert link is not None and "SECRET" not in link and "@" not in link
    stored = clean_remote(remote)
    assert stored is not None and "SECRET" not in stored
    assert stored == "https://github.com/team/api" or stored.endswith("gitlab.com/team/api")


def test_remote_forms_reduce_to_host_and_path() -> None:
    assert str(parse_remote("git@github.com:team/api.git")) == "https://github.com/team/api"
    assert str(parse_remote("ssh://git@github.com:2222/team/api")) == "https://github.com/team/api"
    assert str(parse_remote("git://github.com/team/api.git")) == "https://github.com/team/api"
    # A self-hosted forge's web port and plain http are kept; an ssh port is not a web port.
    assert (
        str(parse_remote("http://git.local:3000/team/api.git")) == "http://git.local:3000/team/api"
    )


@pytest.mark.parametrize(
    "remote",
    ["", "/srv/code/api", "file:///srv/code/api.git", "https://github.com/api", "C:/code/api"],
)
def test_what_is_not_a_remote_repository_gets_no_forge(remote: str) -> None:
    assert forge_of(remote) is None
    assert clean_remote(remote) is None


def test_unknown_hosts_get_no_link_unless_configured() -> None:
    remote = "git@git.example.org:team/api.git"
    assert forge_of(remote) is None
    forge = forge_of(remote, {"git.example.org": "gitea"})
    assert forge == Forge("gitea", "https://git.example.org/team/api")
    assert forge_kind("code.corp:8443", {"code.corp": "gitlab"}) == "gitlab"
    assert forge_kind("notgithub.com") is None


def test_paths_are_encoded_and_bad_input_gets_no_link() -> None:
    forge = Forge("github", "https://github.com/team/api")
    assert forge.link(COMMIT, "docs/a b#c.md", 1, 3) == (
        f"https://github.com/team/api/blob/{COMMIT}/docs/a%20b%23c.md#L1-L3"
    )
    assert forge.link("main; rm -rf", "a.py", 1, 2) is None  # not an object name
    assert forge.link(COMMIT, "../etc/passwd", 1, 2) is None
    assert forge.link(COMMIT, "/etc/passwd", 1, 2) is None


def test_the_forge_hosts_setting() -> None:
    assert parse_forge_hosts("git.example.org=gitea, Code.Corp:8443=GitLab,") == {
        "git.example.org": "gitea",
        "code.corp:8443": "gitlab",
    }
    with pytest.raises(ValueError, match="THREADLINE_FORGE_HOSTS"):
        parse_forge_hosts("git.example.org=sourcehut")


@pytest.mark.parametrize(
    ("remote", "page"),
    [
        ("git@github.com:acme/api.git", "https://github.com/acme/api/commit/"),
        ("https://gitlab.com/acme/api", "https://gitlab.com/acme/api/-/commit/"),
        ("git@bitbucket.org:acme/api.git", "https://bitbucket.org/acme/api/commits/"),
        ("https://codeberg.org/acme/api.git", "https://codeberg.org/acme/api/commit/"),
    ],
)
def test_each_forge_links_to_a_commit_page(remote: str, page: str) -> None:
    forge = forge_of(remote)
    assert forge is not None
    assert forge.commit_link("a" * 40) == page + "a" * 40
    assert forge.commit_link("not-a-sha") is None
