"""A model per channel: a policy rule's `model = "NAME"` picks a `[providers.NAME]` endpoint.
Two fake OpenAI-compatible servers on 127.0.0.1 stand for a strong and a cheap provider."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from sqlmodel import select

from bot.app import build_app
from core.policy import PolicyError
from core.store.models import UsageRecord
from tests.conftest import POLICY_ALL, BotHarness
from tests.support.fakes.openai_server import FakeOpenAI

MakeBot = Callable[..., BotHarness]

POLICY = (
    POLICY_ALL
    + """
[[rules]]
name = "incidents get the strong model"
match = { channel = "incidents" }
model = "strong"
"""
)


@pytest.fixture
def strong_llm() -> Iterator[FakeOpenAI]:
    fake = FakeOpenAI().start()
    yield fake
    fake.stop()


def providers(fake: FakeOpenAI) -> dict[str, Any]:
    return {"strong": {"base_url": fake.url, "model": "big-model", "context_window": 65536}}


async def test_the_rule_picks_the_model_and_usage_follows_it(
    make_bot: MakeBot,
    fake_llm: FakeOpenAI,
    strong_llm: FakeOpenAI,
    write_policy: Callable[[str], Path],
) -> None:
    bot = make_bot(
        policy_file=write_policy(POLICY),
        providers=providers(strong_llm),
        llm_base_url=fake_llm.url,
        llm_model="small-model",
        llm_max_retries=0,
    )
    strong_llm.reply("strong answer", prompt_tokens=100, completion_tokens=10)
    fake_llm.reply("cheap answer", prompt_tokens=50, completion_tokens=5)
    assert (await bot.send("sev1?", channel="incidents")).text == "strong answer"
    assert (await bot.send("hello", channel="general")).text == "cheap answer"
    assert [r["model"] for r in strong_llm.requests] == ["big-model"]
    assert [r["model"] for r in fake_llm.requests] == ["small-model"]
    budget = await bot.send("/budget", channel="incidents")
    assert "model here: big-model (provider strong)" in budget.text
    assert "small-model (provider default)" in (await bot.send("/budget")).text
    async with bot.app.db.session() as s:
        rows = (await s.exec(select(UsageRecord))).all()
    by_model = {(r.provider, r.model): r.prompt_tokens for r in rows}
    assert by_model == {("strong", "big-model"): 100, ("default", "small-model"): 50}


async def test_a_channel_model_without_a_default_one(
    make_bot: MakeBot, strong_llm: FakeOpenAI, write_policy: Callable[[str], Path]
) -> None:
    bot = make_bot(policy_file=write_policy(POLICY), providers=providers(strong_llm))
    strong_llm.reply("strong answer")
    assert (await bot.send("sev1?", channel="incidents")).text == "strong answer"
    elsewhere = await bot.send("hello", channel="general")
    assert not elsewhere.ok and "No language model is configured" in elsewhere.text
    assert "model here: none configured" in (await bot.send("/budget")).text


def test_an_unknown_provider_is_a_start_up_error_naming_the_rule(
    make_settings: Callable[..., Any], write_policy: Callable[[str], Path]
) -> None:
    settings = make_settings(policy_file=write_policy(POLICY.replace('"strong"', '"stronk"')))
    with pytest.raises(PolicyError) as err:
        build_app(settings)
    text = str(err.value)
    assert "'incidents get the strong model'" in text and "'stronk'" in text
    assert "[providers.stronk]" in text
