"""Every code tool reads exactly the files the walk selects (core/code/selection.py): a
`path_glob` or pattern cannot reach ignored, excluded or secret files, ripgrep's own ignore
files do not hide what the walk reads, and one monstrous line does not sink a search."""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from core.code.walk import index_repo, walk
from tests.conftest import POLICY_ALL, BotHarness
from tests.core.code.test_code import roomy, tool_results
from tests.support.code_repo import write
from tests.support.fakes.openai_server import FakeOpenAI

MakeBot = Callable[..., BotHarness]
DB_PASSWORD = "Pg-9f2Kx7Lq"  # in the ignored local_settings.py only
NEEDLE = "SECRET_SETTING"


def make_in_place_repo(base: Path) -> Path:
    """A repository indexed in place, with what a developer's checkout holds beside the code."""
    root = base / "svc"
    write(root, ".gitignore", "local_settings.py\n*.sqlite\n")
    write(root, "app/settings.py", f"{NEEDLE} = 'from the environment'\n")
    write(root, "local_settings.py", f"DB_PASSWORD={DB_PASSWORD}  # {NEEDLE}\n")
    write(root, "app/.gitignore", "scratch/\n")
    write(root, "app/scratch/notes.py", f"{NEEDLE} = '{DB_PASSWORD}'\n")
    write(root, "node_modules/pkg/index.py", f"{NEEDLE} = '{DB_PASSWORD}'\n")
    write(root, ".env.local", f"{NEEDLE}={DB_PASSWORD}\n")
    write(root, "{a,b}.py", f"{NEEDLE} = 1\n")  # a name that looks like a glob
    # ripgrep's own ignore files: the walk does not read them, so grep must not either
    write(root, ".ignore", "app/extra.py\n")
    write(root, ".rgignore", "app/more.py\n")
    write(root, "app/extra.py", f"{NEEDLE} = 'extra'\n")
    write(root, "app/more.py", f"{NEEDLE} = 'more'\n")
    return root


async def repo_bot(
    make_bot: MakeBot, fake_llm: FakeOpenAI, write_policy: Callable[[str], Path], root: Path
) -> BotHarness:
    bot = make_bot(
        llm_base_url=fake_llm.url,
        llm_model="fake-model",
        llm_max_retries=0,
        policy_file=write_policy(roomy(POLICY_ALL)),
    )
    repo = await bot.app.repos.register(str(root))
    await index_repo(bot.app.db, repo)
    return bot


def files_in(result: str) -> set[str]:
    return {line.split(": ", 1)[1] for line in result.splitlines() if line.startswith("## ")}


GLOBS = [
    "*.py",
    "local_settings.py",
    "**/*",
    "**",
    "*",
    ".env*",
    "{a,b}.py",
    "{local_settings,app/settings}.py",
    "app/scratch/*",
    "node_modules/**",
    "**/node_modules/**",
    "[l]ocal_settings.py",
    "local_settings.p?",
]


@pytest.mark.parametrize("glob", GLOBS)
async def test_no_path_glob_widens_what_grep_reads(
    make_bot: MakeBot,
    fake_llm: FakeOpenAI,
    write_policy: Callable[[str], Path],
    tmp_path: Path,
    glob: str,
) -> None:
    root = make_in_place_repo(tmp_path)
    readable = {f.path for f in walk(root)}
    bot = await repo_bot(make_bot, fake_llm, write_policy, root)

    (result,) = await tool_results(
        bot, fake_llm, ("grep_code", {"pattern": NEEDLE, "path_glob": glob})
    )

    assert DB_PASSWORD not in result
    assert files_in(result) <= readable, result
    assert "local_settings.py" not in result and ".env.local" not in result


async def test_grep_reads_what_the_walk_reads_whatever_ripgrep_ignores(
    make_bot: MakeBot, fake_llm: FakeOpenAI, write_policy: Callable[[str], Path], tmp_path: Path
) -> None:
    root = make_in_place_repo(tmp_path)
    bot = await repo_bot(make_bot, fake_llm, write_policy, root)

    everything, excluded_glob, listed = await tool_results(
        bot,
        fake_llm,
        ("grep_code", {"pattern": NEEDLE}),
        ("grep_code", {"pattern": NEEDLE, "path_glob": "!app/**"}),
        ("glob_files", {"pattern": "**/*"}),
    )

    readable = {f.path for f in walk(root)}
    with_needle = {p for p in readable if NEEDLE in (root / p).read_text()}
    assert with_needle == {"app/settings.py", "app/extra.py", "app/more.py", "{a,b}.py"}
    assert files_in(everything) == with_needle
    assert excluded_glob == "Error: refused: path_glob must select files, not exclude them"
    assert set(listed.splitlines()[1:]) == readable


async def test_one_huge_line_does_not_lose_the_other_matches(
    make_bot: MakeBot, fake_llm: FakeOpenAI, write_policy: Callable[[str], Path], tmp_path: Path
) -> None:
    """Under the 1 MB file limit, but ~5 MB as ripgrep's JSON (each \\x01 is `\\u0001`)."""
    root = tmp_path / "svc"
    write(root, "a_noise.txt", "\x01" * 900_000 + f" {NEEDLE}\n")
    write(root, "b_code.py", f"{NEEDLE} = 1\n")
    write(root, "c_more.py", f"x = '{NEEDLE}'\n")
    bot = await repo_bot(make_bot, fake_llm, write_policy, root)

    (result,) = await tool_results(bot, fake_llm, ("grep_code", {"pattern": NEEDLE}))

    assert not result.startswith("Error"), result[:300]
    assert {"b_code.py", "c_more.py"} <= files_in(result)
    assert len(result) < 20_000  # the long line, if shown, is cut


async def test_read_file_and_glob_apply_the_same_rules(
    make_bot: MakeBot, fake_llm: FakeOpenAI, write_policy: Callable[[str], Path], tmp_path: Path
) -> None:
    root = make_in_place_repo(tmp_path)
    os.symlink(root / "app" / "settings.py", root / "app" / "alias.py")
    os.symlink(root / "app", root / "linked")
    bot = await repo_bot(make_bot, fake_llm, write_policy, root)
    paths = (
        "local_settings.py",
        "app/scratch/notes.py",
        ".env.local",
        "app/extra.py",
        "app/alias.py",
        "linked/settings.py",
    )
    calls: list[tuple[str, dict[str, Any]]] = [
        ("read_file", {"repo": "svc", "path": path}) for path in paths
    ]
    ignored, scratch, env, extra, alias, linked = await tool_results(bot, fake_llm, *calls)

    assert (
        ignored == "Error: refused: local_settings.py is ignored (.gitignore or a vendored folder)"
    )
    assert scratch.startswith("Error: refused: app/scratch/notes.py is ignored")
    assert env.startswith("Error: refused: .env.local looks like it holds secrets")
    assert extra.startswith("## svc: app/extra.py (lines 1-1 of 1)")
    # like the walk (and so grep and glob_files), no symlink is followed
    assert alias.startswith("Error: refused: app/alias.py is or goes through a symbolic link")
    assert linked.startswith("Error: refused: linked/settings.py is or goes through a symbolic")
