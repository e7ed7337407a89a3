"""The skills index the model sees: names and descriptions, within a token budget.

When every skill a conversation may use fits the budget, all are listed, sorted by name: the
text is the same on every request in the channel, so it belongs in the stable part of the
prompt (provider prefix caches hit). When they do not fit, the skills most relevant to the
message are listed instead (in the per-request part), with a line saying how many more exist
and that `find_skills` searches them; skills whose `channels` hint names this channel are
listed first.

Relevance is lexical + semantic: Okapi BM25 over the name's parts and the description (with the
code search's light stemmer, so "rollbacks" meets "rollback"), and cosine similarity of the
local embedding model's vectors, fused by reciprocal rank. Skill vectors are computed once per
library generation, in a worker thread, the first time ranking is needed; until they are ready,
or when no embedding model is available, ranking is lexical alone.
"""

from __future__ import annotations

import asyncio
import logging
import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np

from core.code.embeddings import Embedder
from core.code.sparse import stem
from core.memory.ranking import bm25_scores, tokenize
from core.skills.library import Skill

log = logging.getLogger(__name__)

RRF_K = 60
# Lexical, semantic. Users paraphrase what a playbook is for, so the embedding leg counts
# double (bench/skills_index.py: more right skills listed than with equal weights).
LEG_WEIGHTS = (1.0, 2.0)
DESCRIPTION_CHARS = 300  # of a description, in an index line (find_skills shows it whole)
# When not every skill fits, shorter lines list more of the best-ranked skills: the model
# needs enough to pick one, load_skill and find_skills give the rest.
RANKED_DESCRIPTION_CHARS = 100
INDEX_HEADER = "Skills (name: when to use it):"
RANKED_HEADER = "Skills that may fit this message, best first (name: when to use it):"
ALSO_PREFIX = "Also possible (load_skill gives the details): "
DESCRIBED = 3  # skills listed with a description when not all fit


def terms(text: str) -> list[str]:
    return [stem(t) for t in tokenize(text)]


def skill_text(skill: Skill) -> str:
    """What lexical ranking reads: the name's words and the description."""
    return f"{skill.name.replace('-', ' ')}: {skill.description}"


def index_line(skill: Skill, chars: int = DESCRIPTION_CHARS) -> str:
    desc = skill.description
    if len(desc) > chars:
        desc = desc[: chars - 1].rsplit(" ", 1)[0] + "…"
    return f"- {skill.name}: {desc}"


@dataclass(frozen=True, slots=True)
class IndexText:
    text: str
    listed: tuple[str, ...]
    stable: bool  # every visible skill is listed (the text does not depend on the message)
    omitted: int = 0


class SkillRanker:
    """Ranks skills for a message. Holds per-generation caches; thread-safe for one writer."""

    def __init__(self, embedder: Embedder | None = None) -> None:
        self._embedder = embedder
        self._generation = -1
        self._library: list[Skill] = []
        self._terms: dict[str, list[str]] = {}
        self._vectors: dict[str, np.ndarray] = {}
        self._embedding: threading.Thread | None = None
        self._semantic_failed = False
        self._lock = threading.Lock()

    def prepare(self, skills: Sequence[Skill], generation: int) -> None:
        """Take a library generation: tokenize at once (cheap); embed later, when ranking is
        first needed (slow: in a thread)."""
        with self._lock:
            if generation == self._generation:
                return
            self._generation = generation
            self._library = list(skills)
            self._terms = {s.name: terms(skill_text(s)) for s in skills}
            self._vectors = {}
            self._embedding = None

    def _start_embedding(self) -> None:
        if self._embedder is None or self._semantic_failed or self._embedding is not None:
            return
        embedder, skills, generation = self._embedder, self._library, self._generation

        def run() -> None:
            try:
                # The description alone: with the name's words in front, the vectors of
                # skills of one area drift together (measured: fewer right skills listed).
                matrix = embedder.embed([s.description for s in skills])
            except Exception as exc:  # no model installed, endpoint down: lexical only
                log.warning("skills ranking without embeddings: %s", exc)
                self._semantic_failed = True
                return
            norms = np.linalg.norm(matrix, axis=1, keepdims=True)
            matrix = matrix / np.maximum(norms, 1e-9)
            with self._lock:
                if generation == self._generation:
                    self._vectors = {s.name: matrix[i] for i, s in enumerate(skills)}

        self._embedding = threading.Thread(target=run, name="skills-embed", daemon=True)
        self._embedding.start()

    def wait_ready(self, timeout: float | None = None) -> bool:
        """Start embedding the library and block until its vectors exist (benchmarks,
        tests); False if there are none (no embedder, or it failed)."""
        with self._lock:
            self._start_embedding()
        thread = self._embedding
        if thread is not None:
            thread.join(timeout)
        return bool(self._vectors)

    def rank(self, skills: Sequence[Skill], query: str) -> list[Skill]:
        """All of `skills` (members of the prepared library), most relevant to `query` first.
        Blocking: embeds the query once the library's vectors exist."""
        if not skills:
            return []
        with self._lock:
            self._start_embedding()
            vectors = self._vectors
        known = self._terms
        docs = [known[s.name] if s.name in known else terms(skill_text(s)) for s in skills]
        lexical = bm25_scores(terms(query), docs)
        legs = [
            [i for i in sorted(range(len(skills)), key=lambda i: -lexical[i]) if lexical[i] > 0]
        ]
        if vectors and self._embedder is not None and query.strip():
            try:
                q = self._embedder.embed([query[:2_000]])[0]
                q = q / max(float(np.linalg.norm(q)), 1e-9)
                sims = [float(vectors[s.name] @ q) if s.name in vectors else -1.0 for s in skills]
                legs.append(sorted(range(len(skills)), key=lambda i: -sims[i]))
            except Exception as exc:
                log.warning("skills ranking: query not embedded: %s", exc)
        fused = [0.0] * len(skills)
        for leg, weight in zip(legs, LEG_WEIGHTS, strict=False):
            for rank, i in enumerate(leg):
                fused[i] += weight / (RRF_K + rank + 1)
        best = sorted(range(len(skills)), key=lambda i: (-fused[i], skills[i].name))
        return [skills[i] for i in best]

    async def arank(self, skills: Sequence[Skill], query: str) -> list[Skill]:
        return await asyncio.to_thread(self.rank, skills, query)


def render_index(
    ranked: Sequence[Skill],
    budget_tokens: int,
    count: Callable[[str], int],
    *,
    first: Sequence[str] = (),
) -> IndexText | None:
    """The index text for skills given best first. `first` (pinned, channel hints) go before
    the ranking. All fit: sorted by name with descriptions, stable. Else: the best
    `DESCRIBED` with short descriptions, then as many more names as fit (a skill's name says a
    lot, and listing more of them is what keeps the right one in view), then a line saying
    how many are left out and that `find_skills` searches them."""
    if not ranked:
        return None
    full = {s.name: index_line(s) for s in ranked}
    everything = "\n".join([INDEX_HEADER, *(full[n] for n in sorted(full))])
    if count(everything) <= budget_tokens:
        return IndexText(everything, tuple(sorted(full)), stable=True)
    short = {s.name: index_line(s, RANKED_DESCRIPTION_CHARS) for s in ranked}
    order = [n for n in dict.fromkeys(first) if n in short]
    order += [s.name for s in ranked if s.name not in order]
    used = count(RANKED_HEADER) + count(_more_line(len(order))) + count(ALSO_PREFIX) + 3
    described: list[str] = []
    for name in order[:DESCRIBED]:
        cost = count(short[name]) + 1
        if used + cost > budget_tokens:
            break
        described.append(name)
        used += cost
    named: list[str] = []
    for name in order[len(described) :]:
        cost = count(name + ", ")
        if used + cost > budget_tokens:
            break
        named.append(name)
        used += cost
    omitted = len(order) - len(described) - len(named)
    lines = [RANKED_HEADER, *(short[n] for n in described)]
    if named:
        lines.append(ALSO_PREFIX + ", ".join(named))
    if omitted:
        lines.append(_more_line(omitted))
    return IndexText("\n".join(lines), (*described, *named), stable=False, omitted=omitted)


def _more_line(omitted: int) -> str:
    return f"{omitted} more skill(s) exist: find_skills(query) searches them all."
