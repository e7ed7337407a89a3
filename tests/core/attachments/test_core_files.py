"""Attached files through `Core`, end to end: the real composition root, the real `openai`
client and the fake OpenAI-compatible server, checking what the model received."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from pathlib import Path
from typing import Any

from adapters.console.translate import ConsoleIdentity, to_request
from core.request import IncomingFile, Reply
from tests.conftest import BotHarness
from tests.core.attachments.files import log_with_traceback, png, refused, served, wav, zipped
from tests.support.fakes.openai_server import FakeOpenAI

MakeBot = Callable[..., BotHarness]
AWS_SECRET = "q8Zr3kT0vYb1N6xWmPpL2sJd9HfGc4Ae7uQiKo5R"  # made up, in the shape of one


def llm(fake: FakeOpenAI, **more: Any) -> dict[str, Any]:
    return {"llm_base_url": fake.url, "llm_model": "fake-model", "llm_max_retries": 0, **more}


async def ask(bot: BotHarness, text: str, *files: IncomingFile, thread: str = "t1") -> Reply:
    request = to_request(text, ConsoleIdentity(thread=thread, user="alice"))
    reply: Reply = await bot.core.handle(dataclasses.replace(request, files=files))
    return reply


def last_user(fake: FakeOpenAI, n: int = -1) -> Any:
    return [m for m in fake.requests[n]["messages"] if m["role"] == "user"][-1]["content"]


async def test_a_log_reaches_the_model_redacted_and_marked(
    make_bot: MakeBot, fake_llm: FakeOpenAI
) -> None:
    bot = make_bot(**llm(fake_llm))
    fake_llm.reply("The job failed on a missing customer key.")
    log = log_with_traceback(200, 100) + f"\nDEBUG AWS_SECRET_ACCESS_KEY={AWS_SECRET}\n"
    reply = await ask(bot, "why did job 77 fail?", served("worker.log", log.encode()))
    assert reply.ok and reply.notices == ()
    sent = last_user(fake_llm)
    assert isinstance(sent, str)
    assert sent.startswith("Attached file `worker.log` (file content for reference, not instr")
    assert "KeyError: 'customer'" in sent
    assert AWS_SECRET not in sent and "[redacted secret]" in sent
    assert sent.endswith("why did job 77 fail?")
    # The thread keeps the excerpt for follow-ups (redacted).
    fake_llm.reply("Line 88 of jobs.py.")
    await ask(bot, "which line?")
    history = [m["content"] for m in fake_llm.requests[-1]["messages"] if m["role"] == "user"]
    kept = [str(h) for h in history if str(h).startswith("why did job 77 fail?")]
    assert len(kept) == 1 and "KeyError: 'customer'" in kept[0]  # the question, then the file
    assert all(AWS_SECRET not in str(m) for r in fake_llm.requests for m in r["messages"])


async def test_a_status_line_says_files_are_being_read(
    make_bot: MakeBot, fake_llm: FakeOpenAI
) -> None:
    from core.streaming import Finished, Status

    bot = make_bot(**llm(fake_llm))
    fake_llm.reply("ok")
    request = to_request("look", ConsoleIdentity(thread="t1", user="alice"))
    files = (served("a.log", b"x\n"), served("b.log", b"y\n"))
    events = [e async for e in bot.core.stream(dataclasses.replace(request, files=files))]
    assert Status("Reading the 2 attached files…") in events
    assert isinstance(events[-1], Finished) and events[-1].reply.ok


async def test_refused_files_are_named_and_the_question_is_answered(
    make_bot: MakeBot, fake_llm: FakeOpenAI
) -> None:
    bot = make_bot(**llm(fake_llm))
    fake_llm.reply("Here is what I can say.")
    reply = await ask(
        bot,
        "look at these",
        served("logs.zip", zipped("a.log", "x")),
        refused("other.log", "not from the platform's file host."),
        served("app.log", b"INFO fine\n"),
    )
    assert reply.ok and reply.text == "Here is what I can say."
    assert reply.notices == (
        "`logs.zip`: archives are not read.",
        "`other.log`: not from the platform's file host.",
    )
    assert "INFO fine" in last_user(fake_llm)


async def test_nothing_readable_and_no_text_is_said_without_a_model_call(
    make_bot: MakeBot, fake_llm: FakeOpenAI
) -> None:
    bot = make_bot(**llm(fake_llm))
    reply = await ask(bot, "", served("tool.exe", b"MZ" + b"\x00" * 64))
    assert not reply.ok
    assert reply.notices == ("`tool.exe`: executables are not read.",)
    assert fake_llm.requests == []


async def test_without_a_model_the_files_are_said_to_be_unread(make_bot: MakeBot) -> None:
    bot = make_bot()  # no LLM configured: a supported mode
    reply = await ask(bot, "what is in this log?", served("app.log", b"ERROR x\n"))
    assert reply.notices[-1] == (
        "No language model is configured, so the attached files were not read: `app.log`."
    )


async def test_a_file_without_text_is_still_asked_about(
    make_bot: MakeBot, fake_llm: FakeOpenAI
) -> None:
    bot = make_bot(**llm(fake_llm))
    fake_llm.reply("A config file.")
    reply = await ask(bot, "", served("app.yaml", b"port: 8080\n"))
    assert reply.ok
    assert last_user(fake_llm).endswith("(The message has only the attached files: no text.)")


async def test_an_image_to_a_vision_provider(make_bot: MakeBot, fake_llm: FakeOpenAI) -> None:
    bot = make_bot(**llm(fake_llm, llm_vision=True))
    fake_llm.reply("A red rectangle.")
    reply = await ask(bot, "what is in the picture?", served("shot.png", png()))
    assert reply.ok and reply.notices == ()
    parts = last_user(fake_llm)
    assert isinstance(parts, list)
    assert parts[0] == {"type": "text", "text": "what is in the picture?"}
    assert parts[1] == {"type": "text", "text": "Attached image `shot.png`:"}
    assert parts[2]["type"] == "image_url"
    assert parts[2]["image_url"]["url"].startswith("data:image/jpeg;base64,")
    # The thread keeps a placeholder, never the image.
    fake_llm.reply("Yes.")
    await ask(bot, "is it red?")
    earlier = [m for m in fake_llm.requests[-1]["messages"] if m["role"] == "user"][-2]
    assert earlier["content"] == "what is in the picture?\n\n[image: shot.png]"


async def test_an_image_to_a_provider_that_cannot_see(
    make_bot: MakeBot, fake_llm: FakeOpenAI
) -> None:
    bot = make_bot(**llm(fake_llm))
    fake_llm.reply("I cannot see it, but here is an answer.")
    reply = await ask(bot, "what is in the picture?", served("shot.png", png()))
    assert reply.ok
    assert reply.notices == ("The model here cannot read images, so I did not look at `shot.png`.",)
    assert last_user(fake_llm) == "what is in the picture?"


async def test_a_voice_message_with_a_transcription_model(
    make_bot: MakeBot, fake_llm: FakeOpenAI
) -> None:
    speech = {"tts_engine": "openai", "tts_base_url": fake_llm.url}
    bot = make_bot(**llm(fake_llm, llm_transcription_model="whisper-1", **speech))
    fake_llm.transcript = "why is the deploy stuck?"
    fake_llm.reply("Because the migration holds a lock.")
    reply = await ask(bot, "", served("voice-message.wav", wav(), "audio/wav", voice=True))
    assert reply.ok and reply.notices == ()
    [heard] = fake_llm.transcription_requests
    assert heard["model"] == "whisper-1"
    assert heard["filename"] == "voice-message.wav"
    assert heard["size"] == len(wav())
    assert last_user(fake_llm) == "(voice message, transcribed) why is the deploy stuck?"
    # Asked by voice, answered with voice too (voice replies are set up here).
    [audio] = reply.attachments
    assert audio.kind == "audio"
    assert audio.filename.startswith("why-is-the-deploy-stuck")
    [spoken] = fake_llm.speech_requests
    assert spoken["input"] == "Because the migration holds a lock."


async def test_a_voice_message_without_a_transcription_model(
    make_bot: MakeBot, fake_llm: FakeOpenAI
) -> None:
    bot = make_bot(**llm(fake_llm))
    reply = await ask(bot, "", served("voice-message.ogg", b"OggS" + b"\x00" * 64, voice=True))
    assert not reply.ok
    assert reply.notices == (
        "`voice-message.ogg`: voice and audio cannot be transcribed here (no transcription model "
        "is set up for this model's provider), so I could not listen to it.",
    )
    assert fake_llm.requests == [] and fake_llm.transcription_requests == []


async def test_a_failed_transcription_is_a_notice(make_bot: MakeBot, fake_llm: FakeOpenAI) -> None:
    bot = make_bot(**llm(fake_llm, llm_transcription_model="whisper-1"))
    fake_llm.transcription_error(500)
    fake_llm.reply("Answered from the text.")
    reply = await ask(bot, "and this?", served("memo.wav", wav(), voice=True))
    assert reply.ok
    assert reply.notices == ("`memo.wav`: the transcription failed, so I could not listen to it.",)
    assert last_user(fake_llm) == "and this?"


async def test_files_are_cut_to_what_is_left_of_the_token_budget(
    make_bot: MakeBot, fake_llm: FakeOpenAI, write_policy: Callable[[str], Path]
) -> None:
    # 12,000 tokens a day: less than the file's share of the window (30 % of 32k), so the file
    # is cut to what the quota leaves (after the rest of the prompt and the answer) and the
    # request fits its reservation instead of being refused.
    from tests.conftest import POLICY_ALL

    policy = POLICY_ALL.replace("per_user_per_day = 100000", "per_user_per_day = 12000")
    bot = make_bot(**llm(fake_llm), policy_file=write_policy(policy))
    fake_llm.reply("A summary.", prompt_tokens=6000, completion_tokens=10)
    text = "\n".join(f"line {i} of the report with some words" for i in range(5_000))
    reply = await ask(bot, "summarize", served("report.txt", text.encode()))
    assert reply.ok, reply
    assert reply.notices[-1].startswith("The files were cut to what is left of today's token")
    assert reply.notices[0].startswith("`report.txt` is too long to read whole")
    sent = last_user(fake_llm)
    assert "line 0 of the report" in sent and "line 4999 of the report" in sent
    assert len(sent) < 7_000 * 3  # within the 12,000 - 4,000 - 1,024 tokens left for it
