"""The parts of code search that stand without the rest of the app: the embedder, the vector
store and `CodeSearch` over them. `bot/app.py` composes them into the whole app; a one-shot
`threadline search` with no bot to answer it builds only these (bot/code_cli.py), so it skips
importing and building the chat model, the features and their commands."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

from config.settings import Settings
from core.code.collection import EDGE_DIR

if TYPE_CHECKING:
    from core.code.embeddings import Embedder
    from core.code.search import CodeSearch
    from core.code.vectors import VectorStore
    from core.store.engine import Database


def build_embedder(settings: Settings) -> Embedder:
    from core.code.embeddings import LocalMiniLM, OpenAIEmbedder

    if settings.embeddings_provider == "openai":
        assert settings.embeddings_model and settings.embeddings_dimension  # checked by Settings
        key = settings.embeddings_api_key
        return OpenAIEmbedder(
            model=settings.embeddings_model,
            dimension=settings.embeddings_dimension,
            base_url=settings.embeddings_url,
            api_key=key.get_secret_value() if key else None,
        )
    return LocalMiniLM()


def open_vector_store(settings: Settings, embedder: Embedder) -> VectorStore:
    """Qdrant: the server at QDRANT_URL, else a Qdrant Edge shard under DATA_DIR/qdrant-edge.
    Blocking (CodeSearch calls it in a worker thread)."""
    from core.code.vectors import VectorStore

    if settings.qdrant_url:
        key = settings.qdrant_api_key
        return VectorStore.server(
            settings.qdrant_url, embedder, api_key=key.get_secret_value() if key else None
        )
    from core.code.edge_store import LOCAL_MODE_DIR, retire_local_mode_store
    from core.code.store_socket import HolderGone
    from core.code.vectors import StoreHeld

    # Vectors of Threadline versions before Qdrant Edge: unused now, re-embedded from SQL.
    retire_local_mode_store(settings.data_dir / LOCAL_MODE_DIR)
    root = settings.data_dir / EDGE_DIR
    try:
        return VectorStore.local(root, embedder)
    except StoreHeld as held:
        try:
            return VectorStore.attach(root, embedder)  # through the process holding it
        except HolderGone:
            pass  # it stopped meanwhile, or shares nothing (an older Threadline): once more
        try:
            return VectorStore.local(root, embedder)
        except StoreHeld:
            raise held from None


def vector_store_generation(
    settings: Settings, embedder: Embedder
) -> Callable[[], str | None] | None:
    """What tells CodeSearch which store it would open, without opening it: the embedded
    shard's id (None: the default for a server)."""
    if settings.qdrant_url:
        return None
    from core.code.edge_store import shard_generation
    from core.code.embeddings import collection_name

    path = settings.data_dir / EDGE_DIR / collection_name(embedder)  # as VectorStore.local
    return lambda: shard_generation(path)


def code_search(
    settings: Settings,
    db: Database,
    embedder: Embedder,
    *,
    release: Callable[[], None] | None = None,
) -> CodeSearch:
    """Search over the configured vector store; it opens on first use. `release`: see
    `CodeSearch` (a holder that lets the store go when a bot asks)."""
    from core.code.embeddings import collection_name
    from core.code.search import CodeSearch

    return CodeSearch(
        db,
        lambda: open_vector_store(settings, embedder),
        collection=collection_name(embedder),
        generation=vector_store_generation(settings, embedder),
        release=release,
    )
