"""Shared fixtures: isolated settings, both databases, the fake model server, a whole bot."""

from __future__ import annotations

import os
import shutil
import uuid
from collections.abc import AsyncIterator, Callable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit

import pytest

from tests.support.clocks import PINNED, Clock
from tests.support.embeddings import (  # noqa: F401  (fixtures, used by every test)
    embedded_batches,
    reused_embeddings,
)
from tests.support.fakes.openai_server import FakeOpenAI
from tests.support.mcp import make_world  # noqa: F401  (a fixture, shared with every test)

if TYPE_CHECKING:
    from config.settings import Settings
    from core.store.engine import Database

PG_URL = os.environ.get("TEST_DATABASE_URL", "postgresql://postgres@127.0.0.1:5432/test")
LOOPBACK = {"127.0.0.1", "localhost", "::1"}


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers",
        "fresh_embeddings: run the local embedding model on every batch, even one embedded "
        "before in this session (tests/support/embeddings.py)",
    )


# Variables the tests must not inherit from a developer's shell.
_ISOLATED_PREFIXES = (
    "LLM_",
    "THREADLINE_",
    "SLACK_",
    "DISCORD_",
    "QDRANT_",
    "EMBEDDINGS_",
    "TTS_",
)


@pytest.fixture(autouse=True)
def isolated_env(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Iterator[None]:
    for name in list(os.environ):
        if name.startswith(_ISOLATED_PREFIXES) or name == "DATABASE_URL":
            monkeypatch.delenv(name, raising=False)
    empty = tmp_path / "threadline.toml"
    empty.write_text("")
    monkeypatch.setenv("THREADLINE_CONFIG", str(empty))
    monkeypatch.chdir(tmp_path)  # no stray .env from the checkout
    monkeypatch.setenv("THREADLINE_DEMO_INDEX", "0")  # `run` must not index the checkout
    # A `threadline search` must not leave a holder behind (tests/bot/test_search_holder.py
    # turns it on where it is the subject).
    monkeypatch.setenv("THREADLINE_SEARCH_LINGER", "0")
    yield


@pytest.fixture(autouse=True, scope="session")
def one_tls_context() -> Iterator[None]:
    """One default TLS context for the whole session instead of one per HTTP client.

    Every `openai` client (and MCP's) makes an HTTP client, and each of those loads the CA bundle
    into a new TLS context: 0.1 to 0.3 s apiece, paid by nearly every test that builds a bot,
    though tests only speak plain HTTP to 127.0.0.1. The context is the same every time (the
    bundle named by the environment, which no test changes), so the session loads it once.
    """
    try:
        import httpcore2
    except ImportError:  # an HTTP stack without it: nothing to share
        yield
        return
    import functools

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(
            httpcore2, "default_ssl_context", functools.cache(httpcore2.default_ssl_context)
        )
        yield


@pytest.fixture
def clock(request: pytest.FixtureRequest) -> Clock:
    """The clock to hand every component: pinned at `PINNED`, or at each instant for a test
    marked `@at_every_instant` (tests/support/clocks.py)."""
    return Clock(getattr(request, "param", PINNED))


def assert_loopback(url: str | None) -> None:
    """Tests never talk to a real model: every model URL must be on this machine."""
    if url is None:
        raise AssertionError("a test tried to use the default (remote) model endpoint")
    host = urlsplit(url).hostname
    if host not in LOOPBACK:
        raise AssertionError(f"a test tried to reach a non-loopback model endpoint: {host}")


@pytest.fixture
def fake_llm() -> Iterator[FakeOpenAI]:
    fake = FakeOpenAI().start()
    yield fake
    fake.stop()


def _postgres_answers() -> bool:
    import psycopg

    try:
        with psycopg.connect(PG_URL, connect_timeout=3):
            return True
    except psycopg.Error:
        return False


@pytest.fixture(scope="session")
def postgres_available() -> bool:
    ok = _postgres_answers()
    if not ok and os.environ.get("THREADLINE_REQUIRE_POSTGRES"):
        pytest.exit(f"THREADLINE_REQUIRE_POSTGRES is set but {PG_URL} does not answer", 3)
    return ok


@pytest.fixture
def pg_url(postgres_available: bool) -> Iterator[str]:
    """A PostgreSQL URL whose search_path is a fresh schema, dropped afterwards."""
    if not postgres_available:
        pytest.skip(f"PostgreSQL does not answer at {PG_URL}")
    import psycopg

    schema = f"t_{uuid.uuid4().hex[:12]}"
    with psycopg.connect(PG_URL, autocommit=True) as conn:
        conn.execute(f'CREATE SCHEMA "{schema}"')
    sep = "&" if "?" in PG_URL else "?"
    yield f"{PG_URL}{sep}options=-csearch_path%3D{schema}"
    with psycopg.connect(PG_URL, autocommit=True) as conn:
        conn.execute(f'DROP SCHEMA "{schema}" CASCADE')


@pytest.fixture(params=["sqlite", "postgresql"])
def database_url(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    """Storage tests run on both backends."""
    if request.param == "sqlite":
        return f"sqlite:///{tmp_path / 'threadline.db'}"
    return str(request.getfixturevalue("pg_url"))


@pytest.fixture
async def open_db(database_url: str) -> AsyncIterator[Callable[[], Database]]:
    """`Database` handles on the test URL, each one standing for a process of its own; all are
    disposed at the end."""
    from core.store.engine import Database

    made: list[Database] = []

    def make() -> Database:
        db = Database(database_url)
        made.append(db)
        return db

    yield make
    for db in made:
        await db.dispose()


POLICY_ALL = """
[defaults]
permissions = ["ask", "code.read", "memory.read", "memory.write", "skills.use", "tts"]
[defaults.budgets]
tool_calls_per_request = 4
iterations_per_request = 4
tokens_per_user_per_day = 100000
tokens_per_channel_per_day = 1000000
tts_chars_per_user_per_day = 1000

[[rules]]
name = "admins"
match = { roles = ["admin"] }
grant = ["admin"]
"""


@pytest.fixture
def write_policy(tmp_path: Path) -> Callable[[str], Path]:
    def write(text: str = POLICY_ALL) -> Path:
        path = tmp_path / f"policy-{uuid.uuid4().hex[:6]}.toml"
        path.write_text(text)
        return path

    return write


@pytest.fixture
def make_settings(tmp_path: Path, write_policy: Callable[[str], Path]) -> Callable[..., Settings]:
    from config.settings import load_settings

    def make(**overrides: Any) -> Settings:
        overrides.setdefault("data_dir", tmp_path / "data")
        overrides.setdefault("policy_file", write_policy(POLICY_ALL))
        # The shipped example skills would add to every prompt; skills tests ask for them.
        overrides.setdefault("skills_examples", False)
        settings = load_settings(**overrides)
        resolved = settings.llm()
        if resolved is not None:
            assert_loopback(resolved.base_url)
        if settings.tts_engine_resolved == "openai":
            assert_loopback(settings.tts_base_url)
        return settings

    return make


class BotHarness:
    """The real composition root on the console adapter, for whole-bot tests."""

    def __init__(self, app: Any) -> None:
        self.app = app
        self.core = app.core

    async def send(self, text: str, **who: Any) -> Any:
        from adapters.console.translate import ConsoleIdentity, to_request

        who.setdefault("thread", "t1")
        who.setdefault("user", "alice")
        if "roles" in who:
            who["roles"] = tuple(who["roles"])
        return await self.core.handle(to_request(text, ConsoleIdentity(**who)))


@pytest.fixture(scope="session")
def empty_database(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """An SQLite database with every table at the newest revision and no rows, made once per
    session. A bot on a new data dir starts from a copy of it instead of creating the schema
    again (about 0.1 s of CPU per bot). How a new database is created is tested on its own
    (tests/core/store, the `database_url` storage tests, the CLI's processes)."""
    import asyncio

    from core.store.engine import Database

    path = tmp_path_factory.mktemp("schema") / "threadline.db"

    async def create() -> None:
        db = Database(f"sqlite:///{path}")
        try:
            await db.create_all()
        finally:
            await db.dispose()

    asyncio.run(create())
    return path


@pytest.fixture
async def make_bot(
    make_settings: Callable[..., Settings], empty_database: Path
) -> AsyncIterator[Callable[..., BotHarness]]:
    from bot.app import build_app

    apps: list[Any] = []

    def make(
        *, tools: tuple[Any, ...] = (), clock: Clock | None = None, **overrides: Any
    ) -> BotHarness:
        settings = make_settings(**overrides)
        # The data dir's database (not a `database_url` a test names): a copy of the empty one.
        database = settings.data_dir / "threadline.db"
        if settings.database_url is None and not database.exists():
            database.parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(empty_database, database)
        if clock is None:  # the bot's own default clock, for tests that do not pin one yet
            app = build_app(settings, extra_tools=tools, with_metrics=True)
        else:
            app = build_app(settings, extra_tools=tools, with_metrics=True, clock=clock)
        apps.append(app)
        return BotHarness(app)

    yield make
    for app in apps:
        await app.aclose()


@pytest.fixture
async def bot(make_bot: Callable[..., BotHarness], fake_llm: FakeOpenAI) -> BotHarness:
    return make_bot(llm_base_url=fake_llm.url, llm_model="fake-model", llm_max_retries=0)
