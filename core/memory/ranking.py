"""Keyword relevance for short texts: a tokenizer that knows identifiers, and Okapi BM25.

Long-term memory holds tens to thousands of one-line facts per tenant, so ranking them in
memory on every request is cheap and needs no index. Pure functions, no I/O.

The tokenizer lower-cases, keeps each identifier whole and also splits it into its parts
(`deployHelmChart` -> `deployhelmchart`, `deploy`, `helm`, `chart`; the same for snake_case and
kebab-case), so "helm" finds a fact that only mentions `helm_values.yaml`, and the exact
identifier still ranks highest. A short English stopword list is dropped.
"""

from __future__ import annotations

import math
import re
from collections import Counter
from collections.abc import Sequence

K1 = 1.5
B = 0.75

STOPWORDS = frozenset(
    """
    a an and are as at be been but by can could do does did for from had has have how i if in
    into is it its me my of on or our so than that the their them then there these they this
    those to us was we were what when where which who whom why will with would you your
    """.split()
)

# A word or an identifier: word characters (letters, digits, `_`), optionally joined by `-`.
_WORD = re.compile(r"\w+(?:-\w+)*")
# Case boundaries inside one part: fooBar -> foo|Bar, HTTPServer -> HTTP|Server, v2Api -> v2|Api.
_CASE = re.compile(r"(?<=[a-z0-9])(?=[A-Z])|(?<=[A-Z])(?=[A-Z][a-z])")


def identifier_parts(word: str) -> list[str]:
    """The lower-cased parts of one identifier (no stopword filtering); [] when it has one."""
    pieces = [piece for chunk in re.split(r"[-_]+", word) for piece in _CASE.split(chunk) if piece]
    if len(pieces) < 2:
        return []
    return [p.lower() for p in pieces if len(p) > 1]  # one-letter parts match too much


def tokenize(text: str) -> list[str]:
    tokens: list[str] = []
    for match in _WORD.finditer(text):
        word = match.group().strip("_-")
        if not word:
            continue
        whole = word.lower()
        if whole not in STOPWORDS:
            tokens.append(whole)
        tokens.extend(p for p in identifier_parts(word) if p not in STOPWORDS and p != whole)
    return tokens


def bm25_scores(
    query: Sequence[str], documents: Sequence[Sequence[str]], *, k1: float = K1, b: float = B
) -> list[float]:
    """Okapi BM25 of every tokenized document for the tokenized query.

    IDF is the non-negative variant `ln(1 + (N - df + 0.5) / (df + 0.5))`, so a document scores
    above zero exactly when it shares at least one term with the query. Repeated query terms
    count once.
    """
    n = len(documents)
    if n == 0:
        return []
    terms = set(query)
    if not terms:
        return [0.0] * n
    lengths = [len(d) for d in documents]
    avgdl = sum(lengths) / n or 1.0
    df: Counter[str] = Counter()
    for doc in documents:
        df.update(terms.intersection(doc))
    idf = {t: math.log(1 + (n - df[t] + 0.5) / (df[t] + 0.5)) for t in terms}
    scores: list[float] = []
    for doc, dl in zip(documents, lengths, strict=True):
        tf = Counter(t for t in doc if t in terms)
        norm = k1 * (1 - b + b * dl / avgdl)
        scores.append(sum(idf[t] * f * (k1 + 1) / (f + norm) for t, f in tf.items()))
    return scores


def rank(query: str, texts: Sequence[str], k: int | None = None) -> list[tuple[int, float]]:
    """Indexes of `texts` that match `query` (score > 0), best first; ties keep input order."""
    scores = bm25_scores(tokenize(query), [tokenize(t) for t in texts])
    ranked = sorted(
        ((i, s) for i, s in enumerate(scores) if s > 0), key=lambda pair: (-pair[1], pair[0])
    )
    return ranked if k is None else ranked[: max(0, k)]
