"""Voice replies on Discord through the fake Discord server: a real voice message (flag 8192,
duration, waveform, OGG/Opus) sent with discord.py's own HTTP client, the plain-file fallback
where a channel refuses voice messages (50173), and the upload limit."""

from __future__ import annotations

import base64
import io

import soundfile as sf

from tests.adapters.discord.test_discord import StartBot, ask_in_channel, fake_discord, start_bot
from tests.support.fakes.discord_server import IS_VOICE_MESSAGE, FakeDiscord
from tests.support.fakes.openai_server import FakeOpenAI

__all__ = ["fake_discord", "start_bot"]  # fixtures shared with the Discord tests


async def test_ask_voice_posts_the_answer_and_a_voice_message_in_the_thread(
    start_bot: StartBot, fake_discord: FakeDiscord, fake_llm: FakeOpenAI
) -> None:
    fake = fake_discord
    bot = await start_bot(tts_base_url=fake_llm.url)
    fake_llm.reply("The importer times out because the batch is too large.")

    thread = await ask_in_channel(fake, "/ask --voice why does the importer time out?")
    await fake.wait_for(lambda: len(fake.messages_in(thread)) == 2)
    await bot.adapter.idle()

    text, voice = fake.messages_in(thread)
    assert text.content == "The importer times out because the batch is too large."
    assert voice.flags & IS_VOICE_MESSAGE
    assert voice.content == ""
    (file,) = voice.files
    assert file.filename == "voice-message.ogg"
    assert file.content_type == "audio/ogg"
    info = sf.info(io.BytesIO(file.data))
    assert (info.format, info.subtype) == ("OGG", "OPUS")
    (meta,) = voice.attachment_meta
    assert abs(float(meta["duration_secs"]) - info.duration) < 0.05
    waveform = base64.b64decode(meta["waveform"])
    assert 1 <= len(waveform) <= 256
    assert len(set(waveform)) > 3  # follows the audio: not flat
    # It went through discord.py's HTTP client (its route), as one multipart request.
    posts = fake.calls_to("POST", rf"/channels/{thread}/messages")
    assert sum(1 for c in posts if c.files) == 1
    assert fake.unhandled == []


async def test_a_channel_that_refuses_voice_messages_gets_a_plain_audio_file(
    start_bot: StartBot, fake_discord: FakeDiscord, fake_llm: FakeOpenAI
) -> None:
    fake = fake_discord
    bot = await start_bot(tts_base_url=fake_llm.url)
    message = await fake.post_message(
        fake.alice, fake.general, f"{fake.mention()} /tts Deploys run at noon."
    )
    thread = message["id"]
    fake.no_voice_messages.add(thread)
    await fake.wait_for(lambda: len(fake.messages_in(thread)) == 2)
    await bot.adapter.idle()

    heading, audio = fake.messages_in(thread)
    assert heading.content.startswith("Read aloud (0:")
    assert not audio.flags & IS_VOICE_MESSAGE
    (file,) = audio.files
    assert file.filename == "deploys-run-at-noon.ogg"
    assert file.data.startswith(b"OggS")
    refused = [
        c
        for c in fake.calls_to("POST", rf"/channels/{thread}/messages")
        if c.body and c.body.get("flags") == IS_VOICE_MESSAGE
    ]
    assert len(refused) == 1  # tried once as a voice message, then as a file


async def test_audio_over_the_upload_limit_is_refused_with_a_message(
    start_bot: StartBot, fake_discord: FakeDiscord, fake_llm: FakeOpenAI
) -> None:
    fake = fake_discord
    fake_llm.speech_seconds_per_char = 1.0  # long audio from a short text
    bot = await start_bot(tts_base_url=fake_llm.url, discord_upload_limit="4KB")
    thread = await ask_in_channel(fake, "/tts A short text read very slowly.")
    await fake.wait_for(lambda: len(fake.messages_in(thread)) == 2)
    await bot.adapter.idle()

    _, note = fake.messages_in(thread)
    assert note.files == []
    assert "I could not attach `a-short-text-read-very-slowly.ogg`" in note.content
    assert "at most 4.0 KB" in note.content
    assert [f for c in fake.calls for f in c.files] == []


async def test_the_app_command_answers_with_the_audio_file(
    start_bot: StartBot, fake_discord: FakeDiscord, fake_llm: FakeOpenAI
) -> None:
    fake = fake_discord
    await start_bot(tts_base_url=fake_llm.url)
    state = await fake.slash(fake.alice, "tts", "Hello from the app command.")
    await fake.wait_for(lambda: len(state.visible) == 2)
    heading, audio = state.visible
    assert heading.content.startswith("Read aloud (0:")
    (file,) = audio.files
    assert file.data.startswith(b"OggS")


async def test_a_speaker_reaction_on_an_answer_reads_it_aloud_in_its_thread(
    start_bot: StartBot, fake_discord: FakeDiscord, fake_llm: FakeOpenAI
) -> None:
    fake = fake_discord
    bot = await start_bot(tts_base_url=fake_llm.url)
    fake_llm.reply("Backups run at **01:00 UTC**.")
    thread = await ask_in_channel(fake, "when do backups run?")
    await bot.adapter.idle()
    (answer,) = fake.messages_in(thread)

    await fake.react(fake.alice, answer, "👍")  # another emoji: nothing
    await bot.adapter.idle()
    assert fake_llm.speech_requests == []

    await fake.react(fake.alice, answer)
    await fake.wait_for(lambda: len(fake.messages_in(thread)) == 3)
    await bot.adapter.idle()
    heading, voice = fake.messages_in(thread)[1:]
    assert heading.content.startswith("Read aloud (0:")
    assert voice.flags & IS_VOICE_MESSAGE
    assert fake_llm.speech_requests[-1]["input"] == "Backups run at 01:00 UTC."

    await fake.react(fake.alice, answer)  # the same person again (or a replayed event): once
    await bot.adapter.idle()
    assert len(fake.messages_in(thread)) == 3
    assert fake.unhandled == []


async def test_voice_in_a_thread_reads_the_last_answer_there(
    start_bot: StartBot, fake_discord: FakeDiscord, fake_llm: FakeOpenAI
) -> None:
    fake = fake_discord
    bot = await start_bot(tts_base_url=fake_llm.url)
    fake_llm.reply("The cache is flushed every ten minutes.")
    thread = await ask_in_channel(fake, "how often is the cache flushed?")
    await fake.post_message(fake.alice, thread, "/voice")  # a follow-up: no mention needed
    await fake.wait_for(lambda: len(fake.messages_in(thread)) == 3)
    await bot.adapter.idle()
    heading, voice = fake.messages_in(thread)[1:]
    assert heading.content == "Read aloud (0:01): how often is the cache flushed?"
    assert voice.flags & IS_VOICE_MESSAGE
    assert fake_llm.speech_requests[-1]["input"] == "The cache is flushed every ten minutes."
