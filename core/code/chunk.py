"""What a chunk is: the record that chunking returns and the index stores, the size limits every
chunker keeps to, the header its embedding text starts with, and its content fingerprint. Apart
from the chunkers so that the stores and search can use the record without them."""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from typing import Literal

Kind = Literal["function", "method", "class", "file", "section"]

MAX_FILE_CHARS = 2_000
MAX_FUNCTION_CHARS = 4_000
MAX_CLASS_CHARS = 4_000
MAX_SIGNATURE_CHARS = 300


@dataclass(frozen=True, slots=True)
class Chunk:
    repo: str
    path: str
    language: str
    symbol: str
    kind: Kind
    start_line: int  # 1-based, inclusive
    end_line: int  # 1-based, inclusive
    text: str
    embed_text: str


def embed_digest(embed_text: str) -> str:
    """A chunk's content fingerprint (of what gets embedded)."""
    return hashlib.sha1(embed_text.encode("utf-8"), usedforsecurity=False).hexdigest()


def embed_header(path: str, *parts: str) -> str:
    return "\n".join([f"File: {path}", *(part for part in parts if part)]) + "\n\n"
