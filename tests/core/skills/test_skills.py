"""Skills end to end: the real composition root on the console adapter, the real `openai`
client and the scripted fake OpenAI-compatible server. Progressive disclosure (index, then
load_skill, then read_skill_file), explicit `/skill`, pinned skills, re-injection after
compaction, hot reload, policy allowlists and `allowed-tools` narrowing."""

from __future__ import annotations

import json
import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from bot.upkeep import refresh_skills
from tests.conftest import POLICY_ALL, BotHarness
from tests.core.memory.test_compaction_thread import (
    POLICY_ROOMY,
    Summarizer,
    agent_requests,
    note,
)
from tests.support.fakes.openai_server import FakeOpenAI

MakeBot = Callable[..., BotHarness]
Request = dict[str, Any]


def llm(fake: FakeOpenAI, **more: Any) -> dict[str, Any]:
    return {"llm_base_url": fake.url, "llm_model": "fake-model", "llm_max_retries": 0, **more}


def write_skill(root: Path, name: str, description: str, body: str, **extra: str) -> Path:
    folder = root / name
    folder.mkdir(parents=True, exist_ok=True)
    lines = [f"name: {name}", f"description: {description}"]
    lines += [f"{k}: {v}" for k, v in extra.items()]
    (folder / "SKILL.md").write_text("---\n" + "\n".join(lines) + "\n---\n" + body + "\n")
    return folder


@pytest.fixture
def skills_dir(tmp_path: Path) -> Path:
    root = tmp_path / "team-skills"
    folder = write_skill(
        root,
        "deploy-check",
        "Pre-deploy checklist. Use before shipping a release to production.",
        "DEPLOY-BODY: check the dashboards, then read references/steps.md.",
    )
    (folder / "references").mkdir()
    (folder / "references" / "steps.md").write_text("STEP-ONE: freeze merges.")
    write_skill(
        root,
        "postmortem",
        "Write a blameless postmortem after an incident is resolved.",
        "POSTMORTEM-BODY: timeline first, then causes.",
    )
    return root


def bump_mtime(path: Path) -> None:
    st = path.stat()
    os.utime(path, ns=(st.st_atime_ns, st.st_mtime_ns + 1_000_000))


def system_texts(request: Request) -> list[str]:
    return [m["content"] for m in request["messages"] if m["role"] == "system"]


def tool_names(request: Request) -> list[str]:
    return [t["function"]["name"] for t in request.get("tools", [])]


def tool_results(request: Request) -> list[str]:
    return [m["content"] for m in request["messages"] if m["role"] == "tool"]


def policy_with(extra: str, base: str = POLICY_ALL) -> str:
    return base + "\n" + extra


async def test_index_then_load_then_read_a_file(
    make_bot: MakeBot, fake_llm: FakeOpenAI, skills_dir: Path
) -> None:
    bot = make_bot(skills_dirs=[skills_dir], **llm(fake_llm))
    fake_llm.tool_calls(("load_skill", {"name": "deploy-check"}))
    fake_llm.tool_calls(
        ("read_skill_file", {"name": "deploy-check", "path": "references/steps.md"}),
        ("read_skill_file", {"name": "deploy-check", "path": "../postmortem/SKILL.md"}),
    )
    fake_llm.reply("Freeze merges first.")
    reply = await bot.send("we ship v2 to prod in an hour, anything to check?")
    assert reply.ok and reply.text == "Freeze merges first."
    first, second, third = fake_llm.requests
    # The index: every skill fits, so it is in the stable part, sorted, before the context.
    stable = system_texts(first)[1]
    assert "load_skill(name)" in stable
    assert stable.index("- deploy-check: Pre-deploy") < stable.index("- postmortem: Write")
    assert "DEPLOY-BODY" not in json.dumps(first)  # bodies only on request
    assert {"load_skill", "read_skill_file", "find_skills"} <= set(tool_names(first))
    assert "DEPLOY-BODY" in tool_results(second)[0]
    assert "references/steps.md" in tool_results(second)[0]
    results = tool_results(third)
    assert results[1] == "STEP-ONE: freeze merges."
    assert "outside the skill's folder" in results[2]
    assert [c.ok for c in reply.tool_calls] == [True, True, False]
    # The same index on the next request: byte-identical stable prefix (cache-friendly).
    fake_llm.reply("ok")
    await bot.send("and what about a hotfix?")
    assert system_texts(fake_llm.requests[-1])[:2] == system_texts(first)[:2]


async def test_explicit_skill_runs_without_the_model_choosing_it(
    make_bot: MakeBot, fake_llm: FakeOpenAI, skills_dir: Path
) -> None:
    bot = make_bot(skills_dirs=[skills_dir], **llm(fake_llm))
    fake_llm.reply("Here is the postmortem.")
    reply = await bot.send("/skill postmortem the db outage yesterday")
    assert reply.ok and reply.text == "Here is the postmortem."
    sent = fake_llm.requests[0]["messages"]
    assert sent[-3] == {"role": "user", "content": "the db outage yesterday"}
    assert sent[-2]["tool_calls"][0]["function"]["name"] == "load_skill"
    assert "POSTMORTEM-BODY" in sent[-1]["content"]
    # `/NAME` runs the skill too, when no command has that name.
    fake_llm.reply("Checked.")
    reply = await bot.send("/deploy-check", thread="t2")
    assert reply.ok and reply.text == "Checked."
    last = fake_llm.requests[-1]["messages"]
    assert last[-3]["content"] == "Follow the deploy-check skill."
    assert "DEPLOY-BODY" in last[-1]["content"]
    # Unknown skills and unknown commands are told apart.
    unknown = await bot.send("/skill nope do it")
    assert not unknown.ok and "no skill `nope`" in unknown.text
    assert "Unknown command `/nope`" in (await bot.send("/nope")).text
    assert len(fake_llm.requests) == 2


async def test_explicit_skill_without_a_model_shows_the_playbook(
    make_bot: MakeBot, skills_dir: Path
) -> None:
    bot = make_bot(skills_dirs=[skills_dir])
    reply = await bot.send("/skill deploy-check")
    assert reply.ok and "No language model is configured" in reply.text
    assert "DEPLOY-BODY" in reply.text


async def test_pinned_skill_is_loaded_up_front(
    make_bot: MakeBot, fake_llm: FakeOpenAI, skills_dir: Path, write_policy: Callable[..., Path]
) -> None:
    policy = policy_with(
        '[[rules]]\nname = "incidents"\nmatch = { channel = "incidents" }\n'
        'pinned_skills = ["postmortem"]'
    )
    bot = make_bot(skills_dirs=[skills_dir], policy_file=write_policy(policy), **llm(fake_llm))
    fake_llm.reply("a")
    await bot.send("what now?", channel="incidents")
    fake_llm.reply("b")
    await bot.send("what now?", channel="general")
    pinned, other = fake_llm.requests
    assert "POSTMORTEM-BODY" in system_texts(pinned)[1]
    assert "POSTMORTEM-BODY" not in json.dumps(other)
    listed = await bot.send("/skills", channel="incidents")
    assert "`postmortem` (pinned here)" in listed.text


async def test_policy_allowlist_limits_skills(
    make_bot: MakeBot, fake_llm: FakeOpenAI, skills_dir: Path, write_policy: Callable[..., Path]
) -> None:
    policy = policy_with(
        '[[rules]]\nname = "help desk"\nmatch = { channel = "help" }\nskills = ["postmortem"]\n'
        '[[rules]]\nname = "no skills"\nmatch = { channel = "quiet" }\ndeny = ["skills.use"]'
    )
    bot = make_bot(skills_dirs=[skills_dir], policy_file=write_policy(policy), **llm(fake_llm))
    fake_llm.tool_calls(("load_skill", {"name": "deploy-check"}))
    fake_llm.reply("done")
    await bot.send("deploy?", channel="help")
    first, second = fake_llm.requests
    assert "deploy-check" not in system_texts(first)[1]
    assert "- postmortem:" in system_texts(first)[1]
    result = tool_results(second)[0]
    assert "no skill 'deploy-check' here" in result and "DEPLOY-BODY" not in result
    assert "postmortem" in result  # the skills it may use
    listed = await bot.send("/skills", channel="help")
    assert "postmortem" in listed.text and "deploy-check" not in listed.text
    explicit = await bot.send("/skill deploy-check now", channel="help")
    assert not explicit.ok and "no skill `deploy-check`" in explicit.text
    # Without skills.use: no index, no skill tools, and /skills says which permission.
    fake_llm.reply("plain")
    await bot.send("deploy?", channel="quiet")
    quiet = fake_llm.requests[-1]
    assert not any("Skills" in t for t in system_texts(quiet))
    assert "load_skill" not in tool_names(quiet)
    denied = await bot.send("/skills", channel="quiet")
    assert not denied.ok and "skills.use" in denied.text


async def test_allowed_tools_only_narrows(
    make_bot: MakeBot, fake_llm: FakeOpenAI, tmp_path: Path
) -> None:
    root = tmp_path / "s"
    write_skill(
        root,
        "clock-free",
        "A skill that may only read files.",
        "NARROW-BODY",
        **{"allowed-tools": "read_file grep_code memory_admin_grant"},
    )
    bot = make_bot(skills_dirs=[root], **llm(fake_llm))
    fake_llm.tool_calls(("load_skill", {"name": "clock-free"}))
    fake_llm.tool_calls(("current_time", {}))
    fake_llm.reply("done")
    reply = await bot.send("what time is it?")
    assert reply.ok
    first, second, third = fake_llm.requests
    assert "current_time" in tool_names(first)
    # After loading: only the skill tools (plus the listed tools this session may use).
    assert "current_time" not in tool_names(second)
    assert set(tool_names(second)) <= {"load_skill", "read_skill_file", "find_skills"}
    assert "allow only these tools" in tool_results(third)[-1]
    assert [c.error for c in reply.tool_calls] == [None, "narrowed"]
    # The next request in the thread is not narrowed.
    fake_llm.reply("12:00")
    await bot.send("and now?")
    assert "current_time" in tool_names(fake_llm.requests[-1])


async def test_index_over_budget_lists_the_relevant_skills_and_find_skills(
    make_bot: MakeBot, fake_llm: FakeOpenAI, tmp_path: Path
) -> None:
    root = tmp_path / "many"
    topics = [
        "kubernetes pod eviction",
        "terraform state locking",
        "kafka consumer lag",
        "redis memory eviction",
        "nginx certificate renewal",
        "postgres vacuum tuning",
        "android app store release",
        "ios testflight build",
        "grafana dashboard review",
        "oncall handover notes",
    ]
    for i, topic in enumerate(topics * 4):
        write_skill(
            root,
            f"skill-{i:02d}",
            f"Playbook number {i} about {topic}. Use when {topic} comes up.",
            f"BODY-{i}",
        )
    bot = make_bot(
        skills_dirs=[root], skills_index_share=0.02, **llm(fake_llm, llm_context_window=8192)
    )
    fake_llm.tool_calls(("find_skills", {"query": "consumer lag on kafka", "k": 3}))
    fake_llm.reply("ok")
    await bot.send("our kafka consumer lag keeps growing")
    first, second = fake_llm.requests
    context = system_texts(first)[-1]
    assert "Conversation context" in context
    assert "more skill(s) exist" in context and "find_skills(query)" in context
    listed = [line for line in context.splitlines() if line.startswith("- skill-")]
    assert 0 < len(listed) < 40
    assert "kafka consumer lag" in listed[0]
    found = tool_results(second)[0].splitlines()
    assert len(found) == 3 and all("kafka consumer lag" in line for line in found)


async def test_skill_is_given_again_after_compaction(
    make_bot: MakeBot, fake_llm: FakeOpenAI, skills_dir: Path, write_policy: Callable[..., Path]
) -> None:
    bot = make_bot(
        skills_dirs=[skills_dir],
        policy_file=write_policy(POLICY_ROOMY),
        **llm(fake_llm, llm_context_window=4096, llm_max_output_tokens=256),
    )
    summarizer = Summarizer()
    fake_llm.responder = summarizer
    fake_llm.reply("Following it.")
    await bot.send("/skill postmortem start the doc")
    assert "Skills loaded earlier" not in json.dumps(fake_llm.requests[-1])
    for i in range(30):
        fake_llm.reply(f"noted {i}")
        assert (await bot.send(note(i))).ok
        if summarizer.seen:
            break
    assert summarizer.seen, "the thread was never compacted"
    last = agent_requests(fake_llm)[-1]
    again = [t for t in system_texts(last) if "Skills loaded earlier in this thread" in t]
    assert again and "POSTMORTEM-BODY" in again[0]
    # The load itself is no longer in the conversation: it was summarized.
    assert not any(m.get("tool_calls") for m in last["messages"])


async def test_hot_reload_and_admin_reload(
    make_bot: MakeBot, fake_llm: FakeOpenAI, skills_dir: Path
) -> None:
    bot = make_bot(skills_dirs=[skills_dir], **llm(fake_llm))
    assert "deploy-check" in (await bot.send("/skills")).text
    write_skill(skills_dir, "new-one", "Brand new skill.", "NEW-BODY")
    bump_mtime(skills_dir)  # file systems with coarse timestamps may not have moved it
    assert await refresh_skills(bot.app) is True  # what the background watcher runs
    assert "new-one" in (await bot.send("/skills")).text
    (skills_dir / "new-one" / "SKILL.md").write_text("---\nname: [broken\n---\n")
    denied = await bot.send("/skills reload")
    assert not denied.ok and "admin" in denied.text
    report = await bot.send("/skills reload", roles=["admin"])
    assert report.ok and "1 skipped with errors" in report.text and "not valid YAML" in report.text
    assert "new-one" not in (await bot.send("/skills")).text


async def test_skills_show(make_bot: MakeBot, skills_dir: Path) -> None:
    bot = make_bot(skills_dirs=[skills_dir])
    shown = await bot.send("/skills show deploy-check")
    assert shown.ok and "DEPLOY-BODY" in shown.text and "`references/steps.md`" in shown.text
    assert not (await bot.send("/skills show ../etc")).ok
    assert not (await bot.send("/skills frob")).ok


def test_skills_check_command(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from bot.cli import main

    root = tmp_path / "s"
    write_skill(root, "fine", "A fine skill.", "body", **{"argument-hint": "x"})
    assert main(["skills", "check", str(root)]) == 0
    out = capsys.readouterr().out
    assert "warning:" in out and "'argument-hint' is not used" in out
    assert "1 skill(s) loaded, 0 error(s), 1 warning(s)" in out
    write_skill(root, "broken", "", "body")
    assert main(["skills", "check", str(root)]) == 1
    out = capsys.readouterr().out
    assert "error:" in out and "broken" in out and "description" in out
    assert main(["skills", "check", str(tmp_path / "missing")]) == 2
