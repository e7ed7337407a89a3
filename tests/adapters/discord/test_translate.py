"""Discord translation (adapters/discord/translate.py): pure functions, no Discord needed."""

from __future__ import annotations

import pytest

from adapters.discord.payloads import CommandData
from adapters.discord.translate import (
    MESSAGE_LIMIT,
    Names,
    Origin,
    Outgoing,
    RoleRef,
    command_definitions,
    command_text,
    is_private,
    message_text,
    render,
    thread_name,
    to_request,
)
from core import messages
from core.commands import Command, CommandContext, builtin_commands
from core.request import Attachment, Reply, Source

BOT = 900
GUILD, CHANNEL, THREAD, USER = 1, 2, 3, 4


# -- identity -----------------------------------------------------------------------------------


def test_a_thread_message_matches_policy_on_the_parent_channel_and_converses_in_the_thread() -> (
    None
):
    origin = Origin(GUILD, THREAD, USER, parent_id=CHANNEL, roles=(RoleRef(7, "Maintainers"),))

    request = to_request(origin, "  why?  ", thread="ignored inside a thread")

    assert (request.platform, request.tenant) == ("discord", "1")
    assert (request.channel, request.thread, request.user) == ("2", "3", "4")
    assert request.roles == ("7", "Maintainers")  # ids and names: rules may use either
    assert request.text == "why?"


def test_outside_a_thread_the_caller_names_the_conversation() -> None:
    request = to_request(Origin(GUILD, CHANNEL, USER), "hi", thread="cmd-55")
    assert (request.channel, request.thread) == ("2", "cmd-55")


def test_a_dm_has_a_tenant_of_its_own_per_user() -> None:
    request = to_request(Origin(None, 77, USER), "hi")
    assert request.tenant == "dm-4" and request.channel == "77" and request.thread == "77"
    assert request.roles == ()


def test_roles_are_deduplicated_and_empty_names_dropped() -> None:
    origin = Origin(
        GUILD, CHANNEL, USER, roles=(RoleRef(5, "ops"), RoleRef(6, ""), RoleRef(8, "ops"))
    )
    assert to_request(origin, "x").roles == ("5", "ops", "6", "8")


# -- message text -------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("content", "expected"),
    [
        (f"<@{BOT}> why does the importer time out?", "why does the importer time out?"),
        (f"<@!{BOT}>   why?", "why?"),  # the legacy nickname form
        (f"hey <@{BOT}>, ask <@{USER}> about <#{CHANNEL}>", "hey , ask @dana about #ops"),
        ("ping <@&7> <:party:123> <a:wave:456>", "ping @Maintainers :party: :wave:"),
        ("<@12345> unknown ids stay readable", "@12345 unknown ids stay readable"),
    ],
)
def test_message_text_drops_the_bot_mention_and_names_the_others(
    content: str, expected: str
) -> None:
    names = Names(users={USER: "dana"}, roles={7: "Maintainers"}, channels={CHANNEL: "ops"})
    assert message_text(content, BOT, names) == expected


@pytest.mark.parametrize(
    ("question", "expected"),
    [
        ("why does the importer time out?", "why does the importer time out?"),
        ("**Bold** `code` question\nsecond line", "Bold code question"),
        ("", messages.DISCORD_THREAD_NAME),
        ("```\n```", messages.DISCORD_THREAD_NAME),
    ],
)
def test_thread_names_come_from_the_question(question: str, expected: str) -> None:
    assert thread_name(question) == expected


def test_a_long_question_is_cut_at_a_word_within_100_characters() -> None:
    name = thread_name("word " * 40)
    assert len(name) <= 100 and name.endswith("…") and not name.endswith(" …")
    assert len(thread_name("x" * 300)) == 100


# -- rendering ----------------------------------------------------------------------------------


def test_render_splits_long_text_with_balanced_fences_within_the_limit() -> None:
    code = "\n".join(f"line {i} = value_{i}" for i in range(300))
    reply = Reply("Intro paragraph.\n\n```python\n" + code + "\n```\n\nOutro.")

    parts = render(reply, upload_limit=10)

    assert len(parts) > 2
    for part in parts:
        assert part.file is None and 0 < len(part.text) <= MESSAGE_LIMIT
        fences = [ln for ln in part.text.splitlines() if ln.startswith("```")]
        assert len(fences) % 2 == 0
    body = [ln for p in parts for ln in p.text.splitlines() if ln.startswith("line ")]
    assert body == code.splitlines()


def test_render_adds_notices_and_sources_after_the_answer() -> None:
    url = "https://github.com/team/repo/blob/abc/a_b.py#L10-L12"
    sources = (Source("code", "a_b.py:10-12", url), Source("memory", "channel memory"))
    reply = Reply("Answer.", notices=("Heads-up: 80% used.",), sources=sources)
    [part] = render(reply, upload_limit=10)
    assert part.text == (
        f"Answer.\n\n_Heads-up: 80% used._\n\nSources: [a\\_b.py:10-12](<{url}>) · "
        "from channel memory"
    )


def test_attachments_become_files_and_one_over_the_limit_a_clear_refusal() -> None:
    ok = Attachment("audio", "answer.wav", b"x" * 100, "audio/wav")
    big = Attachment("image", "chart.png", b"x" * 3_000, "image/png")

    parts = render(Reply("Here.", attachments=(ok, big)), upload_limit=2_048)

    assert parts[0] == Outgoing(text="Here.")
    assert parts[1] == Outgoing(file=ok)
    assert parts[2].file is None
    assert parts[2].text == messages.discord_file_too_large("chart.png", 3_000, 2_048)
    assert "chart.png" in parts[2].text and "2.0 KB" in parts[2].text and "2.9 KB" in parts[2].text


def test_an_empty_reply_still_says_something() -> None:
    assert render(Reply("  "), upload_limit=10) == [Outgoing(text=messages.DISCORD_NO_ANSWER)]


def test_refusals_and_personal_results_are_private() -> None:
    assert is_private(Reply("x", ephemeral=True))
    assert is_private(Reply("no", ok=False))
    assert not is_private(Reply("public"))


# -- app commands -------------------------------------------------------------------------------


async def _noop(_ctx: CommandContext, _args: str) -> Reply:
    return Reply("")


def test_command_definitions_have_a_subcommand_per_shared_command() -> None:
    extra = [
        Command("save", "/save [--global | --me] FACT", "remember a fact", _noop),
        Command("memory", "/memory list | search QUERY | delete ID", "memory", _noop),
        Command("graph", "/graph SYMBOL [DEPTH]", "call graph " + "x" * 200, _noop),
        Command("Bad Name", "/bad", "not a valid Discord name", _noop),
    ]
    [definition] = command_definitions([*builtin_commands(), *extra])

    assert definition["name"] == "threadline" and definition["type"] == 1
    subs = {o["name"]: o for o in definition.get("options", [])}
    assert list(subs) == ["help", "ask", "budget", "save", "memory", "graph"]
    assert "options" not in subs["help"] and "options" not in subs["budget"]
    ask = subs["ask"]["options"][0]
    assert (ask["name"], ask["type"], ask["required"]) == ("question", 3, True)
    assert subs["save"]["options"][0]["name"] == "fact"
    assert subs["save"]["options"][0]["required"] is True  # the flags are optional, FACT not
    assert subs["memory"]["options"][0]["required"] is False  # alternatives
    assert subs["graph"]["options"][0]["name"] == "symbol"
    assert all(1 <= len(s["description"]) <= 100 for s in subs.values())


def test_at_most_25_subcommands_are_defined() -> None:
    many = [Command(f"c{i}", f"/c{i}", "s", _noop) for i in range(30)]
    [definition] = command_definitions(many)
    assert len(definition.get("options", [])) == 25


def _data(sub: str | None, value: str | None = None) -> CommandData:
    data: CommandData = {"id": "1", "name": "threadline", "type": 1}
    if sub is not None:
        option: dict[str, object] = {"name": sub, "type": 1}
        if value is not None:
            option["options"] = [{"name": "text", "type": 3, "value": value}]
        data["options"] = [option]  # type: ignore[list-item]
    return data


@pytest.mark.parametrize(
    ("data", "text"),
    [
        (_data("ask", " how do we deploy? "), "/ask how do we deploy?"),
        (_data("save", "--me I prefer tabs"), "/save --me I prefer tabs"),
        (_data("budget"), "/budget"),
        (_data(None), "/help"),
    ],
)
def test_command_text_maps_to_the_shared_language(data: CommandData, text: str) -> None:
    assert command_text(data) == text


def test_a_speaker_on_a_threadline_message_asks_to_read_it_aloud() -> None:
    from adapters.discord.translate import asks_to_read_aloud, read_aloud_text

    me = 100
    assert asks_to_read_aloud("🔊", me, 7, me)
    assert asks_to_read_aloud("🔉", me, 7, me)
    assert not asks_to_read_aloud("👍", me, 7, me)
    assert not asks_to_read_aloud(None, me, 7, me)  # a custom emoji
    assert not asks_to_read_aloud("🔊", 8, 7, me)  # someone else's message
    assert not asks_to_read_aloud("🔊", me, me, me)  # Threadline's own reaction
    assert read_aloud_text("Ask <@100> again", me) == "/tts Ask again"
