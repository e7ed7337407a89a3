"""Sparse lexical vectors for hybrid code search.

A chunk's sparse vector holds one weight per distinct term: identifiers are kept whole and also
split into their camelCase / snake_case parts (`retryWebhook` -> `retrywebhook`, `retry`,
`webhook`, through `core.memory.ranking.tokenize`), and a light suffix stemmer lets "retries"
meet `retry`. Term ids are a stable 31-bit hash of the term, so no vocabulary is stored and two
processes agree without coordination (a collision merges two rare terms; harmless for ranking).

Document weights saturate with term frequency like BM25's tf part (k1, b, against a fixed typical
chunk length); the inverse document frequency is left to the index: Qdrant's IDF modifier on
the sparse vector, or the embedded mirror's identical formula. Queries weight each term 1.
"""

from __future__ import annotations

import re
import zlib
from collections import Counter
from dataclasses import dataclass

from core.memory.ranking import tokenize

K1 = 1.2
B = 0.75
TYPICAL_TERMS = 120  # terms in a typical chunk: the length normalisation's pivot
# The labels of the chunker's context header ("File: a/b.py", "Lines 1-40", "Class: X",
# "Signature: ..."): their values are worth indexing, the label words themselves are not (every
# chunk has "File", so they only add ties).
_HEADER_LABEL = re.compile(
    r"^(?:File|Lines|Section|Class|Declaration|Signature|Methods):? ", re.MULTILINE
)


@dataclass(frozen=True, slots=True)
class Sparse:
    """Sorted term ids and their weights."""

    indices: list[int]
    values: list[float]

    def __bool__(self) -> bool:
        return bool(self.indices)


def stem(term: str) -> str:
    """A deliberately small English suffix stripper: plural and -ing/-ed forms of words long
    enough that stripping rarely merges unrelated terms. Identifiers' parts go through it too."""
    if len(term) <= 4 or not term.isalpha():
        return term
    if term.endswith("ies"):
        return term[:-3] + "y"
    if term.endswith(("sses", "shes", "ches", "xes")):
        return term[:-2]
    if term.endswith("s") and not term.endswith(("ss", "us", "is")):
        return term[:-1]
    if term.endswith("ing") and len(term) > 6:
        return term[:-3]
    if term.endswith("ed") and len(term) > 5:
        return term[:-2]
    return term


def terms(text: str) -> list[str]:
    """The index terms of `text`, repeated as often as they occur."""
    return [stem(t) for t in tokenize(text)]


def term_id(term: str) -> int:
    return zlib.crc32(term.encode("utf-8")) & 0x7FFFFFFF


def _sparse(weights: dict[int, float]) -> Sparse:
    ordered = sorted(weights.items())
    return Sparse([i for i, _ in ordered], [w for _, w in ordered])


def encode_document(text: str) -> Sparse:
    counts = Counter(terms(_HEADER_LABEL.sub("", text)))
    length = sum(counts.values())
    norm = K1 * (1 - B + B * length / TYPICAL_TERMS)
    weights: dict[int, float] = {}
    for term, tf in counts.items():
        tid = term_id(term)
        weights[tid] = weights.get(tid, 0.0) + tf * (K1 + 1) / (tf + norm)
    return _sparse(weights)


def encode_query(text: str) -> Sparse:
    return _sparse(dict.fromkeys((term_id(t) for t in terms(text)), 1.0))
