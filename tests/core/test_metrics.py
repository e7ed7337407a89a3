"""The Prometheus metrics the README documents, through the real composition root and the
fake OpenAI server: requests, tool calls and their latency, tokens and model latency by model,
requests waiting for their thread, outbox backlog and digest runs."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from datetime import timedelta
from pathlib import Path

from prometheus_client.parser import text_string_to_metric_families

from bot.upkeep import refresh_gauges
from core.digest.schedule import parse_schedule
from core.outbox import OutboxMessage
from tests.conftest import POLICY_ALL, BotHarness
from tests.support.clocks import Clock
from tests.support.fakes.openai_server import FakeOpenAI


def samples(bot: BotHarness) -> dict[tuple[str, tuple[tuple[str, str], ...]], float]:
    body, _ = bot.app.metrics.render()
    out = {}
    for family in text_string_to_metric_families(body.decode()):
        for s in family.samples:
            out[(s.name, tuple(sorted(s.labels.items())))] = s.value
    return out


async def test_requests_tools_tokens_and_latency(
    make_bot: Callable[..., BotHarness], fake_llm: FakeOpenAI
) -> None:
    bot = make_bot(llm_base_url=fake_llm.url, llm_model="fake-model", llm_max_retries=0)
    fake_llm.tool_calls(("current_time", {}))
    fake_llm.reply("It is noon.", prompt_tokens=120, completion_tokens=9)
    assert (await bot.send("what time is it?")).ok
    got = samples(bot)
    model = (("model", "fake-model"), ("provider", "default"))
    assert got[("threadline_requests_total", (("ok", "true"), ("platform", "console")))] == 1
    assert got[("threadline_tool_calls_total", (("outcome", "ok"), ("tool", "current_time")))] == 1
    assert got[("threadline_tool_seconds_count", (("tool", "current_time"),))] == 1
    assert got[("threadline_llm_tokens_total", (("kind", "prompt"), *model))] >= 120
    assert got[("threadline_llm_seconds_count", (*model[:1], ("ok", "true"), model[1]))] == 2
    assert got[("threadline_requests_waiting", ())] == 0


async def test_outbox_backlog_and_digest_runs(
    make_bot: Callable[..., BotHarness], write_policy: Callable[[str], Path], clock: Clock
) -> None:
    managers = POLICY_ALL.replace('"skills.use", "tts"]', '"skills.use", "tts", "digest.manage"]')
    assert managers != POLICY_ALL
    bot = make_bot(policy_file=write_policy(managers), clock=clock)
    await bot.app.outbox.enqueue(OutboxMessage("slack", "T1", "C1", "hello", key="k1"))
    await refresh_gauges(bot.app)
    got = samples(bot)
    assert got[("threadline_outbox_backlog", (("platform", "slack"),))] == 1
    assert got[("threadline_outbox_backlog", (("platform", "discord"),))] == 0
    reply = await bot.send("/digest add daily memory")
    assert reply.ok, reply.text
    later = parse_schedule("daily", "UTC").next_after(clock.now) + timedelta(minutes=1)
    assert await bot.app.digests.run_due(later) == ["posted"]
    assert samples(bot)[("threadline_digest_runs_total", (("outcome", "posted"),))] == 1


async def test_requests_beyond_the_limit_queue_in_order_and_are_all_answered(
    make_bot: Callable[..., BotHarness], fake_llm: FakeOpenAI
) -> None:
    """THREADLINE_MAX_CONCURRENT_REQUESTS: the second request waits for the first's slot (the
    gauge shows it queued), then is answered; nothing is refused or lost."""
    bot = make_bot(
        llm_base_url=fake_llm.url,
        llm_model="fake-model",
        llm_max_retries=0,
        max_concurrent_requests=1,
    )
    fake_llm.reply("first", delay=1.5)
    fake_llm.reply("second")
    first = asyncio.create_task(bot.send("one", thread="t1"))
    await asyncio.to_thread(fake_llm.wait_for_requests, 1, 10)
    second = asyncio.create_task(bot.send("two", thread="t2"))
    for _ in range(100):  # the second reaches the queue within a few loop turns
        if samples(bot)[("threadline_requests_queued", ())] == 1:
            break
        await asyncio.sleep(0.01)
    assert samples(bot)[("threadline_requests_queued", ())] == 1
    assert len(fake_llm.requests) == 1  # the second has not reached the model
    assert [r.text for r in await asyncio.gather(first, second)] == ["first", "second"]
    assert samples(bot)[("threadline_requests_queued", ())] == 0
