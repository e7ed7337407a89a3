"""The repo map: ranked around what the conversation names, within its token budget, in the
agent's prompt only where the conversation may read the code, and `threadline map`."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from core.code.graph.focus import looks_like_code_question, seeds
from core.code.graph.outline import DEFAULT_TOKENS, HEADER, build_map, default_budget
from core.code.graph.rank import Graph, load_graph
from core.code.repos import RepoStore
from core.code.walk import index_repo
from core.memory.tokens import TokenCounter
from core.store.engine import Database
from core.store.models import Repo
from tests.bot.test_cli import cli_env, run_cli  # noqa: F401  (fixture)
from tests.conftest import POLICY_ALL, BotHarness
from tests.support.fakes.openai_server import FakeOpenAI

MakeBot = Callable[..., BotHarness]

# A small service (api -> cache -> store) beside text helpers that every other module uses:
# unseeded, the helpers are what the repository leans on most.
FILES = {
    "svc/__init__.py": "",
    "svc/store.py": (
        "class Store:\n"
        "    def get(self, key):\n        return key\n\n"
        "    def put(self, key, value):\n        return value\n"
    ),
    "svc/cache.py": (
        "from svc.store import Store\n\n\n"
        "class Cache:\n"
        "    def __init__(self):\n        self.store = Store()\n\n"
        "    def lookup(self, key):\n        return self.store.get(key)\n"
    ),
    "svc/api.py": (
        "from svc.cache import Cache\n\n\n"
        "def handler(request):\n    return Cache().lookup(request)\n"
    ),
    "text/__init__.py": "",
    "text/util.py": (
        "def slug(value):\n    return norm(value).replace(' ', '-')\n\n\n"
        "def norm(value):\n    return value.strip().lower()\n"
    ),
    **{
        f"text/page{i}.py": (
            "from text.util import norm, slug\n\n\n"
            f"def title{i}(value):\n    return slug(value)\n\n\n"
            f"def heading{i}(value):\n    return norm(slug(value))\n"
        )
        for i in range(6)
    },
}


def make(root: Path) -> Path:
    for rel, text in FILES.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(text)
    return root


@pytest.fixture
def db(open_db: Callable[[], Database]) -> Database:
    return open_db()


async def indexed(db: Database, tmp_path: Path) -> tuple[Repo, Graph]:
    repo = await RepoStore(db, tmp_path / "clones").register(str(make(tmp_path / "api")))
    assert repo.id is not None
    await index_repo(db, repo)
    graph = await load_graph(db, repo.id)
    assert graph is not None
    return repo, graph


async def test_the_seeded_symbols_neighbours_rank_first(db: Database, tmp_path: Path) -> None:
    repo, graph = await indexed(db, tmp_path)
    count = TokenCounter().count_text

    flat = build_map(graph, Path(repo.root), "api", seeds(graph, ""), 2048, count)
    assert flat.files[0].path == "text/util.py"  # the most used file, with nothing named

    found = seeds(graph, "why does `Cache.lookup` miss?")
    assert found.symbols == ("svc/cache.py:Cache.lookup",)
    focused = build_map(graph, Path(repo.root), "api", found, 2048, count)
    order = [f.path for f in focused.files]
    assert order[0] == "svc/cache.py"
    # What it calls (Store.get) and what calls it (handler) come before the unrelated files.
    assert set(order[1:3]) == {"svc/store.py", "svc/api.py"}
    assert "text/util.py" in order[3:]

    cache = focused.files[0]
    assert [(d.symbol, d.line) for d in cache.definitions] == [
        ("Cache", 4),
        ("Cache.__init__", 5),
        ("Cache.lookup", 8),
    ]
    assert "svc/cache.py:\n    4: class Cache:\n    5:     def __init__(self):" in focused.text
    assert "    8:     def lookup(self, key):" in focused.text

    by_path = build_map(
        graph, Path(repo.root), "api", seeds(graph, "look at svc/store.py"), 2048, count
    )
    assert by_path.files[0].path == "svc/store.py"
    assert by_path.seeds.paths == ("svc/store.py",)


async def test_the_map_stays_within_its_budget(db: Database, tmp_path: Path) -> None:
    repo, graph = await indexed(db, tmp_path)
    counter = TokenCounter()
    found = seeds(graph, "Cache.lookup")
    sizes = []
    for budget in (64, 100, 200, 4_000):
        built = build_map(graph, Path(repo.root), "api", found, budget, counter.count_text)
        assert 0 < built.tokens <= budget
        assert counter.count_text(built.text) == built.tokens
        sizes.append(sum(len(f.definitions) for f in built.files))
    assert sizes == sorted(sizes) and sizes[0] < sizes[-1]
    everything = sum(1 for k in graph.kinds if k in ("class", "function", "method"))
    assert sizes[-1] == everything  # a roomy budget shows every definition

    # The default: 1,024 tokens when a file is named, twice that otherwise.
    assert default_budget(seeds(graph, "svc/api.py")) == DEFAULT_TOKENS
    assert default_budget(seeds(graph, "handler")) == 2 * DEFAULT_TOKENS


async def test_seeds_and_code_questions(db: Database, tmp_path: Path) -> None:
    _, graph = await indexed(db, tmp_path)
    assert seeds(graph, "how are you today? thanks for the help").nodes == {}
    assert seeds(graph, "who calls slug()").symbols == ("text/util.py:slug",)
    assert seeds(graph, "", ["what does Store.put do"]).symbols == ("svc/store.py:Store.put",)
    assert seeds(graph, "in cache.py").paths == ("svc/cache.py",)

    assert looks_like_code_question("where is the retry implemented?")
    assert looks_like_code_question("what does `lookup` return")
    assert looks_like_code_question("explain svc/cache.py")
    assert looks_like_code_question("is RetryPolicy safe")
    assert not looks_like_code_question("thanks, that helps!")
    assert not looks_like_code_question("what time is the standup")
    assert not looks_like_code_question("lunch options, e.g. pizza")


# -- the agent's prompt ----------------------------------------------------------------------

POLICY = POLICY_ALL + '\n[[rules]]\nmatch = { channel = "closed" }\nrepos = []\n'


def map_messages(request: dict[str, Any]) -> list[dict[str, Any]]:
    return [m for m in request["messages"] if str(m["content"] or "").startswith(HEADER)]


async def test_the_prompt_carries_the_map_where_the_code_is_readable(
    make_bot: MakeBot, fake_llm: FakeOpenAI, write_policy: Callable[[str], Path], tmp_path: Path
) -> None:
    bot = make_bot(
        llm_base_url=fake_llm.url,
        llm_model="fake-model",
        llm_max_retries=0,
        policy_file=write_policy(POLICY),
    )
    repo = await bot.app.repos.register(str(make(tmp_path / "api")))
    await index_repo(bot.app.db, repo)

    question = "where is Cache.lookup implemented?"
    for channel, text in (("open", question), ("closed", question), ("open", "thanks!")):
        fake_llm.reply("In svc/cache.py.")
        await bot.send(text, channel=channel, thread=f"t-{len(fake_llm.requests)}")
    first, closed, chatter = fake_llm.requests

    [code_map] = map_messages(first)
    sent = first["messages"]
    assert code_map["role"] == "user"  # data from the repositories, never system authority
    assert sent.index(code_map) == 2  # after the stable prefix and the context, before the thread
    assert sent[-1] == {"role": "user", "content": question}
    body = code_map["content"]
    assert "api: svc/cache.py:" in body and "def lookup(self, key):" in body
    assert body.index("api: svc/cache.py:") < body.index("api: text/util.py:")
    assert TokenCounter().count_text(body) <= DEFAULT_TOKENS * 2

    assert map_messages(closed) == []  # this channel may not read `api`
    assert "def lookup" not in json.dumps(closed["messages"])
    assert map_messages(chatter) == []  # not a code question
    # The stable prefix does not move with the map: provider caches keep hitting.
    assert first["messages"][0] == closed["messages"][0] == chatter["messages"][0]


# -- threadline map --------------------------------------------------------------------------


def test_cli_map(cli_env: dict[str, str], tmp_path: Path) -> None:  # noqa: F811
    root = make(tmp_path / "api")
    assert run_cli(cli_env, tmp_path, "index", str(root)).returncode == 0

    text = run_cli(cli_env, tmp_path, "map", "--repo", "api", "--focus", "Cache.lookup")
    assert text.returncode == 0, text.stderr
    assert text.stdout.startswith("svc/cache.py:\n    4: class Cache:\n")

    dump = run_cli(
        cli_env,
        tmp_path,
        "map",
        "--repo",
        "api",
        "--focus",
        "svc/api.py",
        "--tokens",
        "300",
        "--json",
    )
    assert dump.returncode == 0, dump.stderr
    data = json.loads(dump.stdout)
    assert set(data) == {"repo", "budget", "tokens", "focus", "files"}
    assert (data["repo"], data["budget"]) == ("api", 300)
    assert 0 < data["tokens"] <= 300
    assert data["focus"] == {"paths": ["svc/api.py"], "symbols": []}
    assert data["files"][0] == {
        "path": "svc/api.py",
        "score": data["files"][0]["score"],
        "definitions": [
            {
                "symbol": "handler",
                "kind": "function",
                "line": 4,
                "signature": "def handler(request):",
            }
        ],
    }

    unknown = run_cli(cli_env, tmp_path, "map", "--repo", "nope")
    assert unknown.returncode == 1 and "no repository named 'nope'" in unknown.stderr
    nothing = run_cli(cli_env, tmp_path, "map", "--repo", "api", "--focus", "Nowhere")
    assert nothing.returncode == 1 and "matches 'Nowhere'" in nothing.stderr
    bad = run_cli(cli_env, tmp_path, "map", "--repo", "api", "--tokens", "3")
    assert bad.returncode == 2 and "--tokens" in bad.stderr
    assert run_cli(cli_env, tmp_path, "map").returncode == 2  # --repo is required
