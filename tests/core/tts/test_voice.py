"""Voice replies through the whole bot (console adapter, real composition root): `/tts`,
`/voice`, `/ask --voice`, the `speak` tool, permission, quota, long and code-heavy text.
Speech comes from the fake OpenAI server's /v1/audio/speech (the local engines have their own
tests in test_tts_engines.py)."""

from __future__ import annotations

import io
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import soundfile as sf

from tests.conftest import POLICY_ALL, BotHarness
from tests.support.fakes.openai_server import FakeOpenAI


@pytest.fixture
def voice_bot(make_bot: Callable[..., BotHarness], fake_llm: FakeOpenAI) -> BotHarness:
    return make_bot(
        llm_base_url=fake_llm.url,
        llm_model="fake-model",
        llm_max_retries=0,
        tts_base_url=fake_llm.url,
        tts_max_chars=400,
    )


def audio_of(reply: Any) -> Any:
    (att,) = [a for a in reply.attachments if a.kind == "audio"]
    return att


async def test_tts_reads_text_aloud(voice_bot: BotHarness, fake_llm: FakeOpenAI) -> None:
    reply = await voice_bot.send(
        "/tts Deploys run **every day** at noon, see [the runbook](https://x.example/r)."
    )
    assert reply.ok, reply.text
    att = audio_of(reply)
    assert att.mime_type == "audio/ogg"  # the console gets the smallest: Opus
    assert att.filename.endswith(".ogg")
    info = sf.info(io.BytesIO(att.data))
    assert (info.format, info.subtype) == ("OGG", "OPUS")
    assert att.duration_secs == pytest.approx(info.duration, abs=0.05)
    assert att.waveform is not None and 1 <= len(att.waveform) <= 256
    (spoken,) = fake_llm.speech_requests
    assert spoken["input"] == "Deploys run every day at noon, see the runbook."
    assert "Read aloud" in reply.text


async def test_tts_without_text_and_with_only_code(voice_bot: BotHarness) -> None:
    usage = await voice_bot.send("/tts")
    assert not usage.ok and "Usage" in usage.text
    code = "\n".join(f"x{i} = call({i})" for i in range(20))
    reply = await voice_bot.send(f"/tts ```\n{code}\n```")
    assert not reply.ok
    assert "mostly code" in reply.text
    assert not reply.attachments


async def test_voice_reads_the_last_answer_in_the_thread(
    voice_bot: BotHarness, fake_llm: FakeOpenAI
) -> None:
    none_yet = await voice_bot.send("/voice", thread="fresh")
    assert not none_yet.ok and "nothing to read" in none_yet.text
    fake_llm.reply("The importer times out because the batch is too large.")
    await voice_bot.send("why does the importer time out?", thread="t9")
    reply = await voice_bot.send("/voice", thread="t9")
    assert reply.ok, reply.text
    assert audio_of(reply).title == "why does the importer time out?"
    assert fake_llm.speech_requests[-1]["input"] == (
        "The importer times out because the batch is too large."
    )


async def test_ask_voice_answers_in_text_and_audio(
    voice_bot: BotHarness, fake_llm: FakeOpenAI
) -> None:
    fake_llm.reply("We deploy with Helm.")
    reply = await voice_bot.send("/ask --voice how do we deploy?")
    assert reply.ok
    assert reply.text == "We deploy with Helm."
    assert audio_of(reply).title == "how do we deploy?"
    assert fake_llm.speech_requests[-1]["input"] == "We deploy with Helm."


async def test_speak_tool_attaches_audio_of_the_final_answer(
    voice_bot: BotHarness, fake_llm: FakeOpenAI
) -> None:
    fake_llm.tool_calls(("speak", {}))
    fake_llm.reply("Here is the summary: all green.")
    reply = await voice_bot.send("read me the status aloud please")
    assert reply.ok
    assert [c.name for c in reply.tool_calls] == ["speak"]
    assert audio_of(reply)
    assert fake_llm.speech_requests[-1]["input"] == "Here is the summary: all green."
    offered = {t["function"]["name"] for t in fake_llm.requests[0]["tools"]}
    assert "speak" in offered
    # A question that does not ask for audio is not offered the tool: its schema would cost
    # prompt tokens on every call.
    fake_llm.reply("All green.")
    await voice_bot.send("what is the status?", thread="t2")
    assert "speak" not in {t["function"]["name"] for t in fake_llm.requests[-1]["tools"]}


async def test_without_the_tts_permission(
    make_bot: Callable[..., BotHarness], fake_llm: FakeOpenAI, write_policy: Callable[[str], Path]
) -> None:
    policy = (
        POLICY_ALL + '\n[[rules]]\nname = "no voice"\nmatch = { user = "bob" }\ndeny = ["tts"]\n'
    )
    bot = make_bot(
        llm_base_url=fake_llm.url,
        llm_model="fake-model",
        tts_base_url=fake_llm.url,
        policy_file=write_policy(policy),
    )
    for text in ("/tts hello", "/voice", "/ask --voice hi"):
        reply = await bot.send(text, user="bob")
        assert not reply.ok
        assert "`tts` permission" in reply.text
    assert fake_llm.requests == []  # refused before the model ran
    fake_llm.reply("fine")
    await bot.send("hello", user="bob")
    assert "speak" not in {t["function"]["name"] for t in fake_llm.requests[-1].get("tools", [])}
    assert fake_llm.speech_requests == []


async def test_the_daily_tts_quota_is_charged_and_refuses_clearly(
    voice_bot: BotHarness, fake_llm: FakeOpenAI
) -> None:
    text = "A sentence of about fifty characters, give or take."  # 51 characters
    notices = []
    for _ in range(19):
        reply = await voice_bot.send(f"/tts {text}")
        assert reply.ok
        notices.extend(reply.notices)
    # One heads-up when 80% is crossed (the 16th: 816 of 1,000), not one per request after it.
    assert notices == ["Heads-up: 81% of your daily voice (TTS) budget is used (816 of 1,000)."]
    budget = await voice_bot.send("/budget")
    assert "969 of 1,000 characters" in budget.text
    refused = await voice_bot.send(f"/tts {text}")
    assert not refused.ok
    assert "your daily voice (TTS) budget" in refused.text
    assert "31 of 1,000 are left" in refused.text
    assert len(fake_llm.speech_requests) == 19


async def test_a_failed_synthesis_posts_nothing_and_costs_nothing(
    voice_bot: BotHarness, fake_llm: FakeOpenAI
) -> None:
    for _ in range(3):
        fake_llm.speech_error(500)
    reply = await voice_bot.send("/tts Hello there.")
    assert not reply.ok
    assert not reply.attachments
    assert "could not produce the audio" in reply.text
    budget = await voice_bot.send("/budget")
    assert "0 of 1,000 characters" in budget.text


async def test_a_failed_synthesis_keeps_the_text_answer(
    voice_bot: BotHarness, fake_llm: FakeOpenAI
) -> None:
    fake_llm.reply("We deploy with Helm.")
    for _ in range(3):
        fake_llm.speech_error(500)
    reply = await voice_bot.send("/ask --voice how do we deploy?")
    assert reply.ok and reply.text == "We deploy with Helm."
    assert not reply.attachments
    assert any("could not produce the audio" in n for n in reply.notices)


async def test_long_answers_are_summarized_for_speech(
    voice_bot: BotHarness, fake_llm: FakeOpenAI
) -> None:
    long = " ".join(f"Point {i} matters for the rollout." for i in range(40))
    fake_llm.reply(long)
    fake_llm.reply("In short: forty points, all about the rollout.")
    reply = await voice_bot.send("/ask --voice what matters?")
    assert reply.text == long
    assert audio_of(reply)
    summary_call = fake_llm.requests[-1]
    assert "read aloud" in summary_call["messages"][0]["content"]
    assert fake_llm.speech_requests[-1]["input"] == "In short: forty points, all about the rollout."
    assert any("summary" in n for n in reply.notices)


async def test_long_text_without_a_model_reads_the_first_part(
    make_bot: Callable[..., BotHarness], fake_llm: FakeOpenAI
) -> None:
    bot = make_bot(tts_base_url=fake_llm.url, tts_max_chars=200)
    long = " ".join(f"Sentence {i} of a long note." for i in range(40))
    reply = await bot.send(f"/tts {long}")
    assert reply.ok, reply.text
    # Segments are synthesized in parallel: they reach the server in any order.
    inputs = [r["input"] for r in fake_llm.speech_requests]
    assert sum(len(i) for i in inputs) <= 200
    assert any(i.startswith("Sentence 0 of a long note.") for i in inputs)
    (last,) = [i for i in inputs if i.endswith("The rest of this answer is in the text.")]
    assert all(i in long for i in inputs if i != last)
    assert any("first part" in n for n in reply.notices)


async def test_unknown_voice_note_reaches_the_user(
    make_bot: Callable[..., BotHarness], fake_llm: FakeOpenAI
) -> None:
    bot = make_bot(tts_base_url=fake_llm.url, tts_voice="klingon")
    reply = await bot.send("/tts Hello.")
    assert reply.ok
    assert 'The voice "klingon" is not available; read with "alloy".' in reply.notices


async def test_help_lists_the_voice_commands(voice_bot: BotHarness) -> None:
    text = (await voice_bot.send("/help")).text
    assert "/voice" in text and "/tts TEXT" in text and "--voice" in text


async def test_ask_voice_without_a_voice_service_says_so(
    voice_bot: BotHarness, fake_llm: FakeOpenAI
) -> None:
    voice_bot.core.voice = None  # a Core assembled without voice (e.g. by an embedding app)
    fake_llm.reply("We deploy with Helm.")
    reply = await voice_bot.send("/ask --voice how do we deploy?")
    assert reply.ok and reply.text == "We deploy with Helm." and not reply.attachments
    assert "Voice replies are not set up here, so the answer is text only." in reply.notices


async def test_a_spent_voice_budget_costs_no_summary(
    make_bot: Callable[..., BotHarness], fake_llm: FakeOpenAI, write_policy: Callable[[str], Path]
) -> None:
    policy = POLICY_ALL.replace(
        "tts_chars_per_user_per_day = 1000", "tts_chars_per_user_per_day = 100"
    )
    bot = make_bot(
        llm_base_url=fake_llm.url,
        llm_model="fake-model",
        tts_base_url=fake_llm.url,
        tts_max_chars=400,
        policy_file=write_policy(policy),
    )
    long = " ".join(f"Point {i} matters for the rollout." for i in range(40))
    fake_llm.reply(long)
    reply = await bot.send("/ask --voice what matters?")
    assert reply.ok and reply.text == long and not reply.attachments
    assert any("your daily voice (TTS) budget" in n for n in reply.notices)
    assert len(fake_llm.requests) == 1  # the answer only: no summary was paid for
    assert fake_llm.speech_requests == []
