"""What the conversation is about, in a repository's ranking graph: the seeds of the repo
map's PageRank (the files and definitions a message names) and whether a message looks like a
code question at all. Apart from the ranking and the outline because it is the text side:
regular expressions over chat messages, cheap enough to run on every message
(`core.prompt_budget` asks `looks_like_code_question` too, for what a request needs).

The agent asks for a map only for what looks like a code question (`looks_like_code_question`:
a code word, a backticked name, a path, an identifier shaped like code): up to 2k tokens on
every "thanks!" would cost more than it helps.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

from core.code.graph.rank import Graph

RECENT_WEIGHT = 0.5  # seeds from earlier turns count half as much as the new message's
PLAIN_WEIGHT = 0.25  # an ordinary word that happens to name a symbol ("run", "config")


# A path starts where a run of path characters starts: without the look-behind every position
# inside a long word is tried again, and a 20,000-letter message took 24 s (quadratic).
_PATH = re.compile(
    r"(?<![\w.\-])(?:[\w.\-]+(?:/[\w.\-]+)*\.[A-Za-z]\w{0,5}|[\w.\-]+(?:/[\w.\-]+)+)"
)
_IDENT = re.compile(r"[A-Za-z_][A-Za-z0-9_]*(?:\.[A-Za-z_][A-Za-z0-9_]*)*")
_BACKTICKED = re.compile(r"`([^`\n]{1,200})`")
_CODE_WORDS = re.compile(
    r"\b(code|function|functions|method|methods|class|classes|module|modules|file|files|"
    r"defined|define|implemented|implements|implementation|calls|called|caller|callers|"
    r"callee|callees|import|imports|refactor|rename|signature|subclass|inherits|extends|"
    r"where|repo|repository|bug|traceback|exception|test|tests)\b",
    re.IGNORECASE,
)
_STOPWORDS = frozenset(
    "the and for with that this from what where when which who how why does did not are was "
    "were can could should would will into about there their then than have has had but all "
    "any its you your our out use used using get set new old one two also only just more "
    "most some such very over under file files code class function method module repo".split()
)


@dataclass(frozen=True, slots=True)
class Seeds:
    nodes: dict[int, float]
    paths: tuple[str, ...]  # files named by the conversation
    symbols: tuple[str, ...]  # `path:symbol` of the definitions named

    @property
    def weight(self) -> float:
        return sum(self.nodes.values())


def _code_ish(token: str, text: str, end: int) -> bool:
    return (
        "_" in token
        or ("." in token and all(len(part) > 1 for part in token.split(".")))  # not "e.g."
        or any(c.isupper() for c in token[1:])
        or text[end : end + 1] == "("
    )


def seeds(graph: Graph, text: str, recent: Sequence[str] = ()) -> Seeds:
    """The definitions the conversation mentions: file paths (every definition of the file),
    qualified symbols and names. `text` is the new message, `recent` earlier turns."""
    nodes: dict[int, float] = {}
    paths: dict[str, None] = {}
    named: dict[str, None] = {}

    def add(found: Sequence[int], w: float) -> None:
        for node in found:
            nodes[node] = nodes.get(node, 0.0) + w / len(found)

    for message, scale in [(text, 1.0), *((r, RECENT_WEIGHT) for r in recent)]:
        quoted = {m.group(1).strip() for m in _BACKTICKED.finditer(message)}
        for m in _PATH.finditer(message):
            token = m.group(0).strip("./")
            hits = [p for p in graph.by_path if p == token or p.endswith("/" + token)]
            if "/" not in token and len(hits) > 3:
                continue  # "__init__.py", "utils.py": too common to mean one file
            for path in hits:
                paths[path] = None
                add(graph.by_path[path], scale * 2.0)
        for m in _IDENT.finditer(message):
            token = m.group(0)
            strong = token in quoted or _code_ish(token, message, m.end())
            found = graph.by_symbol.get(token)
            if found is None and "." in token:
                found = _tail_matches(graph, token)
            if found is None:
                found = graph.by_name.get(token.rsplit(".", 1)[-1] if strong else token)
            if not found:
                continue
            if not strong and (len(token) < 3 or token.lower() in _STOPWORDS):
                continue
            add(found, scale * (1.0 if strong else PLAIN_WEIGHT))
            if strong and len(found) <= 3:
                named.update((f"{graph.paths[i]}:{graph.symbols[i]}", None) for i in found)
    return Seeds(nodes, tuple(paths), tuple(named))


def _tail_matches(graph: Graph, dotted: str) -> list[int] | None:
    tail = "." + dotted
    last = dotted.rsplit(".", 1)[-1]
    found = [i for i in graph.by_name.get(last, []) if graph.symbols[i].endswith(tail)]
    return found or None


def looks_like_code_question(text: str) -> bool:
    """Cheap: a code word, a backticked name, a path, or an identifier shaped like code."""
    if _CODE_WORDS.search(text) or _BACKTICKED.search(text):
        return True
    if any("/" in m.group(0) for m in _PATH.finditer(text)):
        return True  # a dotted file name ("agent.py") is an identifier shaped like code below
    return any(_code_ish(m.group(0), text, m.end()) for m in _IDENT.finditer(text))
