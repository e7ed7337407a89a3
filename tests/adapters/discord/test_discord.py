"""The Discord adapter end to end: the real discord.py client (through the real composition
root and core) against the fake Discord on 127.0.0.1 — REST and a zlib-compressed gateway —
and the fake model. No mocks of discord.py.

Waiting is on what the fake recorded (`fake.wait_for`) or on the adapter finishing the work it
scheduled (`adapter.idle()`), never on sleeps. A negative ("not answered") is checked after a
later message on the same gateway connection was answered and the adapter is idle, so the
earlier one has certainly been handled.
"""

from __future__ import annotations

import asyncio
import signal
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import pytest

from adapters.discord.client import DiscordAdapter, DiscordConfig, DiscordStartupError
from bot.app import App, build_app
from core import messages
from core.commands import Command, CommandContext
from core.request import Attachment, Reply
from core.store.engine import Database
from tests.bot.test_cli import cli_env, threadline_command
from tests.conftest import POLICY_ALL
from tests.support.fakes.discord_server import FakeDiscord, Posted
from tests.support.fakes.openai_server import FakeOpenAI, answer, last_user_text

__all__ = ["cli_env"]  # a fixture shared with the CLI tests

# Timing knobs for tests: discord.py's 2 s wait after the last GUILD_CREATE and its 5 s pause
# before a re-identify are configuration, not behaviour under test.
FAST = {
    "guild_ready_timeout": 0.05,
    "identify_delay": 0.0,
    "connect_timeout": 15.0,
    "shutdown_grace": 5.0,
}


@dataclass
class RunningBot:
    app: App
    adapter: DiscordAdapter
    stop: asyncio.Event
    task: asyncio.Task[None]

    async def halt(self) -> None:
        self.stop.set()
        await asyncio.gather(self.task, return_exceptions=True)


StartBot = Callable[..., Awaitable[RunningBot]]


@pytest.fixture
async def fake_discord() -> AsyncIterator[FakeDiscord]:
    fake = await FakeDiscord().start()
    yield fake
    await fake.stop()


@pytest.fixture
async def start_bot(
    make_settings: Callable[..., Any],
    write_policy: Callable[[str], Path],
    fake_discord: FakeDiscord,
    fake_llm: FakeOpenAI,
) -> AsyncIterator[StartBot]:
    started: list[RunningBot] = []

    async def start(
        *,
        policy: str = POLICY_ALL,
        setup: Callable[[App], None] | None = None,
        ready: bool = True,
        fake: FakeDiscord | None = None,
        **overrides: Any,
    ) -> RunningBot:
        server = fake or fake_discord
        overrides.setdefault("discord_token", server.token)
        settings = make_settings(
            policy_file=write_policy(policy),
            llm_base_url=fake_llm.url,
            llm_model="fake-model",
            llm_max_retries=0,
            discord_api_url=server.api_url,
            **overrides,
        )
        app = build_app(settings)
        if setup is not None:
            setup(app)
        adapter = DiscordAdapter(app.core, DiscordConfig.from_settings(settings, **FAST))
        stop = asyncio.Event()
        bot = RunningBot(app, adapter, stop, asyncio.create_task(adapter.run(stop)))
        started.append(bot)
        if ready:
            waiting = asyncio.create_task(adapter.wait_ready())
            await asyncio.wait({waiting, bot.task}, return_when=asyncio.FIRST_COMPLETED)
            if not waiting.done():
                waiting.cancel()
                await bot.task  # raises the start-up error
        return bot

    yield start
    for bot in started:
        await bot.halt()
        await bot.app.aclose()


def texts(posts: list[Posted]) -> list[str]:
    return [p.content for p in posts]


async def ask_in_channel(fake: FakeDiscord, text: str, *, author: Any = None) -> str:
    """Mention Threadline in #general; returns the thread id (= the message id) once answered."""
    message = await fake.post_message(
        author or fake.alice, fake.general, f"{fake.mention()} {text}"
    )
    await fake.wait_for(lambda: fake.messages_in(message["id"]))
    return message["id"]


# -- mentions, threads, follow-ups ------------------------------------------------------------


async def test_a_mention_opens_exactly_one_thread_and_answers_inside_it(
    start_bot: StartBot, fake_discord: FakeDiscord, fake_llm: FakeOpenAI
) -> None:
    fake = fake_discord
    bot = await start_bot()
    fake_llm.reply("The importer times out because the batch size is 10,000 rows.")

    message = await fake.post_message(
        fake.alice, fake.general, f"{fake.mention()} why does the importer time out?"
    )
    answers = await fake.wait_for(lambda: fake.messages_in(message["id"]))
    await bot.adapter.idle()

    assert len(fake.threads_opened) == 1
    thread = fake.threads_opened[0]
    assert thread["id"] == message["id"] and thread["parent_id"] == fake.general
    assert thread["name"] == "why does the importer time out?"
    assert texts(answers) == ["The importer times out because the batch size is 10,000 rows."]
    assert fake.messages_in(fake.general) == []  # nothing said in the channel itself
    assert thread["id"] in fake.typing  # "typing…" in the thread while the model worked
    asked = fake_llm.requests[-1]["messages"][-1]["content"]
    assert "why does the importer time out?" in asked and "<@" not in asked
    # The gateway spoke compressed (zlib-stream; zstd-stream where zstandard is installed),
    # and the bot asked for exactly the intents it needs.
    assert fake.connections[0]["compress"] in ("zlib-stream", "zstd-stream")
    intents = fake.identifies[0]["intents"]
    assert intents == (1 << 0) | (1 << 9) | (1 << 10) | (1 << 12) | (1 << 13) | (1 << 15)
    assert fake.unhandled == []


async def test_follow_ups_in_its_thread_need_no_mention_but_other_threads_are_left_alone(
    start_bot: StartBot, fake_discord: FakeDiscord, fake_llm: FakeOpenAI
) -> None:
    fake = fake_discord
    bot = await start_bot()
    fake_llm.reply("Use the bulk endpoint.")
    thread = await ask_in_channel(fake, "how do I import 1M rows?")
    unrelated = await fake.add_thread("lunch plans")

    fake_llm.reply("Retries back off exponentially, up to 5 times.")
    await fake.post_message(fake.alice, unrelated, "anyone for pizza?")
    await fake.post_message(fake.alice, thread, "and what about retries?")
    await fake.wait_for(lambda: len(fake.messages_in(thread)) == 2)
    answers = fake.messages_in(thread)
    await bot.adapter.idle()

    assert texts(answers) == [
        "Use the bulk endpoint.",
        "Retries back off exponentially, up to 5 times.",
    ]
    assert fake.messages_in(unrelated) == []
    assert len(fake_llm.requests) == 2
    # The follow-up continued the same conversation: the first question is in its history.
    assert "how do I import 1M rows?" in str(fake_llm.requests[1]["messages"])


async def test_a_mention_inside_a_thread_it_did_not_open_is_answered_there(
    start_bot: StartBot, fake_discord: FakeDiscord, fake_llm: FakeOpenAI
) -> None:
    fake = fake_discord
    bot = await start_bot()
    other = await fake.add_thread("release planning")
    fake_llm.reply("Friday.")

    await fake.post_message(fake.alice, other, f"{fake.mention()} when do we ship?")
    await fake.wait_for(lambda: fake.messages_in(other))
    fake_llm.reply("Should not be used.")
    await fake.post_message(fake.alice, other, "thanks everyone")  # no mention: not for us
    await ask_in_channel(fake, "sync point")
    await bot.adapter.idle()

    assert texts(fake.messages_in(other)) == ["Friday."]
    assert fake.threads_opened[0]["id"] != other  # no new thread for a mention in a thread
    assert len(fake.threads_opened) == 1  # only the sync point's


async def test_an_archived_thread_needs_a_mention_again(
    start_bot: StartBot, fake_discord: FakeDiscord, fake_llm: FakeOpenAI
) -> None:
    fake = fake_discord
    bot = await start_bot()
    thread = await ask_in_channel(fake, "first question")
    await fake.archive_thread(thread)
    await ask_in_channel(fake, "another topic")  # handled after the archive event
    await bot.adapter.idle()

    await fake.post_message(fake.alice, thread, "is this still on?")  # reopens, no mention
    await fake.post_message(fake.alice, thread, f"{fake.mention()} back again")
    await fake.wait_for(lambda: len(fake.messages_in(thread)) == 2)
    await bot.adapter.idle()

    assert len(fake_llm.requests) == 3  # first, another topic, back again: not "still on?"
    assert "is this still on?" not in str(fake_llm.requests[-1]["messages"][-1])


async def test_direct_messages_are_answered_in_the_dm(
    start_bot: StartBot, fake_discord: FakeDiscord, fake_llm: FakeOpenAI
) -> None:
    fake = fake_discord
    await start_bot()
    fake_llm.reply("Hi Alice.")

    message = await fake.direct_message(fake.alice, "hello?")
    answers = await fake.wait_for(lambda: fake.messages_in(message["channel_id"]))

    assert texts(answers) == ["Hi Alice."]
    assert fake.threads_opened == []


# -- app commands -------------------------------------------------------------------------------


async def test_a_slash_command_is_deferred_in_time_and_followed_up_while_the_model_is_slow(
    start_bot: StartBot, fake_discord: FakeDiscord, fake_llm: FakeOpenAI
) -> None:
    fake = fake_discord
    await start_bot()
    fake_llm.reply("Deploys go through Argo CD.", delay=3.3)  # slower than Discord's 3 s

    state = await fake.slash(fake.alice, "ask", "how do we deploy?", option="question")
    shown = await fake.wait_for(lambda: state.visible, within=20)

    assert state.callback_type == 5 and state.callback_at is not None  # deferred...
    assert state.callback_at - state.created < fake.interaction_window  # ...in time
    assert texts(shown) == ["Deploys go through Argo CD."]
    assert not shown[0].ephemeral
    answered_at = fake.calls_to("PATCH", r"/webhooks/\d+/[^/]+/messages/@original")[0].at
    assert answered_at - state.created > fake.interaction_window  # only a deferral allows it
    assert "how do we deploy?" in str(fake_llm.requests[-1]["messages"][-1])


async def test_personal_results_are_ephemeral_and_commands_sync_once(
    start_bot: StartBot, fake_discord: FakeDiscord
) -> None:
    fake = fake_discord
    await start_bot()

    state = await fake.slash(fake.alice, "budget")
    shown = await fake.wait_for(lambda: state.visible)

    assert state.deferred_ephemeral
    assert shown[0].ephemeral and "Your budget today" in shown[0].content
    assert len(fake.syncs) == 1 and fake.syncs[0].scope == "global"
    [command] = fake.syncs[0].commands
    subcommands = {o["name"]: o for o in command["options"]}
    assert {"ask", "help", "budget", "save", "memory"} <= set(subcommands)
    assert subcommands["ask"]["options"][0]["name"] == "question"
    assert subcommands["ask"]["options"][0]["required"] is True


async def test_a_skill_runs_from_the_app_command(
    start_bot: StartBot, fake_discord: FakeDiscord, fake_llm: FakeOpenAI, tmp_path: Path
) -> None:
    from tests.core.skills.test_skills import write_skill

    write_skill(tmp_path / "skills", "deploy-check", "Pre-deploy checks.", "DEPLOY-BODY")
    fake = fake_discord
    await start_bot(skills_dirs=[tmp_path / "skills"])
    subcommands = {o["name"]: o for o in fake.syncs[0].commands[0]["options"]}
    assert {"skill", "skills"} <= set(subcommands)
    assert subcommands["skill"]["options"][0]["required"] is True
    fake_llm.reply("Dashboards are green.")
    state = await fake.slash(fake.alice, "skill", "deploy-check v2 today")
    shown = await fake.wait_for(lambda: state.visible)
    assert "Dashboards are green." in shown[-1].content
    sent = fake_llm.requests[0]["messages"]
    assert sent[-3]["content"] == "v2 today" and "DEPLOY-BODY" in sent[-1]["content"]


async def test_commands_are_synced_per_guild_when_guild_ids_are_set(
    start_bot: StartBot, fake_discord: FakeDiscord
) -> None:
    bot = await start_bot(discord_guild_ids=f"{fake_discord.guild_id},42")

    assert [s.scope for s in fake_discord.syncs] == [fake_discord.guild_id, "42"]
    assert bot.adapter.syncs == 1


# -- rendering ----------------------------------------------------------------------------------


def _long_answer() -> tuple[str, list[str]]:
    code = [f"    result_{i} = compute(step={i}, retries=3)  # line {i}" for i in range(60)]
    text = (
        "Here is how the importer works.\n\n"
        + ("It reads rows in batches and validates each one. " * 25).strip()
        + "\n\n```python\ndef run():\n"
        + "\n".join(code)
        + "\n```\n\n"
        + ("After that the results are written back and indexed. " * 20).strip()
    )
    return text, code


async def test_a_5000_character_answer_is_split_with_valid_fences_in_every_part(
    start_bot: StartBot, fake_discord: FakeDiscord, fake_llm: FakeOpenAI
) -> None:
    fake = fake_discord
    bot = await start_bot()
    answer, code = _long_answer()
    assert len(answer) >= 5_000
    fake_llm.reply(answer)

    thread = await ask_in_channel(fake, "explain the importer")
    await bot.adapter.idle()
    parts = texts(fake.messages_in(thread))

    assert len(parts) >= 3
    for part in parts:
        assert len(part) <= 2_000
        fences = [ln for ln in part.splitlines() if ln.startswith("```")]
        assert len(fences) % 2 == 0, part  # every block opened in a part is closed in it
        if fences:
            assert fences[0] == "```python"  # reopened with its language
    posted_code = [ln for p in parts for ln in p.splitlines() if ln.startswith("    result_")]
    assert posted_code == code  # nothing lost or repeated across the cuts


async def test_an_audio_attachment_is_sent_as_a_file_and_one_over_the_limit_is_refused(
    start_bot: StartBot, fake_discord: FakeDiscord
) -> None:
    fake = fake_discord
    small = b"RIFF" + bytes(2_000)
    large = b"RIFF" + bytes(9_000)

    def voice_commands(app: App) -> None:
        def voice(data: bytes, name: str) -> Command:
            async def handler(_ctx: CommandContext, _args: str) -> Reply:
                return Reply(
                    "Here is the recording.",
                    attachments=(Attachment("audio", name, data, "audio/wav"),),
                )

            return Command(name.split(".")[0], f"/{name.split('.')[0]}", "a voice reply", handler)

        app.core.commands.add(voice(small, "recording.wav"))
        app.core.commands.add(voice(large, "longrecording.wav"))

    bot = await start_bot(setup=voice_commands, discord_upload_limit="4KB")

    thread = await ask_in_channel(fake, "/recording")
    await fake.wait_for(lambda: len(fake.messages_in(thread)) == 2)
    refused_thread = await ask_in_channel(fake, "/longrecording")
    await fake.wait_for(lambda: len(fake.messages_in(refused_thread)) == 2)
    await bot.adapter.idle()

    text, audio = fake.messages_in(thread)
    assert text.content == "Here is the recording." and text.files == []
    [file] = audio.files
    assert (file.filename, file.data) == ("recording.wav", small)
    note = fake.messages_in(refused_thread)[1]
    assert note.files == [] and "longrecording.wav" in note.content and "4.0 KB" in note.content
    uploads = [f.filename for c in fake.calls for f in c.files]
    assert uploads == ["recording.wav"]  # the large file was never sent

    # Through the app command: the text replaces "thinking…", the file follows it.
    state = await fake.slash(fake.alice, "recording")
    await fake.wait_for(lambda: len(state.visible) == 2)
    shown = state.visible
    assert shown[0].content == "Here is the recording."
    assert [(f.filename, f.data) for f in shown[1].files] == [("recording.wav", small)]


# -- identity and policy ------------------------------------------------------------------------

ROLE_POLICY = """
[defaults]
permissions = ["ask", "memory.read"]

[[rules]]
name = "maintainers remember things"
match = { platform = "discord", roles = ["Maintainers"] }
grant = ["memory.write"]
"""


async def test_a_role_based_rule_grants_memory_write_to_one_member_and_not_another(
    start_bot: StartBot, fake_discord: FakeDiscord
) -> None:
    fake = fake_discord
    maintainers = fake.add_role("Maintainers")
    bob = fake.add_member("bob", roles=(maintainers,))
    carol = fake.add_member("carol")
    await start_bot(policy=ROLE_POLICY)

    saved = await ask_in_channel(fake, "/save we deploy with Helm", author=bob)
    refused = await ask_in_channel(fake, "/save we deploy by hand", author=carol)

    assert fake.messages_in(saved)[0].content.startswith("Saved as #")
    assert fake.messages_in(refused)[0].content == messages.permission_denied("memory.write")

    # The same through the app command: the refusal is private, the original deleted.
    state = await fake.slash(carol, "save", "we deploy on Fridays", option="fact")
    shown = await fake.wait_for(lambda: state.visible)
    assert not state.deferred_ephemeral and state.original is not None and state.original.deleted
    assert shown[0].ephemeral and "memory.write" in shown[0].content
    state = await fake.slash(bob, "save", "we deploy on Tuesdays", option="fact")
    shown = await fake.wait_for(lambda: state.visible)
    assert not shown[0].ephemeral and shown[0].content.startswith("Saved as #")


# -- the gateway --------------------------------------------------------------------------------


async def test_a_gateway_disconnect_and_resume_produce_no_duplicate_answers(
    start_bot: StartBot, fake_discord: FakeDiscord, fake_llm: FakeOpenAI
) -> None:
    fake = fake_discord
    bot = await start_bot()
    # Answered by content: under load the second mention's model call can arrive first.
    by_question = {"one": answer("first answer", delay=0.5), "two": answer("second answer")}
    fake_llm.responder = lambda request: by_question.get(last_user_text(request).split()[-1])

    first = await fake.post_message(fake.alice, fake.general, f"{fake.mention()} one")
    await fake.wait_for(lambda: fake.thread_of(first["id"]))
    # Drop the socket mid-answer; the resume re-delivers the last events the bot already had
    # (the mention included), and a message sent meanwhile arrives on the resumed session.
    await fake.disconnect(replay=6)
    second = await fake.post_message(fake.alice, fake.general, f"{fake.mention()} two")
    await fake.wait_for(lambda: fake.resumes)
    await fake.wait_for(lambda: fake.messages_in(first["id"]) and fake.messages_in(second["id"]))
    await ask_in_channel(fake, "sync point")
    await bot.adapter.idle()

    assert texts(fake.messages_in(first["id"])) == ["first answer"]
    assert texts(fake.messages_in(second["id"])) == ["second answer"]
    assert len(fake.threads_opened) == 3
    assert len(fake.identifies) == 1  # resumed, not re-identified
    redelivered = [f["d"]["id"] for f in fake.gateway.redelivered if f["t"] == "MESSAGE_CREATE"]
    assert first["id"] in redelivered  # the bot did see the first mention twice


async def test_on_ready_twice_doubles_neither_handlers_nor_command_sync(
    start_bot: StartBot, fake_discord: FakeDiscord, fake_llm: FakeOpenAI
) -> None:
    fake = fake_discord
    bot = await start_bot()
    await fake.invalidate_session()  # op 9: the client identifies again -> READY -> on_ready
    await asyncio.wait_for(bot.adapter.wait_ready(2), 15)

    fake_llm.reply("only once")
    thread = await ask_in_channel(fake, "after the second ready")
    await bot.adapter.idle()

    assert len(fake.identifies) == 2 and bot.adapter.readies == 2
    assert len(fake.syncs) == 1 and bot.adapter.syncs == 1
    assert texts(fake.messages_in(thread)) == ["only once"]
    assert len(fake.threads_opened) == 1 and len(fake_llm.requests) == 1
    # Both connections went to the server DISCORD_API_URL named (also after the invalid
    # session, where discord.py falls back to its default gateway).
    assert len(fake.connections) == 2


async def test_a_rate_limited_post_is_retried_and_posted_once(
    start_bot: StartBot, fake_discord: FakeDiscord, fake_llm: FakeOpenAI
) -> None:
    fake = fake_discord
    bot = await start_bot()
    fake.rate_limit_next("POST", r"/channels/\d+/messages")
    fake_llm.reply("after the 429")

    thread = await ask_in_channel(fake, "rate limits?")
    await bot.adapter.idle()

    assert texts(fake.messages_in(thread)) == ["after the 429"]
    assert len(fake.calls_to("POST", rf"/channels/{thread}/messages")) == 2


async def test_a_thread_is_never_left_empty_when_posting_the_answer_fails(
    start_bot: StartBot, fake_discord: FakeDiscord
) -> None:
    fake = fake_discord
    bot = await start_bot()
    fake.fail_next("POST", r"/channels/\d+/messages", 400, code=50035, message="Invalid Form Body")

    thread = await ask_in_channel(fake, "this answer will be refused")
    await bot.adapter.idle()

    assert texts(fake.messages_in(thread)) == [messages.DISCORD_POST_FAILED]


async def test_the_auto_sharded_client_serves_too(
    start_bot: StartBot, fake_discord: FakeDiscord, fake_llm: FakeOpenAI
) -> None:
    fake = fake_discord
    await start_bot(discord_shards="auto")
    fake_llm.reply("from shard 0")

    thread = await ask_in_channel(fake, "sharded?")

    assert texts(fake.messages_in(thread)) == ["from shard 0"]
    assert fake.identifies[0]["shard"] == [0, 1]


# -- start-up failures --------------------------------------------------------------------------


async def test_a_failed_first_connection_is_reported_clearly(
    start_bot: StartBot, caplog: pytest.LogCaptureFixture
) -> None:
    down = await FakeDiscord(gateway_up=False).start()
    try:
        with pytest.raises(DiscordStartupError, match="could not reach Discord"):
            await start_bot(fake=down)
    finally:
        await down.stop()
    assert down.connections  # it did dial the fake's gateway (from /gateway/bot)
    assert any("could not reach Discord" in r.getMessage() for r in caplog.records)


async def test_a_wrong_token_and_a_missing_intent_are_named(
    start_bot: StartBot, fake_discord: FakeDiscord
) -> None:
    with pytest.raises(DiscordStartupError, match="refused DISCORD_TOKEN"):
        await start_bot(discord_token="not-the-token")
    no_intent = await FakeDiscord(privileged_intents=False).start()
    try:
        with pytest.raises(DiscordStartupError, match="Message Content Intent"):
            await start_bot(fake=no_intent)
    finally:
        await no_intent.stop()


# -- the worker process -------------------------------------------------------------------------


async def _spawn_worker(env: dict[str, str], cwd: Path) -> asyncio.subprocess.Process:
    return await asyncio.create_subprocess_exec(
        *threadline_command(),
        "worker",
        env=env,
        cwd=cwd,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
    )


async def process_beats(db: Database) -> list[tuple[str, str]]:
    from sqlalchemy import text

    async with db.session() as s:
        rows = await (await s.connection()).execute(
            text("SELECT command, platforms FROM process_beats")
        )
        return [(str(r[0]), str(r[1])) for r in rows]


async def test_threadline_worker_serves_discord_and_stops_cleanly(
    cli_env: dict[str, str], tmp_path: Path, fake_discord: FakeDiscord, fake_llm: FakeOpenAI
) -> None:
    fake = fake_discord
    env = {
        **cli_env,
        "DISCORD_TOKEN": fake.token,
        "DISCORD_API_URL": fake.api_url,
        "LLM_BASE_URL": fake_llm.url,
        "LLM_MODEL": "fake-model",
    }
    fake_llm.reply("served by the worker")
    proc = await _spawn_worker(env, tmp_path)
    try:
        await fake.wait_for(lambda: fake.identifies and fake.syncs, within=30)
        thread = await ask_in_channel(fake, "are you there?")
        assert texts(fake.messages_in(thread)) == ["served by the worker"]
        # The worker is on the process board with Discord connected (the console's overview).
        db = Database(f"sqlite:///{tmp_path / 'data' / 'threadline.db'}")
        try:
            for _ in range(100):  # the worker writes its row once the gateway is ready
                beats = await process_beats(db)
                if beats == [("worker", '{"discord": "ok"}')]:
                    break
                await asyncio.sleep(0.1)
            assert beats == [("worker", '{"discord": "ok"}')]
            proc.send_signal(signal.SIGTERM)
            _, stderr = await asyncio.wait_for(proc.communicate(), 20)
            assert await process_beats(db) == []  # a clean stop takes it off the board
        finally:
            await db.dispose()
    finally:
        if proc.returncode is None:
            proc.kill()
            await proc.wait()
    assert proc.returncode == 0, stderr.decode()


async def test_threadline_worker_exits_non_zero_when_the_gateway_is_unreachable(
    cli_env: dict[str, str], tmp_path: Path
) -> None:
    down = await FakeDiscord(gateway_up=False).start()
    env = {**cli_env, "DISCORD_TOKEN": down.token, "DISCORD_API_URL": down.api_url}
    try:
        proc = await _spawn_worker(env, tmp_path)
        _, stderr = await asyncio.wait_for(proc.communicate(), 30)
    finally:
        await down.stop()
    assert proc.returncode == 1
    log = stderr.decode()
    assert "could not reach Discord" in log and down.token not in log


async def test_a_personal_result_asked_for_in_public_goes_by_dm(
    start_bot: StartBot, fake_discord: FakeDiscord
) -> None:
    fake = fake_discord
    bot = await start_bot()

    thread = await ask_in_channel(fake, "/budget")
    dm = await fake.wait_for(lambda: fake.dm_channel_of(fake.alice))
    assert dm is not None
    await bot.adapter.idle()

    assert texts(fake.messages_in(thread)) == [messages.DISCORD_SENT_PRIVATELY]
    [budget] = fake.messages_in(dm)
    assert "Your budget today" in budget.content

    # Members can refuse DMs from a server's members: Discord answers 50007.
    fake.fail_next("POST", rf"/channels/{dm}/messages", 403, code=50007, message="Cannot DM")
    blocked = await ask_in_channel(fake, "/memory list")
    await bot.adapter.idle()
    assert texts(fake.messages_in(blocked)) == [messages.DISCORD_CANNOT_DM]
    assert len(fake.messages_in(dm)) == 1  # nothing more went out privately


def slow_command(app: App) -> None:
    """`/slow`: reports progress twice, then answers (as `/index` does on a big repository)."""

    async def handler(ctx: CommandContext, _args: str) -> Reply:
        assert ctx.progress is not None
        await ctx.progress("Indexing `api`: 10/100 files scanned…")
        await asyncio.sleep(0.05)
        await ctx.progress("Indexing `api`: 40/300 chunks embedded…")
        return Reply("Indexed `api`.")

    app.core.commands.add(Command("slow", "/slow", "long work with progress", handler))


async def test_long_work_shows_a_progress_note_that_goes_away_after_the_answer(
    start_bot: StartBot, fake_discord: FakeDiscord
) -> None:
    fake = fake_discord
    bot = await start_bot(setup=slow_command)
    bot.adapter.config = replace(bot.adapter.config, progress_every=0.0)

    thread = await ask_in_channel(fake, "/slow")
    await bot.adapter.idle()
    assert texts(fake.messages_in(thread)) == ["Indexed `api`."]
    [note] = [p for p in fake.posts if p.channel_id == thread and p.deleted]
    assert note.content == "Indexing `api`: 40/300 chunks embedded…"
    assert note.edits == ["Indexing `api`: 40/300 chunks embedded…"]


async def test_a_slash_command_shows_progress_in_its_deferred_response(
    start_bot: StartBot, fake_discord: FakeDiscord
) -> None:
    fake = fake_discord
    bot = await start_bot(setup=slow_command)
    bot.adapter.config = replace(bot.adapter.config, progress_every=0.0)

    state = await fake.slash(fake.alice, "slow")
    await fake.wait_for(lambda: state.original is not None and "Indexed" in state.original.content)
    await bot.adapter.idle()
    assert state.original is not None
    assert state.original.edits == [
        "Indexing `api`: 10/100 files scanned…",
        "Indexing `api`: 40/300 chunks embedded…",
        "Indexed `api`.",
    ]


async def test_graph_with_image_sends_the_picture_as_a_file_in_the_thread(
    start_bot: StartBot, fake_discord: FakeDiscord, tmp_path: Path
) -> None:
    from core.code.walk import index_repo
    from tests.core.code.graph.test_graph import png_size
    from tests.core.code.graph.test_store import make

    fake = fake_discord
    bot = await start_bot()
    await index_repo(bot.app.db, await bot.app.repos.register(str(make(tmp_path / "api"))))

    thread = await ask_in_channel(fake, "/graph helper --callers --image")
    await fake.wait_for(lambda: len(fake.messages_in(thread)) == 2)
    await bot.adapter.idle()

    text, picture = fake.messages_in(thread)
    assert text.content.startswith("`helper` — function in api: pkg/util.py:1")
    assert "Job.run (main.py:" in text.content and text.files == []
    [file] = picture.files
    assert file.filename == "graph-helper.png"
    width, height = png_size(file.data)
    assert width >= 300 and height >= 150
