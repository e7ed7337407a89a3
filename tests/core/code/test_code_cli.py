"""`threadline index` and `threadline repos` as real subprocesses (see test_cli.py)."""

from __future__ import annotations

import json
from datetime import datetime
from pathlib import Path

from tests.bot.test_cli import cli_env, run_cli  # noqa: F401  (fixture)
from tests.core.code.test_code import bare_repo
from tests.support.code_repo import READABLE, make_repo


def test_index_and_repos(cli_env: dict[str, str], tmp_path: Path) -> None:  # noqa: F811
    root = make_repo(tmp_path)
    total = len(READABLE)

    empty = run_cli(cli_env, tmp_path, "repos", "--json")
    assert empty.returncode == 0, empty.stderr
    assert json.loads(empty.stdout) == {"repos": []}

    first = run_cli(cli_env, tmp_path, "index", str(root))
    assert first.returncode == 0, first.stderr
    assert first.stdout.strip().startswith(
        f"Indexed api: {total} files — {total} added, 0 changed, 0 removed, 0 unchanged;"
    )
    assert "chunks written" in first.stdout
    (root / "cmd/main.go").unlink()
    again = run_cli(cli_env, tmp_path, "index", str(root))
    assert again.stdout.strip() == (
        f"Indexed api: {total - 1} files — 0 added, 0 changed, 1 removed, {total - 1} unchanged;"
        " 0 chunks written, 0 embedded."
    )

    _work, bare = bare_repo(tmp_path)
    cloned = run_cli(cli_env, tmp_path, "index", f"file://{bare}", "--name", "svc")
    assert cloned.returncode == 0, cloned.stderr
    assert "Indexed svc: 2 files — 2 added" in cloned.stdout

    listed = run_cli(cli_env, tmp_path, "repos", "--json")
    assert listed.returncode == 0, listed.stderr
    repos = json.loads(listed.stdout)["repos"]
    assert [(r["name"], r["origin"], r["files"]) for r in repos] == [
        ("api", str(root), total - 1),
        ("svc", f"file://{bare}", 2),
    ]
    assert set(repos[0]) == {"name", "origin", "root", "files", "chunks", "last_indexed_at"}
    assert repos[0]["chunks"] > 0 and repos[1]["chunks"] > 0
    assert repos[1]["root"] == str((tmp_path / "data" / "repos" / "svc").resolve())
    assert datetime.fromisoformat(repos[0]["last_indexed_at"]).utcoffset() is not None

    table = run_cli(cli_env, tmp_path, "repos")
    assert table.returncode == 0, table.stderr
    lines = table.stdout.splitlines()
    assert lines[0].split() == ["name", "origin", "files", "chunks", "last", "indexed", "(UTC)"]
    assert lines[1].split()[:3] == ["api", str(root), str(total - 1)]


def test_index_errors_exit_one_without_a_traceback(
    cli_env: dict[str, str],  # noqa: F811
    tmp_path: Path,
) -> None:
    missing = run_cli(cli_env, tmp_path, "index", str(tmp_path / "nowhere"))
    assert missing.returncode == 1
    assert "is not a directory" in missing.stderr
    bad_name = run_cli(cli_env, tmp_path, "index", str(tmp_path), "--name", "../x")
    assert bad_name.returncode == 1
    assert "invalid repository name" in bad_name.stderr
    for proc in (missing, bad_name):
        assert "Traceback" not in proc.stderr
    assert json.loads(run_cli(cli_env, tmp_path, "repos", "--json").stdout) == {"repos": []}


def test_search_by_role(cli_env: dict[str, str], tmp_path: Path) -> None:  # noqa: F811
    root = make_repo(tmp_path)
    assert run_cli(cli_env, tmp_path, "index", str(root)).returncode == 0

    docs = run_cli(cli_env, tmp_path, "search", "retry webhook", "--role", "docs", "--json")
    assert docs.returncode == 0, docs.stderr
    rows = json.loads(docs.stdout)["results"]
    assert rows and {(r["path"], r["role"]) for r in rows} == {("README.md", "docs")}

    both = run_cli(
        cli_env, tmp_path, "search", "retry webhook", "--role", "docs", "--role", "source"
    )
    assert both.returncode == 0, both.stderr
    assert "docs, score" in both.stdout and "source, score" in both.stdout

    bad = run_cli(cli_env, tmp_path, "search", "retry", "--role", "tests")
    assert bad.returncode == 2 and "invalid choice: 'tests'" in bad.stderr
