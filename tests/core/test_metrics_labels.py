"""Metric labels stay bounded whatever the model proposes: a tool name the registry does not
hold is counted as `unknown`, never copied into `/metrics` (a name may carry a secret, a user
id or a channel id, and each new one would add a dozen series)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from core.tools.context import ToolContext
from core.tools.registry import ToolArgs, tool
from tests.conftest import POLICY_ALL, BotHarness
from tests.core.test_metrics import samples
from tests.support.fakes.openai_server import FakeOpenAI

HOSTILE_NAMES = (
    "sk_live_51HabcDEFghiJKLmnoPQRstuVWXyz0123456789",
    "leak_U0ALICE_in_C0SECRETCHAN",
    "émoji_🔑_ключ",
    "x" * 5_000,
    'quote"brace}\nnewline',
    "current_time ",  # a registered name with a trailing space is not that name
    "Current_Time",  # nor in another case
)


class NoArgs(ToolArgs):
    pass


@tool(name="plugin_tool", permission="ask")
async def plugin_tool(ctx: ToolContext, args: NoArgs) -> str:
    """A tool registered after start-up (as an MCP server's are)."""
    return "done"


def label_values(bot: BotHarness) -> set[str]:
    return {value for _, labels in samples(bot) for _, value in labels}


async def test_unregistered_tool_names_are_counted_as_unknown(
    make_bot: Callable[..., BotHarness],
    fake_llm: FakeOpenAI,
    write_policy: Callable[[str], Path],
) -> None:
    roomy = POLICY_ALL.replace("tool_calls_per_request = 4", "tool_calls_per_request = 20")
    assert roomy != POLICY_ALL
    bot = make_bot(
        llm_base_url=fake_llm.url,
        llm_model="fake-model",
        llm_max_retries=0,
        policy_file=write_policy(roomy),
    )
    fake_llm.tool_calls(("current_time", {}), *((name, {}) for name in HOSTILE_NAMES))
    fake_llm.reply("done")
    reply = await bot.send("call everything")
    assert [c.ok for c in reply.tool_calls] == [True] + [False] * len(HOSTILE_NAMES)
    got = samples(bot)
    unknown = len(HOSTILE_NAMES)
    assert (
        got[("threadline_tool_calls_total", (("outcome", "unknown_tool"), ("tool", "unknown")))]
        == unknown
    )
    assert got[("threadline_tool_seconds_count", (("tool", "unknown"),))] == unknown
    assert got[("threadline_tool_calls_total", (("outcome", "ok"), ("tool", "current_time")))] == 1
    values = label_values(bot)
    for name in HOSTILE_NAMES:
        assert name not in values and name[:64] not in values
    body = bot.app.metrics.render()[0].decode()
    for fragment in ("sk_live", "U0ALICE", "C0SECRETCHAN", "xxxxxxxx", "🔑", "Current_Time"):
        assert fragment not in body


async def test_a_tool_registered_later_gets_its_own_label(
    make_bot: Callable[..., BotHarness], fake_llm: FakeOpenAI
) -> None:
    """Registered means registered now: MCP tools join (and leave) the registry at run time."""
    bot = make_bot(llm_base_url=fake_llm.url, llm_model="fake-model", llm_max_retries=0)
    fake_llm.tool_calls(("plugin_tool", {}))
    fake_llm.reply("before")
    await bot.send("call it")
    registry = bot.app.core.agent._dispatcher.registry
    registry.add(plugin_tool)
    fake_llm.tool_calls(("plugin_tool", {}))
    fake_llm.reply("after")
    await bot.send("call it again")
    got = samples(bot)
    assert got[("threadline_tool_calls_total", (("outcome", "unknown_tool"), ("tool", "unknown")))]
    assert got[("threadline_tool_calls_total", (("outcome", "ok"), ("tool", "plugin_tool")))] == 1
    assert got[("threadline_tool_seconds_count", (("tool", "plugin_tool"),))] == 1
