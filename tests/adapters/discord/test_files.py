"""Files attached on Discord reach core as `IncomingFile`s: through the real discord.py client
and the fake Discord (gateway MESSAGE_CREATE with attachments, its CDN route with signed URLs).

Core's part is played by the test (`Capture` stands in for `Core.stream`), so what is asserted
is the `Request` core received and what its files' `fetch` does: the bytes from the CDN, and
nothing at all from anywhere else.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import AsyncGenerator, AsyncIterator, Awaitable, Callable
from typing import Any

import pytest
from aiohttp import web

from adapters.discord.files import (
    CDN_ORIGINS,
    file_origins,
    incoming_file,
    origin_of,
    redacted,
)
from bot.app import App
from core.request import FileFetchError, IncomingFile, Reply, Request
from core.streaming import Finished, ReplyEvent
from tests.adapters.discord.test_discord import StartBot, fake_discord, start_bot
from tests.support.fakes.discord_server import IS_VOICE_MESSAGE, FakeDiscord, FakeFile
from tests.support.fakes.openai_server import FakeOpenAI

__all__ = ["fake_discord", "start_bot"]  # fixtures shared with the Discord tests

LOG = b"2026-12-03 09:30:00 ERROR importer: batch of 5000 rows timed out\n" * 40
MB = 1024 * 1024
OGG = b"OggS" + bytes(400)  # what a voice message's file starts with


class Capture:
    """`Core.stream`, played by the test: records each request, runs `work` on it while the
    request is being answered (as core would fetch its files), and answers "done"."""

    def __init__(self, work: Callable[[Request], Awaitable[Any]] | None = None) -> None:
        self.requests: list[Request] = []
        self.results: list[Any] = []
        self._work = work

    def install(self, app: App) -> None:
        app.core.stream = self.stream  # type: ignore[method-assign]  # the test is core here

    async def stream(self, request: Request) -> AsyncGenerator[ReplyEvent]:
        self.requests.append(request)
        try:
            self.results.append(await self._work(request) if self._work else None)
        except Exception as exc:  # kept for the test to look at
            self.results.append(exc)
        yield Finished(Reply("done"), "")


async def fetch_all(request: Request) -> list[bytes | FileFetchError]:
    out: list[bytes | FileFetchError] = []
    for file in request.files:
        try:
            out.append(await file.fetch(max_bytes=MB, timeout=5.0))
        except FileFetchError as exc:
            out.append(exc)
    return out


class Stranger:
    """Another server on 127.0.0.1 (another port): it records every request it gets."""

    def __init__(self) -> None:
        self.requests: list[str] = []
        self._runner: web.AppRunner | None = None
        self.port = 0

    async def start(self) -> Stranger:
        async def anything(request: web.Request) -> web.Response:
            self.requests.append(request.path_qs)
            return web.Response(body=b"not from Discord")

        app = web.Application()
        app.router.add_route("*", "/{path:.*}", anything)
        self._runner = web.AppRunner(app, handle_signals=False, access_log=None)
        await self._runner.setup()
        await web.TCPSite(self._runner, "127.0.0.1", 0).start()
        self.port = int(self._runner.addresses[0][1])
        return self

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    async def stop(self) -> None:
        if self._runner is not None:
            await self._runner.cleanup()


@pytest.fixture
async def stranger() -> AsyncIterator[Stranger]:
    server = await Stranger().start()
    yield server
    await server.stop()


async def answered(fake: FakeDiscord, capture: Capture, start_bot: StartBot, post: Any) -> Request:
    """Start the bot with `capture` as core, send what `post()` sends, and return the request
    core received once it is answered."""
    bot = await start_bot(setup=capture.install)
    await post()
    await fake.wait_for(lambda: capture.results)
    await bot.adapter.idle()
    (request,) = capture.requests
    return request


# -- attachments in ----------------------------------------------------------------------------


async def test_a_file_on_a_mention_reaches_core_and_downloads_from_the_cdn(
    start_bot: StartBot, fake_discord: FakeDiscord
) -> None:
    fake, capture = fake_discord, Capture(fetch_all)
    request = await answered(
        fake,
        capture,
        start_bot,
        lambda: fake.post_message(
            fake.alice,
            fake.general,
            f"{fake.mention()} why does the importer fail?",
            files=[FakeFile("importer.log", LOG, "text/plain; charset=utf-8")],
        ),
    )

    assert request.text == "why does the importer fail?"
    (file,) = request.files
    assert (file.name, file.size, file.mime_type) == ("importer.log", len(LOG), "text/plain")
    assert file.voice_message is False
    assert capture.results == [[LOG]]
    (download,) = fake.cdn.requests
    assert download.path.endswith("/importer.log") and download.query["hm"]
    (headers,) = fake.cdn.headers
    assert "Authorization" not in headers and "Cookie" not in headers  # no credentials
    assert headers["Accept-Encoding"] == "identity"  # the bytes as stored
    assert "url=" not in repr(file) and "hm=" not in repr(file)  # the signed URL stays hidden
    assert fake.unhandled == []


async def test_nothing_is_downloaded_unless_core_asks(
    start_bot: StartBot, fake_discord: FakeDiscord
) -> None:
    fake, capture = fake_discord, Capture()
    request = await answered(
        fake,
        capture,
        start_bot,
        lambda: fake.post_message(
            fake.alice, fake.general, f"{fake.mention()} hi", files=[FakeFile("a.txt", b"a")]
        ),
    )
    assert [f.name for f in request.files] == ["a.txt"]
    assert fake.cdn.requests == []


async def test_files_of_a_follow_up_and_of_a_direct_message(
    start_bot: StartBot, fake_discord: FakeDiscord
) -> None:
    fake, capture = fake_discord, Capture(fetch_all)
    bot = await start_bot(setup=capture.install)
    first = await fake.post_message(fake.alice, fake.general, f"{fake.mention()} look at this")
    thread = first["id"]
    await fake.wait_for(lambda: fake.messages_in(thread))
    await bot.adapter.idle()
    # In the thread it opened, no mention is needed; in a DM neither.
    await fake.post_message(fake.alice, thread, "and this", files=[FakeFile("b.csv", b"x,y")])
    await fake.wait_for(lambda: len(capture.results) == 2)
    await fake.direct_message(fake.alice, "", files=[FakeFile("c.png", b"\x89PNG", "image/png")])
    await fake.wait_for(lambda: len(capture.results) == 3)
    await bot.adapter.idle()

    assert [[f.name for f in r.files] for r in capture.requests] == [[], ["b.csv"], ["c.png"]]
    assert capture.results[1:] == [[b"x,y"], [b"\x89PNG"]]
    assert capture.requests[2].files[0].mime_type == "image/png"


async def test_a_mention_replying_to_a_message_asks_about_its_files(
    start_bot: StartBot, fake_discord: FakeDiscord
) -> None:
    fake, capture = fake_discord, Capture(fetch_all)
    bob = fake.add_member("bob")
    bot = await start_bot(setup=capture.install)
    shared = await fake.post_message(
        bob, fake.general, "the importer log", files=[FakeFile("importer.log", LOG)]
    )
    await fake.post_message(
        fake.alice, fake.general, f"{fake.mention()} what is wrong here?", reply_to=shared
    )
    await fake.wait_for(lambda: capture.results)
    await bot.adapter.idle()

    (request,) = capture.requests  # bob's message itself was not for Threadline
    assert request.text == "what is wrong here?"
    assert [f.name for f in request.files] == ["importer.log"]
    assert capture.results == [[LOG]]


async def test_a_voice_message_is_marked(start_bot: StartBot, fake_discord: FakeDiscord) -> None:
    fake, capture = fake_discord, Capture(fetch_all)
    request = await answered(
        fake,
        capture,
        start_bot,
        lambda: fake.direct_message(
            fake.alice, "", files=[FakeFile("voice-message.ogg", OGG, "audio/ogg")], voice=True
        ),
    )
    (file,) = request.files
    assert file.voice_message is True
    assert (file.name, file.mime_type) == ("voice-message.ogg", "audio/ogg")
    assert capture.results == [[OGG]]


async def test_a_file_given_to_the_ask_command(
    start_bot: StartBot, fake_discord: FakeDiscord
) -> None:
    fake, capture = fake_discord, Capture(fetch_all)
    bot = await start_bot(setup=capture.install)
    await fake.slash(
        fake.alice,
        "ask",
        "what does this trace say?",
        option="question",
        files=[FakeFile("trace.txt", b"Traceback (most recent call last):", "text/plain")],
    )
    await fake.wait_for(lambda: capture.results)
    await bot.adapter.idle()

    (request,) = capture.requests
    assert request.text == "/ask what does this trace say?"  # the attachment id is no text
    assert [f.name for f in request.files] == ["trace.txt"]
    assert capture.results == [[b"Traceback (most recent call last):"]]
    # The synced command offers the option: optional, after the question.
    ask = next(o for o in fake.syncs[-1].commands[0]["options"] if o["name"] == "ask")
    assert [(o["name"], o["type"], o["required"]) for o in ask["options"]] == [
        ("question", 3, True),
        ("file", 11, False),
    ]


# -- only from Discord's CDN, bounded ----------------------------------------------------------


async def test_a_forged_url_elsewhere_is_never_requested(
    start_bot: StartBot, fake_discord: FakeDiscord, stranger: Stranger
) -> None:
    fake, capture = fake_discord, Capture(fetch_all)
    forged = f"{stranger.url}/attachments/1/2/secrets.txt?ex=1&is=2&hm=3"
    request = await answered(
        fake,
        capture,
        start_bot,
        lambda: fake.post_message(
            fake.alice,
            fake.general,
            f"{fake.mention()} read this",
            files=[FakeFile("secrets.txt", b"x", url=forged)],
        ),
    )
    assert [f.name for f in request.files] == ["secrets.txt"]
    [[error]] = capture.results
    assert isinstance(error, FileFetchError)
    assert "secrets.txt" in str(error) and "Discord" in str(error)
    assert str(stranger.port) not in str(error)  # for people: no address
    assert stranger.requests == [] and fake.cdn.requests == []


async def test_a_redirect_away_from_the_cdn_is_not_followed(
    start_bot: StartBot, fake_discord: FakeDiscord, stranger: Stranger
) -> None:
    fake, capture = fake_discord, Capture(fetch_all)
    fake.cdn.redirect = f"{stranger.url}/elsewhere"
    await answered(
        fake,
        capture,
        start_bot,
        lambda: fake.post_message(
            fake.alice, fake.general, f"{fake.mention()} hi", files=[FakeFile("a.txt", b"a")]
        ),
    )
    [[error]] = capture.results
    assert isinstance(error, FileFetchError)
    assert len(fake.cdn.requests) == 1 and stranger.requests == []


async def fetch_small(request: Request) -> bytes | FileFetchError:
    try:
        return await request.files[0].fetch(max_bytes=1000, timeout=5.0)
    except FileFetchError as exc:
        return exc


@pytest.mark.parametrize("how", ["stated size", "Content-Length", "streamed"])
async def test_a_file_over_max_bytes_raises(
    start_bot: StartBot, fake_discord: FakeDiscord, how: str
) -> None:
    fake, capture = fake_discord, Capture(fetch_small)
    big = bytes(300 * 1024)
    # "stated size": the message says 300 KB; else it claims 10 bytes and the CDN sends more,
    # with its length up front or as a stream of unknown length.
    claimed = None if how == "stated size" else 10
    fake.cdn.chunked = how == "streamed"
    await answered(
        fake,
        capture,
        start_bot,
        lambda: fake.post_message(
            fake.alice,
            fake.general,
            f"{fake.mention()} hi",
            files=[FakeFile("dump.bin", big, claimed_size=claimed)],
        ),
    )
    [error] = capture.results
    assert isinstance(error, FileFetchError)
    assert "dump.bin" in str(error) and "1000 bytes" in str(error)
    assert len(fake.cdn.requests) == (0 if how == "stated size" else 1)


async def test_a_download_that_stalls_times_out(
    start_bot: StartBot, fake_discord: FakeDiscord
) -> None:
    fake = fake_discord
    held = fake.cdn.held = asyncio.Event()

    async def fetch_quickly(request: Request) -> FileFetchError | bytes:
        try:
            return await request.files[0].fetch(max_bytes=MB, timeout=0.05)
        except FileFetchError as exc:
            return exc
        finally:
            held.set()

    capture = Capture(fetch_quickly)
    await answered(
        fake,
        capture,
        start_bot,
        lambda: fake.post_message(
            fake.alice, fake.general, f"{fake.mention()} hi", files=[FakeFile("slow.txt", b"a")]
        ),
    )
    [error] = capture.results
    assert isinstance(error, FileFetchError) and "slow.txt" in str(error)


async def test_a_failed_download_logs_no_signature(
    start_bot: StartBot, fake_discord: FakeDiscord, caplog: pytest.LogCaptureFixture
) -> None:
    fake, capture = fake_discord, Capture(fetch_all)
    caplog.set_level(logging.INFO, logger="threadline.discord")

    async def post() -> None:
        await fake.post_message(
            fake.alice, fake.general, f"{fake.mention()} hi", files=[FakeFile("gone.txt", b"a")]
        )
        fake.cdn.files.clear()  # deleted since: the CDN answers 404

    request = await answered(fake, capture, start_bot, post)
    [[error]] = capture.results
    assert isinstance(error, FileFetchError) and "gone.txt" in str(error)
    (download,) = fake.cdn.requests
    assert "/attachments/" in caplog.text  # the failure is logged...
    assert download.query["hm"] not in caplog.text  # ...without the signed query
    assert isinstance(request.files[0], IncomingFile)


# -- the host check, directly ------------------------------------------------------------------


@pytest.mark.parametrize(
    ("url", "allowed"),
    [
        ("https://cdn.discordapp.com/attachments/1/2/a.png?ex=1&is=2&hm=3", True),
        ("https://media.discordapp.net/attachments/1/2/a.png", True),
        ("https://CDN.discordapp.com:443/attachments/1/2/a.png", True),
        ("http://cdn.discordapp.com/attachments/1/2/a.png", False),  # not over HTTPS
        ("https://cdn.discordapp.com:8443/attachments/a.png", False),
        ("https://cdn.discordapp.com.evil.example/a.png", False),
        ("https://cdn.discordapp.com@evil.example/a.png", False),
        ("https://evil.example/cdn.discordapp.com/a.png", False),
        ("ftp://cdn.discordapp.com/a.png", False),
        ("//cdn.discordapp.com/a.png", False),
        ("/attachments/a.png", False),
        ("not a url", False),
    ],
)
async def test_only_discords_cdn_is_contacted(url: str, allowed: bool) -> None:
    cdn = {origin_of(o) for o in CDN_ORIGINS}
    assert (origin_of(url) in cdn) is allowed
    if not allowed:  # (reaching an allowed one would need the network: see the tests above)
        file = incoming_file("a.png", 1, "image/png", url, origins=CDN_ORIGINS)
        with pytest.raises(FileFetchError, match="Discord's file host"):
            await file.fetch(max_bytes=MB, timeout=1.0)


def test_the_api_stand_in_serves_files_too() -> None:
    assert file_origins(None) == CDN_ORIGINS
    assert file_origins("http://127.0.0.1:8123") == (*CDN_ORIGINS, "http://127.0.0.1:8123")


def test_urls_are_logged_without_their_signature() -> None:
    signed = "https://user:pw@cdn.discordapp.com/attachments/1/2/a.png?ex=1&is=2&hm=abc#x"
    assert redacted(signed) == "https://cdn.discordapp.com/attachments/1/2/a.png"


# -- end to end, with core's own reading of files ----------------------------------------------


async def test_the_model_reads_a_log_attached_on_discord(
    start_bot: StartBot, fake_discord: FakeDiscord, fake_llm: FakeOpenAI
) -> None:
    fake = fake_discord
    bot = await start_bot()
    fake_llm.reply("The batch of 5000 rows is too large.")
    message = await fake.post_message(
        fake.alice,
        fake.general,
        f"{fake.mention()} why does the importer fail?",
        files=[FakeFile("importer.log", LOG, "text/plain")],
    )
    thread = message["id"]
    await fake.wait_for(lambda: fake.messages_in(thread))
    await bot.adapter.idle()

    [answer] = fake.messages_in(thread)
    assert answer.content.startswith("The batch of 5000 rows is too large.")
    assert len(fake.cdn.requests) == 1
    prompt = "\n".join(str(m.get("content")) for m in fake_llm.requests[-1]["messages"])
    assert "importer.log" in prompt and "ERROR importer: batch of 5000 rows timed out" in prompt


async def test_a_voice_message_is_heard_and_answered_with_voice(
    start_bot: StartBot, fake_discord: FakeDiscord, fake_llm: FakeOpenAI
) -> None:
    fake = fake_discord
    bot = await start_bot(
        llm_transcription_model="whisper-1", tts_engine="openai", tts_base_url=fake_llm.url
    )
    fake_llm.transcript = "why is the deploy stuck?"
    fake_llm.reply("Because the migration holds a lock.")
    recording = FakeFile("voice-message.ogg", OGG, "audio/ogg")
    await fake.direct_message(fake.alice, "", files=[recording], voice=True)
    dm = fake.dm_channels[fake.alice["id"]]
    await fake.wait_for(lambda: len(fake.messages_in(dm)) == 2)
    await bot.adapter.idle()

    [heard] = fake_llm.transcription_requests
    assert heard["filename"] == "voice-message.ogg" and heard["size"] == len(OGG)
    text, voice = fake.messages_in(dm)
    assert text.content.startswith("Because the migration holds a lock.")
    assert voice.flags & IS_VOICE_MESSAGE  # asked by voice, answered by voice
