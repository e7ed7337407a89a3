"""Slack <-> core translation, without Slack: to_request, render, mrkdwn, filters."""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, cast

import pytest

from adapters.slack import filters
from adapters.slack.mrkdwn import to_mrkdwn
from adapters.slack.translate import MESSAGE_LIMIT, command_text, render, to_request
from adapters.slack.web import SlackConfigError, api_base_url
from core.request import Reply, Request, Source
from tests.support.fakes.slack_events import command, mention, message

if TYPE_CHECKING:
    from adapters.slack.payloads import EventCallback, SlashCommand

BOT = filters.BotIdentity(user_id="U0THREADLINE", bot_id="B0THREADLINE", team_id="T0HOME")


# -- to_request --------------------------------------------------------------------------------


def request_from(body: Mapping[str, Any]) -> Request:
    return to_request(cast("EventCallback | SlashCommand", body), bot_user_id=BOT.user_id)


def test_a_mention_becomes_a_request_in_the_thread_of_the_message() -> None:
    body = mention("where do we validate &lt;webhooks&gt;?", channel="C9", ts="17.1", user="U7")
    request = request_from(body)
    assert (request.platform, request.tenant, request.channel) == ("slack", "T1", "C9")
    assert request.thread == "17.1"  # a top-level mention starts its own thread
    assert request.user == "U7"
    assert request.text == "where do we validate <webhooks>?"  # mention gone, unescaped


def test_a_threaded_mention_stays_in_its_thread_and_the_enterprise_is_the_tenant() -> None:
    body = mention("hi", ts="20.5", thread_ts="10.0", team="T2", enterprise="E1")
    request = request_from(body)
    assert request.thread == "10.0"
    assert request.tenant == "E1"


def test_links_channels_and_other_mentions_are_readable() -> None:
    body = message(
        "<@U0THREADLINE|threadline> see <https://x.dev/a?b=1&amp;c=2|the docs>, "
        "<https://y.dev>, <#C123|ops> and <@U5>, <!here>"
    )
    text = request_from(body).text
    assert text == "see the docs (https://x.dev/a?b=1&c=2), https://y.dev, #ops and <@U5>, @here"


@pytest.mark.parametrize(
    ("typed", "core_text"),
    [
        ("", "/help"),
        ("budget", "/budget"),
        ("ask where is the deploy script?", "/ask where is the deploy script?"),
        ("memory list", "/memory list"),
        ("/budget", "/budget"),
        ("42?", "/ask 42?"),
    ],
)
def test_slash_command_text_reaches_core_as_the_shared_command(typed: str, core_text: str) -> None:
    assert command_text(typed) == core_text
    request = request_from(command(typed, channel="C3", user="U3", team="T3", trigger_id="99.1"))
    assert request.text == core_text
    assert (request.tenant, request.channel, request.user) == ("T3", "C3", "U3")
    assert request.thread == "cmd-99.1"


# -- render --------------------------------------------------------------------------------------


def test_markdown_becomes_slack_mrkdwn() -> None:
    md = (
        "# Deploy\n"
        "Use **helm** and *not* kubectl; ~~never~~ `a<b>`. See [docs](https://x.dev/?a=1&b=2).\n"
        "- one\n  - nested\n1. first\n> quoted\n\n"
        "```python\nif a < b:\n    pass\n```"
    )
    assert to_mrkdwn(md) == (
        "*Deploy*\n"
        "Use *helm* and _not_ kubectl; ~never~ `a&lt;b&gt;`. See <https://x.dev/?a=1&amp;b=2|docs>.\n"
        "• one\n  ◦ nested\n1. first\n> quoted\n\n"
        "```\nif a &lt; b:\n    pass\n```"
    )


def test_model_output_cannot_ping_the_channel_or_form_links() -> None:
    out = to_mrkdwn("<!channel> hello <@U1> <javascript:alert(1)|x> [x](javascript:alert(1))")
    assert "<!channel>" not in out and "<@U1>" not in out
    assert "&lt;!channel&gt;" in out
    assert "<javascript" not in out


def test_tables_become_code_blocks_and_snake_case_survives() -> None:
    out = to_mrkdwn("| a | b |\n|---|---|\n| 1 | 2 |\nuse snake_case_names and 2*3*4")
    assert out.startswith("```\n| a | b |")
    assert "snake_case_names and 2*3*4" in out


def test_render_adds_notices_and_splits_under_the_limit() -> None:
    # (The sources are a block under the last message: `adapters.slack.delivery`.)
    sources = (Source("code", "a.py:1-2"),)
    reply = Reply("Answer with **bold**.", notices=("Heads-up: 80% used.",), sources=sources)
    assert render(reply) == ["Answer with *bold*.\n\n_Heads-up: 80% used._"]
    code = "```python\n" + "".join(f"value_{i} = compute({i})  # step {i}\n" for i in range(400))
    long = Reply("Intro paragraph.\n\n" + code + "```\n\nClosing words.")
    parts = render(long)
    assert len(parts) >= 4
    for part in parts:
        assert len(part) <= MESSAGE_LIMIT
        assert part.count("```") % 2 == 0
    assert parts[0] == "Intro paragraph."  # the code block starts a new message
    assert parts[-1].endswith("Closing words.")
    lines = [ln for p in parts for ln in p.splitlines() if ln.startswith("value_")]
    assert lines == [f"value_{i} = compute({i})  # step {i}" for i in range(400)]


# -- filters ------------------------------------------------------------------------------------


def event_of(body: dict[str, Any]) -> Any:
    return body["event"]


@pytest.mark.parametrize(
    ("body", "reason"),
    [
        (message("hi", bot_id="B9", user=None), "from a bot"),
        (message("hi", subtype="bot_message", user=None), "from a bot"),
        (message("my own echo", user=BOT.user_id, thread_ts="1.0"), "from a bot"),
        (message("edited", subtype="message_changed", thread_ts="1.0"), "subtype"),
        (message("joined", subtype="channel_join", thread_ts="1.0"), "subtype"),
        (message("top-level chatter"), "top-level"),
    ],
)
def test_bots_edits_and_chatter_are_not_requests(body: dict[str, Any], reason: str) -> None:
    found = filters.skip_reason(event_of(body), BOT)
    assert found is not None and reason in found


def test_dms_mentions_and_thread_replies_may_be_requests() -> None:
    assert filters.skip_reason(event_of(message("hi", channel_type="im")), BOT) is None
    assert filters.skip_reason(event_of(mention("hi")), BOT) is None
    reply = event_of(message("and staging?", thread_ts="1.0"))
    assert filters.skip_reason(reply, BOT) is None
    assert filters.needs_a_thread_check(reply)  # ...if Threadline answers in that thread
    assert not filters.needs_a_thread_check(event_of(message("hi", channel_type="im")))
    shared = event_of(message("file", subtype="file_share", channel_type="im"))
    assert filters.skip_reason(shared, BOT) is None


# -- web ------------------------------------------------------------------------------------------


def test_the_api_url_must_end_in_api() -> None:
    assert api_base_url(None) == "https://slack.com/api/"
    assert api_base_url("http://127.0.0.1:9/api") == "http://127.0.0.1:9/api/"
    assert api_base_url("https://proxy.corp/slack/api/") == "https://proxy.corp/slack/api/"
    with pytest.raises(SlackConfigError, match=re.escape("/api/")):
        api_base_url("http://127.0.0.1:9")


def test_the_manifest_declares_what_the_adapter_handles() -> None:
    from pathlib import Path

    import adapters.slack

    text = (Path(adapters.slack.__file__).parent / "manifest.yaml").read_text()
    events = ["app_mention", "message.channels", "message.groups", "message.im", "message.mpim"]
    events.append("reaction_added")  # :speaker: reads a message aloud
    scopes = ["app_mentions:read", "chat:write", "commands", "reactions:write", "files:write"]
    scopes.append("reactions:read")
    for name in events + scopes + ["channels:history", "im:history"]:
        assert re.search(rf"^\s+- {re.escape(name)}\b", text, re.MULTILINE), name
    assert "command: /threadline" in text
    assert "socket_mode_enabled: true" in text
    assert "url: https://YOUR-HOST/slack/events" in text  # the command (HTTP mode)
    assert "request_url: https://YOUR-HOST/slack/events" in text  # events (HTTP mode)


def test_a_speaker_on_a_threadline_message_asks_to_read_it_aloud() -> None:
    from adapters.slack.translate import asks_to_read_aloud, read_aloud_request

    def event(**over: Any) -> Any:
        base = {
            "type": "reaction_added",
            "user": "U1",
            "reaction": "speaker",
            "item_user": "UBOT",
            "item": {"type": "message", "channel": "C1", "ts": "2.0"},
        }
        return {**base, **over}

    assert asks_to_read_aloud(event(), "UBOT")
    assert asks_to_read_aloud(event(reaction="loud_sound::skin-tone-2"), "UBOT")
    assert not asks_to_read_aloud(event(reaction="eyes"), "UBOT")
    assert not asks_to_read_aloud(event(item_user="U2"), "UBOT")
    assert not asks_to_read_aloud(event(user="UBOT"), "UBOT")
    assert not asks_to_read_aloud(event(item={"type": "file"}), "UBOT")

    body: Any = {"type": "event_callback", "team_id": "T1", "event_id": "Ev1", "event": event()}
    message: Any = {"ts": "2.0", "thread_ts": "1.0", "text": "<@U1> a &lt; b &amp; c"}
    request = read_aloud_request(body, message)
    assert (request.tenant, request.channel, request.thread, request.user) == (
        "T1",
        "C1",
        "1.0",
        "U1",
    )
    assert request.text == "/tts a < b & c"


def test_pathological_markdown_converts_in_one_pass() -> None:
    """20,000 brackets or "[a](" repeated used to be rescanned from every bracket (about 5 s
    on the event loop); link text and URLs now stop at the next bracket."""
    assert to_mrkdwn("[" * 20_000) == "[" * 20_000
    assert to_mrkdwn("[a](" * 5_000) == "[a](" * 5_000
    assert to_mrkdwn("![" * 10_000) == "![" * 10_000
    assert to_mrkdwn("[docs](https://x.y/a)") == "<https://x.y/a|docs>"
