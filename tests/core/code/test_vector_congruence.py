"""One scenario, two backends: the embedded Qdrant Edge shard and the server path (qdrant-client's
local mode standing in for a Qdrant server) must rank alike — same ids in the same order, scores
equal within float tolerance — for every mode, repository filter and role filter. Both run the
same `QueryPlan`; this catches a backend translating it differently (a filter dropped from a
leg, another fusion, another IDF)."""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest

from core.code.vectors import MODES, Mode, SearchHit, VectorStore
from tests.support.vector_scenario import BagOfWords, corpus, server_standin

QUERIES = [
    "send the webhook again after a failure",
    "retry_webhook",
    "parse the settings file",
    "verifySignature hmac",
    "session store get",
    "the test for sending a webhook again",
    "docs on webhook retries",
    "an example of a retry",
    "`ConfigLoader.load_config()` and `deliver`",
]
REPOS: list[list[str] | None] = [None, ["api"], ["web"], ["api", "web"]]
ROLES: list[list[str] | None] = [None, ["source"], ["test", "docs"], ["example"]]


@pytest.fixture
async def stores() -> AsyncIterator[tuple[VectorStore, VectorStore]]:
    edge, server = VectorStore.memory(BagOfWords()), server_standin()
    items = corpus()
    await edge.upsert(items)
    await server.upsert(items)
    # Deleted points must be gone from both, IDF statistics included.
    gone = [i for i, c in items if c.path == "config.py" and c.repo == "web"]
    await edge.delete(gone)
    await server.delete(gone)
    yield edge, server
    await edge.close()
    await server.close()


def ranking(hits: list[SearchHit]) -> list[set[tuple[int, str, str]]]:
    """The hits as groups of equal score, best first. Reciprocal rank fusion ties by design
    (rank 1 + rank 2 scores what rank 2 + rank 1 does), and no engine defines the order of
    ties; the last group is cut at k, so it may hold different members of one tie."""
    groups: list[tuple[float, set[tuple[int, str, str]]]] = []
    for h in hits:
        if groups and abs(groups[-1][0] - h.score) <= 1e-6 * abs(h.score):
            groups[-1][1].add((h.chunk_id, h.repo, h.role))
        else:
            groups.append((h.score, {(h.chunk_id, h.repo, h.role)}))
    return [members for _, members in groups]


def assert_same_ranking(a: list[SearchHit], b: list[SearchHit], where: object) -> None:
    ra, rb = ranking(a), ranking(b)
    assert ra[:-1] == rb[:-1], where
    assert [len(g) for g in ra[-1:]] == [len(g) for g in rb[-1:]], where
    assert [h.score for h in a] == pytest.approx([h.score for h in b], rel=1e-4), where


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("query", QUERIES)
async def test_edge_and_server_rank_alike(
    stores: tuple[VectorStore, VectorStore], query: str, mode: Mode
) -> None:
    edge, server = stores
    found = 0
    for repos in REPOS:
        for roles in ROLES:
            a = await edge.search(query, repos=repos, roles=roles, k=8, mode=mode)
            b = await server.search(query, repos=repos, roles=roles, k=8, mode=mode)
            where = (repos, roles)
            assert_same_ranking(a, b, where)
            assert all(repos is None or h.repo in repos for h in a), where
            assert all(roles is None or h.role in roles for h in a), where
            found += len(a)
    assert found, "every query finds something somewhere"


async def test_the_stores_hold_the_same_points(stores: tuple[VectorStore, VectorStore]) -> None:
    edge, server = stores
    assert await edge.point_states() == await server.point_states()
    assert await edge.point_states("web") == await server.point_states("web")
