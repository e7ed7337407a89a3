"""A question asked inside a Discord thread carries a reader of the thread's earlier messages
(`Request.earlier`): read through the real discord.py client from the fake Discord's
`GET /channels/{id}/messages`, oldest first, once per thread and then only what is newer.

Core's part is played by the test (`Capture` from test_files): it reads `earlier()` while
answering, as core would, and the fake's request log shows what was fetched.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace

import pytest

from core.request import Request, ThreadMessage
from tests.adapters.discord.test_discord import StartBot, fake_discord, start_bot
from tests.adapters.discord.test_files import Capture
from tests.support.fakes.discord_server import Call, FakeDiscord, FakeFile
from tests.support.fakes.openai_server import FakeOpenAI

__all__ = ["fake_discord", "start_bot"]  # fixtures shared with the Discord tests


async def read_earlier(request: Request) -> Sequence[ThreadMessage] | None:
    return None if request.earlier is None else await request.earlier.earlier()


def reads(fake: FakeDiscord, thread: str) -> list[Call]:
    return fake.calls_to("GET", rf"/channels/{thread}/messages")


async def test_a_thread_of_300_messages_is_read_oldest_first_then_only_what_is_newer(
    start_bot: StartBot, fake_discord: FakeDiscord
) -> None:
    fake, capture = fake_discord, Capture(read_earlier)
    bob = fake.add_member("bob")
    bot = await start_bot(setup=capture.install)
    thread = await fake.add_thread("importer incident")
    seeded = fake.seed_messages(thread, 300, authors=[fake.alice, bob])

    first = await fake.post_message(fake.alice, thread, f"{fake.mention()} what happened here?")
    await fake.wait_for(lambda: fake.messages_in(thread))
    await bot.adapter.idle()

    [earlier] = capture.results
    assert [m.text for m in earlier] == [f"message {n}" for n in range(1, 301)]
    assert [m.at for m in earlier] == [m["id"] for m in seeded]
    assert {m.author for m in earlier[:2]} == {"Alice", "Bob"}  # display names
    assert not any(m.from_bot for m in earlier)
    pages = reads(fake, thread)
    assert [c.query.get("limit") for c in pages] == ["100"] * 4  # 100, 100, 100, then none
    assert pages[0].query["before"] == first["id"] and "after" not in pages[0].query
    assert [c.query["before"] for c in pages[1:]] == [seeded[i]["id"] for i in (200, 100, 0)]

    # Chatter that does not mention Threadline, with a file; then a second question.
    await fake.post_message(bob, thread, "the batch size was 5000")
    await fake.post_message(
        fake.alice, thread, "here is the log", files=[FakeFile("importer.log", b"ERROR")]
    )
    second = await fake.post_message(fake.alice, thread, f"{fake.mention()} and now?")
    await fake.wait_for(lambda: len(capture.results) == 2)
    await bot.adapter.idle()

    later = capture.results[1]
    assert len(later) == 304 and later[:300] == earlier
    question, answer, chatter, log = later[300:]
    assert (question.text, question.author, question.from_bot) == (
        "what happened here?",
        "Alice",
        False,
    )
    assert (answer.text, answer.author, answer.from_bot) == ("done", "Threadline", True)
    assert (chatter.text, chatter.author) == ("the batch size was 5000", "Bob")
    assert (log.text, log.file_names) == ("here is the log", ("importer.log",))
    assert all(m.at != second["id"] for m in later)  # the question itself is not earlier
    new_reads = reads(fake, thread)[4:]
    assert len(new_reads) == 1  # only what came after the last message seen
    assert new_reads[0].query["after"] == seeded[-1]["id"] and "before" not in new_reads[0].query
    assert fake.unhandled == []


async def test_no_reader_outside_threads(start_bot: StartBot, fake_discord: FakeDiscord) -> None:
    fake, capture = fake_discord, Capture(read_earlier)
    bot = await start_bot(setup=capture.install)
    await fake.post_message(fake.alice, fake.general, f"{fake.mention()} hello")
    await fake.direct_message(fake.alice, "hello again")
    await fake.wait_for(lambda: len(capture.results) == 2)
    await bot.adapter.idle()
    assert capture.results == [None, None]
    assert fake.calls_to("GET", r"/channels/\d+/messages") == []


async def test_the_reader_reads_nothing_until_asked(
    start_bot: StartBot, fake_discord: FakeDiscord
) -> None:
    fake, capture = fake_discord, Capture()
    bot = await start_bot(setup=capture.install)
    thread = await fake.add_thread("quiet")
    fake.seed_messages(thread, 5)
    await fake.post_message(fake.alice, thread, f"{fake.mention()} hi")
    await fake.wait_for(lambda: capture.results)
    await bot.adapter.idle()
    assert capture.requests[0].earlier is not None
    assert reads(fake, thread) == []


async def test_a_long_thread_is_read_back_only_as_far_as_the_limit(
    start_bot: StartBot, fake_discord: FakeDiscord
) -> None:
    fake, capture = fake_discord, Capture(read_earlier)
    bot = await start_bot(setup=capture.install)
    bot.adapter.config = replace(bot.adapter.config, history_limit=250)
    thread = await fake.add_thread("long")
    fake.seed_messages(thread, 400)
    await fake.post_message(fake.alice, thread, f"{fake.mention()} summary?")
    await fake.wait_for(lambda: capture.results)
    await bot.adapter.idle()

    [earlier] = capture.results
    assert [m.text for m in earlier] == [f"message {n}" for n in range(151, 401)]
    assert [c.query["limit"] for c in reads(fake, thread)] == ["100", "100", "50"]


async def test_a_thread_the_bot_may_not_read_still_gets_an_answer(
    start_bot: StartBot, fake_discord: FakeDiscord, caplog: pytest.LogCaptureFixture
) -> None:
    fake, capture = fake_discord, Capture(read_earlier)
    bot = await start_bot(setup=capture.install)
    thread = await fake.add_thread("private")
    fake.seed_messages(thread, 3)
    no_access = {"code": 50001, "message": "Missing Access"}
    fake.fail_next("GET", rf"/channels/{thread}/messages", 403, body=no_access)
    await fake.post_message(fake.alice, thread, f"{fake.mention()} hi")
    await fake.wait_for(lambda: fake.messages_in(thread))
    await bot.adapter.idle()

    assert capture.results == [[]]
    assert [p.content for p in fake.messages_in(thread)] == ["done"]
    assert "the bot needs Read Message History there" in caplog.text  # what to fix


async def test_edits_and_deletions_on_discord_are_followed(
    start_bot: StartBot, fake_discord: FakeDiscord
) -> None:
    fake, capture = fake_discord, Capture(read_earlier)
    bot = await start_bot(setup=capture.install)
    thread = await fake.add_thread("secrets pasted")
    seeded = fake.seed_messages(thread, 4)
    await fake.post_message(fake.alice, thread, f"{fake.mention()} what now?")
    await fake.wait_for(lambda: capture.results)
    assert [m.text for m in capture.results[0]] == [f"message {n}" for n in range(1, 5)]

    await fake.delete_user_message(seeded[1]["id"])  # a pasted token, removed
    await fake.bulk_delete(thread, [seeded[0]["id"]])  # a moderator's clean-up
    await fake.edit_user_message(seeded[2]["id"], "message 3, corrected")
    await fake.edit_user_message(seeded[3]["id"], "")  # emptied: nothing left to give
    await fake.post_message(fake.alice, thread, f"{fake.mention()} and now?")
    await fake.wait_for(lambda: len(capture.results) == 2)
    await bot.adapter.idle()

    assert [m.text for m in capture.results[1]] == [
        "message 3, corrected",
        "what now?",
        "done",
    ]
    assert len(reads(fake, thread)) == 2  # one read back, then one read of what is newer


async def test_an_archived_thread_is_read_afresh(
    start_bot: StartBot, fake_discord: FakeDiscord
) -> None:
    fake, capture = fake_discord, Capture(read_earlier)
    bot = await start_bot(setup=capture.install)
    thread = await fake.add_thread("old")
    fake.seed_messages(thread, 3)
    await fake.post_message(fake.alice, thread, f"{fake.mention()} first")
    await fake.wait_for(lambda: capture.results)
    await bot.adapter.idle()
    await fake.archive_thread(thread)
    await fake.post_message(fake.alice, thread, f"{fake.mention()} again")  # reopens it
    await fake.wait_for(lambda: len(capture.results) == 2)
    await bot.adapter.idle()

    assert [m.text for m in capture.results[1]] == [
        "message 1",
        "message 2",
        "message 3",
        "first",
        "done",
    ]
    second = reads(fake, thread)[1:]
    assert len(second) == 1 and "before" in second[0].query  # forgotten: read back again


async def test_a_read_cut_short_keeps_the_newest_pages_and_carries_on_from_them(
    start_bot: StartBot, fake_discord: FakeDiscord
) -> None:
    fake, capture = fake_discord, Capture(read_earlier)
    bot = await start_bot(setup=capture.install)
    thread = await fake.add_thread("flaky")
    fake.seed_messages(thread, 250)
    # The second page is refused: the first (the newest 100) is what the question gets.
    no_access = {"code": 50001, "message": "Missing Access"}
    fake.fail_next("GET", rf"/channels/{thread}/messages", 403, body=no_access, skip=1)
    await fake.post_message(fake.alice, thread, f"{fake.mention()} first")
    await fake.wait_for(lambda: capture.results)
    await bot.adapter.idle()
    assert [m.text for m in capture.results[0]] == [f"message {n}" for n in range(151, 251)]

    await fake.post_message(fake.alice, thread, f"{fake.mention()} second")
    await fake.wait_for(lambda: len(capture.results) == 2)
    await bot.adapter.idle()
    assert [m.text for m in capture.results[1]][-3:] == ["message 250", "first", "done"]
    last = reads(fake, thread)[-1]
    assert len(reads(fake, thread)) == 3 and "after" in last.query  # carried on, not re-read


async def test_the_model_reads_the_thread_it_was_asked_in(
    start_bot: StartBot, fake_discord: FakeDiscord, fake_llm: FakeOpenAI
) -> None:
    """End to end, with core's own use of the reader: the earlier messages reach the model."""
    fake = fake_discord
    bob = fake.add_member("bob")
    bot = await start_bot()
    thread = await fake.add_thread("deploy")
    fake.seed_messages(thread, 3, authors=[bob], text="deploy step {n} failed with exit 137")
    fake_llm.reply("Exit 137 is an out-of-memory kill.")
    await fake.post_message(fake.alice, thread, f"{fake.mention()} what do you make of the above?")
    await fake.wait_for(lambda: fake.messages_in(thread))
    await bot.adapter.idle()

    [answer] = fake.messages_in(thread)
    assert answer.content.startswith("Exit 137 is an out-of-memory kill.")
    prompt = "\n".join(str(m.get("content")) for m in fake_llm.requests[-1]["messages"])
    for n in (1, 2, 3):
        assert f"deploy step {n} failed with exit 137" in prompt
    assert "Bob" in prompt
    assert prompt.index("deploy step 3") < prompt.index("what do you make of the above?")


async def test_a_command_used_inside_a_thread_reads_it_too(
    start_bot: StartBot, fake_discord: FakeDiscord
) -> None:
    fake, capture = fake_discord, Capture(read_earlier)
    bot = await start_bot(setup=capture.install)
    thread = await fake.add_thread("release")
    fake.seed_messages(thread, 2)
    used = await fake.slash(
        fake.alice, "ask", "summarize this", option="question", channel_id=thread
    )
    await fake.wait_for(lambda: capture.results)
    await bot.adapter.idle()
    assert [m.text for m in capture.results[0]] == ["message 1", "message 2"]
    [page] = reads(fake, thread)
    assert page.query["before"] == used.payload["id"]  # what was written before the command
