"""Pieces of hybrid search: sparse terms, query identifiers, payloads, and the vector store's
behaviour on both backends (the embedded Qdrant Edge shard and the server path, with
qdrant-client's local mode standing in for a server). That both rank alike is
tests/core/code/test_vector_congruence.py."""

from __future__ import annotations

from collections.abc import AsyncIterator
from dataclasses import replace

import numpy as np
import pytest

from core.code.query_terms import dense_text
from core.code.search import snippet
from core.code.sparse import encode_document, encode_query, stem, term_id, terms
from core.code.vector_query import HYBRID_FUSION, SYMBOL_WEIGHT
from core.code.vectors import VectorStore, bare_name, payload_of, plan_search, query_identifiers
from tests.support.vector_scenario import SOURCE_FILES, BagOfWords, corpus, server_standin


@pytest.fixture(params=["edge", "server"])
async def store(request: pytest.FixtureRequest) -> AsyncIterator[VectorStore]:
    s = VectorStore.memory(BagOfWords()) if request.param == "edge" else server_standin()
    await s.upsert(corpus(SOURCE_FILES))
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


def test_a_pasted_wall_of_identifiers_keeps_only_the_first_few() -> None:
    """Each identifier is a filter term of the exact-symbol leg and a pattern for the mentions:
    8,000 of them (a pasted log) took seconds of the event loop before they were bounded."""
    from core.code.query_terms import MAX_QUERY_IDENTIFIERS

    pasted = " ".join(f"x_y{i}" for i in range(8000))
    names = query_identifiers(pasted)
    assert names == [f"x_y{i}" for i in range(MAX_QUERY_IDENTIFIERS)]


def test_the_dense_leg_embeds_the_question_without_its_frame() -> None:
    assert dense_text("Where is the retry policy set?") == "retry policy set?"
    assert dense_text("How do I create a user from a token") == "create a user from a token"
    assert dense_text("Is there a converter for booleans?") == "converter for booleans?"
    assert dense_text("what does BROTLI_PARAM_MODE change") == "BROTLI_PARAM_MODE change"
    assert dense_text("Where's the config loaded?") == "config loaded?"
    assert dense_text("What’re the defaults of the pool") == "defaults of the pool"
    # Nothing but the frame, or no frame: unchanged.
    assert dense_text("Where is it?") == "Where is it?"
    assert dense_text("retry webhook") == "retry webhook"
    assert dense_text("whereabouts of the config") == "whereabouts of the config"


def test_a_hybrid_plan_weighs_its_legs() -> None:
    sparse = encode_query("retry webhook")
    plan = plan_search(
        [1.0, 0.0], sparse, ["retry"], repos=None, roles=None, limit=10, mode="hybrid"
    )
    assert plan is not None and plan.fusion_weights == (1.0, 1.0, SYMBOL_WEIGHT)
    assert plan.fusion == HYBRID_FUSION == "dbsf"
    assert [leg.using for leg in plan.legs] == ["dense", "sparse", "dense"]
    assert plan.legs[2].where.names == ("retry",)


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
        "role",
        "start_line",
        "end_line",
        "digest",
    }
    assert payload["role"] == "source"
    assert payload_of(replace(chunk, path="tests/test_webhooks.py"))["role"] == "test"


def test_snippets_are_short() -> None:
    long = "\n".join(f"line {i} " + "x" * 100 for i in range(50))
    assert len(snippet(long)) <= 600
    assert snippet("a\nb") == "a\nb"


# -- the store -----------------------------------------------------------------------------------


async def test_an_exact_symbol_in_the_query_ranks_first(store: VectorStore) -> None:
    hits = await store.search("who calls retry_webhook", repos=["web"], k=3)
    assert hits[0].symbol.startswith("webhooks.retry_webhook")
    hits = await store.search("`validate`", repos=["api"], k=3)
    assert hits[0].symbol.startswith("ConfigLoader.validate")


async def test_deleted_points_leave_the_results_and_the_ids(store: VectorStore) -> None:
    hits = await store.search("retry_webhook", repos=["api"], k=1)
    await store.delete([hits[0].chunk_id])
    assert hits[0].chunk_id not in await store.point_digests("api")
    for mode in ("hybrid", "dense", "sparse"):
        again = await store.search("retry_webhook", k=10, mode=mode)
        assert hits[0].chunk_id not in [h.chunk_id for h in again]


async def test_digests_and_states_per_repo(store: VectorStore) -> None:
    items = dict(corpus(SOURCE_FILES))
    api = await store.point_states("api")
    assert set(api) == {i for i, c in items.items() if c.repo == "api"}
    assert all(s.role == "source" for s in api.values())
    assert set(await store.point_digests()) == set(items)


async def test_roles_can_be_changed_without_re_embedding(store: VectorStore) -> None:
    some = sorted(await store.point_digests("api"))[:2]
    assert await store.set_roles(dict.fromkeys(some, "example")) == 2
    states = await store.point_states("api")
    assert {states[i].role for i in some} == {"example"}
    hits = await store.search("retry webhook", roles=["example"], k=10)
    assert {h.chunk_id for h in hits} <= set(some) and hits
    assert {h.role for h in hits} == {"example"}


async def test_empty_and_unknown_scopes_find_nothing(store: VectorStore) -> None:
    assert await store.search("retry", repos=[]) == []
    assert await store.search("retry", repos=["nope"]) == []
    assert await store.search("retry", roles=[]) == []
    assert await store.search("retry", roles=["docs"]) == []  # no docs in this corpus
    assert await store.search("   ") == []
    assert await store.search("the and of", mode="sparse") == []  # no sparse terms
    with pytest.raises(ValueError, match="mode"):
        await store.search("retry", mode="fuzzy")  # type: ignore[arg-type]


async def test_vectors_must_match_the_items(store: VectorStore) -> None:
    items = corpus(SOURCE_FILES)[:2]
    with pytest.raises(ValueError, match="2 items but 1 vectors"):
        await store.upsert(items, np.zeros((1, 64), dtype=np.float32))


async def test_given_vectors_are_stored_as_given() -> None:
    """Benchmarks embed once and upsert precomputed vectors (ids may start at 0)."""
    items = [(i - 1, c) for i, c in corpus(SOURCE_FILES)]
    vectors = BagOfWords().embed([c.embed_text for _, c in items])
    other = VectorStore.memory(BagOfWords())
    try:
        assert await other.upsert(items, vectors) == len(items)
        assert 0 in await other.point_digests()
        ids = [h.chunk_id for h in await other.search("retry_webhook", k=3)]
        assert len(ids) == 3
    finally:
        await other.close()


# -- roles ----------------------------------------------------------------------------------------


@pytest.fixture(params=["edge", "server"])
async def whole(request: pytest.FixtureRequest) -> AsyncIterator[VectorStore]:
    """The sources with a test, a docs page and an example that use the same words."""
    s = VectorStore.memory(BagOfWords()) if request.param == "edge" else server_standin()
    await s.upsert(corpus())
    yield s
    await s.close()


FAILED_DELIVERY = "send the webhook again after a failed delivery"


async def test_hybrid_prefers_the_source_over_tests_and_docs_that_say_the_same(
    whole: VectorStore,
) -> None:
    hybrid = await whole.search(FAILED_DELIVERY, repos=["api"], k=4)
    assert (hybrid[0].path, hybrid[0].role) == ("webhooks.py", "source")
    assert hybrid[0].symbol.startswith("webhooks.retry_webhook")
    assert {"test", "example"} <= {h.role for h in hybrid[1:]}
    # The baselines are left alone: on their own words the test and the docs win there.
    for mode in ("dense", "sparse"):
        plain = await whole.search(FAILED_DELIVERY, repos=["api"], k=4, mode=mode)
        assert plain[0].role != "source", mode


@pytest.mark.parametrize(
    ("question", "role"),
    [
        ("the test that sends a webhook again", "test"),
        ("docs on sending a webhook again", "docs"),
        ("an example of sending a webhook again", "example"),
    ],
)
async def test_a_role_named_in_the_question_wins(
    whole: VectorStore, question: str, role: str
) -> None:
    hits = await whole.search(question, repos=["web"], k=3)
    assert hits[0].role == role
    scores = [h.score for h in hits]
    assert scores == sorted(scores, reverse=True)


async def test_a_class_outline_stays_below_its_method(whole: VectorStore) -> None:
    hits = await whole.search("load the config file: ConfigLoader", repos=["api"], k=3)
    kinds = [(h.kind, h.symbol.split("(")[0]) for h in hits]
    assert kinds.index(("method", "ConfigLoader.load_config")) < kinds.index(
        ("class", "ConfigLoader")
    )


async def test_the_role_filter_applies_to_every_leg(whole: VectorStore) -> None:
    for mode in ("hybrid", "dense", "sparse"):
        hits = await whole.search("retry_webhook", roles=["test", "docs"], k=10, mode=mode)
        assert hits, mode
        assert {h.role for h in hits} <= {"test", "docs"}, mode
    only = await whole.search("retry_webhook", repos=["web"], roles=["example"], k=10)
    assert [(h.repo, h.path) for h in only] == [("web", "examples/retry_demo.py")]
