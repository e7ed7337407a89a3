"""What a search question is made of, for the vector store's query plan: the identifiers written
in it (the exact-symbol leg, and the candidates whose text mentions them), the text its dense
leg embeds, and the phrases it quotes (an error message or a log line pasted between quotes,
which a chunk either contains or not)."""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

from core.memory.ranking import STOPWORDS

_IDENT = re.compile(r"`([^`]+)`|([A-Za-z_][A-Za-z0-9_]*(?:\.[A-Za-z_][A-Za-z0-9_]*)*)(\(\))?")
_CAMEL = re.compile(r"[a-z0-9][A-Z]")


def bare_name(symbol: str) -> str:
    """`Client.send(self, request)` -> `send`; `webhooks.retry` -> `retry`; lower-cased."""
    head = symbol.split("(", 1)[0]
    return head.rsplit(".", 1)[-1].strip().lower()


# A question names a few identifiers; a query with hundreds is a paste (a log, a file), and each
# one costs a filter term in the exact-symbol leg and a pattern for the mentions.
MAX_QUERY_IDENTIFIERS = 32


def query_identifiers(query: str) -> list[str]:
    """Words of the query written like code: in backticks, with `_`, camelCase, dots or `()`;
    the first `MAX_QUERY_IDENTIFIERS` of them. Plain English words are left to the dense and
    sparse legs."""
    names: list[str] = []
    for match in _IDENT.finditer(query):
        if len(names) >= MAX_QUERY_IDENTIFIERS:
            break
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


@dataclass(frozen=True, slots=True)
class Mention:
    """One identifier a question writes (lower-cased, as `query_identifiers` gives it), and the
    pattern that finds it as a whole identifier in a chunk's text, whatever its case
    (`cmark_opt_github_pre_lang` finds `CMARK_OPT_GITHUB_PRE_LANG`)."""

    name: str
    pattern: re.Pattern[str]


def mention_patterns(names: Sequence[str]) -> list[Mention]:
    return [
        Mention(name, re.compile(rf"(?<![A-Za-z0-9_]){re.escape(name)}(?![A-Za-z0-9_])", re.I))
        for name in names
    ]


def mentioned(text: str, mentions: Sequence[Mention]) -> float:
    """The share of the question's identifiers that `text` mentions (0 to 1). A substring test
    first: most candidates mention none, and the pattern is run only on those that might."""
    if not mentions:
        return 0.0
    lowered = text.lower()
    found = sum(1 for m in mentions if m.name in lowered and m.pattern.search(text))
    return found / len(mentions)


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


# A quoted span: double quotes (straight or curly) anywhere; single quotes only where they open
# after a space or bracket and close before one, so that "don't ... isn't" is not a span.
_QUOTED = re.compile(
    r'"([^"\n]{4,300})"|“([^”\n]{4,300})”|‘([^’\n]{4,300})’'
    r"|(?:(?<=^)|(?<=[\s(\[{:=,]))'([^'\n]{4,300})'(?=$|[\s)\]}.,;:?!])"
)
# Where a user elides the variable parts of a message ("Signature age ... > ... seconds").
_ELLIPSIS = re.compile(r"\.\.\.+|…")
# A string literal continued on the next line: "...with a "  "default value" (Python, C) or
# "...with a " + "default value" (JavaScript, Java), f"..." too, read as the one message.
# No two whitespace runs may meet: a quote followed by thousands of blank lines stays linear.
_CONTINUED = re.compile(r"""(["'])[ \t]*(?:\+[ \t]*)?\n\s*(?:\+\s*)?[rRbBuUfF]{0,2}\1""")
_SPACE = re.compile(r"\s+")
MIN_PHRASE_CHARS = 12  # shorter quotes ("id", 'utf-8') are words, not messages
MIN_FRAGMENT_CHARS = 3


def quoted_phrases(query: str) -> list[tuple[str, ...]]:
    """The messages the question quotes, each as its literal fragments (split where the user
    wrote "..." for a variable part), lower-cased with spaces collapsed: `literal_text` is what
    they are looked for in. Quotes shorter than `MIN_PHRASE_CHARS` are left to the other legs."""
    phrases: list[tuple[str, ...]] = []
    for match in _QUOTED.finditer(query):
        span = next(group for group in match.groups() if group is not None)
        if len(span.strip()) < MIN_PHRASE_CHARS:
            continue
        fragments = tuple(
            part
            for part in (
                _SPACE.sub(" ", piece).strip().casefold() for piece in _ELLIPSIS.split(span)
            )
            if len(part) >= MIN_FRAGMENT_CHARS
        )
        if fragments and fragments not in phrases:
            phrases.append(fragments)
    return phrases


def literal_text(text: str) -> str:
    """A chunk's text as quoted phrases are matched against it: string literals continued over
    lines joined, lower-cased, spaces collapsed."""
    return _SPACE.sub(" ", _CONTINUED.sub("", text)).casefold()


def contains_phrase(literal: str, fragments: Sequence[str]) -> bool:
    """Whether `literal` (a `literal_text`) holds every fragment, in order."""
    at = 0
    for fragment in fragments:
        found = literal.find(fragment, at)
        if found < 0:
            return False
        at = found + len(fragment)
    return True
