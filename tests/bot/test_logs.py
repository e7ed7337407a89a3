"""Log lines carry their request (LOG_FORMAT=json): id, platform, tenant and channel, never the
message text."""

from __future__ import annotations

import io
import json
import logging
from collections.abc import Callable, Iterator

import pytest

from bot.logs import JsonFormatter, TextFormatter
from core.logcontext import RequestContext, RequestContextFilter, request_scope
from core.tools.context import ToolContext
from core.tools.registry import ToolArgs, tool
from tests.conftest import BotHarness
from tests.support.fakes.openai_server import FakeOpenAI


class NoArgs(ToolArgs):
    pass


@tool(name="explode", permission="ask")
async def explode(ctx: ToolContext, args: NoArgs) -> str:
    """Always fails."""
    raise RuntimeError("boom")


@pytest.fixture
def captured() -> Iterator[Callable[[logging.Formatter], io.StringIO]]:
    root = logging.getLogger()
    handlers: list[logging.Handler] = []

    def attach(formatter: logging.Formatter) -> io.StringIO:
        out = io.StringIO()
        handler = logging.StreamHandler(out)
        handler.setFormatter(formatter)
        handler.addFilter(RequestContextFilter())
        root.addHandler(handler)
        handlers.append(handler)
        return out

    yield attach
    for h in handlers:
        root.removeHandler(h)


async def test_json_lines_carry_the_request_and_not_its_text(
    make_bot: Callable[..., BotHarness],
    fake_llm: FakeOpenAI,
    captured: Callable[[logging.Formatter], io.StringIO],
) -> None:
    out = captured(JsonFormatter())
    bot = make_bot(tools=(explode,), llm_base_url=fake_llm.url, llm_model="m", llm_max_retries=0)
    fake_llm.tool_calls(("explode", {}))
    fake_llm.reply("sorry")
    reply = await bot.send("SECRET-QUESTION-TEXT please", channel="C42", user="u7")
    assert reply.ok
    lines = [json.loads(line) for line in out.getvalue().splitlines()]
    failed = [e for e in lines if "tool explode failed" in e["message"]]
    assert failed, lines
    entry = failed[0]
    assert entry["level"] == "ERROR" and entry["logger"] == "core.tools.dispatcher"
    assert entry["platform"] == "console" and entry["channel"] == "C42"
    assert len(entry["request_id"]) == 32 and "RuntimeError: boom" in entry["exc"]
    assert "SECRET-QUESTION-TEXT" not in out.getvalue()


def test_text_lines_name_the_request(captured: Callable[[logging.Formatter], io.StringIO]) -> None:
    out = captured(TextFormatter())
    log = logging.getLogger("threadline.test")
    with request_scope(RequestContext("abcdef0123456789", "slack", "T1", "C1")):
        log.warning("inside")
    log.warning("outside")
    inside, outside = out.getvalue().splitlines()
    assert inside.endswith("WARNING threadline.test [abcdef012345 slack/T1/C1]: inside")
    assert outside.endswith("threadline.test: outside")
