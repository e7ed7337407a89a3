"""A sync gives a new chunk the stored vector of a point embedded from the same text instead of
embedding it again: when one function of a file changes (the file is re-chunked whole), when the
chunk format changes (every file is), on the embedded store, on the server path and through a
process that holds the embedded store. A store that cannot give vectors costs only the reuse."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator, Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, cast

import numpy as np
import pytest

from core.code.search import CodeSearch, SyncResult, _donors
from core.code.vector_query import PointState
from core.code.vectors import VectorStore, VectorStoreError
from tests.conftest import BotHarness
from tests.core.code.test_search import chunk_ids, indexed_bot
from tests.support.vector_scenario import server_standin

if TYPE_CHECKING:
    from core.store.models import Repo

MakeBot = Callable[..., BotHarness]

# Three definitions in one file: editing one re-chunks all three.
SHIPPING = '''
def parcel_weight(items):
    """Total weight of the items of a parcel, in grams."""
    return sum(item.grams for item in items)


def postage(weight, zone):
    """What sending a parcel of this weight to this zone costs."""
    return BASE[zone] + weight * PER_GRAM[zone]


def label(order):
    """The address label printed on the parcel."""
    return f"{order.name}\\n{order.street}\\n{order.city}"
'''


async def _texts(bot: BotHarness, repo: str) -> dict[int, str]:
    """Chunk id -> the text it embeds (context + text), as stored."""
    from sqlmodel import col, select

    from core.store.models import CodeChunk, Repo

    async with bot.app.db.session() as s:
        stmt = (
            select(CodeChunk.id, CodeChunk.context, CodeChunk.text)
            .join(Repo)
            .where(col(Repo.name) == repo)
        )
        return {int(i or 0): c + t for i, c, t in (await s.exec(stmt)).all()}


async def _assert_vectors_are_their_texts(bot: BotHarness, store: VectorStore) -> None:
    texts = await _texts(bot, "shop")
    stored = await store.stored_vectors(sorted(texts))
    assert set(stored) == set(texts)
    ids = sorted(texts)
    expected = store.embedder.embed([texts[i] for i in ids])
    got = np.asarray([stored[i] for i in ids], dtype=np.float32)
    np.testing.assert_allclose(got, expected, atol=1e-5)


async def test_editing_one_function_embeds_that_chunk_only(
    make_bot: MakeBot, tmp_path: Path
) -> None:
    bot = await indexed_bot(make_bot, tmp_path, extra={"shipping/parcels.py": SHIPPING})
    (repo,) = await bot.app.repos.all()
    before = await chunk_ids(bot, "shop")
    path = tmp_path / "src" / "shop" / "shipping/parcels.py"
    path.write_text(SHIPPING.replace("BASE[zone] + weight", "BASE[zone] + 2 * weight"))

    report = await bot.app.indexer.index(repo)

    assert report.vectors is not None
    after = await chunk_ids(bot, "shop")
    new = after - before
    assert len(new) == 3  # the file's three functions, re-chunked under new ids
    assert (report.vectors.embedded, report.vectors.reused) == (1, 2)
    assert report.vectors.deleted == 3  # their old points, donors included
    store = await bot.app.search.store()
    assert set(await store.point_digests("shop")) == after
    await _assert_vectors_are_their_texts(bot, store)
    top = await bot.app.search.search("cost of posting a parcel to a zone", ["shop"], k=1)
    assert top[0].symbol.startswith("parcels.postage")


async def _forget_chunk_format(bot: BotHarness) -> None:
    """As after an upgrade that changed how files are cut: every file is re-chunked."""
    from sqlmodel import delete

    from core.store.models import RepoChunkFormat

    async with bot.app.db.session() as s:
        await s.exec(delete(RepoChunkFormat))


async def test_a_new_chunk_format_re_embeds_only_chunks_whose_text_changed(
    make_bot: MakeBot, tmp_path: Path
) -> None:
    bot = await indexed_bot(make_bot, tmp_path)
    (repo,) = await bot.app.repos.all()
    before = await chunk_ids(bot, "shop")
    await _forget_chunk_format(bot)

    report = await bot.app.indexer.index(repo)

    assert report.vectors is not None
    assert not (await chunk_ids(bot, "shop")) & before  # all new rows
    assert (report.vectors.embedded, report.vectors.reused) == (0, len(before))
    await _assert_vectors_are_their_texts(bot, await bot.app.search.store())


@contextlib.asynccontextmanager
async def _synced_on_a_server(
    bot: BotHarness, repo: Repo, backend: Callable[[Any], Any] | None = None
) -> AsyncIterator[tuple[VectorStore, CodeSearch, SyncResult]]:
    """The server path (qdrant-client's local mode standing in) synced once, then the chunk
    format forgotten and the repository indexed again (the bot's own store is synced too);
    `backend` wraps the store's backend after the first sync."""
    store = server_standin()
    search = CodeSearch(bot.app.db, lambda: store, collection=store.collection)
    try:
        first = await search.sync(repo)
        assert first.reused == 0
        if backend is not None:
            store._backend = backend(store.backend)
        await _forget_chunk_format(bot)
        await bot.app.indexer.index(repo)
        yield store, search, first
    finally:
        await search.aclose()


async def test_the_server_path_reuses_vectors_too(make_bot: MakeBot, tmp_path: Path) -> None:
    bot = await indexed_bot(make_bot, tmp_path)
    (repo,) = await bot.app.repos.all()
    async with _synced_on_a_server(bot, repo) as (store, search, first):
        again = await search.sync(repo)
        assert (again.embedded, again.reused) == (0, first.embedded)
        assert set(await store.point_digests("shop")) == await chunk_ids(bot, "shop")
        await _assert_vectors_are_their_texts(bot, store)


class _NoVectors:
    """A store backend from before vectors could be read back (an older holder, say)."""

    def __init__(self, inner: object) -> None:
        self._inner = inner
        self.asked = 0

    def __getattr__(self, name: str) -> object:
        return getattr(self._inner, name)

    async def dense_vectors(self, ids: Sequence[int]) -> dict[int, list[float]]:
        self.asked += 1
        raise VectorStoreError("unknown operation 'vectors'")


async def test_a_store_that_cannot_give_vectors_embeds_them_again(
    make_bot: MakeBot, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    bot = await indexed_bot(make_bot, tmp_path)
    (repo,) = await bot.app.repos.all()
    async with _synced_on_a_server(bot, repo, _NoVectors) as (store, search, first):
        monkeypatch.setattr("core.code.search.SYNC_BATCH", 2)  # several batches
        again = await search.sync(repo)
        assert (again.embedded, again.reused) == (first.embedded, 0)
        assert cast(_NoVectors, store.backend).asked == 1  # asked once, not once per batch
        assert set(await store.point_digests("shop")) == await chunk_ids(bot, "shop")


def test_donors_never_include_a_point_this_sync_overwrites() -> None:
    have = {
        1: PointState("a", "source"),  # its chunk now has other content: overwritten
        2: PointState("b", "source"),  # stale: gone from SQL
        3: PointState("b", "source"),  # stays: preferred over the stale one
        4: PointState("", "source"),  # no digest (very old point): never a donor
    }
    donors = _donors(have, {"a", "b", ""}, keep={1, 3, 5}, overwritten={1, 5})
    assert donors == {"b": 3}
    assert _donors(have, {"b"}, keep=set(), overwritten=set()) == {"b": 2}


@pytest.mark.parametrize("count", [0, 1, 5000])
async def test_stored_vectors_through_the_holder_of_the_embedded_store(
    tmp_path: Path, count: int
) -> None:
    """Another process reads vectors through the holder's socket, in requests it bounds."""
    from core.code.vector_query import PointData, SparseQuery
    from tests.support.vector_scenario import BagOfWords

    holder = VectorStore.local(tmp_path, BagOfWords())
    try:
        assert await holder.share()
        vectors = np.random.default_rng(7).random((count, 64)).astype(np.float32)
        vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)  # cosine: stored as unit
        points = [
            PointData(i + 1, vectors[i].tolist(), SparseQuery([1], [1.0]), {"repo": "r"})
            for i in range(count)
        ]
        await holder.backend.upsert(points)
        # Blocking (a handshake with the holder, which answers on this loop): off the loop.
        remote = await asyncio.to_thread(VectorStore.attach, tmp_path, BagOfWords())
        got = await remote.stored_vectors([*range(1, count + 1), 10**9])
        assert sorted(got) == list(range(1, count + 1))
        if count:
            np.testing.assert_allclose(
                np.asarray([got[i + 1] for i in range(count)], dtype=np.float32),
                vectors,
                atol=1e-6,
            )
    finally:
        await holder.close()
