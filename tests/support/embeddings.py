"""The local embedding model (all-MiniLM-L6-v2 in NumPy), computed once per batch per session.

Tests index the same sample repositories again and again (tests/support/code_repo.py, the shop
of tests/core/code/test_search.py, the graph samples), and the model spends tens of milliseconds
of CPU on each chunk. It is deterministic: the same batch of texts gives the same vectors, bit
for bit (tests/core/code/test_embeddings.py::test_deterministic). So `reused_embeddings`, a
fixture of tests/conftest.py used by every test, keeps each batch's vectors for the session and
hands out copies; the first test to embed a batch runs the real model on it, and a batch never
seen before always does.

The model's own tests (`@pytest.mark.fresh_embeddings`, on tests/core/code/test_embeddings.py)
run the model every time. Processes a test starts (the CLI tests) run it as usual.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

if TYPE_CHECKING:
    import numpy as np
    import numpy.typing as npt

    Vectors = npt.NDArray[np.float32]

# (model directory, batch size, token limit, the texts) -> the vectors the model gave for them
Batch = tuple[Path | None, int, int, tuple[str, ...]]


@pytest.fixture(scope="session")
def embedded_batches() -> dict[Batch, Vectors]:
    """Every batch the local model embedded in this session (this worker process)."""
    return {}


@pytest.fixture(autouse=True)
def reused_embeddings(
    request: pytest.FixtureRequest, embedded_batches: dict[Batch, Vectors]
) -> Iterator[None]:
    if request.node.get_closest_marker("fresh_embeddings"):
        yield
        return
    from core.code.embed_local import LocalMiniLM

    model_embed = LocalMiniLM.embed

    def embed(self: LocalMiniLM, texts: Sequence[str]) -> Vectors:
        if isinstance(texts, str):  # the model's own TypeError
            return model_embed(self, texts)
        batch = (self._path, self.batch_size, self.max_tokens, tuple(texts))
        vectors = embedded_batches.get(batch)
        if vectors is None:
            vectors = embedded_batches[batch] = model_embed(self, texts)
        return vectors.copy()

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(LocalMiniLM, "embed", embed)
        yield
