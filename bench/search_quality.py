"""Code-search quality: ripgrep, BM25, dense, sparse and hybrid side by side, on six corpora.

    OPENBLAS_NUM_THREADS=1 .venv/bin/python bench/search_quality.py
        [--corpus wheels,repos,held-out,fresh,third,fourth,fifth] [--embedder local|settings]
        [--systems rg,bm25s,bm25s-split,dense,sparse,hybrid,hybrid-unquoted]
        [--verbose] [--json] [--append bench/RESULTS.md] [--check-queries FILE]

Every corpus but `fifth` runs by default, one after the other, in one report. `wheels` and
`repos` are the **tuning** corpora: ranking changes are chosen on them. `held-out` is the check:
no ranking change is chosen by its figures (each time one is looked at, the report says so in
RESULTS.md; a split looked at too often stops being held out, and then a new one is written).

**wheels**: the pure-Python sources of a few pinned PyPI packages (`PACKAGES`). The first run
fetches their wheels with `pip download --no-deps` into bench/.cache/wheels and unpacks the `.py`
files into bench/.cache/corpus/<package>/; later runs reuse them. Every file is cut with
Threadline's `chunk_file(repo=<package>, path=<path inside the unpacked wheel>, text)`.
Queries: bench/search_queries.json.

**repos**: whole published repositories (source with their tests, docs and examples) in
JavaScript, TypeScript, Go and Rust: npm tarballs and Debian `golang-*-dev` / `librust-*-dev`
packages at pinned versions, fetched and unpacked by bench/search_quality_repos.py into
bench/.cache/repos on the first run (`npm pack`, `apt-get download` + `dpkg-deb -x`; run
`apt-get update` once on a fresh machine), read as indexing reads them (`walk`, redaction,
`chunk_file`). Queries: bench/search_queries_repos.json; questions with `"asks"` (test, docs,
example) want a file of that role and are scored apart from the "where in the code" questions.

**held-out**: whole projects from PyPI source distributions (which carry their tests, docs and
examples), in Python (attrs, pluggy, itsdangerous, tomlkit) and C (Brotli with its tools and
Python binding; cmark-gfm, the tree cmarkgfm vendors), fetched by
bench/search_quality_repos.py (`pip download --no-binary=:all:`) into
bench/.cache/repos/held-out-src. Queries: bench/search_queries_held_out.json, 50 questions
written from the code by people who ran no system on them (paraphrase, identifier and vague
styles; some ask for tests or docs). `--check-queries FILE` resolves a question file's gold
against this corpus (with `--corpus fresh`, against that one) and stops.

**fresh**: a second held-out split, written once the first had been read: Python (marshmallow,
cachetools, jmespath) and C (the LZ4 library and binding of python-lz4, msgpack's C templates,
bitarray's C core), the same way. Queries: bench/search_queries_fresh.json.

**third**: a third split, written once the first two had been read and read once, after the
quoted-message step had been chosen (boltons, toolz and sqlparse in Python; multidict, wrapt,
setproctitle, cbor2, ujson and xxhash in C). Queries: bench/search_queries_third.json.

**fourth**: a fourth split, written at the end of the session that read the third, and read
once, after round three's last ranking changes (packaging metadata, the asked language,
identifier mentions) had been chosen on the others (RESULTS.md, 2026-12-04). Queries:
bench/search_queries_fourth.json.

**fifth**: a fifth split, written at the end of the session that read the fourth, and not read
by anyone yet: the clean check for the next ranking change (packaging, idna and tomli in
Python; pyahocorasick's C core, MarkupSafe's C speedups and crcmod's C extension in C).
Queries: bench/search_queries_fifth.json.

Queries are natural-language questions written from reading the code (before any system was
run), each with one or more gold locations (repo, path, and a symbol, an explicit line range or
`whole_file`). A symbol is resolved at load time to the chunk(s) whose symbol (its part before
the parameter list) is that name or ends with "." + that name; a gold location that resolves to
nothing stops the run.

A retrieved chunk is a **hit** when it has a gold location's repo and path and its line range
overlaps the gold range. A class chunk (the class outline: header and member signatures,
bodies elided) only counts when the gold location is itself a class or a line range; it does not
count for a method inside it (a second table applies the plain overlap rule, where it does).
A query's rank is that of its first hit in the top 10. Recall@k = share of queries with a hit in
the top k; MRR@10 = mean of 1/rank (0 past 10). Metrics are given overall and per language (a
query's language is its repository's) and per question style (paraphrase, identifier, vague).
**Files**: the rank of the first gold file among the distinct files of the top 10, for
questions whose answer is "which file".

**Top-5 roles**: what the systems put in their top 5 for the "where in the code" questions, by
the role of each result's file (source, test, docs, example, other) as the bench reads it from the
path (`search_quality_repos.role_of`, conventions only; independent of any role logic in the
product). **Source first** is a diagnostic, not a system: each store system's top 10 reordered
so that source chunks come first (stable), to show what preferring source inside the same
results would change.

Systems (all rank the same chunks of a corpus and return their top 10):

- **rg**: keyword search with the `rg` binary. Keywords are the query's words, lower-cased,
  at least 3 characters, minus English/question stopwords; words of 5+ letters lose one
  inflection suffix (-ing, -ed, -es, -s) so "compressed" also finds "compress". One
  `rg --json -i -F -e kw1 -e kw2 ...` over the corpus per query (wheels: `*.py`; repos: every
  file, hidden and ignored ones included, since the walk decides what is indexed); each matching
  line is mapped to the smallest chunk that contains it (lines of files that were not chunked are
  dropped); chunks are ranked by distinct keywords matched, then by matching lines, then corpus
  order.
- **bm25s**: the bm25s package (defaults: Lucene BM25, k1=1.5, b=0.75) over `chunk.embed_text`,
  its default tokeniser with English stopwords.
- **bm25s-split**: the same with identifiers also split into words (`send_with_gzip`,
  `isAllowed` -> send, with, gzip / is, allowed) on both sides, originals kept.
- **dense**, **sparse**, **hybrid**: Threadline's `VectorStore` (core/code/vectors.py), built in
  process for each corpus by `open_store` (the one place that knows its constructor), searched
  with `search(query, k=10, mode=...)` over every repo; dense vectors from `LocalMiniLM`
  (all-MiniLM-L6-v2; `--embedder settings`: the model Threadline's settings name, such as a
  code embedding model behind an OpenAI-compatible endpoint), cached per embed text (model
  name + SHA-1 of the text) in bench/.cache/vectors/, so only new or changed chunks are
  embedded on later runs (a cold run embeds ~20k chunks: 10 minutes or more on 2 cores).
  hybrid reads the candidates' texts as the product does from SQL (`texts=`), for the
  quoted-message and identifier-mention evidence; **hybrid-unquoted** is the same search
  without them.

`--json` prints the metrics as JSON; `--verbose` lists each system's misses; `--append FILE`
appends a dated Markdown section (command, machine, corpora, tables) to FILE.
"""

from __future__ import annotations

import argparse
import asyncio
import bisect
import hashlib
import importlib.util
import json
import re
import shlex
import shutil
import subprocess
import sys
import tempfile
import time
import zipfile
from collections import Counter, defaultdict
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, cast

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bench import search_quality_repos as whole_repos  # noqa: E402
from bench.machine import append_section, machine_facts, threadline_version  # noqa: E402
from bench.search_quality_repos import Split  # noqa: E402
from core.code.chunk import Chunk  # noqa: E402
from core.code.chunking import chunk_file  # noqa: E402
from core.code.ripgrep import ripgrep_binary  # noqa: E402

BENCH = ROOT / "bench"
CACHE = BENCH / ".cache"
WHEELS = CACHE / "wheels"
CORPUS = CACHE / "corpus"
VECTORS = CACHE / "vectors"
QUERIES = BENCH / "search_queries.json"
K = 10
TOP_ROLES = 5  # the top-k whose roles are counted

PACKAGES: dict[str, str] = {
    "click": "8.1.7",
    "httpx": "0.28.1",
    "starlette": "0.41.3",
    "werkzeug": "3.1.3",
}
CORPORA = ("wheels", "repos", "held-out", "fresh", "third", "fourth", "fifth")
# A split nobody has read runs only when named: a plain run must not spend it.
DEFAULT_CORPORA = tuple(c for c in CORPORA if c != "fifth")
ALL_SYSTEMS = ("rg", "bm25s", "bm25s-split", "dense", "sparse", "hybrid", "hybrid-unquoted")
STORE_SYSTEMS = ("dense", "sparse", "hybrid", "hybrid-unquoted")
# hybrid-unquoted: hybrid without the chunks' texts, so without the evidence read from them:
# the quoted-message step (256dc3b) and the identifier mentions (issue 28, round three).
ROLES = whole_repos.ROLES

STOPWORDS = frozenset(
    """
    a about above after again against all also am an and any are aren as at be because been
    before being below between both but by can cannot could did do does doing don down during
    each either else ever every few for from further get gets got had has have having he her
    here hers him his how however i if in into is isn it its itself just let lets like made make
    makes many may me might more most much must my need needs never no nor not now of off on once
    one only or other our ours out over own per put same shall she should so some such than that
    the their theirs them then there these they this those through thus to too under until up
    upon us use used uses using very via was way we were what when where whether which while who
    whom whose why will with within without would yet you your yours
    code function method class file files find happens instead look looks thing things
    """.split()
)
_WORD = re.compile(r"[A-Za-z][A-Za-z0-9]*")
_IDENT = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_CAMEL = re.compile(r"(?<=[a-z0-9])(?=[A-Z])|(?<=[A-Z])(?=[A-Z][a-z])")
_SUFFIXES = ("ing", "ed", "es", "s")


# -- queries and gold -----------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class GoldRange:
    repo: str
    path: str
    start: int
    end: int
    outline_ok: bool  # a class chunk overlapping this range counts as a hit
    label: str


@dataclass(frozen=True, slots=True)
class Query:
    id: str
    text: str
    style: str
    gold: tuple[GoldRange, ...]
    language: str = "python"
    asks: str | None = None  # a role other than source that the question asks for


def _bare_symbol(chunk: Chunk) -> str:
    return chunk.symbol.split("(", 1)[0]


def resolve_gold(spec: dict[str, Any], by_file: dict[tuple[str, str], list[Chunk]]) -> GoldRange:
    """A gold location as a line range; raises ValueError when it does not resolve."""
    repo, path = spec["repo"], spec["path"]
    in_file = by_file.get((repo, path))
    if not in_file:
        raise ValueError(f"no chunks for {repo}:{path}")
    last = max(c.end_line for c in in_file)
    if spec.get("whole_file"):
        return GoldRange(repo, path, 1, last, True, f"{repo}:{path}")
    if "lines" in spec:
        start, end = spec["lines"]
        if not 1 <= start <= end <= last:
            raise ValueError(f"lines {start}-{end} outside {repo}:{path} (1-{last})")
        return GoldRange(repo, path, start, end, True, f"{repo}:{path}:{start}-{end}")
    symbol = spec["symbol"]
    matches = [
        c
        for c in in_file
        if c.kind not in ("file", "section")
        and (_bare_symbol(c) == symbol or _bare_symbol(c).endswith("." + symbol))
    ]
    if not matches:
        raise ValueError(f"symbol {symbol!r} not found in {repo}:{path}")
    kinds = {c.kind for c in matches}
    if len(kinds) > 1:
        raise ValueError(f"symbol {symbol!r} in {repo}:{path} is ambiguous: {sorted(kinds)}")
    start = min(c.start_line for c in matches)
    end = max(c.end_line for c in matches)
    label = f"{repo}:{path}:{symbol} ({start}-{end})"
    return GoldRange(repo, path, start, end, "class" in kinds, label)


def load_queries(
    path: Path, chunks: Sequence[Chunk], languages: dict[str, str] | None = None
) -> list[Query]:
    """The queries of `path` with their gold resolved against `chunks`; a query's language is
    that of its first gold location's repo (`languages`; python when not given). Gold of a
    "where in the code" question must lie in source files, gold of one that `asks` for a role in
    files of that role (the bench's `role_of`)."""
    by_file: dict[tuple[str, str], list[Chunk]] = defaultdict(list)
    for c in chunks:
        by_file[(c.repo, c.path)].append(c)
    raw = json.loads(path.read_text(encoding="utf-8"))["queries"]
    queries: list[Query] = []
    errors: list[str] = []
    for item in raw:
        asks = item.get("asks")
        if asks is not None and asks not in ROLES:
            errors.append(f"{item['id']}: asks {asks!r}, not one of {ROLES}")
        gold: list[GoldRange] = []
        for spec in item["gold"]:
            try:
                gold.append(resolve_gold(spec, by_file))
            except ValueError as exc:
                errors.append(f"{item['id']}: {exc}")
                continue
            role = whole_repos.role_of(spec["path"])
            if role != (asks or "source"):
                errors.append(
                    f"{item['id']}: gold {spec['path']} is {role}, not {asks or 'source'}"
                )
        language = (languages or {}).get(item["gold"][0]["repo"], "python")
        queries.append(Query(item["id"], item["query"], item["style"], tuple(gold), language, asks))
    ids = Counter(q.id for q in queries)
    errors += [f"duplicate query id {i}" for i, n in ids.items() if n > 1]
    if errors:
        raise SystemExit(f"bad gold locations in {path.name}:\n  " + "\n  ".join(errors))
    return queries


def is_hit(chunk: Chunk, gold: Sequence[GoldRange], *, outlines: bool = False) -> bool:
    """Whether `chunk` answers a query with this gold (`outlines`: any class chunk overlapping
    the gold counts too, the plain overlap rule)."""
    for g in gold:
        if chunk.repo != g.repo or chunk.path != g.path:
            continue
        if chunk.kind == "class" and not (g.outline_ok or outlines):
            continue
        if chunk.start_line <= g.end and g.start <= chunk.end_line:
            return True
    return False


# -- corpora --------------------------------------------------------------------------------------


@dataclass(slots=True)
class Corpus:
    name: str
    root: Path  # one folder per repo: where rg searches
    rg_globs: tuple[str, ...]  # rg -g filters; empty: every file
    chunks: list[Chunk]
    queries: list[Query]
    queries_file: Path
    description: str
    roles: list[str] = field(default_factory=list)  # per chunk, the bench's role_of(path)

    def __post_init__(self) -> None:
        self.roles = [whole_repos.role_of(c.path) for c in self.chunks]

    @property
    def located(self) -> list[Query]:
        """The "where in the code is X" questions (gold in source)."""
        return [q for q in self.queries if q.asks is None]

    @property
    def asking(self) -> list[Query]:
        """The questions that ask for a test, docs or an example."""
        return [q for q in self.queries if q.asks is not None]


def fetch_corpus() -> None:
    """Download the pinned wheels (once) and unpack their .py files under CORPUS/<package>."""
    for name, version in PACKAGES.items():
        target = CORPUS / name
        marker = target / f".unpacked-{version}"
        if marker.exists():
            continue
        wheel = _wheel(name, version)
        if target.exists():
            shutil.rmtree(target)
        target.mkdir(parents=True, exist_ok=True)
        with zipfile.ZipFile(wheel) as archive:
            for member in archive.namelist():
                if member.endswith(".py") and ".dist-info/" not in member:
                    archive.extract(member, target)
        marker.write_text(wheel.name + "\n")


def _wheel(name: str, version: str) -> Path:
    def found() -> list[Path]:
        stem = name.replace("-", "_").lower()
        return [p for p in WHEELS.glob("*.whl") if p.name.lower().startswith(f"{stem}-{version}-")]

    if not found():
        WHEELS.mkdir(parents=True, exist_ok=True)
        cmd = [sys.executable, "-m", "pip", "download", "--no-deps", "--only-binary=:all:"]
        cmd += ["-d", str(WHEELS), f"{name}=={version}"]
        print(f"fetching {name}=={version} ...", file=sys.stderr)
        subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL)
    wheels = found()
    if len(wheels) != 1:
        raise SystemExit(f"expected one wheel for {name}=={version} in {WHEELS}, got {wheels}")
    return wheels[0]


def load_chunks() -> list[Chunk]:
    """Every chunk of every wheel-corpus file, in (package, path, line) order."""
    chunks: list[Chunk] = []
    for name in PACKAGES:
        base = CORPUS / name
        for file in sorted(base.rglob("*.py")):
            rel = file.relative_to(base).as_posix()
            chunks.extend(chunk_file(name, rel, file.read_text(encoding="utf-8")))
    return chunks


def wheel_corpus() -> Corpus:
    fetch_corpus()
    chunks = load_chunks()
    packages = ", ".join(f"{n} {v}" for n, v in PACKAGES.items())
    return Corpus(
        "wheels",
        CORPUS,
        ("*.py",),
        chunks,
        load_queries(QUERIES, chunks),
        QUERIES,
        f"{packages} (wheel sources, Python)",
    )


def repo_corpus() -> Corpus:
    whole_repos.fetch()
    chunks = whole_repos.load_chunks()
    languages = {r.name: r.language for r in whole_repos.REPOS}
    by_language: dict[str, list[str]] = defaultdict(list)
    for r in whole_repos.REPOS:
        by_language[r.language].append(f"{r.name} {r.version.split('-')[0]}")
    description = "; ".join(f"{lang}: {', '.join(names)}" for lang, names in by_language.items())
    return Corpus(
        "repos",
        whole_repos.SOURCES,
        (),
        chunks,
        load_queries(whole_repos.QUERIES, chunks, languages),
        whole_repos.QUERIES,
        description + " (whole repositories: npm tarballs and Debian -dev packages)",
    )


def held_out_corpus(queries_file: Path | None = None, split: Split = "held-out") -> Corpus:
    """Whole projects in Python and C that no ranking change was tuned on (issue 28): fit on
    `wheels` and `repos`, check here. `split`: held-out, fresh (the second split) or third."""
    specs, default, sources = whole_repos.SPLITS[split]
    whole_repos.fetch(specs)
    chunks = whole_repos.load_chunks(specs)
    languages = {r.name: r.language for r in specs}
    by_language: dict[str, list[str]] = defaultdict(list)
    for r in specs:
        by_language[r.language].append(f"{r.name} {r.version}")
    description = "; ".join(f"{lang}: {', '.join(names)}" for lang, names in by_language.items())
    path = queries_file or default
    return Corpus(
        split,
        sources,
        (),
        chunks,
        load_queries(path, chunks, languages),
        path,
        description + " (whole projects: PyPI source distributions; held out from tuning)",
    )


# -- metrics --------------------------------------------------------------------------------------


@dataclass(slots=True)
class SystemResult:
    name: str
    ranked: dict[str, list[int]] = field(default_factory=dict)  # query id -> chunk ids
    seconds: float = 0.0  # search time over all queries (index build excluded)
    setup_seconds: float = 0.0
    pending: str | None = None  # why the system did not run


def first_hit_rank(
    ids: Sequence[int], query: Query, chunks: Sequence[Chunk], *, outlines: bool = False
) -> int | None:
    for rank, cid in enumerate(ids[:K], start=1):
        if is_hit(chunks[cid], query.gold, outlines=outlines):
            return rank
    return None


def metrics(ranks: Sequence[int | None]) -> dict[str, float]:
    n = len(ranks) or 1
    out = {f"R@{k}": sum(1 for r in ranks if r is not None and r <= k) / n for k in (1, 5, 10)}
    out["MRR@10"] = sum(1 / r for r in ranks if r is not None and r <= K) / n
    return out


def first_file_rank(ids: Sequence[int], query: Query, chunks: Sequence[Chunk]) -> int | None:
    """The rank of the first gold file among the distinct files of the results, in order."""
    gold = {(g.repo, g.path) for g in query.gold}
    files: list[tuple[str, str]] = []
    for cid in ids:
        key = (chunks[cid].repo, chunks[cid].path)
        if key in files:
            continue
        files.append(key)
        if key in gold:
            return len(files) if len(files) <= K else None
    return None


def file_ranks_of(
    result: SystemResult, queries: Sequence[Query], chunks: Sequence[Chunk]
) -> dict[str, int | None]:
    return {q.id: first_file_rank(result.ranked.get(q.id, []), q, chunks) for q in queries}


def ranks_of(
    result: SystemResult, queries: Sequence[Query], chunks: Sequence[Chunk], *, outlines: bool
) -> dict[str, int | None]:
    return {
        q.id: first_hit_rank(result.ranked.get(q.id, []), q, chunks, outlines=outlines)
        for q in queries
    }


def source_first(ids: Sequence[int], roles: Sequence[str]) -> list[int]:
    """`ids` with source chunks moved ahead of the others, each group in its own order."""
    return sorted(ids[:K], key=lambda cid: roles[cid] != "source")


# -- system: ripgrep ------------------------------------------------------------------------------


def keywords(query: str) -> list[str]:
    """Lower-case content words of 3+ letters, one inflection suffix dropped from long ones."""
    out: list[str] = []
    for word in _WORD.findall(query):
        word = word.lower()
        if len(word) < 3 or word in STOPWORDS:
            continue
        if len(word) >= 5:
            for suffix in _SUFFIXES:
                if word.endswith(suffix) and len(word) - len(suffix) >= 4:
                    word = word[: -len(suffix)]
                    break
        if word not in out:
            out.append(word)
    return out


class LineIndex:
    """Maps (repo, path, line) to the smallest chunk that contains the line."""

    def __init__(self, chunks: Sequence[Chunk]) -> None:
        spans: dict[tuple[str, str], list[tuple[int, int, int]]] = defaultdict(list)
        for cid, c in enumerate(chunks):
            spans[(c.repo, c.path)].append((c.start_line, c.end_line, cid))
        self._spans = {key: sorted(v) for key, v in spans.items()}
        self._starts = {key: [s for s, _, _ in v] for key, v in self._spans.items()}

    def chunk_at(self, repo: str, path: str, line: int) -> int | None:
        spans = self._spans.get((repo, path))
        if not spans:
            return None
        upto = bisect.bisect_right(self._starts[(repo, path)], line)
        best: tuple[int, int] | None = None
        for start, end, cid in spans[:upto]:
            if start <= line <= end and (best is None or end - start < best[0]):
                best = (end - start, cid)
        return None if best is None else best[1]


def rg_search(query: str, index: LineIndex, rg: str, corpus: Corpus) -> list[int]:
    words = keywords(query)
    if not words:
        return []
    cmd = [rg, "--json", "-i", "-F", "--no-config"]
    if corpus.rg_globs:
        for glob in corpus.rg_globs:
            cmd += ["-g", glob]
    else:
        cmd += ["--hidden", "--no-ignore"]
    for word in words:
        cmd += ["-e", word]
    proc = subprocess.run([*cmd, "."], cwd=corpus.root, capture_output=True, text=True, check=False)
    if proc.returncode not in (0, 1):
        raise RuntimeError(f"rg failed ({proc.returncode}): {proc.stderr.strip()}")
    matched: dict[int, set[str]] = defaultdict(set)
    lines: Counter[int] = Counter()
    for raw in proc.stdout.splitlines():
        event = json.loads(raw)
        if event["type"] != "match" or "text" not in event["data"]["path"]:
            continue
        data = event["data"]
        repo, _, path = data["path"]["text"].removeprefix("./").partition("/")
        cid = index.chunk_at(repo, path, data["line_number"])
        if cid is None:
            continue
        found = {m["match"].get("text", "").lower() for m in data["submatches"]}
        matched[cid] |= found & set(words)
        lines[cid] += 1
    order = sorted(matched, key=lambda cid: (-len(matched[cid]), -lines[cid], cid))
    return order[:K]


def run_rg(corpus: Corpus) -> SystemResult:
    result = SystemResult("rg")
    t0 = time.perf_counter()
    index, rg = LineIndex(corpus.chunks), ripgrep_binary()
    result.setup_seconds = time.perf_counter() - t0
    t0 = time.perf_counter()
    for q in corpus.queries:
        result.ranked[q.id] = rg_search(q.text, index, rg, corpus)
    result.seconds = time.perf_counter() - t0
    return result


# -- system: BM25 (bm25s) -------------------------------------------------------------------------


def split_identifiers(text: str) -> str:
    """The text followed by the parts of its compound identifiers (snake_case, camelCase)."""
    parts: list[str] = []
    for ident in _IDENT.findall(text):
        pieces = [p for p in re.split(r"_+", ident) for p in _CAMEL.split(p)]
        pieces = [p for p in pieces if p]
        if len(pieces) > 1:
            parts.extend(pieces)
    return text + "\n" + " ".join(parts) if parts else text


def run_bm25(
    name: str, corpus: Corpus, prepare: Callable[[str], str] = lambda s: s
) -> SystemResult:
    import bm25s

    result = SystemResult(name)
    t0 = time.perf_counter()
    tokens = bm25s.tokenize(
        [prepare(c.embed_text) for c in corpus.chunks], stopwords="en", show_progress=False
    )
    retriever = bm25s.BM25()
    retriever.index(tokens, show_progress=False)
    vocab = set(tokens.vocab)
    result.setup_seconds = time.perf_counter() - t0
    t0 = time.perf_counter()
    for q in corpus.queries:
        words = bm25s.tokenize(
            [prepare(q.text)], stopwords="en", return_ids=False, show_progress=False
        )[0]
        words = [t for t in words if t in vocab]
        if not words:
            result.ranked[q.id] = []
            continue
        docs, scores = retriever.retrieve([words], k=K, show_progress=False)
        result.ranked[q.id] = [int(d) for d, s in zip(docs[0], scores[0], strict=True) if s > 0]
    result.seconds = time.perf_counter() - t0
    return result


# -- systems: Threadline's vector store -----------------------------------------------------------


def store_available() -> str | None:
    """None when core.code.vectors can be used, else why not."""
    if importlib.util.find_spec("core.code.vectors") is None:
        return "core/code/vectors.py is not in the repo yet"
    try:
        from core.code.vectors import VectorStore  # noqa: F401
    except Exception as exc:
        return f"core.code.vectors does not import: {exc!r}"
    return None


class VectorCache:
    """Dense vectors by model and embed text (SHA-1), in one .npy plus a key list per model;
    texts not seen before are embedded and appended (saved every few batches, so an
    interrupted run keeps what it embedded)."""

    SAVE_EVERY = 1024

    def __init__(self, embedder: Any) -> None:
        self.embedder = embedder
        slug = re.sub(r"[^A-Za-z0-9]+", "_", f"{embedder.name}-{embedder.dimension}").strip("_")
        self._rows_path = VECTORS / f"{slug}.npy"
        self._keys_path = VECTORS / f"{slug}.keys"
        self._rows = np.zeros((0, embedder.dimension), dtype=np.float32)
        self._keys: list[str] = []
        if self._rows_path.exists() and self._keys_path.exists():
            rows = np.load(self._rows_path)
            keys = self._keys_path.read_text().split()
            if rows.shape[0] == len(keys):
                self._rows, self._keys = rows.astype(np.float32), keys
        self._index = {k: i for i, k in enumerate(self._keys)}

    @staticmethod
    def key(text: str) -> str:
        return hashlib.sha1(text.encode("utf-8"), usedforsecurity=False).hexdigest()

    def _save(self) -> None:
        VECTORS.mkdir(parents=True, exist_ok=True)
        tmp_rows = self._rows_path.with_suffix(".tmp.npy")
        np.save(tmp_rows, self._rows)
        tmp_keys = self._keys_path.with_suffix(".keys.tmp")
        tmp_keys.write_text("\n".join(self._keys) + "\n")
        tmp_rows.replace(self._rows_path)
        tmp_keys.replace(self._keys_path)

    def vectors(self, texts: Sequence[str]) -> np.ndarray:
        """(n, dim) float32 rows for `texts`, embedding only those not cached yet."""
        keys = [self.key(t) for t in texts]
        missing: dict[str, str] = {}
        for k, t in zip(keys, texts, strict=True):
            if k not in self._index and k not in missing:
                missing[k] = t
        if missing:
            todo = list(missing.items())
            pending: list[np.ndarray] = []
            pending_keys: list[str] = []
            t0 = time.perf_counter()
            for start in range(0, len(todo), 64):
                batch = todo[start : start + 64]
                pending.append(self.embedder.embed([t for _, t in batch]))
                pending_keys += [k for k, _ in batch]
                done = start + len(batch)
                rate = done / (time.perf_counter() - t0)
                print(f"\rembedding {done}/{len(todo)} ({rate:.1f}/s)", end="", file=sys.stderr)
                if len(pending_keys) >= self.SAVE_EVERY or done == len(todo):
                    self._append(np.vstack(pending).astype(np.float32), pending_keys)
                    pending, pending_keys = [], []
            print(file=sys.stderr)
        return self._rows[[self._index[k] for k in keys]]

    def _append(self, rows: np.ndarray, keys: list[str]) -> None:
        self._rows = np.vstack([self._rows, rows])
        for k in keys:
            self._index[k] = len(self._keys)
            self._keys.append(k)
        self._save()


# The store's constructor is about to change (embedded Qdrant Edge replacing local mode): these
# three functions are the only code that touches VectorStore.


async def open_store(embedder: Any, workdir: Path) -> Any:
    """A fresh, empty store for one corpus (in memory when the store offers that)."""
    from core.code.vectors import VectorStore

    if hasattr(VectorStore, "memory"):
        return VectorStore.memory(embedder)
    return VectorStore.local(workdir / "store", embedder)


async def fill_store(store: Any, chunks: Sequence[Chunk], vectors: np.ndarray) -> None:
    await store.upsert(list(enumerate(chunks)), vectors=vectors)


async def search_store(store: Any, query: str, system: str, chunks: Sequence[Chunk]) -> list[int]:
    async def texts(ids: Sequence[int]) -> dict[int, str]:  # as CodeSearch reads them from SQL
        return {i: chunks[i].text for i in ids}

    if system == "hybrid-unquoted":
        hits = await store.search(query, k=K, mode="hybrid")
    else:
        hits = await store.search(query, k=K, mode=system, texts=texts)
    return [int(h.chunk_id) for h in hits][:K]


def make_embedder(kind: str) -> Any:
    """`local`: all-MiniLM-L6-v2 in this process, the default install's model. `settings`: the
    embedder Threadline's own settings build (`EMBEDDINGS_PROVIDER=openai` with
    `EMBEDDINGS_URL`, `EMBEDDINGS_MODEL`, `EMBEDDINGS_DIMENSION`), so a code-trained model served
    behind an OpenAI-compatible endpoint is measured on the same questions, its vectors cached
    apart under its own name."""
    if kind == "settings":
        from bot.code_parts import build_embedder
        from config.settings import Settings

        return build_embedder(Settings())
    from core.code.embeddings import LocalMiniLM

    return LocalMiniLM()


async def _run_store(modes: Sequence[str], corpus: Corpus, embedder: Any) -> list[SystemResult]:
    results = [SystemResult(mode) for mode in modes]
    t0 = time.perf_counter()
    vectors = VectorCache(embedder).vectors([c.embed_text for c in corpus.chunks])
    embed_seconds = time.perf_counter() - t0
    with tempfile.TemporaryDirectory(dir=CACHE) as workdir:
        store = await open_store(embedder, Path(workdir))
        try:
            t0 = time.perf_counter()
            await fill_store(store, corpus.chunks, vectors)
            upsert_seconds = time.perf_counter() - t0
            for result in results:
                result.setup_seconds = embed_seconds + upsert_seconds
                t0 = time.perf_counter()
                for q in corpus.queries:
                    result.ranked[q.id] = await search_store(
                        store, q.text, result.name, corpus.chunks
                    )
                result.seconds = time.perf_counter() - t0
        finally:
            await store.close()
    return results


def run_store(modes: Sequence[str], corpus: Corpus, embedder: Any) -> list[SystemResult]:
    why = store_available()
    if why is not None:
        return [SystemResult(mode, pending=why) for mode in modes]
    return asyncio.run(_run_store(modes, corpus, embedder))


# -- report ---------------------------------------------------------------------------------------


@dataclass(slots=True)
class Report:
    corpus: Corpus
    results: list[SystemResult]
    ranks: dict[str, dict[str, int | None]]  # system -> query id -> rank
    overlap_ranks: dict[str, dict[str, int | None]]  # the same, class outlines always counting
    file_ranks: dict[str, dict[str, int | None]]  # system -> query id -> rank of the gold file

    @property
    def chunks(self) -> list[Chunk]:
        return self.corpus.chunks

    @property
    def queries(self) -> list[Query]:
        return self.corpus.located

    def ran(self) -> list[SystemResult]:
        return [r for r in self.results if r.pending is None]

    def result(self, system: str) -> SystemResult:
        return next(r for r in self.results if r.name == system)

    def ranks_for(self, system: str, queries: Sequence[Query]) -> list[int | None]:
        return [self.ranks[system][q.id] for q in queries]


def corpus_facts(corpus: Corpus) -> dict[str, Any]:
    chunks = corpus.chunks
    files = {(c.repo, c.path) for c in chunks}
    file_roles = Counter(whole_repos.role_of(path) for _, path in files)
    return {
        "name": corpus.name,
        "description": corpus.description,
        "files": len(files),
        "files_by_role": dict(file_roles),
        "chunks": len(chunks),
        "chunks_by_repo": dict(Counter(c.repo for c in chunks)),
        "chunks_by_kind": dict(Counter(c.kind for c in chunks)),
        "chunks_by_role": dict(Counter(corpus.roles)),
        "queries": len(corpus.queries),
        "queries_by_language": dict(Counter(q.language for q in corpus.located)),
        "queries_asking": dict(Counter(q.asks for q in corpus.asking)),
    }


def _row(name: str, m: dict[str, float], n: int, extra: str = "") -> str:
    return (
        f"| {name}{extra} | {m['R@1']:.3f} | {m['R@5']:.3f} | {m['R@10']:.3f} "
        f"| {m['MRR@10']:.3f} | {n} |"
    )


def results_table(report: Report, *, outlines: bool = False) -> str:
    lines = [
        "| system | R@1 | R@5 | R@10 | MRR@10 | queries |",
        "|---|---:|---:|---:|---:|---:|",
    ]
    ranks = report.overlap_ranks if outlines else report.ranks
    for r in report.results:
        if r.pending is not None:
            lines.append(f"| {r.name} | – | – | – | – | pending: {r.pending} |")
            continue
        values = [ranks[r.name][q.id] for q in report.queries]
        lines.append(_row(r.name, metrics(values), len(values)))
    return "\n".join(lines)


def language_table(report: Report) -> str:
    languages = sorted({q.language for q in report.queries})
    lines = [
        "| system | language | R@1 | R@5 | R@10 | MRR@10 | queries |",
        "|---|---|---:|---:|---:|---:|---:|",
    ]
    for language in languages:
        subset = [q for q in report.queries if q.language == language]
        for r in report.ran():
            m = metrics(report.ranks_for(r.name, subset))
            lines.append(_row(r.name, m, len(subset), f" | {language}"))
    return "\n".join(lines)


def file_table(report: Report) -> str:
    languages = sorted({q.language for q in report.queries})
    lines = [
        "| system | language | file R@1 | file R@5 | file R@10 | file MRR@10 | queries |",
        "|---|---|---:|---:|---:|---:|---:|",
    ]
    for language in ("all", *languages) if len(languages) > 1 else languages:
        subset = [q for q in report.queries if language in ("all", q.language)]
        for r in report.ran():
            m = metrics([report.file_ranks[r.name][q.id] for q in subset])
            lines.append(_row(r.name, m, len(subset), f" | {language}"))
    return "\n".join(lines)


def style_table(report: Report) -> str:
    styles = sorted({q.style for q in report.queries})
    counts = Counter(q.style for q in report.queries)
    head = " | ".join(f"{s} R@10 / MRR@10 ({counts[s]})" for s in styles)
    lines = [f"| system | {head} |", "|---|" + "---:|" * len(styles)]
    for r in report.ran():
        cells = []
        for style in styles:
            m = metrics(report.ranks_for(r.name, [q for q in report.queries if q.style == style]))
            cells.append(f"{m['R@10']:.3f} / {m['MRR@10']:.3f}")
        lines.append(f"| {r.name} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def role_shares(report: Report, system: str, queries: Sequence[Query]) -> dict[str, float]:
    """Share of each role among the top-`TOP_ROLES` results of `system` over `queries`."""
    counts: Counter[str] = Counter()
    for q in queries:
        for cid in report.result(system).ranked.get(q.id, [])[:TOP_ROLES]:
            counts[report.corpus.roles[cid]] += 1
    total = sum(counts.values()) or 1
    return {role: counts[role] / total for role in ROLES}


def role_table(report: Report) -> str:
    head = " | ".join(ROLES)
    lines = [f"| system | {head} |", "|---|" + "---:|" * len(ROLES)]
    for r in report.ran():
        shares = role_shares(report, r.name, report.queries)
        lines.append(f"| {r.name} | " + " | ".join(f"{shares[x]:.0%}" for x in ROLES) + " |")
    return "\n".join(lines)


def asking_table(report: Report) -> str:
    asking = report.corpus.asking
    lines = [
        "| system | R@1 | R@5 | R@10 | MRR@10 | queries | top-5 share of the asked role |",
        "|---|---:|---:|---:|---:|---:|---:|",
    ]
    for r in report.ran():
        m = metrics(report.ranks_for(r.name, asking))
        wanted = 0
        total = 0
        for q in asking:
            top = r.ranked.get(q.id, [])[:TOP_ROLES]
            wanted += sum(1 for cid in top if report.corpus.roles[cid] == q.asks)
            total += len(top)
        lines.append(
            _row(r.name, m, len(asking)).rstrip(" |") + f" | {wanted / (total or 1):.0%} |"
        )
    return "\n".join(lines)


def source_first_table(report: Report) -> str:
    lines = [
        "| system | R@5 | MRR@10 | R@5 source first | MRR@10 source first |",
        "|---|---:|---:|---:|---:|",
    ]
    for r in report.ran():
        plain = metrics(report.ranks_for(r.name, report.queries))
        reordered = [
            first_hit_rank(
                source_first(r.ranked.get(q.id, []), report.corpus.roles), q, report.chunks
            )
            for q in report.queries
        ]
        m = metrics(reordered)
        lines.append(
            f"| {r.name} | {plain['R@5']:.3f} | {plain['MRR@10']:.3f} "
            f"| {m['R@5']:.3f} | {m['MRR@10']:.3f} |"
        )
    return "\n".join(lines)


def timing_lines(report: Report) -> list[str]:
    out = []
    for r in report.ran():
        per_query = 1000 * r.seconds / max(1, len(report.corpus.queries))
        out.append(f"- {r.name}: setup {r.setup_seconds:.1f} s, {per_query:.1f} ms/query")
    return out


def missed_by_all(report: Report) -> list[Query]:
    ran = report.ran()
    if not ran:
        return []
    return [q for q in report.queries if all(report.ranks[r.name][q.id] is None for r in ran)]


def misses_text(report: Report) -> str:
    out: list[str] = []
    for r in report.ran():
        missed = [q for q in report.corpus.queries if report.ranks[r.name][q.id] is None]
        out.append(
            f"\n### {report.corpus.name} / {r.name}: {len(missed)} misses (no hit in top {K})"
        )
        for q in missed:
            out.append(f"- {q.id} {q.text!r}")
            out.append(f"    gold: {'; '.join(g.label for g in q.gold)}")
            for cid in r.ranked.get(q.id, [])[:3]:
                c = report.chunks[cid]
                role = report.corpus.roles[cid]
                out.append(
                    f"    got:  {c.repo}:{c.path}:{c.symbol.split('(')[0]} ({c.kind}, {role})"
                )
    return "\n".join(out)


def corpus_lines(report: Report) -> list[str]:
    facts = corpus_facts(report.corpus)
    out = [
        f"- corpus **{facts['name']}**: {facts['description']}",
        f"- {facts['files']} files {facts['files_by_role']}; {facts['chunks']} chunks by role "
        f"{facts['chunks_by_role']}, by kind {facts['chunks_by_kind']}",
        f"- queries: {len(report.queries)} where-in-the-code questions by language "
        f"{facts['queries_by_language']} (styles {dict(Counter(q.style for q in report.queries))})"
        + (
            f", plus {len(report.corpus.asking)} asking for another role {facts['queries_asking']}"
            if report.corpus.asking
            else ""
        )
        + f"; {report.corpus.queries_file.relative_to(ROOT)}",
    ]
    if report.corpus.name == "repos":
        out.append(f"- chunks by repo: {facts['chunks_by_repo']}")
    return out


def summary_markdown(report: Report) -> str:
    missed = missed_by_all(report)
    parts = [
        f"### Corpus: {report.corpus.name}",
        "",
        *corpus_lines(report),
        "",
        "Where-in-the-code questions (gold in source files):",
        "",
        results_table(report),
        "",
    ]
    if len({q.language for q in report.queries}) > 1:
        parts += ["By language:", "", language_table(report), ""]
    parts += [
        "Files (the first gold file's rank among the distinct files of the top 10, by language):",
        "",
        file_table(report),
        "",
    ]
    if any(role != "source" for role in report.corpus.roles):  # else every share is 100%
        parts += [
            f"Roles of the top-{TOP_ROLES} results (where-in-the-code questions; role from the "
            "path):",
            "",
            role_table(report),
            "",
            "Diagnostic, not a system: the same top 10 with source chunks moved first:",
            "",
            source_first_table(report),
            "",
        ]
    if report.corpus.asking:
        parts += [
            "Questions that ask for a test, docs or an example (gold in files of that role):",
            "",
            asking_table(report),
            "",
        ]
    parts += [
        "By query style (R@10 / MRR@10):",
        "",
        style_table(report),
        "",
        "Plain overlap rule (a class outline chunk also counts for a method inside it):",
        "",
        results_table(report, outlines=True),
        "",
        *timing_lines(report),
        "",
        f"Missed by every system that ran ({len(missed)}): "
        + (", ".join(f"{q.id} ({q.text!r})" for q in missed) or "none"),
    ]
    return "\n".join(parts)


def markdown_section(reports: Sequence[Report], invocation: str, embedder: str) -> str:
    facts = "\n".join(f"- {k}: {v}" for k, v in machine_facts().items())
    facts += f"\n- dense embedder: {embedder}"
    stamp = datetime.now(UTC).strftime("%Y-%m-%d %H:%M UTC")
    body = "\n\n".join(summary_markdown(r) for r in reports)
    return (
        f"## Code search quality — {stamp}\n\n"
        f"Command: `{invocation}`\n\n"
        f"{facts}\n\n"
        f"{body}\n\n"
        "Hit = a top-10 chunk in a gold location's file whose lines overlap the gold range (class "
        "outline chunks count only for class or line-range gold). R@k = share of queries with a "
        "hit in the top k; MRR@10 = mean 1/rank of the first hit. Setup = index build (dense: "
        "embedding, or loading cached vectors, plus upsert). Method details: the docstring of "
        "bench/search_quality.py.\n"
    )


def metrics_json(report: Report) -> dict[str, Any]:
    systems: dict[str, Any] = {}
    for r in report.results:
        if r.pending is not None:
            systems[r.name] = {"pending": r.pending}
            continue
        located = report.ranks_for(r.name, report.queries)
        overlap = metrics([report.overlap_ranks[r.name][q.id] for q in report.queries])
        by_language = {
            lang: metrics(
                report.ranks_for(r.name, [q for q in report.queries if q.language == lang])
            )
            for lang in sorted({q.language for q in report.queries})
        }
        by_style = {
            style: metrics(
                report.ranks_for(r.name, [q for q in report.queries if q.style == style])
            )
            for style in sorted({q.style for q in report.queries})
        }
        files = metrics([report.file_ranks[r.name][q.id] for q in report.queries])
        files_by_language = {
            lang: metrics(
                [report.file_ranks[r.name][q.id] for q in report.queries if q.language == lang]
            )
            for lang in sorted({q.language for q in report.queries})
        }
        systems[r.name] = {
            **metrics(located),
            "by_language": by_language,
            "by_style": by_style,
            "files": files,
            "files_by_language": files_by_language,
            "top5_roles": role_shares(report, r.name, report.queries),
            "asking": metrics(report.ranks_for(r.name, report.corpus.asking))
            if report.corpus.asking
            else None,
            "overlap_rule": overlap,
            "queries": len(located),
            "ms_per_query": 1000 * r.seconds / max(1, len(report.corpus.queries)),
            "setup_seconds": r.setup_seconds,
            "ranks": report.ranks[r.name],
        }
    return {"corpus": corpus_facts(report.corpus), "k": K, "systems": systems}


# -- main -----------------------------------------------------------------------------------------


def run_systems(names: Sequence[str], corpus: Corpus, embedder: Any) -> list[SystemResult]:
    results: dict[str, SystemResult] = {}
    if "rg" in names:
        results["rg"] = run_rg(corpus)
    if "bm25s" in names:
        results["bm25s"] = run_bm25("bm25s", corpus)
    if "bm25s-split" in names:
        results["bm25s-split"] = run_bm25("bm25s-split", corpus, split_identifiers)
    modes = [m for m in STORE_SYSTEMS if m in names]
    if modes:
        for result in run_store(modes, corpus, embedder):
            results[result.name] = result
    return [results[n] for n in ALL_SYSTEMS if n in results]


def evaluate(names: Sequence[str], corpus: Corpus, embedder: Any) -> Report:
    results = run_systems(names, corpus, embedder)
    ran = [r for r in results if r.pending is None]
    queries, chunks = corpus.queries, corpus.chunks
    ranks = {r.name: ranks_of(r, queries, chunks, outlines=False) for r in ran}
    overlap = {r.name: ranks_of(r, queries, chunks, outlines=True) for r in ran}
    files = {r.name: file_ranks_of(r, queries, chunks) for r in ran}
    return Report(corpus, results, ranks, overlap, files)


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--corpus", default=",".join(DEFAULT_CORPORA), help="comma-separated")
    parser.add_argument("--systems", default=",".join(ALL_SYSTEMS), help="comma-separated")
    parser.add_argument(
        "--embedder",
        choices=("local", "settings"),
        default="local",
        help="dense vectors: all-MiniLM-L6-v2 in process, or the model Threadline's settings name",
    )
    parser.add_argument("--verbose", action="store_true", help="list each system's misses")
    parser.add_argument("--json", action="store_true", help="print metrics as JSON only")
    parser.add_argument("--append", type=Path, metavar="FILE", help="append results (Markdown)")
    parser.add_argument(
        "--check-queries",
        type=Path,
        metavar="FILE",
        help="resolve FILE's gold against the held-out corpus (or --corpus SPLIT) and stop",
    )
    args = parser.parse_args(argv)
    args.systems = [s.strip() for s in args.systems.split(",") if s.strip()]
    unknown = set(args.systems) - set(ALL_SYSTEMS)
    if unknown:
        parser.error(f"unknown systems {sorted(unknown)}; known: {', '.join(ALL_SYSTEMS)}")
    args.corpus = [c.strip() for c in args.corpus.split(",") if c.strip()]
    unknown = set(args.corpus) - set(CORPORA)
    if unknown:
        parser.error(f"unknown corpora {sorted(unknown)}; known: {', '.join(CORPORA)}")
    return args


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    if args.check_queries is not None:
        split: Split = "held-out"
        if len(args.corpus) == 1 and args.corpus[0] in whole_repos.SPLITS:
            split = cast(Split, args.corpus[0])
        checked = held_out_corpus(args.check_queries, split)
        styles = Counter(q.style for q in checked.queries)
        print(f"{len(checked.queries)} queries resolve; styles {dict(styles)}")
        return 0
    builders: dict[str, Callable[[], Corpus]] = {
        "wheels": wheel_corpus,
        "repos": repo_corpus,
        "held-out": held_out_corpus,
        "fresh": lambda: held_out_corpus(split="fresh"),
        "third": lambda: held_out_corpus(split="third"),
        "fourth": lambda: held_out_corpus(split="fourth"),
        "fifth": lambda: held_out_corpus(split="fifth"),
    }
    embedder = make_embedder(args.embedder)
    print(f"embedder: {embedder.name} ({embedder.dimension} dimensions)", file=sys.stderr)
    reports = []
    for name in args.corpus:
        t0 = time.perf_counter()
        corpus = builders[name]()
        print(
            f"{name}: {len(corpus.chunks)} chunks, {len(corpus.queries)} queries "
            f"({time.perf_counter() - t0:.1f} s to load)",
            file=sys.stderr,
        )
        reports.append(evaluate(args.systems, corpus, embedder))
    if args.json:
        print(
            json.dumps(
                {"threadline": threadline_version(), "corpora": [metrics_json(r) for r in reports]},
                indent=2,
            )
        )
    else:
        print("\n\n".join(summary_markdown(r) for r in reports))
        if args.verbose:
            print("\n".join(misses_text(r) for r in reports))
    if args.append:
        invocation = shlex.join([".venv/bin/python", "bench/search_quality.py", *sys.argv[1:]])
        model = f"{embedder.name} ({embedder.dimension} dimensions)"
        append_section(args.append, markdown_section(reports, invocation, model))
        print(f"appended to {args.append}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
