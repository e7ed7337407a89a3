"""Repositories, incremental indexing, `/index` and the exact code tools, on the real databases
(SQLite and PostgreSQL) and through the whole bot with the scripted fake model."""

from __future__ import annotations

import json
import os
import subprocess
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from core.code.repos import RepoError, RepoStore
from core.code.walk import index_repo
from core.store.engine import Database
from core.store.models import RepoFile
from tests.conftest import POLICY_ALL, BotHarness
from tests.support.code_repo import ENV_SECRET, NEEDLE, OUTSIDE_SECRET, READABLE, make_repo, write
from tests.support.fakes.openai_server import FakeOpenAI

MakeBot = Callable[..., BotHarness]


@pytest.fixture
def db(open_db: Callable[[], Database]) -> Database:
    return open_db()


@pytest.fixture
def store(db: Database, tmp_path: Path) -> RepoStore:
    return RepoStore(db, tmp_path / "data" / "repos")


async def stored(db: Database, repo_id: int) -> dict[str, str]:
    from sqlmodel import col, select

    async with db.session() as s:
        rows = (await s.exec(select(RepoFile).where(col(RepoFile.repo_id) == repo_id))).all()
    return {r.path: r.sha256 for r in rows}


async def chunks_by_path(db: Database, repo_id: int) -> dict[str, list[str]]:
    from sqlmodel import col, select

    from core.store.models import CodeChunk

    async with db.session() as s:
        stmt = select(CodeChunk).where(col(CodeChunk.repo_id) == repo_id)
        rows = (await s.exec(stmt.order_by(col(CodeChunk.id)))).all()
    out: dict[str, list[str]] = {}
    for r in rows:
        out.setdefault(r.path, []).append(r.symbol)
    return out


def bump(path: Path) -> None:
    """Move the mtime forward: a file system with coarse timestamps must still see a change."""
    st = path.stat()
    os.utime(path, ns=(st.st_atime_ns, st.st_mtime_ns + 5_000_000_000))


# -- registering and incremental indexing ----------------------------------------------------


async def test_index_then_modify_delete_rename_counts(
    store: RepoStore, db: Database, tmp_path: Path
) -> None:
    root = make_repo(tmp_path)
    repo = await store.register(str(root))
    assert (repo.name, repo.root, repo.origin) == ("api", str(root), str(root))
    assert repo.id is not None
    progress: list[tuple[int, int]] = []

    first = await index_repo(db, repo, progress=lambda d, t: progress.append((d, t)))

    assert set(first.added) == READABLE
    assert first.summary() == {
        "added": len(READABLE),
        "changed": 0,
        "removed": 0,
        "unchanged": 0,
        "files": len(READABLE),
        "chunks_written": first.chunks_written,
    }
    assert first.chunks_written > 0
    chunked = await chunks_by_path(db, repo.id)
    assert "src/app.py" in chunked and "cmd/main.go" in chunked
    assert progress[-1] == (len(READABLE), len(READABLE))
    rows = await stored(db, repo.id)
    assert set(rows) == READABLE
    import hashlib

    assert rows["src/app.py"] == hashlib.sha256((root / "src/app.py").read_bytes()).hexdigest()

    again = await index_repo(db, repo)
    assert again.summary()["unchanged"] == len(READABLE)
    assert (again.added, again.changed, again.removed) == ((), (), ())
    assert await chunks_by_path(db, repo.id) == chunked  # nothing re-chunked

    # modify one, touch one without changing it, delete one, rename one
    (root / "src/app.py").write_text("def other():\n    pass\n")
    bump(root / "src/app.py")
    bump(root / "README.md")
    (root / "cmd/main.go").unlink()
    (root / "lib/Thing.java").rename(root / "lib/Renamed.java")
    write(root, "node_modules/new/index.js", "ignored\n")

    third = await index_repo(db, repo)

    assert third.changed == ("src/app.py",)
    assert third.added == ("lib/Renamed.java",)
    assert set(third.removed) == {"cmd/main.go", "lib/Thing.java"}
    assert third.unchanged == len(READABLE) - 3  # README.md was re-hashed, found unchanged
    rows = await stored(db, repo.id)
    assert set(rows) == READABLE - {"cmd/main.go", "lib/Thing.java"} | {"lib/Renamed.java"}
    chunked_after = await chunks_by_path(db, repo.id)
    assert "cmd/main.go" not in chunked_after and "lib/Thing.java" not in chunked_after
    assert "lib/Renamed.java" in chunked_after
    assert any("other" in symbol for symbol in chunked_after["src/app.py"])
    assert chunked_after["README.md"] == chunked["README.md"]
    listed = await store.all()
    assert [(r.name, r.file_count) for r in listed] == [("api", len(READABLE) - 1)]
    assert listed[0].last_indexed_at is not None and listed[0].last_indexed_at.tzinfo is not None


async def test_registering_twice_returns_the_same_repo_and_names_are_unique(
    store: RepoStore, tmp_path: Path
) -> None:
    root = make_repo(tmp_path)
    first = await store.register(str(root))
    assert (await store.register(str(root) + "/")).id == first.id
    other = make_repo(tmp_path / "elsewhere")
    with pytest.raises(RepoError, match="already registered"):
        await store.register(str(other))  # also called "api"
    renamed = await store.register(str(other), "api2")
    assert [r.name for r in await store.all()] == ["api", "api2"]
    assert renamed.root == str(other)
    with pytest.raises(RepoError, match="not a directory"):
        await store.register(str(tmp_path / "missing"))
    with pytest.raises(RepoError, match="invalid repository name"):
        await store.register(str(root), "../evil")


def git(*args: str, cwd: Path) -> None:
    subprocess.run(
        ["git", "-c", "user.name=t", "-c", "user.email=t@example.org", *args],
        cwd=cwd,
        check=True,
        capture_output=True,
    )


def bare_repo(tmp_path: Path) -> tuple[Path, Path]:
    """A work tree with one commit, pushed to a bare repository; returns (work, bare)."""
    work = tmp_path / "upstream"
    write(work, "svc/handler.py", f"def {NEEDLE}():\n    return 1\n")
    write(work, "README.md", "# service\n")
    git("init", "-q", "-b", "main", cwd=work)
    git("add", ".", cwd=work)
    git("commit", "-q", "-m", "one", cwd=work)
    bare = tmp_path / "service.git"
    git("clone", "-q", "--bare", str(work), str(bare), cwd=tmp_path)
    return work, bare


async def test_git_url_is_cloned_into_the_data_dir_and_updated(
    store: RepoStore, db: Database, tmp_path: Path
) -> None:
    work, bare = bare_repo(tmp_path)
    url = f"file://{bare}"

    repo = await store.register(url)

    assert repo.name == "service"
    assert repo.origin == url
    assert Path(repo.root) == (tmp_path / "data" / "repos" / "service").resolve()
    assert (Path(repo.root) / "svc/handler.py").read_text().startswith(f"def {NEEDLE}")
    first = await index_repo(db, repo)
    assert set(first.added) == {"svc/handler.py", "README.md"}

    write(work, "svc/new.py", "x = 1\n")
    git("add", ".", cwd=work)
    git("commit", "-q", "-m", "two", cwd=work)
    git("push", "-q", str(bare), "main", cwd=work)
    again = await store.register(url)  # same source: fetched, same row
    assert again.id == repo.id
    second = await index_repo(db, again)
    assert second.added == ("svc/new.py",)

    with pytest.raises(RepoError, match="git clone failed"):
        await store.register(f"file://{tmp_path / 'nope.git'}")
    with pytest.raises(RepoError, match="unsupported git URL scheme"):
        await store.register("ftp://host/x.git")
    assert [r.name for r in await store.all()] == ["service"]


# -- the tools through the whole bot ---------------------------------------------------------

ONLY_API = (
    POLICY_ALL.replace("[defaults]\n", '[defaults]\nrepos = ["api"]\n', 1)
    + """
[[rules]]
name = "indexers"
match = { roles = ["ops"] }
grant = ["code.index"]
"""
)


def roomy(policy: str) -> str:
    """Room for several tool calls in one scripted turn."""
    return policy.replace("tool_calls_per_request = 4", "tool_calls_per_request = 10")


async def code_bot(
    make_bot: MakeBot,
    fake_llm: FakeOpenAI,
    write_policy: Callable[[str], Path],
    tmp_path: Path,
    policy: str = POLICY_ALL,
) -> BotHarness:
    bot = make_bot(
        llm_base_url=fake_llm.url,
        llm_model="fake-model",
        llm_max_retries=0,
        # a few tool calls per scripted turn: room for them all
        policy_file=write_policy(roomy(policy)),
    )
    for name in ("api", "web"):
        repo = await bot.app.repos.register(str(make_repo(tmp_path / "src", name)))
        await index_repo(bot.app.db, repo)
    return bot


async def tool_results(
    bot: BotHarness, fake_llm: FakeOpenAI, *calls: tuple[str, dict[str, Any]], **who: Any
) -> list[str]:
    """Run the calls as one model turn; return the tool results the model received."""
    fake_llm.tool_calls(*calls)
    fake_llm.reply("done")
    reply = await bot.send("look at the code", **who)
    assert reply.text == "done"
    n = len(fake_llm.requests)
    followup = fake_llm.wait_for_requests(n)[-1]
    return [m["content"] for m in followup["messages"] if m["role"] == "tool"][-len(calls) :]


async def test_grep_code_finds_readable_code_only(
    make_bot: MakeBot, fake_llm: FakeOpenAI, write_policy: Callable[[str], Path], tmp_path: Path
) -> None:
    bot = await code_bot(make_bot, fake_llm, write_policy, tmp_path)

    (result,) = await tool_results(
        bot, fake_llm, ("grep_code", {"pattern": f"def {NEEDLE}", "context_lines": 1})
    )

    assert result.splitlines() == [
        "2 matches in 2 file(s):",
        "## api: src/app.py",
        "3- ",
        f"4: def {NEEDLE}(event, attempts=3):",
        "5-     for attempt in range(attempts):",
        "## web: src/app.py",
        "3- ",
        f"4: def {NEEDLE}(event, attempts=3):",
        "5-     for attempt in range(attempts):",
    ]
    (everything,) = await tool_results(bot, fake_llm, ("grep_code", {"pattern": NEEDLE}))
    files = {line for line in everything.splitlines() if line.startswith("## ")}
    assert files == {
        f"## {repo}: {path}"
        for repo in ("api", "web")
        for path in ("src/app.py", "src/util.ts", "README.md")
    }
    for hidden in (
        ENV_SECRET,
        OUTSIDE_SECRET,
        "node_modules",
        "dist/",
        "big.txt",
        ".pem",
        "id_rsa",
        "server.key",
        "app.log",
        "generated",
        "local.txt",
        "logo.png",
    ):
        assert hidden not in everything


async def test_grep_code_limits_globs_and_bad_regexes(
    make_bot: MakeBot, fake_llm: FakeOpenAI, write_policy: Callable[[str], Path], tmp_path: Path
) -> None:
    bot = await code_bot(make_bot, fake_llm, write_policy, tmp_path)

    limited, globbed, bad, escape, one_repo = await tool_results(
        bot,
        fake_llm,
        ("grep_code", {"pattern": NEEDLE, "max_results": 2}),
        ("grep_code", {"pattern": NEEDLE, "path_glob": "*.ts", "repo": "web"}),
        ("grep_code", {"pattern": "(unclosed"}),
        ("grep_code", {"pattern": NEEDLE, "path_glob": "../**"}),
        ("grep_code", {"pattern": NEEDLE, "max_results": 201}),
    )

    assert limited.startswith("2 matches")
    assert "[stopped at 2 matches; narrow the pattern or path_glob]" in limited
    assert globbed.splitlines()[:2] == ["1 match in 1 file(s):", "## web: src/util.ts"]
    assert bad == "Error: the search failed: error: unclosed group"
    assert escape == "Error: refused: the path_glob may not contain '..'"
    assert one_repo.startswith("Error: invalid arguments (max_results:")


async def test_glob_and_read_file(
    make_bot: MakeBot, fake_llm: FakeOpenAI, write_policy: Callable[[str], Path], tmp_path: Path
) -> None:
    bot = await code_bot(make_bot, fake_llm, write_policy, tmp_path)

    py, everything, read, ranged = await tool_results(
        bot,
        fake_llm,
        ("glob_files", {"pattern": "*.py", "repo": "api"}),
        ("glob_files", {"pattern": "*"}),
        ("read_file", {"repo": "api", "path": "src/app.py"}),
        ("read_file", {"repo": "web", "path": "./src/app.py", "start_line": 4, "end_line": 5}),
    )

    assert py == "## api\nsrc/app.py"
    assert set(everything.splitlines()) == {"## api", "## web"} | READABLE
    assert read.splitlines()[0] == "## api: src/app.py (lines 1-12 of 12)"
    assert f" 4 | def {NEEDLE}(event, attempts=3):" in read.splitlines()
    assert ranged.splitlines() == [
        "## web: src/app.py (lines 4-5 of 12)",
        f"4 | def {NEEDLE}(event, attempts=3):",
        "5 |     for attempt in range(attempts):",
        "[more: read_file with start_line=6]",
    ]


@pytest.mark.parametrize(
    ("args", "expected"),
    [
        ({"path": "../api-outside/secret.txt"}, "may not contain '..'"),
        ({"path": "src/../../api-outside/secret.txt"}, "may not contain '..'"),
        ({"path": "/etc/passwd"}, "must be relative to the repository root"),
        ({"path": "escape.txt"}, "leads outside the repository"),
        ({"path": "escape_dir/secret.txt"}, "leads outside the repository"),
        ({"path": ".env"}, "looks like it holds secrets"),
        ({"path": "notes.txt"}, "looks like it holds secrets"),  # symlink to .env
        ({"path": "deploy.pem"}, "looks like it holds secrets"),
        ({"path": "config/id_rsa"}, "looks like it holds secrets"),
        ({"path": "config/server.key"}, "looks like it holds secrets"),
        ({"path": "logo.png"}, "binary file"),
        ({"path": "big.txt"}, "larger than"),
        ({"path": "node_modules/pkg/index.js"}, "is ignored"),
        ({"path": "app.log"}, "is ignored"),
        ({"path": "nope.py"}, "no file 'nope.py' in api"),
        ({"path": "."}, "not the repository root"),
    ],
)
async def test_read_file_refusals(
    make_bot: MakeBot,
    fake_llm: FakeOpenAI,
    write_policy: Callable[[str], Path],
    tmp_path: Path,
    args: dict[str, Any],
    expected: str,
) -> None:
    bot = await code_bot(make_bot, fake_llm, write_policy, tmp_path)

    (result,) = await tool_results(bot, fake_llm, ("read_file", {"repo": "api", **args}))

    assert result.startswith("Error: ")
    assert expected in result
    assert OUTSIDE_SECRET not in result and ENV_SECRET not in result


async def test_glob_files_refuses_escapes_and_hides_secrets(
    make_bot: MakeBot, fake_llm: FakeOpenAI, write_policy: Callable[[str], Path], tmp_path: Path
) -> None:
    bot = await code_bot(make_bot, fake_llm, write_policy, tmp_path)

    up, absolute, secrets, through_link = await tool_results(
        bot,
        fake_llm,
        ("glob_files", {"pattern": "../*"}),
        ("glob_files", {"pattern": "/etc/*"}),
        ("glob_files", {"pattern": "*.pem"}),
        ("glob_files", {"pattern": "escape_dir/*"}),
    )

    assert up == "Error: refused: the pattern may not contain '..'"
    assert absolute == "Error: refused: the pattern must be relative to the repository root"
    assert secrets == "No files match '*.pem'."
    assert through_link == "No files match 'escape_dir/*'."


async def test_repos_outside_the_policy_look_like_missing_ones(
    make_bot: MakeBot, fake_llm: FakeOpenAI, write_policy: Callable[[str], Path], tmp_path: Path
) -> None:
    bot = await code_bot(make_bot, fake_llm, write_policy, tmp_path, policy=ONLY_API)

    hidden, missing, grep_hidden, grep_all, glob_all = await tool_results(
        bot,
        fake_llm,
        ("read_file", {"repo": "web", "path": "src/app.py"}),
        ("read_file", {"repo": "nope", "path": "src/app.py"}),
        ("grep_code", {"pattern": NEEDLE, "repo": "web"}),
        ("grep_code", {"pattern": NEEDLE}),
        ("glob_files", {"pattern": "*.py"}),
    )

    assert hidden == "Error: there is no repository named 'web' (available here: api)"
    assert missing == hidden.replace("'web'", "'nope'")
    assert grep_hidden == hidden
    assert "## api: src/app.py" in grep_all and "## web" not in grep_all
    assert glob_all == "## api\nsrc/app.py"


async def test_index_command_reindexes_and_reports_counts(
    make_bot: MakeBot, fake_llm: FakeOpenAI, write_policy: Callable[[str], Path], tmp_path: Path
) -> None:
    bot = await code_bot(make_bot, fake_llm, write_policy, tmp_path, policy=ONLY_API)
    root = tmp_path / "src" / "api"
    (root / "src/app.py").write_text("changed = True\n")
    bump(root / "src/app.py")
    (root / "README.md").unlink()
    write(root, "src/new.py", "new = 1\n")

    denied = await bot.send("/index api")
    assert not denied.ok
    assert "`code.index`" in denied.text

    reply = await bot.send("/index api", roles=["ops"])
    assert reply.ok, reply.text
    total = len(READABLE)
    assert reply.text.startswith(
        f"Indexed `api`: {total} files — 1 added, 1 changed, 1 removed, {total - 2} unchanged;"
        " 2 chunks written, "
    )
    assert reply.text.endswith(" embedded.")  # the chunks the first index left without vectors
    hidden = await bot.send("/index web", roles=["ops"])
    missing = await bot.send("/index nope", roles=["ops"])
    assert not hidden.ok
    assert hidden.text == "There is no repository named 'web' (available here: api)."
    assert missing.text == hidden.text.replace("'web'", "'nope'")
    usage = await bot.send("/index", roles=["ops"])
    assert usage.text.startswith("Usage: `/index NAME`")
    assert fake_llm.requests == []  # commands never reach the model


async def test_tool_schemas_offered_to_the_model(
    make_bot: MakeBot, fake_llm: FakeOpenAI, write_policy: Callable[[str], Path], tmp_path: Path
) -> None:
    bot = await code_bot(make_bot, fake_llm, write_policy, tmp_path)
    fake_llm.reply("hi")
    await bot.send("hello")
    (request,) = fake_llm.wait_for_requests(1)
    tools = {t["function"]["name"]: t["function"] for t in request["tools"]}
    grep = tools["grep_code"]["parameters"]["properties"]
    assert grep["max_results"]["maximum"] == 200
    assert grep["context_lines"]["maximum"] == 5
    assert set(tools["read_file"]["parameters"]["required"]) == {"repo", "path"}
    assert "glob_files" in tools
    assert "grep_code, glob_files, read_file" in json.dumps(request["messages"][0])


async def test_code_tools_are_offered_only_where_a_repository_is_readable(
    make_bot: MakeBot, fake_llm: FakeOpenAI, write_policy: Callable[[str], Path], tmp_path: Path
) -> None:
    policy = POLICY_ALL + '\n[[rules]]\nmatch = { channel = "closed" }\nrepos = []\n'
    bot = make_bot(
        llm_base_url=fake_llm.url,
        llm_model="fake-model",
        llm_max_retries=0,
        policy_file=write_policy(policy),
    )
    code = {"grep_code", "glob_files", "read_file"}

    def offered(request: dict[str, Any]) -> set[str]:
        return {t["function"]["name"] for t in request.get("tools", [])}

    for _ in range(3):
        fake_llm.reply("ok")
    await bot.send("no repositories yet")
    await bot.app.repos.register(str(make_repo(tmp_path)))
    await bot.send("now there is one")
    await bot.send("but not here", channel="closed")

    before, after, closed = fake_llm.wait_for_requests(3)
    assert not code & offered(before)
    assert code <= offered(after)
    assert not code & offered(closed)
    assert "current_time" in offered(closed)  # other tools are unaffected


async def test_search_code_filters_by_role_and_names_each_results_role(
    make_bot: MakeBot, fake_llm: FakeOpenAI, write_policy: Callable[[str], Path], tmp_path: Path
) -> None:
    bot = make_bot(
        llm_base_url=fake_llm.url,
        llm_model="fake-model",
        llm_max_retries=0,
        policy_file=write_policy(roomy(POLICY_ALL)),
    )
    repo = await bot.app.repos.register(str(make_repo(tmp_path / "src")))
    assert (await bot.app.indexer.index(repo)).vectors_error is None

    every, docs, bogus = await tool_results(
        bot,
        fake_llm,
        ("search_code", {"query": "retry webhook", "top_k": 10}),
        ("search_code", {"query": "retry webhook", "role": "docs"}),
        ("search_code", {"query": "retry webhook", "role": "tests"}),
    )
    assert "(source, score" in every and "(docs, score" in every
    assert "README.md" in docs and "(source, score" not in docs
    assert bogus.startswith("Error: invalid arguments (role:")
