"""Pluggable text embedders for code search.

- `LocalMiniLM` (default, offline): all-MiniLM-L6-v2 in NumPy, see `embed_local`.
- `OpenAIEmbedder`: any OpenAI-compatible `/embeddings` endpoint through the `openai` package.

Every embedder has a `name` and a `dimension` (which together pick the vector collection: a
different model means a new collection, never mixed vectors) and a synchronous
`embed(texts) -> (n, dimension) float32 array`. Use `aembed(embedder, texts)` from async code.
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from typing import Any, Protocol, runtime_checkable

import numpy as np
import numpy.typing as npt

from core.code.collection import DIMENSION, MODEL_NAME, collection_name
from core.code.embed_local import LocalMiniLM, ModelNotInstalled

__all__ = [
    "DIMENSION",
    "MODEL_NAME",
    "Embedder",
    "EmbeddingError",
    "LocalMiniLM",
    "ModelNotInstalled",
    "OpenAIEmbedder",
    "aembed",
    "collection_name",
]

F32 = npt.NDArray[np.float32]


class EmbeddingError(RuntimeError):
    """The embedding backend failed or answered something unusable."""


@runtime_checkable
class Embedder(Protocol):
    @property
    def name(self) -> str: ...

    @property
    def dimension(self) -> int: ...

    def embed(self, texts: Sequence[str]) -> F32:
        """One row per text, `dimension` float32 columns, in input order."""
        ...


async def aembed(embedder: Embedder, texts: Sequence[str]) -> F32:
    """Embed without blocking the event loop (native async when the embedder has it)."""
    native = getattr(embedder, "aembed", None)
    if native is not None:
        result: F32 = await native(texts)
        return result
    return await asyncio.to_thread(embedder.embed, texts)


class OpenAIEmbedder:
    """An OpenAI-compatible `/embeddings` endpoint (OpenAI, vLLM, Ollama, LiteLLM, TEI...).

    `dimension` is what the endpoint returns; with `send_dimensions=True` it is also sent as
    the `dimensions` parameter (for models that can shorten vectors). Vectors are returned as
    the server sends them, or L2-normalised with `normalize=True`.
    """

    def __init__(
        self,
        *,
        model: str,
        dimension: int,
        base_url: str | None = None,
        api_key: str | None = None,
        batch_size: int = 64,
        timeout: float = 60.0,
        max_retries: int = 2,
        send_dimensions: bool = False,
        normalize: bool = False,
    ) -> None:
        if dimension < 1:
            raise ValueError("dimension must be positive")
        if batch_size < 1:
            raise ValueError("batch_size must be at least 1")
        self.model = model
        self._dimension = dimension
        self.batch_size = batch_size
        self.send_dimensions = send_dimensions
        self.normalize = normalize
        # "unused" keeps local endpoints that need no key working without OPENAI_API_KEY.
        self._client_args: dict[str, Any] = {
            "base_url": base_url,
            "api_key": api_key or "unused",
            "timeout": timeout,
            "max_retries": max_retries,
        }
        self._sync: Any = None
        self._async: Any = None

    @property
    def name(self) -> str:
        return self.model

    @property
    def dimension(self) -> int:
        return self._dimension

    def _kwargs(self, batch: list[str]) -> dict[str, Any]:
        kwargs: dict[str, Any] = {
            "model": self.model,
            "input": batch,
            "encoding_format": "float",
        }
        if self.send_dimensions:
            kwargs["dimensions"] = self._dimension
        return kwargs

    def _rows(self, response: Any, expected: int) -> F32:
        data = sorted(response.data, key=lambda item: item.index)
        if len(data) != expected:
            raise EmbeddingError(f"asked for {expected} embeddings, got {len(data)}")
        try:
            rows = np.asarray([item.embedding for item in data], dtype=np.float32)
        except (TypeError, ValueError) as exc:
            raise EmbeddingError(f"malformed embeddings: {exc}") from exc
        if rows.ndim != 2 or rows.shape[1] != self._dimension:
            got = rows.shape[1] if rows.ndim == 2 else rows.shape
            raise EmbeddingError(f"{self.model}: expected {self._dimension}-d vectors, got {got}")
        if self.normalize:
            norms = np.maximum(np.linalg.norm(rows, axis=1, keepdims=True), 1e-12)
            rows = (rows / norms).astype(np.float32)
        return rows

    def _batches(self, texts: Sequence[str]) -> list[list[str]]:
        if isinstance(texts, str):
            raise TypeError("embed takes a sequence of texts, not one str")
        # Empty strings are rejected by OpenAI's endpoint; a space embeds as "nothing".
        items = [t if t else " " for t in texts]
        return [items[i : i + self.batch_size] for i in range(0, len(items), self.batch_size)]

    def embed(self, texts: Sequence[str]) -> F32:
        import openai

        batches = self._batches(texts)
        if not batches:
            return np.zeros((0, self._dimension), dtype=np.float32)
        if self._sync is None:
            self._sync = openai.OpenAI(**self._client_args)
        parts = []
        for batch in batches:
            try:
                response = self._sync.embeddings.create(**self._kwargs(batch))
            except openai.OpenAIError as exc:
                raise EmbeddingError(f"{self.model}: {exc}") from exc
            parts.append(self._rows(response, len(batch)))
        return np.concatenate(parts)

    async def aembed(self, texts: Sequence[str]) -> F32:
        import openai

        batches = self._batches(texts)
        if not batches:
            return np.zeros((0, self._dimension), dtype=np.float32)
        if self._async is None:
            self._async = openai.AsyncOpenAI(**self._client_args)
        parts = []
        for batch in batches:
            try:
                response = await self._async.embeddings.create(**self._kwargs(batch))
            except openai.OpenAIError as exc:
                raise EmbeddingError(f"{self.model}: {exc}") from exc
            parts.append(self._rows(response, len(batch)))
        return np.concatenate(parts)

    async def aclose(self) -> None:
        if self._async is not None:
            await self._async.close()
            self._async = None
        if self._sync is not None:
            self._sync.close()
            self._sync = None

    def close(self) -> None:
        if self._sync is not None:
            self._sync.close()
            self._sync = None
