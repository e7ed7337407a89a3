"""Pieces of hybrid search: sparse terms, query identifiers, fusion, and the embedded mirror
ranking exactly like Qdrant's own query API (prefetches + RRF) on the same collection."""

from __future__ import annotations

import zlib
from collections.abc import AsyncIterator, Sequence
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest

from core.code.chunking import Chunk, chunk_file
from core.code.search import snippet
from core.code.sparse import encode_document, encode_query, stem, term_id, terms
from core.code.vectors import (
    RRF_K,
    VectorStore,
    bare_name,
    idf,
    payload_of,
    query_identifiers,
    rrf,
)


class BagOfWords:
    """A tiny deterministic embedder (hashed word counts): fast, and similar texts are close.
    A faint per-text component keeps different texts from tying exactly."""

    name = "bag-of-words-test"
    dimension = 64

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        out = np.zeros((len(texts), self.dimension), dtype=np.float32)
        for row, text in enumerate(texts):
            for word in terms(text):
                out[row, zlib.crc32(word.encode()) % self.dimension] += 1.0
            noise = np.random.default_rng(zlib.crc32(text.encode())).random(self.dimension)
            out[row] += 0.01 * noise.astype(np.float32)
            norm = np.linalg.norm(out[row])
            out[row] /= norm if norm else 1.0
        return out


SOURCES = {
    "webhooks.py": '''
def retry_webhook(event, attempts=3):
    """Send a webhook again after a failed delivery, with backoff."""
    for attempt in range(attempts):
        if deliver(event):
            return True
    return False


def deliver(event):
    return post(event.url, event.body)
''',
    "config.py": '''
class ConfigLoader:
    def load_config(self, path):
        """Parse the TOML settings file."""
        return parse_toml(read(path))

    def validate(self, config):
        return bool(config)
''',
    "auth.ts": """
export function verifySignature(body: string, signature: string): boolean {
  return hmac(body) === signature;
}

export class SessionStore {
  get(id: string) { return this.items[id]; }
}
""",
}


def corpus() -> list[tuple[int, Chunk]]:
    """The sources in two repos; web's copies differ a little (ties would make the order of
    equal scores, which neither ranking defines, decide the comparison)."""
    chunks: list[Chunk] = []
    for repo, extra in (("api", ""), ("web", "    # web copy: see the api docs\n")):
        for path, text in SOURCES.items():
            varied = text.replace("):\n", "):\n" + extra) if extra else text
            chunks.extend(chunk_file(repo, path, varied))
    # Every chunk a different length in terms, so equal term counts do not tie either.
    padded = [
        replace(c, embed_text=c.embed_text + "\n" + " ".join(f"pad{i}x{j}" for j in range(i)))
        for i, c in enumerate(chunks)
    ]
    return list(enumerate(padded, start=1))


@pytest.fixture
async def store() -> AsyncIterator[VectorStore]:
    s = VectorStore.memory(BagOfWords())
    await s.upsert(corpus())
    yield s
    await s.close()


# -- sparse terms -----------------------------------------------------------------------------


def test_identifiers_are_split_and_kept_whole() -> None:
    assert set(terms("retryWebhook")) == {"retrywebhook", "retry", "webhook"}
    assert set(terms("load_config_file")) >= {"load_config_file", "load", "config", "file"}


def test_stemming_meets_plural_and_ing_forms() -> None:
    assert stem("retries") == "retry"
    assert stem("webhooks") == "webhook"
    assert stem("parsing") == "pars" == stem("parsed")[:4]
    assert stem("class") == "class" and stem("status") == "status"


def test_document_vectors_are_sorted_and_saturate_term_frequency() -> None:
    once, many = encode_document("retry"), encode_document("retry " * 50)
    assert once.indices == sorted(once.indices)
    assert once.indices == many.indices
    assert many.values[0] > once.values[0]
    assert many.values[0] < 2.2 * once.values[0]  # tf saturates (k1 + 1 = 2.2 at most)


def test_query_vectors_weigh_each_distinct_term_once() -> None:
    q = encode_query("retry retry webhooks")
    assert sorted(q.indices) == sorted({term_id("retry"), term_id("webhook")})
    assert q.values == [1.0, 1.0]
    assert not encode_query("the and of")  # stopwords only


# -- symbols and fusion -------------------------------------------------------------------------


def test_bare_names_of_symbols() -> None:
    assert bare_name("ConfigLoader.load_config(self, path)") == "load_config"
    assert bare_name("webhooks.retry_webhook") == "retry_webhook"
    assert bare_name("SessionStore") == "sessionstore"


def test_query_identifiers_are_only_code_looking_words() -> None:
    assert query_identifiers("where is retry_webhook called?") == ["retry_webhook"]
    assert query_identifiers("what does verifySignature do") == ["verifysignature"]
    assert query_identifiers("explain `deliver` and ConfigLoader.load_config()") == [
        "deliver",
        "load_config",
    ]
    assert query_identifiers("how do we retry failed webhooks") == []


def test_rrf_uses_qdrants_formula_and_weights() -> None:
    fused = dict(rrf([([1, 2], 1.0), ([2, 3], 2.0)]))
    assert fused[1] == pytest.approx(1 / RRF_K)
    assert fused[2] == pytest.approx(1 / (RRF_K + 1) + 1 / (0.5 + RRF_K - 1))
    assert fused[3] == pytest.approx(1 / RRF_K)  # rank 1 at weight 2 counts as rank 0
    assert [i for i, _ in rrf([([1, 2], 1.0), ([2, 3], 2.0)])] == [2, 1, 3]
    assert rrf([([1], 0.0)]) == []


def test_idf_matches_qdrants_modifier() -> None:
    assert idf(1, 100) == pytest.approx(np.log((100 - 1 + 0.5) / (1 + 0.5) + 1))
    assert idf(1, 100) > idf(50, 100) > 0


def test_payload_has_the_filterable_fields() -> None:
    _, chunk = corpus()[0]
    payload = payload_of(chunk)
    assert set(payload) == {
        "repo",
        "path",
        "language",
        "symbol",
        "name",
        "kind",
        "start_line",
        "end_line",
        "digest",
    }


def test_snippets_are_short() -> None:
    long = "\n".join(f"line {i} " + "x" * 100 for i in range(50))
    assert len(snippet(long)) <= 600
    assert snippet("a\nb") == "a\nb"


# -- the store -----------------------------------------------------------------------------------

QUERIES = [
    "send the webhook again after a failure",
    "retry_webhook",
    "parse the settings file",
    "verifySignature hmac",
    "session store get",
]


@pytest.mark.parametrize("query", QUERIES)
@pytest.mark.parametrize("repos", [None, ["api"], ["web"]])
async def test_the_mirror_ranks_like_qdrants_query_api(
    store: VectorStore, query: str, repos: list[str] | None
) -> None:
    mirror = await store.search(query, repos=repos, k=8)
    store.use_mirror = False
    api = await store.search(query, repos=repos, k=8)
    assert [h.chunk_id for h in mirror] == [h.chunk_id for h in api]
    assert [h.score for h in mirror] == pytest.approx([h.score for h in api], rel=1e-5)
    assert mirror, "every query finds something"
    if repos is not None:
        assert {h.repo for h in mirror} == set(repos)


@pytest.mark.parametrize("mode", ["dense", "sparse"])
async def test_single_legs_also_match_qdrant(store: VectorStore, mode: str) -> None:
    for query in QUERIES:
        mirror = await store.search(query, repos=["api"], k=5, mode=mode)  # type: ignore[arg-type]
        store.use_mirror = False
        api = await store.search(query, repos=["api"], k=5, mode=mode)  # type: ignore[arg-type]
        store.use_mirror = True
        assert [h.chunk_id for h in mirror] == [h.chunk_id for h in api], query
        assert [h.score for h in mirror] == pytest.approx([h.score for h in api], rel=1e-4)


async def test_an_exact_symbol_in_the_query_ranks_first(store: VectorStore) -> None:
    hits = await store.search("who calls retry_webhook", repos=["web"], k=3)
    assert hits[0].symbol.startswith("webhooks.retry_webhook")
    hits = await store.search("`validate`", repos=["api"], k=3)
    assert hits[0].symbol.startswith("ConfigLoader.validate")


async def test_deleted_points_leave_the_results_and_the_ids(store: VectorStore) -> None:
    hits = await store.search("retry_webhook", repos=["api"], k=1)
    await store.delete([hits[0].chunk_id])
    assert hits[0].chunk_id not in await store.point_digests("api")
    again = await store.search("retry_webhook", repos=["api"], k=5)
    assert hits[0].chunk_id not in [h.chunk_id for h in again]
    store.use_mirror = False
    assert hits[0].chunk_id not in [h.chunk_id for h in await store.search("retry_webhook")]


async def test_empty_and_unknown_scopes_find_nothing(store: VectorStore) -> None:
    assert await store.search("retry", repos=[]) == []
    assert await store.search("retry", repos=["nope"]) == []
    assert await store.search("   ") == []
    with pytest.raises(ValueError, match="mode"):
        await store.search("retry", mode="fuzzy")  # type: ignore[arg-type]


async def test_vectors_must_match_the_items(store: VectorStore) -> None:
    items = corpus()[:2]
    with pytest.raises(ValueError, match="2 items but 1 vectors"):
        await store.upsert(items, np.zeros((1, 64), dtype=np.float32))


def journal_mode(root: Path) -> str:
    import sqlite3

    (storage,) = root.glob("collection/*/storage.sqlite")
    with sqlite3.connect(storage) as con:
        return str(con.execute("PRAGMA journal_mode").fetchone()[0])


async def test_embedded_storage_commits_in_wal_mode(tmp_path: Path) -> None:
    """Each point is its own SQLite commit in embedded Qdrant: WAL keeps that cheap. (This
    reaches into qdrant-client's local mode; a change there shows up here.)"""
    store = VectorStore.local(tmp_path, BagOfWords())
    try:
        await store.upsert(corpus()[:3])
    finally:
        await store.close()
    assert journal_mode(tmp_path) == "wal"
    reopened = VectorStore.local(tmp_path, BagOfWords())
    try:
        assert set(await reopened.point_digests()) == {1, 2, 3}
    finally:
        await reopened.close()
