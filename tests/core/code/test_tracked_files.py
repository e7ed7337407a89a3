"""A file git tracks is part of the repository whatever a `.gitignore` says (a generated
schema force-added under an ignored folder, a committed fixture `*.log`): the walk indexes it
and every code tool reads it, while the untracked files beside it stay ignored. Real `git`
repositories; the tools run through the bot with a fake model."""

from __future__ import annotations

import subprocess
from collections.abc import Callable
from pathlib import Path

import pytest

from core.code import ripgrep
from core.code.git_local import tracked_but_ignored, tracked_files
from core.code.selection import Selection
from core.code.walk import walk
from core.store.models import Repo
from tests.conftest import BotHarness
from tests.core.code.test_code import tool_results
from tests.core.code.test_selection import files_in, repo_bot
from tests.support.code_repo import git, write
from tests.support.fakes.openai_server import FakeOpenAI

MakeBot = Callable[..., BotHarness]
NEEDLE = "TRACKED_NEEDLE"

# path -> force-added to git's index
FILES = {
    "src/app.py": True,
    "generated/schema.py": True,  # tracked under an ignored folder
    "generated/deep/types.py": True,
    "generated/scratch.py": False,  # untracked in the same folder: ignored
    "fixtures/expected.log": True,  # a tracked file an ignore pattern matches
    "debug.log": False,
    "node_modules/pkg/index.py": True,  # tracked, but vendored folders are never read
    "notes.txt": False,  # untracked and not ignored: read as before
    "generated/.env": True,  # tracked, but a secret's name is never read
}


def tracked_repo(base: Path) -> Path:
    root = base / "svc"
    write(root, ".gitignore", "generated/\n*.log\n")
    for path in FILES:
        write(root, path, f"{NEEDLE} = {path!r}\n")
    git(root, "init", "-q", "-b", "main")
    git(root, "add", "-f", ".gitignore", *(p for p, tracked in FILES.items() if tracked))
    return root


READABLE = {
    ".gitignore",
    "src/app.py",
    "generated/schema.py",
    "generated/deep/types.py",
    "fixtures/expected.log",
    "notes.txt",
}


def test_git_lists_tracked_and_tracked_but_ignored_files(tmp_path: Path) -> None:
    root = tracked_repo(tmp_path)

    assert tracked_files(root) == frozenset([".gitignore", *(p for p, t in FILES.items() if t)])
    assert sorted(tracked_but_ignored(root) or []) == [
        "fixtures/expected.log",
        "generated/.env",
        "generated/deep/types.py",
        "generated/schema.py",
    ]
    assert tracked_files(tmp_path / "nowhere") is None
    plain = tmp_path / "plain"
    write(plain, "a.py", "x = 1\n")
    assert tracked_files(plain) is None  # not a work tree (tmp_path is in none)


def test_the_walk_reads_tracked_files_a_gitignore_matches(tmp_path: Path) -> None:
    root = tracked_repo(tmp_path)

    assert {f.path for f in walk(root)} == READABLE


def test_selection_agrees_with_the_walk(tmp_path: Path) -> None:
    root = tracked_repo(tmp_path)
    selection = Selection(root)

    assert {p for p in [*FILES, ".gitignore"] if selection.allows(p)} == READABLE
    assert selection.refusal("generated/scratch.py") == "ignored"
    assert selection.refusal("node_modules/pkg/index.py") == "ignored"
    assert selection.refusal("generated/.env") == "secret"


def test_the_environment_does_not_point_git_elsewhere(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    root = tracked_repo(tmp_path)
    other = tmp_path / "other"
    write(other, "elsewhere.py", "x = 1\n")
    git(other, "init", "-q")
    git(other, "add", "elsewhere.py")
    monkeypatch.setenv("GIT_DIR", str(other / ".git"))
    monkeypatch.setenv("GIT_INDEX_FILE", str(other / ".git" / "index"))

    assert {f.path for f in walk(root)} == READABLE


def test_without_git_the_gitignore_decides_alone(tmp_path: Path) -> None:
    root = tracked_repo(tmp_path)
    subprocess.run(["rm", "-rf", str(root / ".git")], check=True)

    assert {f.path for f in walk(root)} == {".gitignore", "src/app.py", "notes.txt"}


def test_a_repository_config_runs_nothing(tmp_path: Path) -> None:
    """`core.fsmonitor` in a repository's own config names a program git would run."""
    root = tracked_repo(tmp_path)
    marker = tmp_path / "ran"
    hook = tmp_path / "hook.sh"
    hook.write_text(f"#!/bin/sh\ntouch {marker}\n")
    hook.chmod(0o755)
    git(root, "config", "core.fsmonitor", str(hook))

    assert {f.path for f in walk(root)} == READABLE
    assert not marker.exists()


async def test_the_code_tools_read_tracked_files_only(
    make_bot: MakeBot, fake_llm: FakeOpenAI, write_policy: Callable[[str], Path], tmp_path: Path
) -> None:
    root = tracked_repo(tmp_path)
    bot = await repo_bot(make_bot, fake_llm, write_policy, root)

    grep_all, grep_narrow, listed, read_tracked, read_untracked = await tool_results(
        bot,
        fake_llm,
        ("grep_code", {"pattern": NEEDLE}),
        ("grep_code", {"pattern": NEEDLE, "path_glob": "generated/*.py"}),
        ("glob_files", {"pattern": "**/*"}),
        ("read_file", {"repo": "svc", "path": "generated/schema.py"}),
        ("read_file", {"repo": "svc", "path": "generated/scratch.py"}),
    )

    assert files_in(grep_all) == READABLE - {".gitignore"}
    assert grep_all.startswith("5 matches in 5 file(s):")
    assert files_in(grep_narrow) == {"generated/schema.py"}
    assert set(listed.splitlines()[1:]) == READABLE
    assert read_tracked.startswith("## svc: generated/schema.py (lines 1-1 of 1)")
    assert read_untracked.startswith("Error: refused: generated/scratch.py is ignored")


@pytest.mark.parametrize(("limit", "value"), [("MAX_NAMED_FILES", 2), ("MAX_NAMED_CHARS", 30)])
async def test_past_the_named_file_limits_grep_still_reads_tracked_files_only(
    make_bot: MakeBot,
    fake_llm: FakeOpenAI,
    write_policy: Callable[[str], Path],
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    limit: str,
    value: int,
) -> None:
    monkeypatch.setattr(ripgrep, limit, value)  # four tracked files are ignored: past either
    root = tracked_repo(tmp_path)
    named = ripgrep.tracked_paths(root, None)
    assert "--no-ignore-vcs" in ripgrep.rg_command(NEEDLE, None, 0, named)
    bot = await repo_bot(make_bot, fake_llm, write_policy, root)

    (grep_all,) = await tool_results(bot, fake_llm, ("grep_code", {"pattern": NEEDLE}))

    assert files_in(grep_all) == READABLE - {".gitignore"}


async def test_a_file_reached_twice_is_reported_once(tmp_path: Path) -> None:
    """ripgrep searches a named file even when its folder walk reaches it too (where its
    reading of a .gitignore and git's differ): the second report is dropped, not counted."""
    root = tracked_repo(tmp_path)
    repo = Repo(name="svc", root=str(root), origin=str(root))
    run = ripgrep.GrepRun(limit=50)

    await ripgrep.grep_repo(repo, ripgrep.rg_command(NEEDLE, None, 0, ["src/app.py"]), run)

    assert [f.path for f in run.files].count("src/app.py") == 1
    assert run.matches == len(run.files)  # one line each


async def test_a_glob_that_is_no_pattern_gets_ripgreps_reason(
    make_bot: MakeBot, fake_llm: FakeOpenAI, write_policy: Callable[[str], Path], tmp_path: Path
) -> None:
    root = tracked_repo(tmp_path)
    bot = await repo_bot(make_bot, fake_llm, write_policy, root)

    (result,) = await tool_results(
        bot, fake_llm, ("grep_code", {"pattern": NEEDLE, "path_glob": "generated/\\"})
    )

    # ripgrep's own reason, which the model can act on (not "the tool failed")
    assert result.startswith("Error: the search failed: rg: error parsing glob"), result
