"""A skill's files go through the rules code files do (`core.code.selection`, `core.code.redact`):
secret-looking names, hidden files and folders, symlinks and ignored files are neither listed
nor read, and credentials inside a readable file come back redacted. Through the real
composition root, the real `openai` client and the scripted fake server, then the library
directly for the hostile paths a model may try."""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from core.skills.library import Skill, SkillFileError, SkillLibrary
from tests.conftest import POLICY_ALL, BotHarness
from tests.core.skills.test_skills import llm, tool_results, write_skill
from tests.support.fakes.openai_server import FakeOpenAI

MakeBot = Callable[..., BotHarness]
TOKEN = "ghp_Z3xv9QmT4pLk2RwYc8Hn5Jd7Fb1Sa6Ge0UiO"
PASSWORD = "Zq8-hunter2-prod"
ENV_SECRET = "sk_live_51HabcDEFghiJKLmnoPQRstuVWXyz0123"
OUTSIDE = "OUTSIDE-THE-SKILL"
ROOMY = POLICY_ALL.replace("tool_calls_per_request = 4", "tool_calls_per_request = 30")


@pytest.fixture
def leaky(tmp_path: Path) -> Path:
    """A skills folder whose one skill carries what must never leave the server."""
    root = tmp_path / "team-skills"
    folder = write_skill(
        root,
        "deploy",
        "Deploy checklist.",
        f'DEPLOY-BODY: read references/db.md first.\nadmin_password = "{PASSWORD}"',
    )
    refs = folder / "references"
    refs.mkdir()
    (refs / "db.md").write_text(f'Connect as app.\npassword = "{PASSWORD}"\nThen migrate.\n')
    (refs / "steps.md").write_text("STEP-ONE: freeze merges.\n")
    (folder / ".env").write_text(f"STRIPE_KEY={ENV_SECRET}\n")
    (folder / ".ENV").write_text(f"STRIPE_KEY={ENV_SECRET}\n")
    (folder / "deploy.env").write_text(f"STRIPE_KEY={ENV_SECRET}\n")
    for git in (".git", ".Git"):
        (folder / git).mkdir()
        (folder / git / "config").write_text(
            f'[remote "origin"]\n\turl = https://x-access-token:{TOKEN}@github.com/acme/ops\n'
        )
    (folder / "keys").mkdir()
    (folder / "keys" / "deploy.pem").write_text("-----BEGIN PRIVATE KEY-----\nAAAA\n")
    (folder / ".hidden").mkdir()
    (folder / ".hidden" / "notes.md").write_text(OUTSIDE)
    outside = tmp_path / "outside.md"
    outside.write_text(OUTSIDE)
    os.symlink(outside, refs / "link.md")
    os.symlink(tmp_path, folder / "up")
    os.symlink(refs / "steps.md", refs / "inner-link.md")  # inside, still a link
    (folder / ".gitignore").write_text("scratch/\n")
    (folder / "scratch").mkdir()
    (folder / "scratch" / "draft.md").write_text(OUTSIDE)
    return root


LEAKY_PATHS = [
    ".env",
    ".ENV",
    "deploy.env",
    "./.env",
    "references/../.env",
    ".git/config",
    ".Git/config",
    ".GIT/config",
    "keys/deploy.pem",
    "KEYS/DEPLOY.PEM",
    ".hidden/notes.md",
    "references/link.md",
    "references/inner-link.md",
    "up/outside.md",
    "scratch/draft.md",
    "../outside.md",
    "..\\outside.md",
    "references/../../outside.md",
    "/etc/passwd",
    "~/.ssh/id_rsa",
    "references/ünïcødé-🔑.md",
    "r" * 300,
    "references/\x00.md",
]


def texts(reply_results: list[str]) -> str:
    return "\n".join(reply_results)


async def test_read_skill_file_refuses_secrets_and_redacts_contents(
    make_bot: MakeBot,
    fake_llm: FakeOpenAI,
    leaky: Path,
    write_policy: Callable[[str], Path],
) -> None:
    bot = make_bot(skills_dirs=[leaky], policy_file=write_policy(ROOMY), **llm(fake_llm))
    calls: list[tuple[str, dict[str, Any] | str]] = [("load_skill", {"name": "deploy"})]
    calls += [
        ("read_skill_file", {"name": "deploy", "path": path})
        for path in ["references/db.md", "references/steps.md", *LEAKY_PATHS]
    ]
    fake_llm.tool_calls(*calls)
    fake_llm.reply("done")
    reply = await bot.send("how do I deploy?")
    assert reply.ok
    results = tool_results(fake_llm.requests[-1])
    assert len(results) == len(calls)
    loaded, db, steps, *refused = results
    assert "references/db.md" in loaded and "references/steps.md" in loaded
    assert "DEPLOY-BODY" in loaded and 'admin_password = "[redacted secret]"' in loaded
    for hidden in (".env", "deploy.env", ".git", "keys/", "link.md", "up/", "scratch", ".hidden"):
        assert hidden not in loaded, hidden
    assert PASSWORD not in db and "[redacted secret]" in db and "Then migrate." in db
    assert steps == "STEP-ONE: freeze merges.\n"
    everything = texts(results)
    for leak in (TOKEN, ENV_SECRET, PASSWORD, OUTSIDE, "PRIVATE KEY", "root:"):
        assert leak not in everything, leak
    for path, text in zip(LEAKY_PATHS, refused, strict=True):
        assert text.startswith("Error:"), (path, text)
        assert str(leaky) not in text, (path, text)
    assert [c.ok for c in reply.tool_calls] == [True, True, True] + [False] * len(LEAKY_PATHS)


async def test_skills_show_lists_only_readable_files(make_bot: MakeBot, leaky: Path) -> None:
    bot = make_bot(skills_dirs=[leaky])
    shown = await bot.send("/skills show deploy")
    assert shown.ok and "DEPLOY-BODY" in shown.text and PASSWORD not in shown.text
    assert "`references/db.md`" in shown.text and "`references/steps.md`" in shown.text
    for hidden in (".env", ".ENV", "deploy.env", ".git", "keys/", "link.md", "up/", "scratch"):
        assert hidden not in shown.text, hidden


def deploy_skill(root: Path) -> Skill:
    library = SkillLibrary([root], shipped=None)
    library.load()
    skill = library.get("deploy")
    assert skill is not None
    return skill


@pytest.mark.parametrize("path", LEAKY_PATHS)
def test_hostile_paths_are_refused(leaky: Path, path: str) -> None:
    skill = deploy_skill(leaky)
    with pytest.raises(SkillFileError) as caught:
        SkillLibrary.read_file(skill, path)
    assert str(leaky) not in str(caught.value)


def test_listed_files_are_exactly_the_readable_ones(leaky: Path) -> None:
    skill = deploy_skill(leaky)
    assert skill.files == ("references/db.md", "references/steps.md")
    for rel in skill.files:
        SkillLibrary.read_file(skill, rel)


async def test_skills_show_and_reload_name_no_server_path(
    make_bot: MakeBot, leaky: Path, tmp_path: Path
) -> None:
    """Chat shows where a skill comes from relative to its skills folder, never the server's
    absolute path (a user name, a home directory, the deployment's layout)."""
    other = tmp_path / "other-skills"
    write_skill(other, "deploy", "A second skill of that name.", "body")
    bot = make_bot(skills_dirs=[leaky, other])
    shown = await bot.send("/skills show deploy")
    assert shown.ok and "deploy/SKILL.md" in shown.text
    assert str(tmp_path) not in shown.text
    (leaky / "broken").mkdir()
    (leaky / "broken" / "SKILL.md").write_text("---\nname: [broken\n---\n")
    report = await bot.send("/skills reload", roles=["admin"])
    assert report.ok and "broken/SKILL.md" in report.text and "duplicate name" in report.text
    assert str(tmp_path) not in report.text
