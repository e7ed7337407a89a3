"""An answer's sources, through the real composition root with the scripted model calling the
real code tools over a sample git repository: only lines the tools returned, only those the
answer relied on, at most five, linked to the forge at the commit when it was pushed; memory
scopes and skills by name."""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import Any

import pytest

from adapters.console.translate import ConsoleIdentity, to_request
from bot.app import App, build_app
from core.agent.sources import MAX_CODE_SOURCES, pick_code
from core.code.walk import index_repo
from core.llm.testing import ScriptedModel
from core.request import Reply, Source
from core.tools.result import CodeLocation
from tests.conftest import POLICY_ALL
from tests.support.clocks import Clock
from tests.support.code_repo import NEEDLE, git, make_repo, write

REMOTE = "https://x-access-token:ghp_SECRET0123456789@github.com/team/api.git"


def pushed_repo(base: Path, name: str = "api", *, remote: str | None = REMOTE) -> tuple[Path, str]:
    """The sample repository as a git work tree whose HEAD is on a remote-tracking branch (as
    after a push or a fetch), with `remote` as its origin. Returns its root and HEAD."""
    root = make_repo(base, name)
    git(root, "init", "-q", "-b", "main")
    git(root, "add", "-A")
    git(root, "commit", "-q", "-m", "sample")
    if remote is not None:
        git(root, "remote", "add", "origin", remote)
        git(root, "update-ref", "refs/remotes/origin/main", "HEAD")
    return root, git(root, "rev-parse", "HEAD")


Make = Callable[..., tuple[App, ScriptedModel]]


@pytest.fixture
async def make_app(
    make_settings: Callable[..., Any], write_policy: Callable[[str], Path], clock: Clock
) -> AsyncIterator[Make]:
    apps: list[App] = []

    def make(**overrides: Any) -> tuple[App, ScriptedModel]:
        roomy = POLICY_ALL.replace("tool_calls_per_request = 4", "tool_calls_per_request = 10")
        overrides.setdefault("policy_file", write_policy(roomy))
        model = ScriptedModel()
        app = build_app(make_settings(**overrides), model=model, clock=clock)
        apps.append(app)
        return app, model

    yield make
    for app in apps:
        await app.aclose()


async def register(app: App, root: Path) -> None:
    repo = await app.repos.register(str(root))
    await index_repo(app.db, repo)


async def ask(app: App, text: str) -> Reply:
    who = ConsoleIdentity(tenant="local", channel="ops", thread="t1", user="alice")
    return await app.core.handle(to_request(text, who))


def link(commit: str, path: str, lines: str) -> str:
    return f"https://github.com/team/api/blob/{commit}/{path}#{lines}"


async def test_sources_are_the_returned_lines_the_answer_relied_on(
    make_app: Make, tmp_path: Path
) -> None:
    app, model = make_app()
    root, commit = pushed_repo(tmp_path / "src")
    await register(app, root)
    # grep returns src/app.py, src/util.ts and README.md; the model reads the top of app.py.
    model.tool_calls(
        ("grep_code", {"pattern": NEEDLE}),
        ("read_file", {"repo": "api", "path": "src/app.py", "start_line": 1, "end_line": 5}),
    )
    model.reply(
        f"`{NEEDLE}` in src/app.py retries each delivery three times "
        "(the retry loop is in src/ghost.py:10 and lib/Nope.java)."
    )

    reply = await ask(app, "where do we retry webhooks?")

    assert reply.ok
    # app.py: named by the answer; its grep hit (line 4) and the lines read (1-5) are one
    # source. util.ts and README.md were returned but not relied on; ghost.py and Nope.java
    # were never returned: invented paths are neither sources nor links.
    assert reply.sources == (Source("code", "src/app.py:1-5", link(commit, "src/app.py", "L1-L5")),)
    assert "SECRET" not in repr(reply.sources)


async def test_an_answer_citing_only_invented_paths_has_no_sources(
    make_app: Make, tmp_path: Path
) -> None:
    app, model = make_app()
    root, _ = pushed_repo(tmp_path / "src")
    await register(app, root)
    model.tool_calls(("glob_files", {"pattern": "*.py"}))
    model.reply("It is `retry_forever` in src/retry/ghost.py:12-40, see cmd/main.go:3.")

    reply = await ask(app, "where do we retry webhooks?")

    # glob_files shows names, not lines; nothing else was returned.
    assert reply.ok and reply.sources == ()


async def test_at_most_five_sources_files_read_in_order_after_named_ones(
    make_app: Make, tmp_path: Path
) -> None:
    app, model = make_app()
    root, commit = pushed_repo(tmp_path / "src")
    await register(app, root)
    read = ["README.md", "cmd/main.go", "lib/Thing.java", "src/util.ts", "sub/code.rb"]
    model.tool_calls(
        *(("read_file", {"repo": "api", "path": p}) for p in read),
        ("grep_code", {"pattern": "def deliver"}),
    )
    model.reply("The delivery itself is `deliver` in app.py; the rest is plumbing.")

    reply = await ask(app, "how is a webhook delivered?")

    labels = [s.label for s in reply.sources]
    assert len(labels) == MAX_CODE_SOURCES
    # The file the answer names (by its file name) first, then the files read, in order.
    assert labels == [
        "src/app.py:11",
        "README.md:1-3",
        "cmd/main.go:1-3",
        "lib/Thing.java:1-3",
        "src/util.ts:1",
    ]
    assert reply.sources[0].url == link(commit, "src/app.py", "L11")


async def test_lines_cut_from_a_result_before_the_model_saw_them_are_not_sources(
    make_app: Make, tmp_path: Path
) -> None:
    app, model = make_app(tool_max_result_chars=300)
    root, _ = pushed_repo(tmp_path / "src")
    write(root, "big.txt", "".join(f"line number {n}\n" for n in range(1, 101)))
    git(root, "add", "big.txt")
    git(root, "commit", "-q", "-m", "big")
    git(root, "update-ref", "refs/remotes/origin/main", "HEAD")
    await register(app, root)
    model.tool_calls(("read_file", {"repo": "api", "path": "big.txt"}))
    model.reply("The file counts lines.")

    reply = await ask(app, "what is in big.txt?")

    # 300 characters hold the header and about 13 of the 100 lines read: two blocks of ten.
    shown = str(model.requests[-1].messages[-1]["content"])
    assert "line number 13" in shown and "line number 25" not in shown
    assert [s.label for s in reply.sources] == ["big.txt:1-20"]


async def test_no_link_for_an_unpushed_commit_a_changed_file_or_an_unknown_forge(
    make_app: Make, tmp_path: Path
) -> None:
    app, model = make_app()
    pushed, _ = pushed_repo(tmp_path / "one", "api")
    unknown, _ = pushed_repo(tmp_path / "two", "web", remote="git@git.internal.example:t/web.git")
    await register(app, pushed)
    await register(app, unknown)
    write(pushed, "src/util.ts", "export const changed = true;\n")  # not committed
    model.tool_calls(
        ("read_file", {"repo": "api", "path": "src/util.ts"}),
        ("read_file", {"repo": "api", "path": "cmd/main.go"}),
        ("read_file", {"repo": "web", "path": "lib/Thing.java"}),
    )
    model.reply("util.ts, main.go and Thing.java.")

    reply = await ask(app, "what is in these files?")

    assert [(s.label, s.url is not None) for s in reply.sources] == [
        ("src/util.ts:1", False),  # changed since the commit: the forge shows other lines
        ("cmd/main.go:1-3", True),
        ("lib/Thing.java:1-3", False),  # a host no setting names
    ]

    git(pushed, "commit", "-q", "-am", "local only")  # committed, never pushed
    model.tool_calls(("read_file", {"repo": "api", "path": "src/util.ts"}))
    model.reply("See util.ts.")
    reply = await ask(app, "and now?")
    assert reply.sources == (Source("code", "src/util.ts:1"),)


async def test_a_configured_forge_host_links(make_app: Make, tmp_path: Path) -> None:
    app, model = make_app(forge_hosts="git.internal.example=gitea")
    root, commit = pushed_repo(tmp_path / "src", remote="git@git.internal.example:t/api.git")
    await register(app, root)
    model.tool_calls(("read_file", {"repo": "api", "path": "cmd/main.go", "start_line": 3}))
    model.reply("main.go prints hello.")

    reply = await ask(app, "what does main do?")

    url = f"https://git.internal.example/t/api/src/commit/{commit}/cmd/main.go#L3"
    assert reply.sources == (Source("code", "cmd/main.go:3", url),)


async def test_the_definition_code_graph_showed_is_a_source_when_named(
    make_app: Make, tmp_path: Path
) -> None:
    app, model = make_app()
    root, commit = pushed_repo(tmp_path / "src")
    await register(app, root)
    model.tool_calls(("code_graph", {"symbol": NEEDLE, "repo": "api"}))
    model.reply(f"`{NEEDLE}` calls `deliver` up to three times.")

    reply = await ask(app, f"what does {NEEDLE} call?")

    url = link(commit, "src/app.py", "L4-L8")
    assert reply.sources == (Source("code", "src/app.py:4-8", url),)


async def test_memory_scopes_the_answer_used_are_named(make_app: Make, tmp_path: Path) -> None:
    app, model = make_app()
    assert (await ask(app, "/save We deploy with Helm from the release-tools repository")).ok
    assert (await ask(app, "/save --me I prefer answers in French")).ok
    model.reply("You deploy with Helm, from the release-tools repository.")

    reply = await ask(app, "how do we deploy?")

    # The channel fact was used; the personal preference was in the prompt but not repeated.
    assert reply.sources == (Source("memory", "channel memory"),)

    model.reply("I don't know that one.")
    assert (await ask(app, "how do we deploy the database?")).sources == ()


async def test_memory_the_model_searched_is_named_too(make_app: Make) -> None:
    app, model = make_app()
    assert (await ask(app, "/save The staging database is called pg-staging-7")).ok
    model.tool_calls(("search_memory", {"query": "staging database"}))
    model.reply("Staging runs on pg-staging-7.")

    # Nothing in the question matches the fact: only the search found it.
    reply = await ask(app, "anything I should know before the release?")

    assert "pg-staging-7" not in str(model.requests[0].messages)
    assert reply.sources == (Source("memory", "channel memory"),)


async def test_a_skill_loaded_this_turn_is_named(make_app: Make) -> None:
    app, model = make_app(skills_examples=True)
    model.tool_calls(("load_skill", {"name": "incident-triage"}))
    model.reply("Declare a SEV2 and name an incident lead.")

    reply = await ask(app, "prod is down, what now?")

    assert reply.sources == (Source("skill", "incident-triage skill"),)
    model.reply("Nothing more.")  # a later turn did not load it again
    assert (await ask(app, "thanks")).sources == ()


# -- choosing, directly ------------------------------------------------------------------------


def loc(path: str, start: int, end: int, kind: Any = "grep", symbol: str = "") -> CodeLocation:
    return CodeLocation("api", path, start, end, kind, symbol)


def test_a_named_symbol_or_cited_line_ranks_before_the_rest_of_its_file() -> None:
    hits = [
        loc("src/jobs.py", 1, 20, "search", "Job.schedule"),
        loc("src/jobs.py", 40, 60, "search", "Job.run"),
        loc("src/other.py", 5, 9, "read"),
        loc("src/queue.py", 3, 3),
        loc("src/queue.py", 30, 31),
    ]
    picked = pick_code("`run` (src/jobs.py) pops from queue.py:30 first.", hits)
    assert [(p.path, p.start, p.end) for p in picked] == [
        ("src/jobs.py", 40, 60),  # the symbol named, not the whole file's hits
        ("src/queue.py", 30, 31),  # the line cited
        ("src/other.py", 5, 9),  # read, not named
    ]


def test_a_search_hit_is_named_without_its_parameters() -> None:
    """Search hits carry their symbols as the chunker writes them, with the parameter list;
    an answer names the function, not its signature."""
    hits = [
        loc("src/render.py", 1, 5, "search", "render.open_fence(block, options, out)"),
        loc("src/_render.c", 1, 3, "search", "_render.close_fence(int options)"),
        loc("src/net.py", 10, 20, "search", "Client.send(self, request)"),
        loc("src/jobs.py", 40, 60, "search", "Job.run(self)"),
    ]
    picked = pick_code("open_fence checks the flag; Client.send retries, `run` waits.", hits)
    assert [p.path for p in picked] == ["src/render.py", "src/net.py", "src/jobs.py"]
    assert pick_code("The fence is closed in C.", hits) == []  # nothing named: no source


def test_ranges_of_a_file_merge_when_they_overlap_or_nearly_touch() -> None:
    hits = [
        loc("a.py", 1, 10, "read"),
        loc("a.py", 8, 12),
        loc("a.py", 15, 16),
        loc("a.py", 40, 41),
    ]
    picked = pick_code("see a.py", hits)
    assert [(p.start, p.end) for p in picked] == [(1, 16), (40, 41)]


def test_short_words_are_not_file_names() -> None:
    # A file called `run` is not named by an answer that says "run".
    assert pick_code("we run it", [loc("bin/run", 1, 2)]) == []


def test_a_path_is_named_only_as_a_whole_word_and_a_short_symbol_only_in_backticks() -> None:
    hits = [loc("a.py", 1, 2, symbol="run"), loc("b.py", 3, 4, symbol="Job.run")]
    assert pick_code("see data.py; we run it", hits) == []
    assert [p.path for p in pick_code("it calls `job.run()`", hits)] == ["a.py", "b.py"]
