"""The walk (core/code/walk.py), secret detection (core/code/secrets.py), path confinement
and repository naming (core/code/paths.py, core/code/repos.py), on a real fixture tree."""

from __future__ import annotations

import asyncio
import os
from pathlib import Path

import pytest

from core.code.paths import clean_relative, confine
from core.code.repos import RepoError, default_name, is_git_url, redact_url, validate_name
from core.code.ripgrep import read_lines, split_lines
from core.code.secrets import looks_secret
from core.code.selection import Selection
from core.code.tools import format_read
from core.code.walk import excluded, walk
from core.errors import ToolError
from tests.support.code_repo import READABLE, make_repo, write


def test_walk_yields_exactly_the_readable_files(tmp_path: Path) -> None:
    root = make_repo(tmp_path)
    files = list(walk(root))
    assert {f.path for f in files} == READABLE
    assert [f.path for f in files] == sorted(f.path for f in files)  # stable order
    app = next(f for f in files if f.path == "src/app.py")
    assert app.size == (root / "src/app.py").stat().st_size
    assert app.mtime_ns == (root / "src/app.py").stat().st_mtime_ns


def test_names_that_are_not_utf8_are_left_out(tmp_path: Path) -> None:
    # They would reach the database and JSON as lone surrogates, which both refuse.
    root = tmp_path / "repo"
    write(root, "ok.py", "x = 1\n")
    os.mkdir(os.path.join(os.fsencode(root), b"dir\xff"))
    for name in (b"bad\xff.py", b"dir\xff/inner.py"):
        with open(os.path.join(os.fsencode(root), name), "wb") as fh:
            fh.write(b"y = 2\n")
    assert [f.path for f in walk(root)] == ["ok.py"]
    assert Selection(root).refusal(os.fsdecode(b"bad\xff.py")) == "missing"


def test_walk_size_limit_is_a_parameter(tmp_path: Path) -> None:
    root = make_repo(tmp_path)
    small = {f.path for f in walk(root, max_bytes=40)}
    assert "src/app.py" not in small  # 200+ bytes
    assert "sub/keep.log" in small


def test_nested_gitignore_applies_below_its_folder_only(tmp_path: Path) -> None:
    root = tmp_path / "r"
    write(root, "a/.gitignore", "*.txt\n")
    write(root, "a/x.txt", "x")
    write(root, "a/b/y.txt", "y")  # patterns without a slash apply at any depth below
    write(root, "x.txt", "top")  # but not above the .gitignore's folder
    write(root, ".gitignore", "/only_root.md\n")
    write(root, "only_root.md", "r")
    write(root, "c/only_root.md", "kept: anchored pattern")
    assert {f.path for f in walk(root)} == {
        ".gitignore",
        "a/.gitignore",
        "x.txt",
        "c/only_root.md",
    }


def test_excluded_matches_the_walk(tmp_path: Path) -> None:
    root = make_repo(tmp_path).resolve()
    assert excluded(root, "app.log")
    assert excluded(root, "generated/out.py")
    assert excluded(root, "sub/local.txt")
    assert excluded(root, "node_modules/pkg/index.js")
    assert not excluded(root, "sub/keep.log")
    assert not excluded(root, "src/app.py")


@pytest.mark.parametrize(
    "path",
    [
        ".env",
        "config/.env",
        ".env.production",
        "prod.env",
        "deploy.pem",
        "certs/server.KEY",
        "id_rsa",
        "home/.ssh/config",
        "id_ed25519.pub",
        "credentials",
        "gcp/credentials.json",
        ".netrc",
        ".aws/config",
        "secrets.yaml",
        "terraform.tfstate",
        # issue 10: secret files that were indexed and served
        ".envrc",
        "deploy/.envrc",
        "keys/deploy.ppk",
        "certs/client.p12",
        "certs/client.PFX",
        "android/release.jks",
        "android/debug.keystore",
        ".npmrc",
        "frontend/.npmrc",
        ".pypirc",
        "infra/prod.tfstate",
        "infra/terraform.tfstate.backup",
        "kubeconfig",
        "ops/staging.kubeconfig",
        "ops/kubeconfig.yaml",
        "home/.kube/config",
        "home/.aws/credentials",
        "home/.config/gcloud/application_default_credentials.json",
        "home/.config/gcloud/credentials.db",
        "home/.config/gcloud/access_tokens.db",
        "application_default_credentials.json",
        "home/.azure/accessTokens.json",
        "accessTokens.json",
        "home/.docker/config.json",
        ".my.cnf",
        ".s3cfg",
        ".vault-token",
        ".terraformrc",
        "keys/deploy_ed25519",
        "AuthKey_ABC123.p8",
    ],
)
def test_secret_looking_files(path: str) -> None:
    assert looks_secret(path)


@pytest.mark.parametrize(
    "path",
    [
        ".env.example",
        "src/secrets.py",
        "environment.py",
        "docs/keys.md",
        "src/credentials.py",
        "KEYS.asc",  # public keys and signatures: private-key blocks are redacted by content
        "release.tar.gz.asc",
        "prod.tfvars",  # settings; a password in one is redacted by content
        "src/gcloud/storage.py",  # a package named gcloud, not ~/.config/gcloud
        "src/kube.py",
        "docker/config.json",
        "tls/server.crt",
    ],
)
def test_ordinary_files_are_not_secrets(path: str) -> None:
    assert not looks_secret(path)


@pytest.mark.parametrize(
    "path",
    ["/etc/passwd", "../x", "a/../../x", "src/../..", "C:/Windows", "\\abs", "~/.ssh/id_rsa"],
)
def test_escaping_paths_are_refused(path: str) -> None:
    with pytest.raises(ToolError, match="refused"):
        clean_relative(path)


def test_relative_paths_are_normalised() -> None:
    assert clean_relative("./src//app.py") == "src/app.py"
    assert clean_relative("src\\app.py") == "src/app.py"


def test_confine_follows_symlinks_and_refuses_escapes(tmp_path: Path) -> None:
    root = make_repo(tmp_path)
    with pytest.raises(ToolError, match="outside the repository"):
        confine(root, "escape.txt")
    with pytest.raises(ToolError, match="outside the repository"):
        confine(root, "escape_dir/secret.txt")
    target, real = confine(root, "notes.txt")
    assert real == ".env"  # the real target, so the secret check sees it
    assert target == (root / ".env").resolve()


def test_read_formatting_numbers_lines_and_points_at_the_rest() -> None:
    lines = [f"line {i}" for i in range(1, 11)]
    text = format_read("api", "a.py", lines, 3, 5)
    assert text.splitlines() == [
        "## api: a.py (lines 3-5 of 10)",
        "3 | line 3",
        "4 | line 4",
        "5 | line 5",
        "[more: read_file with start_line=6]",
    ]
    assert format_read("api", "a.py", lines, 9, None).splitlines()[-1] == "10 | line 10"
    with pytest.raises(ToolError, match="only 10 lines"):
        format_read("api", "a.py", lines, 11, None)
    with pytest.raises(ToolError, match="before start_line"):
        format_read("api", "a.py", lines, 5, 4)


@pytest.mark.parametrize(
    ("source", "name"),
    [
        ("https://github.com/team/api.git", "api"),
        ("git@github.com:team/web.git", "web"),
        ("/srv/code/billing/", "billing"),
        ("file:///tmp/x/my repo.git", "my-repo"),
    ],
)
def test_default_names(source: str, name: str) -> None:
    assert default_name(source) == name


@pytest.mark.parametrize("name", ["", "..", "a/b", "-x", "x" * 65, "a b", "ok.", "a..b"])
def test_invalid_names(name: str) -> None:
    with pytest.raises(RepoError, match="invalid repository name"):
        validate_name(name)


def test_git_urls_and_redaction() -> None:
    assert is_git_url("https://host/x.git")
    assert is_git_url("git@host:team/x.git")
    assert is_git_url("file:///srv/x.git")
    assert not is_git_url("/srv/x")
    assert not is_git_url("relative/dir")
    assert redact_url("https://bob:tok3n@host:8443/x.git") == "https://host:8443/x.git"
    assert redact_url("https://host/x.git") == "https://host/x.git"


async def test_read_lines_skips_a_line_over_the_limit_and_goes_on() -> None:
    stream = asyncio.StreamReader(limit=64)
    stream.feed_data(b"first\n" + b"x" * 500 + b"\nsecond\n" + b"y" * 100 + b"\nlast")
    stream.feed_eof()
    assert [line async for line in read_lines(stream)] == [
        b"first\n",
        None,
        b"second\n",
        None,
        b"last",
    ]


def test_lines_are_numbered_as_ripgrep_numbers_them() -> None:
    assert split_lines("a\r\nb\x0cc\n\nd\n") == ["a", "b\x0cc", "", "d"]
    assert split_lines("no newline") == ["no newline"]
    assert split_lines("") == []
