"""A small code-search scenario for the vector store tests: a deterministic embedder and chunks
of a few sources in two repositories, with a test, a docs page and an example that talk about
the same things as the source (what role-aware ranking must sort out)."""

from __future__ import annotations

import zlib
from collections.abc import Sequence
from dataclasses import replace

import numpy as np
from qdrant_client import AsyncQdrantClient

from core.code.chunk import Chunk
from core.code.chunking import chunk_file
from core.code.sparse import terms
from core.code.vectors import VectorStore


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
    # The same words as webhooks.py, in the files that usually outrank it on a whole repo.
    "tests/test_webhooks.py": '''
def test_retry_webhook_sends_again_after_a_failed_delivery():
    """Send a webhook again after a failed delivery: the retry with backoff is tested."""
    event = failing_event()
    assert retry_webhook(event, attempts=3) is False
''',
    "docs/webhooks.md": """# Webhooks

## Retries

When a delivery fails, Threadline will send the webhook again after a failed delivery, with
backoff between attempts (see retry_webhook).
""",
    "examples/retry_demo.py": '''
def demo_retry():
    """Example: send a webhook again after a failed delivery."""
    return retry_webhook(sample_event())
''',
}
SOURCE_FILES = ("webhooks.py", "config.py", "auth.ts")


def corpus(files: Sequence[str] = tuple(SOURCES)) -> list[tuple[int, Chunk]]:
    """The files in two repos; web's copies differ a little (ties would make the order of
    equal scores, which no ranking defines, decide comparisons)."""
    chunks: list[Chunk] = []
    for repo, extra in (("api", ""), ("web", "    # web copy: see the api docs\n")):
        for path in files:
            text = SOURCES[path]
            varied = text.replace("):\n", "):\n" + extra) if extra else text
            chunks.extend(chunk_file(repo, path, varied))
    # Every chunk a different length in terms, so equal term counts do not tie either.
    padded = [
        replace(
            c, embed_text=c.embed_text + "\n" + " ".join(f"pad{i}x{j}" for j in range(2 * i + 1))
        )
        for i, c in enumerate(chunks)
    ]
    return list(enumerate(padded, start=1))


def server_standin(embedder: BagOfWords | None = None) -> VectorStore:
    """The server path, with qdrant-client's local mode standing in for a Qdrant server."""
    return VectorStore.from_client(
        AsyncQdrantClient(location=":memory:"), embedder or BagOfWords(), payload_indexes=False
    )
