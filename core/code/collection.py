"""Where the vectors of an embedding model live, known without loading anything heavy:
`threadline search` finds the bot's socket with it before importing NumPy or the embedder."""

from __future__ import annotations

from typing import Protocol

MODEL_NAME = "all-MiniLM-L6-v2"  # the default, local embedding model (`core.code.embed_local`)
DIMENSION = 384
EDGE_DIR = "qdrant-edge"  # under DATA_DIR: one Qdrant Edge shard per embedding model


class Named(Protocol):
    @property
    def name(self) -> str: ...

    @property
    def dimension(self) -> int: ...


def collection_name(embedder: Named, prefix: str = "code") -> str:
    """A vector collection name specific to the model and its dimension."""
    return collection_for(embedder.name, embedder.dimension, prefix)


def collection_for(model: str, dimension: int, prefix: str = "code") -> str:
    safe = "".join(c if c.isalnum() else "_" for c in model.lower()).strip("_")
    return f"{prefix}_{safe}_{dimension}"
