"""Files attached to Slack messages reach core as `IncomingFile`s whose `fetch` downloads them
from Slack's file host only: through the real app (slack-bolt behind uvicorn, signed events)
and the real aiohttp session, against the fake Slack Web API, which serves the files and
records every download (and a second local host records anything that reaches it).
"""

from __future__ import annotations

import json
import logging
from collections.abc import AsyncIterator
from typing import Any, cast

import pytest

from adapters.slack.files import FileHost
from adapters.slack.translate import in_a_thread, to_request
from core.request import FileFetchError, Request
from tests.adapters.slack.test_slack import StartApp, fake_slack, serve_slack
from tests.support.fakes.openai_server import FakeOpenAI
from tests.support.fakes.slack_api import FakeSlack
from tests.support.fakes.slack_events import mention, message, new_ts

__all__ = ["fake_slack", "serve_slack"]  # fixtures shared with the Slack tests

MB = 1024 * 1024


def capture(received: list[Request]) -> Any:
    """A `ServedApp` setup that records each Request core is handed (then answers as usual)."""

    def setup(app: Any) -> None:
        core = app.core
        answer = core.stream

        async def stream(request: Request) -> AsyncIterator[Any]:
            received.append(request)
            async for event in answer(request):
                yield event

        core.stream = stream

    return setup


def ask_with(
    serve_slack: StartApp, fake_llm: FakeOpenAI, body: dict[str, Any]
) -> tuple[Any, Request]:
    received: list[Request] = []
    app = serve_slack(setup=capture(received))
    fake_llm.reply("seen it")
    assert app.post_event(body).status == 200
    app.idle()
    (request,) = received
    return app, request


def test_a_file_on_a_mention_reaches_core_and_downloads_with_the_bot_token(
    serve_slack: StartApp, fake_slack: FakeSlack, fake_llm: FakeOpenAI
) -> None:
    log = b"ERROR 42: connection reset\n" * 100
    hosted = fake_slack.host_file("deploy.log", log, "text/plain")

    app, request = ask_with(serve_slack, fake_llm, mention("why did it fail?", files=[hosted]))

    (incoming,) = request.files
    assert (incoming.name, incoming.size) == ("deploy.log", len(log))
    assert incoming.mime_type == "text/plain"
    assert not incoming.voice_message
    assert "files-pri" not in repr(incoming)  # the URL never shows
    before = len(fake_slack.calls("files-pri"))  # core may have fetched it already
    assert app.run(incoming.fetch(max_bytes=MB, timeout=10)) == log
    calls = fake_slack.calls("files-pri")
    assert len(calls) == before + 1
    assert all(c.token == fake_slack.bot_token for c in calls)
    assert calls[-1].args["path"].endswith("/download/deploy.log")  # url_private_download


def test_audio_clips_are_voice_messages_in_a_dm_and_in_a_thread_follow_up(
    serve_slack: StartApp, fake_slack: FakeSlack, fake_llm: FakeOpenAI
) -> None:
    clip = fake_slack.host_file("clip.webm", b"\x1aE\xdf\xa3", "audio/webm", subtype="slack_audio")
    memo = fake_slack.host_file("memo.m4a", b"....ftypM4A", "audio/mp4")
    shot = fake_slack.host_file("shot.png", b"\x89PNG", "image/png")

    app, request = ask_with(
        serve_slack,
        fake_llm,
        message("", channel="D1", channel_type="im", files=[clip, shot, memo]),
    )

    assert [(f.name, f.voice_message) for f in request.files] == [
        ("clip.webm", True),
        ("shot.png", False),
        ("memo.m4a", True),
    ]
    assert app.run(request.files[0].fetch(max_bytes=MB, timeout=10)) == b"\x1aE\xdf\xa3"


def test_deleted_and_externally_hosted_files_are_not_offered(
    serve_slack: StartApp, fake_slack: FakeSlack, fake_llm: FakeOpenAI
) -> None:
    kept = fake_slack.host_file("notes.txt", b"notes", "text/plain")
    gone = {**fake_slack.host_file("old.txt", b"old", "text/plain"), "mode": "tombstone"}
    drive = {**fake_slack.forged_file("plan.gdoc"), "mode": "external"}

    _, request = ask_with(serve_slack, fake_llm, mention("read these", files=[gone, kept, drive]))

    assert [f.name for f in request.files] == ["notes.txt"]


def test_a_forged_file_url_is_never_requested(
    serve_slack: StartApp,
    fake_slack: FakeSlack,
    fake_llm: FakeOpenAI,
    caplog: pytest.LogCaptureFixture,
) -> None:
    forged = fake_slack.forged_file("secrets.txt")
    app, request = ask_with(serve_slack, fake_llm, mention("open this", files=[forged]))
    (incoming,) = request.files

    with caplog.at_level(logging.DEBUG), pytest.raises(FileFetchError) as err:
        app.run(incoming.fetch(max_bytes=MB, timeout=10))

    assert str(err.value) == (
        "`secrets.txt` is not from Slack's file host, so I did not download it."
    )
    assert fake_slack.elsewhere_calls() == []  # not a single request reached the other host
    assert fake_slack.calls("files-pri") == []
    assert fake_slack.bot_token not in caplog.text
    assert str(fake_slack.elsewhere_port) not in caplog.text  # no URL in the logs


def test_a_redirect_away_from_slack_is_not_followed(
    serve_slack: StartApp, fake_slack: FakeSlack, fake_llm: FakeOpenAI
) -> None:
    bounced = fake_slack.host_file(
        "report.pdf", b"%PDF", "application/pdf", redirect_to=fake_slack.elsewhere_url()
    )
    app, request = ask_with(serve_slack, fake_llm, mention("summarize", files=[bounced]))
    (incoming,) = request.files
    downloads = len(fake_slack.calls("files-pri"))

    with pytest.raises(FileFetchError, match="not from Slack's file host"):
        app.run(incoming.fetch(max_bytes=MB, timeout=10))

    assert len(fake_slack.calls("files-pri")) == downloads + 1
    assert fake_slack.elsewhere_calls() == []


@pytest.mark.parametrize("chunked", [False, True], ids=["content-length", "chunked"])
def test_a_file_over_max_bytes_raises(
    serve_slack: StartApp, fake_slack: FakeSlack, fake_llm: FakeOpenAI, chunked: bool
) -> None:
    big = fake_slack.host_file("dump.bin", b"x" * 200_000, chunked=chunked)
    app, request = ask_with(serve_slack, fake_llm, mention("what is this?", files=[big]))
    (incoming,) = request.files

    with pytest.raises(FileFetchError) as err:
        app.run(incoming.fetch(max_bytes=100_000, timeout=10))
    assert str(err.value) == "`dump.bin` is larger than the 97.7 KB I can read."
    # Exactly at the limit is fine.
    assert len(app.run(incoming.fetch(max_bytes=200_000, timeout=10))) == 200_000


def test_a_file_in_a_thread_follow_up_is_carried_too(
    serve_slack: StartApp, fake_slack: FakeSlack, fake_llm: FakeOpenAI
) -> None:
    received: list[Request] = []
    app = serve_slack(setup=capture(received))
    root = new_ts()
    fake_llm.reply("first answer")
    app.post_event(mention("look at the logs", ts=root))
    app.idle()
    trace = fake_slack.host_file("trace.txt", b"Traceback ...", "text/plain")

    fake_llm.reply("second answer")
    app.post_event(message("here they are", thread_ts=root, files=[trace]))
    app.idle()

    assert [[f.name for f in r.files] for r in received] == [[], ["trace.txt"]]
    assert app.run(received[1].files[0].fetch(max_bytes=MB, timeout=10)) == b"Traceback ..."


# -- which addresses are Slack's file host -------------------------------------------------------


@pytest.mark.parametrize(
    ("url", "allowed"),
    [
        ("https://files.slack.com/files-pri/T1-F1/download/a.txt", True),
        ("https://FILES.slack.com/files-pri/T1-F1/a.txt", True),
        ("https://files.slack.com:443/files-pri/T1-F1/a.txt", True),
        ("http://files.slack.com/files-pri/T1-F1/a.txt", False),  # not TLS
        ("https://files.slack.com:8443/files-pri/T1-F1/a.txt", False),
        ("https://files.slack.com.evil.test/files-pri/a.txt", False),
        ("https://evil.test/files.slack.com/a.txt", False),
        ("https://files.slack.com@evil.test/a.txt", False),
        ("https://user:pw@files.slack.com/a.txt", False),  # credentials in the address
        ("https://slack.com/files-pri/T1-F1/a.txt", False),  # the API host is not the file host
        ("//files.slack.com/a.txt", False),
        ("files-pri/T1-F1/a.txt", False),
        ("", False),
        ("http://127.0.0.1:8000/files-pri/a.txt", False),  # no SLACK_API_URL: nothing local
    ],
)
def test_only_slacks_file_host_is_allowed(url: str, allowed: bool) -> None:
    host = FileHost(cast(Any, None), "xoxb-t", None)
    assert host.allows(url) is allowed


def test_the_configured_api_origin_is_allowed_and_only_it() -> None:
    host = FileHost(cast(Any, None), "xoxb-t", "http://127.0.0.1:8000/api/")
    assert host.allows("http://127.0.0.1:8000/files-pri/T1-F1/a.txt")
    assert host.allows("https://files.slack.com/files-pri/T1-F1/a.txt")
    assert not host.allows("http://127.0.0.1:8001/files-pri/T1-F1/a.txt")  # another port
    assert not host.allows("https://127.0.0.1:8000/files-pri/T1-F1/a.txt")  # another scheme
    assert not host.allows("http://localhost:8000/files-pri/T1-F1/a.txt")


def test_a_file_slack_describes_only_partly_is_looked_up_with_files_info(
    serve_slack: StartApp, fake_slack: FakeSlack, fake_llm: FakeOpenAI
) -> None:
    hosted = fake_slack.host_file("notes.md", b"# notes", "text/markdown")
    partial = {"id": hosted["id"], "file_access": "check_file_info"}
    unknown = {"id": "F0GONE", "file_access": "check_file_info"}

    app, request = ask_with(serve_slack, fake_llm, mention("read it", files=[partial, unknown]))

    assert [c.args["file"] for c in fake_slack.calls("files.info")] == [hosted["id"], "F0GONE"]
    (incoming,) = request.files  # the one Slack would not describe is left out
    assert (incoming.name, incoming.size, incoming.mime_type) == ("notes.md", 7, "text/markdown")
    assert app.run(incoming.fetch(max_bytes=MB, timeout=10)) == b"# notes"


def test_a_text_file_on_a_mention_reaches_the_model(
    serve_slack: StartApp, fake_slack: FakeSlack, fake_llm: FakeOpenAI
) -> None:
    log = b"2026-12-03 10:00:01 ERROR 42: connection reset by peer (db-primary)\n"
    hosted = fake_slack.host_file("deploy.log", log, "text/plain")
    app = serve_slack()
    fake_llm.reply("The database reset the connection.")

    app.post_event(mention("why did the deploy fail?", files=[hosted]))
    app.idle()

    sent = json.dumps(fake_llm.requests[0]["messages"])
    assert "ERROR 42: connection reset by peer" in sent and "deploy.log" in sent
    assert [c.token for c in fake_slack.calls("files-pri")] == [fake_slack.bot_token]
    assert fake_slack.shown("C1")[-1].startswith("The database reset the connection.")


def test_a_forged_file_on_a_mention_is_not_fetched_and_the_answer_says_so(
    serve_slack: StartApp, fake_slack: FakeSlack, fake_llm: FakeOpenAI
) -> None:
    app = serve_slack()
    fake_llm.reply("I could not read it.")

    app.post_event(mention("what is in this?", files=[fake_slack.forged_file("secrets.txt")]))
    app.idle()

    assert fake_slack.elsewhere_calls() == []
    shown = "\n".join(fake_slack.shown("C1"))
    assert "`secrets.txt` is not from Slack's file host" in shown


# -- the translation, without Slack ----------------------------------------------------------


def test_to_request_carries_the_files_and_a_reader_only_inside_a_thread() -> None:
    host = FileHost(cast(Any, None), "xoxb-t", None)
    clip = {
        "id": "F1",
        "name": "clip.webm",
        "mimetype": "audio/webm",
        "size": 3,
        "subtype": "slack_audio",
        "url_private_download": "https://files.slack.com/files-pri/T1-F1/download/clip.webm",
    }
    body = mention("listen", files=[clip, {"id": "F2", "mode": "tombstone"}])

    request = to_request(cast(Any, body), bot_user_id=FakeSlack.bot_user_id, files=host)

    assert [(f.name, f.size, f.mime_type, f.voice_message) for f in request.files] == [
        ("clip.webm", 3, "audio/webm", True)
    ]
    assert to_request(cast(Any, body)).files == ()  # no file host: no files
    assert not in_a_thread(body["event"])
    assert in_a_thread(mention("x", ts="2.0", thread_ts="1.0")["event"])
    assert not in_a_thread(mention("x", ts="1.0", thread_ts="1.0")["event"])
