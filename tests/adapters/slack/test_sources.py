"""An answer's sources on Slack, through the served app, slack-bolt and the real slack_sdk
client against the fake Slack: a context block under the answer, with links to the forge."""

from __future__ import annotations

from pathlib import Path

from adapters.slack.sources import CONTEXT_TEXT_LIMIT, sources_mrkdwn
from core.code.walk import index_repo
from core.request import Source
from tests.adapters.slack.test_slack import StartApp, fake_slack, serve_slack
from tests.core.agent.test_sources import pushed_repo
from tests.support.code_repo import NEEDLE
from tests.support.fakes.openai_server import FakeOpenAI
from tests.support.fakes.slack_api import FakeSlack
from tests.support.fakes.slack_events import ServedApp, command, mention, new_ts

__all__ = ["fake_slack", "serve_slack"]  # fixtures shared with the Slack tests


def register(app: ServedApp, root: Path) -> None:
    async def work() -> None:
        repo = await app.app.repos.register(str(root))
        await index_repo(app.app.db, repo)

    app.run(work())


def context_blocks(message: dict[str, object]) -> list[object]:
    blocks = message.get("blocks") or []
    assert isinstance(blocks, list)
    return [b for b in blocks if b.get("type") == "context"]


def test_sources_show_as_a_context_block_under_a_streamed_and_a_posted_answer(
    serve_slack: StartApp, fake_slack: FakeSlack, fake_llm: FakeOpenAI, tmp_path: Path
) -> None:
    served = serve_slack()
    root, commit = pushed_repo(tmp_path / "src")
    register(served, root)
    url = f"https://github.com/team/api/blob/{commit}/src/app.py#L1-L5"
    expected = [
        {
            "type": "context",
            "elements": [{"type": "mrkdwn", "text": f"Sources: <{url}|src/app.py:1-5>"}],
        }
    ]
    read = ("read_file", {"repo": "api", "path": "src/app.py", "start_line": 1, "end_line": 5})

    # A mention: the answer streams; the sources come with the stream's last call.
    fake_llm.tool_calls(read)
    fake_llm.reply(f"`{NEEDLE}` in src/app.py tries three times.")
    assert served.post_event(mention("where do we retry?", ts=new_ts())).status == 200
    served.idle()
    (streamed,) = fake_slack.streams("C1")
    assert streamed["text"] == f"`{NEEDLE}` in src/app.py tries three times."
    assert context_blocks(streamed) == expected

    # A slash command's answer is posted: the text as a section, the sources under it.
    fake_llm.tool_calls(read)
    fake_llm.reply("It is src/app.py & its loop <3.")
    assert served.post_command(command("ask where do we retry?")).status == 200
    served.idle()
    posted = [m for m in fake_slack.posted("C1") if "streaming" not in m]
    (answer,) = [m for m in posted if "src/app.py" in str(m.get("text"))]
    section = answer["blocks"][0]["text"]["text"]  # under the line naming the command
    assert section.endswith("\nIt is src/app.py &amp; its loop &lt;3.")
    assert context_blocks(answer) == expected


def test_an_answer_without_sources_renders_as_before(
    serve_slack: StartApp, fake_slack: FakeSlack, fake_llm: FakeOpenAI
) -> None:
    served = serve_slack()
    fake_llm.reply("Nothing to cite.")
    served.post_event(mention("hello?", ts=new_ts()))
    served.idle()
    (message,) = fake_slack.posted("C1")
    assert message["text"] == "Nothing to cite." and context_blocks(message) == []


def test_labels_are_escaped_and_a_link_that_could_break_out_is_a_label() -> None:
    sources = (
        Source("code", "a<b>&c.py:1", "https://github.com/o/r/blob/abc/a%3Cb%3E%26c.py#L1"),
        Source("code", "x.py:2", "https://evil.example/|<!channel>"),
        Source("memory", "channel memory"),
        Source("skill", "incident-triage skill"),
    )
    assert sources_mrkdwn(sources) == (
        "Sources: <https://github.com/o/r/blob/abc/a%3Cb%3E%26c.py#L1|a&lt;b&gt;&amp;c.py:1>"
        " · x.py:2 · from channel memory · following the incident-triage skill"
    )


def test_a_long_list_stays_within_a_context_element() -> None:
    url = "https://github.com/o/r/blob/" + "a" * 40 + "/" + "d/" * 400 + "f.py#L1"
    sources = tuple(Source("code", f"f{i}.py:1", url) for i in range(5))
    text = sources_mrkdwn(sources)
    assert len(text) <= CONTEXT_TEXT_LIMIT
    assert text.startswith(f"Sources: <{url}|f0.py:1>") and text.endswith(" · f4.py:1")
