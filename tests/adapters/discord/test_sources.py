"""An answer's sources on Discord, through the real discord.py client against the fake
Discord: one compact line at the end of the final message, links in `<...>` (no embeds)."""

from __future__ import annotations

from pathlib import Path

from core.code.walk import index_repo
from tests.adapters.discord.test_discord import StartBot, ask_in_channel, fake_discord, start_bot
from tests.core.agent.test_sources import pushed_repo
from tests.support.code_repo import NEEDLE
from tests.support.fakes.discord_server import FakeDiscord
from tests.support.fakes.openai_server import FakeOpenAI

__all__ = ["fake_discord", "start_bot"]  # fixtures shared with the Discord tests


async def test_sources_end_the_final_message_on_one_line(
    start_bot: StartBot, fake_discord: FakeDiscord, fake_llm: FakeOpenAI, tmp_path: Path
) -> None:
    fake = fake_discord
    bot = await start_bot()
    root, commit = pushed_repo(tmp_path / "src")
    repo = await bot.app.repos.register(str(root))
    await index_repo(bot.app.db, repo)
    fake_llm.tool_calls(
        ("grep_code", {"pattern": f"def {NEEDLE}"}),
        ("read_file", {"repo": "api", "path": "cmd/main.go"}),
    )
    fake_llm.reply(f"`{NEEDLE}` (src/app.py) retries three times.")

    thread = await ask_in_channel(fake, "where do we retry?")
    await bot.adapter.idle()

    app_url = f"https://github.com/team/api/blob/{commit}/src/app.py#L4"
    main_url = f"https://github.com/team/api/blob/{commit}/cmd/main.go#L1-L3"
    [answer] = fake.messages_in(thread)
    assert answer.content == (
        f"`{NEEDLE}` (src/app.py) retries three times.\n\n"
        f"Sources: [src/app.py:4](<{app_url}>) · [cmd/main.go:1-3](<{main_url}>)"
    )
    assert fake.unhandled == []


async def test_an_answer_without_sources_ends_with_its_text(
    start_bot: StartBot, fake_discord: FakeDiscord, fake_llm: FakeOpenAI
) -> None:
    bot = await start_bot()
    fake_llm.reply("Nothing to cite.")
    thread = await ask_in_channel(fake_discord, "hello?")
    await bot.adapter.idle()
    assert [m.content for m in fake_discord.messages_in(thread)] == ["Nothing to cite."]
