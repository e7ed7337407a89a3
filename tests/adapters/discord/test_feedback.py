"""👍/👎 under answers on Discord, end to end: the real discord.py client through the real
composition root, the fake model answering, the buttons on the answer's last message in the fake
Discord, and clicks and form submissions delivered as INTERACTION_CREATE (MESSAGE_COMPONENT,
MODAL_SUBMIT) — to the process that answered, or to another one on the same database.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import replace

import pytest
from sqlmodel import select

from adapters.discord.feedback import REASON_INPUT, custom_id
from core.request import Reply
from core.store.models import AnswerRating
from tests.adapters.discord.test_discord import RunningBot, ask_in_channel, start_bot
from tests.adapters.discord.test_stream_gateway import Streaming, streaming
from tests.support.fakes.discord_server import FakeDiscord, InteractionState, Posted
from tests.support.fakes.openai_server import FakeOpenAI

__all__ = ["start_bot", "streaming"]  # fixtures shared with the Discord tests

StartBot = Callable[..., Awaitable[RunningBot]]
REFUSED = "That answer can no longer be rated."


@pytest.fixture
async def fake_discord() -> AsyncIterator[FakeDiscord]:
    # A roomy interaction window: what is checked here is who may rate what, not speed (a
    # rating is one small write before the response).
    fake = await FakeDiscord(interaction_window=30.0).start()
    yield fake
    await fake.stop()


def _buttons(posted: Posted) -> dict[str, str]:
    """The answer's 👍/👎 custom ids, by emoji."""
    return {
        c["emoji"]["name"]: c["custom_id"]
        for row in posted.components
        for c in row.get("components", [])
        if str(c.get("custom_id", "")).startswith("tl:fb:")
    }


async def _answer(fake: FakeDiscord, fake_llm: FakeOpenAI, bot: RunningBot) -> Posted:
    """Ask in #general; returns the answer in its thread (the message with the buttons)."""
    fake_llm.reply("The importer times out because the batch size is 10,000 rows.")
    thread = await ask_in_channel(fake, "why does the importer time out?")
    await bot.adapter.idle()
    (answer,) = fake.messages_in(thread)
    return answer


async def _ratings(bot: RunningBot) -> list[tuple[str, str, str | None, str | None]]:
    async with bot.app.db.session() as s:
        rows = (await s.exec(select(AnswerRating))).all()
    return [(r.user, r.value, r.reason, r.link) for r in rows]


async def _told(fake: FakeDiscord, click: InteractionState) -> str:
    """The private answer to a click or a form (a CHANNEL_MESSAGE callback, ephemeral)."""
    await fake.wait_for(lambda: click.original)
    assert click.original is not None and click.original.ephemeral
    assert click.callback_type == 4
    return click.original.content


async def test_an_answer_gets_the_buttons_and_a_click_is_stored_and_thanked(
    start_bot: StartBot, fake_discord: FakeDiscord, fake_llm: FakeOpenAI
) -> None:
    fake = fake_discord
    bot = await start_bot()
    answer = await _answer(fake, fake_llm, bot)
    buttons = _buttons(answer)
    answer_id = buttons["👍"].rsplit(":", 1)[1]
    assert len(answer_id) == 32
    assert buttons == {"👍": custom_id("up", answer_id), "👎": custom_id("down", answer_id)}
    assert answer.content.startswith("The importer times out")

    bob = fake.add_member("bob")
    click = await fake.click(bob, answer, buttons["👍"])
    assert await _told(fake, click) == "Thanks for the 👍."
    await bot.adapter.idle()
    link = f"https://discord.com/channels/{fake.guild_id}/{answer.channel_id}/{answer.id}"
    assert await _ratings(bot) == [(bob["id"], "up", None, link)]
    assert bot.app.core.feedback is not None
    assert await bot.app.core.feedback.count("discord", fake.guild_id) == 1


async def test_an_app_command_answer_has_the_buttons_and_commands_have_none(
    start_bot: StartBot, fake_discord: FakeDiscord, fake_llm: FakeOpenAI
) -> None:
    fake = fake_discord
    bot = await start_bot()
    budget = await fake.slash(fake.alice, "budget")
    fake_llm.reply("Because the cache is cold.")
    asked = await fake.slash(fake.alice, "ask", "why is it slow?", option="question")
    await fake.wait_for(lambda: asked.visible)
    await bot.adapter.idle()
    assert budget.visible and not any(_buttons(p) for p in budget.visible)
    (shown,) = asked.visible
    assert shown.content == "Because the cache is cold." and _buttons(shown)
    click = await fake.click(fake.alice, shown, _buttons(shown)["👍"])
    assert await _told(fake, click) == "Thanks for the 👍."
    assert [(v, r) for _, v, r, _ in await _ratings(bot)] == [("up", None)]


async def test_a_long_answer_has_the_buttons_under_its_last_part_only(
    start_bot: StartBot, fake_discord: FakeDiscord, fake_llm: FakeOpenAI
) -> None:
    fake = fake_discord
    bot = await start_bot()
    fake_llm.reply(("Retries pile up when the queue is slow. " * 30 + "\n\n") * 3 + "The end.")
    thread = await ask_in_channel(fake, "why do retries pile up?")
    await bot.adapter.idle()
    parts = fake.messages_in(thread)
    assert len(parts) >= 2
    assert [bool(_buttons(p)) for p in parts] == [False] * (len(parts) - 1) + [True]
    assert parts[-1].content.endswith("The end.")


async def test_changing_a_rating_three_times_keeps_one_row_with_the_last_value(
    start_bot: StartBot, fake_discord: FakeDiscord, fake_llm: FakeOpenAI
) -> None:
    fake = fake_discord
    bot = await start_bot()
    answer = await _answer(fake, fake_llm, bot)
    buttons = _buttons(answer)
    first = await fake.click(fake.alice, answer, buttons["👍"])
    assert await _told(fake, first) == "Thanks for the 👍."
    down = await fake.click(fake.alice, answer, buttons["👎"])
    await fake.wait_for(lambda: down.modal)  # a 👎 opens the form (and counts already)
    again = await fake.click(fake.alice, answer, buttons["👍"])
    assert await _told(fake, again) == "Changed your rating to 👍. Thanks."
    await bot.adapter.idle()
    assert [(u, v) for u, v, _, _ in await _ratings(bot)] == [(fake.alice["id"], "up")]


async def test_a_down_rating_opens_a_form_whose_reason_is_stored(
    start_bot: StartBot, fake_discord: FakeDiscord, fake_llm: FakeOpenAI
) -> None:
    fake = fake_discord
    bot = await start_bot()
    answer = await _answer(fake, fake_llm, bot)
    answer_id = _buttons(answer)["👎"].rsplit(":", 1)[1]
    click = await fake.click(fake.alice, answer, _buttons(answer)["👎"])
    modal = await fake.wait_for(lambda: click.modal)
    assert modal is not None and click.callback_type == 9 and click.original is None
    assert modal["custom_id"] == f"tl:fb:why:{answer_id}"
    (field,) = modal["components"][0]["components"]
    assert (field["custom_id"], field["max_length"], field["required"]) == (
        REASON_INPUT,
        300,
        False,
    )
    await bot.adapter.idle()
    assert [(v, r) for _, v, r, _ in await _ratings(bot)] == [("down", None)]  # counted at once

    sent = await fake.submit_modal(fake.alice, click, {REASON_INPUT: "It was the flaky\ntest"})
    assert await _told(fake, sent) == "Thanks, your reason is noted with your 👎."
    await bot.adapter.idle()
    link = f"https://discord.com/channels/{fake.guild_id}/{answer.channel_id}/{answer.id}"
    assert await _ratings(bot) == [(fake.alice["id"], "down", "It was the flaky test", link)]


async def test_another_process_takes_the_click_and_the_form(
    start_bot: StartBot, fake_discord: FakeDiscord, fake_llm: FakeOpenAI, database_url: str
) -> None:
    fake = fake_discord
    answering = await start_bot(database_url=database_url)
    answer = await _answer(fake, fake_llm, answering)
    # A second worker connects (a restart, a deploy): the gateway now delivers to it.
    other = await start_bot(database_url=database_url)
    click = await fake.click(fake.alice, answer, _buttons(answer)["👎"])
    await fake.wait_for(lambda: click.modal)
    sent = await fake.submit_modal(fake.alice, click, {REASON_INPUT: "stale"})
    assert await _told(fake, sent) == "Thanks, your reason is noted with your 👎."
    await other.adapter.idle()
    await answering.adapter.idle()
    assert [(v, r) for _, v, r, _ in await _ratings(answering)] == [("down", "stale")]


async def test_forged_ids_and_answers_from_another_channel_are_refused(
    start_bot: StartBot, fake_discord: FakeDiscord, fake_llm: FakeOpenAI
) -> None:
    fake = fake_discord
    bot = await start_bot()
    answer = await _answer(fake, fake_llm, bot)
    answer_id = _buttons(answer)["👍"].rsplit(":", 1)[1]
    forged = [custom_id("up", "0" * 32), custom_id("down", "../../x"), f"tl:fb:meh:{answer_id}"]
    for fake_id in forged:
        answer.components[0]["components"].append(
            {"type": 2, "style": 2, "custom_id": fake_id, "emoji": {"name": "x"}}
        )
    told = [await _told(fake, await fake.click(fake.alice, answer, c)) for c in forged]
    assert told[:2] == [REFUSED, REFUSED] and "👍 or 👎" in told[2]
    # The real button, seen from another channel (no answer of its own there).
    elsewhere = replace(answer, channel_id=fake.add_channel("random"))
    down = await fake.click(fake.alice, elsewhere, _buttons(answer)["👎"])
    assert await _told(fake, down) == REFUSED and down.modal is None  # no form opened
    # A form naming an answer that is not there is refused too.
    real = await fake.click(fake.alice, answer, _buttons(answer)["👎"])
    await fake.wait_for(lambda: real.modal)
    assert real.modal is not None
    real.modal["custom_id"] = "tl:fb:why:" + "f" * 32
    assert await _told(fake, await fake.submit_modal(fake.alice, real, {})) == REFUSED
    await bot.adapter.idle()
    assert [(v, r) for _, v, r, _ in await _ratings(bot)] == [("down", None)]  # the real 👎


async def test_without_feedback_there_are_no_buttons(
    start_bot: StartBot, fake_discord: FakeDiscord, fake_llm: FakeOpenAI
) -> None:
    bot = await start_bot(feedback=False)
    answer = await _answer(fake_discord, fake_llm, bot)
    assert answer.components == []


# -- where the buttons go when the streamed message cannot take them -----------------------------

RATED = "a" * 32


async def test_a_streamed_answer_gets_its_buttons_with_the_final_edit(
    streaming: Streaming,
) -> None:
    s, fake = streaming, streaming.fake
    thread = await s.ask("why?")
    s.script.text("Because the batch size is 10,000 rows.")
    [message] = await fake.wait_for(lambda: fake.messages_in(thread))
    assert message.components == []  # none while it is being written
    s.script.finish(Reply("Because the batch size is 10,000 rows.", answer_id=RATED))
    await s.done()
    assert fake.messages_in(thread) == [message]
    assert _buttons(message) == {"👍": custom_id("up", RATED), "👎": custom_id("down", RATED)}


async def test_edits_refused_put_the_buttons_under_the_rest(streaming: Streaming) -> None:
    s, fake = streaming, streaming.fake
    thread = await s.ask("why?")
    s.script.text("Because the batch")
    await fake.wait_for(lambda: fake.messages_in(thread))
    fake.fail_next("PATCH", rf"/channels/{thread}/messages/\d+", 403, code=50001)
    s.script.text(" size is 10,000 rows.")
    await s.time.next()  # the live edit is refused
    await fake.wait_for(lambda: fake.calls_to("PATCH", rf"/channels/{thread}/messages/\d+"))
    s.script.finish(Reply("Because the batch size is 10,000 rows.", answer_id=RATED))
    await s.done()
    first, rest = fake.messages_in(thread)
    assert rest.content == " size is 10,000 rows."
    assert not _buttons(first) and _buttons(rest)["👎"] == custom_id("down", RATED)


async def test_a_message_deleted_meanwhile_is_posted_again_with_the_buttons(
    streaming: Streaming,
) -> None:
    s, fake = streaming, streaming.fake
    thread = await s.ask("why?")
    s.script.text("Because the batch")
    [message] = await fake.wait_for(lambda: fake.messages_in(thread))
    message.deleted = True  # a moderator removed it
    s.script.text(" size is 10,000 rows.")
    s.script.finish(Reply("Because the batch size is 10,000 rows.", answer_id=RATED))
    await s.done()
    [final] = fake.messages_in(thread)
    assert final.content == "Because the batch size is 10,000 rows."
    assert _buttons(final)["👍"] == custom_id("up", RATED)


async def test_an_answer_in_a_direct_message_is_rated_there(
    start_bot: StartBot, fake_discord: FakeDiscord, fake_llm: FakeOpenAI
) -> None:
    fake = fake_discord
    bot = await start_bot()
    fake_llm.reply("Use the bulk endpoint.")
    await fake.direct_message(fake.alice, "how do I import 1M rows?")
    dm = fake.dm_channel_of(fake.alice)
    assert dm is not None
    [answer] = await fake.wait_for(lambda: fake.messages_in(dm))
    await bot.adapter.idle()
    click = await fake.click(fake.alice, answer, _buttons(answer)["👎"])
    await fake.wait_for(lambda: click.modal)
    sent = await fake.submit_modal(fake.alice, click, {REASON_INPUT: "too slow"})
    assert await _told(fake, sent) == "Thanks, your reason is noted with your 👎."
    await bot.adapter.idle()
    link = f"https://discord.com/channels/@me/{dm}/{answer.id}"
    assert await _ratings(bot) == [(fake.alice["id"], "down", "too slow", link)]
    assert bot.app.core.feedback is not None
    assert await bot.app.core.feedback.count("discord", f"dm-{fake.alice['id']}") == 1


# -- the pure parts --------------------------------------------------------------------------------


def test_the_reason_is_read_from_action_rows_or_labels() -> None:
    from adapters.discord.feedback import message_link, submitted_reason

    row = {"type": 1, "components": [{"type": 4, "custom_id": REASON_INPUT, "value": "stale"}]}
    label = {"type": 18, "component": {"type": 4, "custom_id": REASON_INPUT, "value": "wrong"}}
    other = {"type": 1, "components": [{"type": 4, "custom_id": "else", "value": "x"}]}
    assert submitted_reason([row]) == "stale"
    assert submitted_reason([other, label]) == "wrong"
    assert submitted_reason([other]) is None
    assert submitted_reason("nonsense") is None and submitted_reason([None, 3]) is None
    assert message_link(1, 2, 3) == "https://discord.com/channels/1/2/3"
    assert message_link(None, 2, 3) == "https://discord.com/channels/@me/2/3"
    assert message_link(1, None, 3) is None
