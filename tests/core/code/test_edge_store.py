"""The embedded Qdrant Edge store on disk: reopening, one opener at a time (in this process and
across processes), a process killed while holding it, a shard that cannot be loaded, the
migration from qdrant-client's local mode (DATA_DIR/qdrant), and points from before roles on
the server path getting their role without being embedded again."""

from __future__ import annotations

import logging
import signal
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

from core.code.edge_store import BROKEN_SUFFIX, SHARD_ID_FILE, shard_generation
from core.code.search import CodeSearch
from core.code.vectors import VectorStore, VectorStoreError
from tests.conftest import BotHarness
from tests.core.code.test_search import chunk_ids, indexed_bot
from tests.support.paths import ROOT_DIR
from tests.support.vector_scenario import SOURCE_FILES, BagOfWords, corpus, server_standin

MakeBot = Callable[..., BotHarness]
ROOT = ROOT_DIR
HELD = "open in another Threadline process"

# A process that opens the store, writes the corpus, says so, and waits to be killed.
HOLDER = """
import asyncio, sys
sys.path.insert(0, sys.argv[1])
from pathlib import Path
from core.code.vectors import VectorStore
from tests.support.vector_scenario import SOURCE_FILES, BagOfWords, corpus

async def main():
    store = VectorStore.local(Path(sys.argv[2]), BagOfWords())
    await store.upsert(corpus(SOURCE_FILES))
    print("ready", flush=True)
    sys.stdin.readline()

asyncio.run(main())
"""


async def test_a_reopened_store_has_its_points(tmp_path: Path) -> None:
    store = VectorStore.local(tmp_path, BagOfWords())
    await store.upsert(corpus(SOURCE_FILES))
    digests = await store.point_digests()
    before = await store.search("retry the webhook", repos=["api"], k=5)
    assert before  # the comparison after reopening means something
    generation = shard_generation(tmp_path / store.collection)
    await store.close()
    assert generation is not None

    again = VectorStore.local(tmp_path, BagOfWords())
    try:
        assert await again.point_digests() == digests
        assert await again.search("retry the webhook", repos=["api"], k=5) == before
        assert shard_generation(tmp_path / again.collection) == generation
    finally:
        await again.close()
    with pytest.raises(VectorStoreError, match="closed"):
        await again.point_digests()


async def test_new_and_old_shards_have_the_payload_indexes(tmp_path: Path) -> None:
    """Filters on repo, role and symbol name use keyword indexes (without one a filtered query
    reads every payload from disk: ~10x slower)."""
    import qdrant_edge as qe

    from core.code.vector_query import INDEXED_FIELDS

    store = VectorStore.local(tmp_path, BagOfWords())
    await store.close()
    shard = qe.EdgeShard.load(str(tmp_path / store.collection))
    try:
        assert set(INDEXED_FIELDS) <= set(shard.info().payload_schema)
        shard.update(qe.UpdateOperation.delete_field_index("role"))  # as before roles
    finally:
        shard.close()
    again = VectorStore.local(tmp_path, BagOfWords())
    await again.close()
    shard = qe.EdgeShard.load(str(tmp_path / store.collection))
    try:
        assert "role" in shard.info().payload_schema
    finally:
        shard.close()


async def test_a_second_opener_in_this_process_gets_a_clear_error(tmp_path: Path) -> None:
    first = VectorStore.local(tmp_path, BagOfWords())
    try:
        with pytest.raises(VectorStoreError, match=HELD) as caught:
            VectorStore.local(tmp_path, BagOfWords())
        assert "QDRANT_URL" in str(caught.value)
    finally:
        await first.close()
    second = VectorStore.local(tmp_path, BagOfWords())  # released on close
    await second.close()


async def test_another_process_holding_the_store_and_then_killed(tmp_path: Path) -> None:
    import asyncio

    holder = await asyncio.create_subprocess_exec(
        sys.executable,
        "-c",
        HOLDER,
        str(ROOT),
        str(tmp_path),
        stdin=asyncio.subprocess.PIPE,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
    )
    try:
        assert holder.stdout is not None and holder.stderr is not None
        ready = await holder.stdout.readline()
        assert ready == b"ready\n", await holder.stderr.read()
        with pytest.raises(VectorStoreError, match=HELD):
            VectorStore.local(tmp_path, BagOfWords())
    finally:
        holder.send_signal(signal.SIGKILL)  # no close, no flush of anything in memory
        await holder.wait()
    # The lock went with the process; what it wrote is there.
    store = VectorStore.local(tmp_path, BagOfWords())
    try:
        assert set(await store.point_digests()) == {i for i, _ in corpus(SOURCE_FILES)}
        assert await store.search("verifySignature", k=1)
    finally:
        await store.close()


async def test_a_shard_that_cannot_be_loaded_is_moved_aside_and_rebuilt(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    store = VectorStore.local(tmp_path, BagOfWords())
    await store.upsert(corpus(SOURCE_FILES))
    await store.close()
    shard = tmp_path / store.collection
    old_generation = shard_generation(shard)
    for manifest in (shard / "segments").glob("*/segment.json"):
        manifest.write_text("not json")

    with caplog.at_level(logging.WARNING, logger="core.code.edge_store"):
        rebuilt = VectorStore.local(tmp_path, BagOfWords())
    try:
        assert await rebuilt.point_digests() == {}  # empty: the next sync re-embeds
        assert shard_generation(shard) not in (None, old_generation)
    finally:
        await rebuilt.close()
    broken = shard.with_name(shard.name + BROKEN_SUFFIX)
    assert (broken / SHARD_ID_FILE).exists()
    assert str(shard) in caplog.text and str(broken) in caplog.text


async def test_a_shard_id_missing_after_a_crash_is_written_on_open(tmp_path: Path) -> None:
    store = VectorStore.local(tmp_path, BagOfWords())
    await store.upsert(corpus(SOURCE_FILES)[:2])
    await store.close()
    (tmp_path / store.collection / SHARD_ID_FILE).unlink()
    again = VectorStore.local(tmp_path, BagOfWords())
    try:
        assert shard_generation(tmp_path / again.collection) is not None
        assert len(await again.point_digests()) == 2  # the data is kept
    finally:
        await again.close()


# -- migration from qdrant-client's local mode ---------------------------------------------------


async def make_local_mode_store(path: Path, collection: str) -> None:
    """What Threadline before Qdrant Edge left in DATA_DIR/qdrant."""
    from qdrant_client import AsyncQdrantClient
    from qdrant_client.http import models as qm

    client = AsyncQdrantClient(path=str(path))
    try:
        await client.create_collection(
            collection, vectors_config=qm.VectorParams(size=4, distance=qm.Distance.COSINE)
        )
        await client.upsert(
            collection, points=[qm.PointStruct(id=1, vector=[1, 0, 0, 0], payload={})]
        )
    finally:
        await client.close()


async def forget_the_edge_store(bot: BotHarness) -> None:
    """Back to how an older Threadline left things: no Edge shard, sync markers keyed by the
    collection name alone."""
    import shutil

    from sqlmodel import select

    from core.store.models import VectorSync

    await bot.app.search.aclose()
    shutil.rmtree(bot.app.settings.data_dir / "qdrant-edge")
    async with bot.app.db.session() as s:
        for row in (await s.exec(select(VectorSync))).all():
            await s.delete(row)
            await s.flush()
            s.add(VectorSync(repo_id=row.repo_id, collection=bot.app.search.collection))


async def test_an_old_local_mode_store_is_removed_and_every_chunk_re_embedded(
    make_bot: MakeBot, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    from bot.upkeep import catch_up_vectors

    bot = await indexed_bot(make_bot, tmp_path)
    (repo,) = await bot.app.repos.all()
    await forget_the_edge_store(bot)
    old = bot.app.settings.data_dir / "qdrant"
    await make_local_mode_store(old, bot.app.search.collection)

    assert not await bot.app.search.in_sync(repo)  # an old marker names no Edge shard
    with caplog.at_level(logging.WARNING, logger="core.code.edge_store"):
        embedded = await catch_up_vectors(bot.app)  # what `run` does in the background
    assert not old.exists()
    assert "removed the old embedded vector store" in caplog.text and str(old) in caplog.text
    assert embedded == len(await chunk_ids(bot, "shop"))
    assert await bot.app.search.in_sync(repo)
    store = await bot.app.search.store()
    assert set(await store.point_digests("shop")) == await chunk_ids(bot, "shop")
    top = await bot.app.search.search("how is a user's login secret verified?", ["shop"], k=1)
    assert top[0].symbol.startswith("passwords.check_password")


async def test_the_indexer_re_embeds_into_a_new_shard_even_when_nothing_changed(
    make_bot: MakeBot, tmp_path: Path
) -> None:
    bot = await indexed_bot(make_bot, tmp_path)
    (repo,) = await bot.app.repos.all()
    await forget_the_edge_store(bot)
    report = await bot.app.indexer.index(repo)
    assert report.files.chunks_written == 0
    assert report.vectors is not None
    assert report.vectors.embedded == len(await chunk_ids(bot, "shop"))


async def test_an_old_store_still_open_elsewhere_is_left_in_place(
    make_bot: MakeBot, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    from qdrant_client import AsyncQdrantClient

    bot = make_bot()
    old = bot.app.settings.data_dir / "qdrant"
    await make_local_mode_store(old, "code_old_4")
    holder = AsyncQdrantClient(path=str(old))  # an older Threadline, still running
    try:
        with caplog.at_level(logging.WARNING, logger="core.code.edge_store"):
            await bot.app.search.store()
        assert old.exists()
        assert "still open in another process" in caplog.text
    finally:
        await holder.close()


# -- the server path ------------------------------------------------------------------------------


async def test_server_points_from_before_roles_get_them_without_re_embedding(
    make_bot: MakeBot, tmp_path: Path
) -> None:
    from sqlmodel import select

    from core.store.models import VectorSync

    bot = await indexed_bot(make_bot, tmp_path)
    (repo,) = await bot.app.repos.all()
    store = server_standin()
    search = CodeSearch(bot.app.db, lambda: store, collection=store.collection)
    try:
        first = await search.sync(repo)
        ids = await chunk_ids(bot, "shop")
        assert first.embedded == len(ids)
        assert await search.in_sync(repo)
        # As an older Threadline left it: no role in any payload, a marker without a version.
        await store.backend.set_payload(sorted(ids), {"role": ""})
        async with bot.app.db.session() as s:
            for row in (await s.exec(select(VectorSync))).all():
                await s.delete(row)
            s.add(VectorSync(repo_id=repo.id or 0, collection=store.collection))
        assert not await search.in_sync(repo)

        again = await search.sync(repo)
        assert (again.embedded, again.deleted, again.relabelled) == (0, 0, len(ids))
        states = await store.point_states("shop")
        assert {s.role for s in states.values()} == {"source", "docs"}  # README.md is docs
        assert await search.in_sync(repo)
        docs = await search.search("an online shop", ["shop"], roles=["docs"], k=5)
        assert [r.path for r in docs] == ["README.md"]
        assert (await search.sync(repo)).relabelled == 0
    finally:
        await search.aclose()


OPEN_AND_CLOSE = """
import asyncio, sys
sys.path.insert(0, sys.argv[1])
from pathlib import Path
import numpy as np
from core.code.vectors import VectorStore

class Ones:
    name = "ones"
    dimension = 4
    def embed(self, texts):
        return np.ones((len(texts), 4), dtype=np.float32)

store = VectorStore.local(Path(sys.argv[2]), Ones())
asyncio.run(store.close())
print("qdrant_client" in sys.modules)
"""


def test_the_embedded_store_does_not_import_qdrant_client(tmp_path: Path) -> None:
    """`threadline search` pays only for what it uses: importing qdrant-client alone costs a
    new process a few hundred milliseconds, and the embedded path never needs it."""
    out = subprocess.run(
        [sys.executable, "-c", OPEN_AND_CLOSE, str(ROOT), str(tmp_path)],
        capture_output=True,
        text=True,
        check=True,
    )
    assert out.stdout.strip() == "False", out.stderr


async def test_packaging_metadata_indexed_as_source_becomes_generated_without_re_embedding(
    make_bot: MakeBot, tmp_path: Path
) -> None:
    """An index made before PKG-INFO was `generated` (payload version 2) is relabelled by the
    next sync: the metadata that repeats the README stops outranking the code."""
    from sqlmodel import col, select

    from core.code.search import PAYLOAD_VERSION
    from core.store.models import CodeChunk, VectorSync

    pkg_info = "Metadata-Version: 2.1\nName: shop\nSummary: an online shop with carts\n"
    bot = await indexed_bot(make_bot, tmp_path, extra={"shop.egg-info/PKG-INFO": pkg_info})
    (repo,) = await bot.app.repos.all()
    search = bot.app.search
    store = await search.store()
    async with bot.app.db.session() as s:
        stmt = select(CodeChunk.id).where(col(CodeChunk.path) == "shop.egg-info/PKG-INFO")
        metadata = sorted(int(i) for i in (await s.exec(stmt)).all())
    assert metadata
    assert {(await store.point_states("shop"))[i].role for i in metadata} == {"generated"}

    # As the release before left it: the metadata labelled source, its sync marker at p2.
    await store.backend.set_payload(metadata, {"role": "source"})
    async with bot.app.db.session() as s:
        for row in (await s.exec(select(VectorSync))).all():
            row.collection = row.collection.replace(f"@p{PAYLOAD_VERSION}@", "@p2@")
            s.add(row)
    assert not await search.in_sync(repo)

    again = await search.sync(repo)
    assert (again.embedded, again.deleted, again.relabelled) == (0, 0, len(metadata))
    assert {(await store.point_states("shop"))[i].role for i in metadata} == {"generated"}
    assert await search.in_sync(repo)
