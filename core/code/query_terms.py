"""What a search question is made of, for the vector store's query plan: the identifiers written
in it (the exact-symbol leg) and the text its dense leg embeds."""

from __future__ import annotations

import re

from core.memory.ranking import STOPWORDS

_IDENT = re.compile(r"`([^`]+)`|([A-Za-z_][A-Za-z0-9_]*(?:\.[A-Za-z_][A-Za-z0-9_]*)*)(\(\))?")
_CAMEL = re.compile(r"[a-z0-9][A-Z]")


def bare_name(symbol: str) -> str:
    """`Client.send(self, request)` -> `send`; `webhooks.retry` -> `retry`; lower-cased."""
    head = symbol.split("(", 1)[0]
    return head.rsplit(".", 1)[-1].strip().lower()


def query_identifiers(query: str) -> list[str]:
    """Words of the query written like code: in backticks, with `_`, camelCase, dots or `()`.
    Plain English words are left to the dense and sparse legs."""
    names: list[str] = []
    for match in _IDENT.finditer(query):
        quoted, word, call = match.groups()
        if quoted is not None:
            candidates = [bare_name(quoted)] if re.fullmatch(r"[\w.()]+", quoted) else []
        elif word is not None and (
            "_" in word.strip("_") or "." in word or call or _CAMEL.search(word)
        ):
            candidates = [bare_name(word)]
        else:
            candidates = []
        for name in candidates:
            if name and name not in STOPWORDS and name not in names:
                names.append(name)
    return names


# A question's frame: the interrogative and the auxiliaries after it ("Where is the", "How do
# I", "Is there a"). Every question shares it, so in an embedding it pulls toward other
# questions and prose (docs, comments) rather than the code that answers; measured on the
# search benchmark's tuning corpora (bench/RESULTS.md, issue 28), embedding the rest found the
# answer more often and never less. The sparse leg drops these words as stopwords anyway.
_FRAME = re.compile(
    r"^\s*(?:where|how|what|which|why|when|who|is there|are there)(?:['’](?:s|re)\b)?\b[^\w]*"
    r"(?:(?:is|are|was|were|does|do|did|can|could|should|would|the|a|an|i|we|you|it|there)"
    r"\b\s*)*",
    re.IGNORECASE,
)


def dense_text(query: str) -> str:
    """The question as its dense leg embeds it: without a leading question frame ("Where is the
    retry policy set?" -> "retry policy set?"); unchanged when nothing else would be left."""
    rest = _FRAME.sub("", query, count=1)
    return rest if rest.strip(" ?.!") else query
