"""Voice replies on Slack through the fake Slack Web API: an MP3 uploaded into the thread with
files_upload_v2, titled from the question."""

from __future__ import annotations

import io
import json
from typing import Any

import pytest
import soundfile as sf

from tests.adapters.slack.test_slack import StartApp, fake_slack, serve_slack, texts
from tests.support.fakes.openai_server import FakeOpenAI
from tests.support.fakes.slack_api import FakeSlack
from tests.support.fakes.slack_events import event_body, mention, new_ts

__all__ = ["fake_slack", "serve_slack"]  # fixtures shared with the Slack tests


def test_ask_voice_uploads_an_mp3_into_the_thread_titled_from_the_question(
    serve_slack: StartApp,
    fake_slack: FakeSlack,
    fake_llm: FakeOpenAI,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("TTS_BASE_URL", fake_llm.url)
    app = serve_slack()
    fake_llm.reply("We deploy with *Helm*, every day at noon.")
    root = new_ts()
    app.post_event(mention("/ask --voice how do we deploy?", ts=root))
    app.idle()

    assert texts(fake_slack, "C1") == ["We deploy with *Helm*, every day at noon."]  # Markdown
    (url_call,) = fake_slack.calls("files.getUploadURLExternal")
    assert url_call.args["filename"] == "how-do-we-deploy.mp3"
    (complete,) = fake_slack.calls("files.completeUploadExternal")
    assert (complete.args["channel_id"], complete.args["thread_ts"]) == ("C1", root)
    (uploaded,) = json.loads(complete.args["files"])
    assert uploaded["title"] == "how do we deploy?"
    data = fake_slack.upload(uploaded["id"])
    info = sf.info(io.BytesIO(data))
    assert info.format == "MP3"
    assert info.duration > 0.2
    assert fake_llm.speech_requests[-1]["input"] == "We deploy with Helm, every day at noon."


def test_a_refused_voice_request_says_why_in_the_thread(
    serve_slack: StartApp,
    fake_slack: FakeSlack,
    fake_llm: FakeOpenAI,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("TTS_BASE_URL", fake_llm.url)
    app = serve_slack()
    root = new_ts()
    code = "\n".join(f"x{i} = run({i})" for i in range(30))
    app.post_event(mention(f"/tts ```\n{code}\n```", ts=root))
    app.idle()
    assert fake_slack.calls("files.getUploadURLExternal") == []
    assert any("mostly code" in t for t in texts(fake_slack, "C1"))


def reaction(
    ts: str, *, name: str = "speaker", user: str = "U1", item_user: str = FakeSlack.bot_user_id
) -> dict[str, Any]:
    return event_body(
        {
            "type": "reaction_added",
            "user": user,
            "reaction": name,
            "item_user": item_user,
            "item": {"type": "message", "channel": "C1", "ts": ts},
            "event_ts": new_ts(),
        }
    )


def test_a_speaker_reaction_on_an_answer_reads_it_aloud_in_its_thread(
    serve_slack: StartApp,
    fake_slack: FakeSlack,
    fake_llm: FakeOpenAI,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("TTS_BASE_URL", fake_llm.url)
    app = serve_slack()
    fake_llm.reply("Backups run at *01:00 UTC*; see [the runbook](https://example.com/r).")
    root = new_ts()
    app.post_event(mention("when do backups run?", ts=root))
    app.idle()
    (answer,) = fake_slack.posted("C1")

    app.post_event(reaction(answer["ts"], name="thumbsup"))  # another emoji: nothing
    app.post_event(reaction(root, item_user="U1"))  # someone else's message: nothing
    app.idle()
    assert fake_slack.calls("files.getUploadURLExternal") == []

    app.post_event(reaction(answer["ts"]))
    app.idle()
    (complete,) = fake_slack.calls("files.completeUploadExternal")
    assert (complete.args["channel_id"], complete.args["thread_ts"]) == ("C1", root)
    assert fake_llm.speech_requests[-1]["input"] == "Backups run at 01:00 UTC; see the runbook."
    (uploaded,) = json.loads(complete.args["files"])
    assert sf.info(io.BytesIO(fake_slack.upload(uploaded["id"]))).format == "MP3"
