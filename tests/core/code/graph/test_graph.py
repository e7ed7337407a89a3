"""The code graph through its interfaces: `threadline graph` (and its `--edges --json` dump)
as a subprocess, `/graph` in chat and the `code_graph` tool, both filtered by the policy."""

from __future__ import annotations

import io
import json
from collections.abc import Callable
from pathlib import Path

import pytest
from PIL import Image

from core.code.commands import GraphArgs
from core.code.graph.query import SECTIONS
from core.code.graph.render import BAD_DEPTH
from core.code.walk import index_repo
from core.commands import UsageError, parse_args
from tests.bot.test_cli import cli_env, run_cli  # noqa: F401  (fixture)
from tests.conftest import POLICY_ALL, BotHarness
from tests.core.code.graph.test_store import make
from tests.core.code.test_code import roomy, tool_results
from tests.support.fakes.openai_server import FakeOpenAI

MakeBot = Callable[..., BotHarness]
ONLY_API = POLICY_ALL.replace("[defaults]\n", '[defaults]\nrepos = ["api"]\n', 1)


def test_cli_graph_and_the_edges_json(cli_env: dict[str, str], tmp_path: Path) -> None:  # noqa: F811
    root = make(tmp_path / "api")
    indexed = run_cli(cli_env, tmp_path, "index", str(root))
    assert indexed.returncode == 0, indexed.stderr

    dump = run_cli(cli_env, tmp_path, "graph", "--repo", "api", "--edges", "--json")
    assert dump.returncode == 0, dump.stderr
    data = json.loads(dump.stdout)
    assert set(data) == {"edges"}
    for edge in data["edges"]:
        assert set(edge) == {"kind", "source", "target", "confidence"}
        assert edge["kind"] in {"calls", "inherits", "implements", "imports", "contains"}
        assert set(edge["source"]) == {"path", "symbol", "line"}
        assert set(edge["target"]) in ({"path", "symbol", "line"}, {"name"})
        assert 0 <= edge["confidence"] <= 1
    assert {
        "kind": "calls",
        "source": {"path": "main.py", "symbol": "Job.run", "line": 6},
        "target": {"path": "pkg/util.py", "symbol": "helper", "line": 1},
        "confidence": 1.0,
    } in data["edges"]
    assert {
        "kind": "inherits",
        "source": {"path": "main.py", "symbol": "Nightly", "line": 9},
        "target": {"path": "main.py", "symbol": "Job", "line": 4},
        "confidence": 1.0,
    } in data["edges"]

    found = run_cli(cli_env, tmp_path, "graph", "helper", "--callers", "--json")
    assert found.returncode == 0, found.stderr
    view = json.loads(found.stdout)
    assert view["status"] == "found" and view["symbol"]["path"] == "pkg/util.py"
    assert [c["source"]["symbol"] for c in view["callers"]] == ["Job.run", "Nightly.run"]

    text = run_cli(cli_env, tmp_path, "graph", "Job.run")
    assert text.returncode == 0, text.stderr
    assert text.stdout.startswith("Job.run — method in api: main.py:5 (depth 2)")

    ambiguous = run_cli(cli_env, tmp_path, "graph", "run")
    assert ambiguous.returncode == 1
    assert "ambiguous" in ambiguous.stdout and "main.py:Nightly.run" in ambiguous.stdout
    bad = run_cli(cli_env, tmp_path, "graph", "--edges", "--json")
    assert bad.returncode == 2 and "--repo" in bad.stderr


async def graph_bot(
    make_bot: MakeBot, fake_llm: FakeOpenAI, write_policy: Callable[[str], Path], tmp_path: Path
) -> BotHarness:
    bot = make_bot(
        llm_base_url=fake_llm.url,
        llm_model="fake-model",
        llm_max_retries=0,
        policy_file=write_policy(roomy(ONLY_API)),
    )
    for name in ("api", "web"):
        repo = await bot.app.repos.register(str(make(tmp_path / "src" / name)))
        await index_repo(bot.app.db, repo)
    return bot


async def test_graph_command_sees_only_readable_repositories(
    make_bot: MakeBot, fake_llm: FakeOpenAI, write_policy: Callable[[str], Path], tmp_path: Path
) -> None:
    bot = await graph_bot(make_bot, fake_llm, write_policy, tmp_path)

    reply = await bot.send("/graph helper --callers")
    assert reply.ok, reply.text
    assert reply.text.startswith("`helper` — function in api: pkg/util.py:1")
    assert "web" not in reply.text  # the same code in `web` is not even a candidate

    hidden = await bot.send("/graph helper --repo web")
    missing = await bot.send("/graph helper --repo nope")
    assert not hidden.ok
    assert hidden.text == "There is no repository named 'web' (available here: api)."
    assert missing.text == hidden.text.replace("'web'", "'nope'")

    unknown = await bot.send("/graph Jobb")
    assert not unknown.ok and "Did you mean: `Job`" in unknown.text
    usage = await bot.send("/graph")
    assert usage.text.startswith("Usage: `/graph SYMBOL")
    assert fake_llm.requests == []  # commands never reach the model


async def test_code_graph_tool_is_policy_filtered(
    make_bot: MakeBot, fake_llm: FakeOpenAI, write_policy: Callable[[str], Path], tmp_path: Path
) -> None:
    bot = await graph_bot(make_bot, fake_llm, write_policy, tmp_path)

    visible, hidden, ambiguous = await tool_results(
        bot,
        fake_llm,
        ("code_graph", {"symbol": "Job", "include": ["hierarchy"]}),
        ("code_graph", {"symbol": "Job", "repo": "web"}),
        ("code_graph", {"symbol": "run", "depth": 1}),
    )
    assert visible.startswith("`Job` — class in api: main.py:4")
    assert "Extended / implemented by:\n  Nightly (main.py:9) → Job" in visible
    assert hidden == "Error: there is no repository named 'web' (available here: api)"
    assert ambiguous.startswith("`run` is ambiguous: 2 definitions.")


def png_size(data: bytes) -> tuple[int, int]:
    image = Image.open(io.BytesIO(data))
    image.load()  # decodes the whole picture, not just its header
    assert image.format == "PNG"
    return image.size


def test_cli_graph_image_writes_a_png_and_no_file_when_nothing_is_found(
    cli_env: dict[str, str],  # noqa: F811
    tmp_path: Path,
) -> None:
    root = make(tmp_path / "api")
    assert run_cli(cli_env, tmp_path, "index", str(root)).returncode == 0

    out = tmp_path / "job.png"
    drawn = run_cli(cli_env, tmp_path, "graph", "Job.run", "--image", str(out))
    assert drawn.returncode == 0, drawn.stderr
    assert drawn.stdout.startswith("Job.run — method in api: main.py:5 (depth 2)")
    assert f"picture written to {out}" in drawn.stderr
    width, height = png_size(out.read_bytes())
    assert 300 <= width <= 2_000 and 150 <= height <= 1_500
    sure = tmp_path / "job-sure.png"
    confident = run_cli(cli_env, tmp_path, "graph", "Job.run", "--image", str(sure), "--confident")
    assert confident.returncode == 0, confident.stderr
    assert confident.stdout == drawn.stdout  # the text keeps every edge
    png_size(sure.read_bytes())

    text = run_cli(cli_env, tmp_path, "graph", "run")
    for name in ("run", "Jobb"):
        missing = tmp_path / f"{name}.png"
        answer = run_cli(cli_env, tmp_path, "graph", name, "--image", str(missing))
        assert answer.returncode == 1
        assert not missing.exists()
        if name == "run":
            assert answer.stdout == text.stdout  # the same candidates, no picture
        else:
            assert "Did you mean" in answer.stdout

    refused = run_cli(cli_env, tmp_path, "graph", "--repo", "api", "--edges", "--image", "x.png")
    assert refused.returncode == 2 and not (tmp_path / "x.png").exists()


async def test_graph_command_with_image_attaches_the_picture(
    make_bot: MakeBot, fake_llm: FakeOpenAI, write_policy: Callable[[str], Path], tmp_path: Path
) -> None:
    bot = await graph_bot(make_bot, fake_llm, write_policy, tmp_path)

    plain = await bot.send("/graph helper --callers")
    reply = await bot.send("/graph helper --callers --image")
    assert reply.ok and reply.text == plain.text  # the text graph, unchanged
    (picture,) = reply.attachments
    assert (picture.kind, picture.filename, picture.mime_type) == (
        "image",
        "graph-helper.png",
        "image/png",
    )
    png_size(picture.data)
    sure = await bot.send("/graph helper --callers --image --confident")
    assert sure.text == plain.text and len(sure.attachments) == 1
    png_size(sure.attachments[0].data)

    for text in ("/graph run --image", "/graph Jobb --image", "/graph helper --repo web --image"):
        answer = await bot.send(text)
        assert not answer.ok and answer.attachments == ()
        assert answer.text == (await bot.send(text.replace(" --image", ""))).text
    assert fake_llm.requests == []


@pytest.mark.parametrize(
    ("args", "error"),
    [
        ("Job --depth 9", BAD_DEPTH),
        ("Job --depth two", BAD_DEPTH),
        ("Job --depth", "`--depth` needs a value."),
        ("Job --deep 3", "Unknown option `--deep`."),
        ("Job Other", ""),  # one symbol: the usage says so
        ("--callers", ""),
    ],
)
def test_graph_arguments_that_do_not_fit(args: str, error: str) -> None:
    with pytest.raises(UsageError) as raised:
        parse_args(GraphArgs, args, "/graph")
    assert str(raised.value) == error


def test_graph_sections_are_those_asked_for_else_all() -> None:
    asked = parse_args(GraphArgs, "Job --hierarchy --callers --depth 5", "/graph")
    assert (asked.sections, asked.depth) == (("callers", "hierarchy"), 5)
    assert parse_args(GraphArgs, "Job", "/graph").sections == SECTIONS
