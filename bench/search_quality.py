"""Code-search retrieval quality: ripgrep, BM25, dense, sparse and hybrid, side by side.

    .venv/bin/python bench/search_quality.py [--verbose] [--json] [--append bench/RESULTS.md]
        [--systems rg,bm25s,bm25s-split,dense,sparse,hybrid]

Corpus: the pure-Python sources of a few pinned PyPI packages (`PACKAGES`). The first run fetches
their wheels with `pip download --no-deps` into bench/.cache/wheels and unpacks the `.py` files
into bench/.cache/corpus/<package>/; later runs reuse them. Every file is cut with Threadline's
`chunk_file(repo=<package>, path=<path inside the unpacked wheel>, text)`; all systems rank
these same chunks and return their top 10.

Queries: bench/search_queries.json, natural-language questions written from reading the code
(before any system was run), each with one or more gold locations (package, path, and a symbol
or an explicit line range). A symbol is resolved at load time to the chunk(s) whose symbol (its
part before the parameter list) is that name or ends with "." + that name; a gold location that
resolves to nothing stops the run.

A retrieved chunk is a **hit** when it has a gold location's repo and path and its line range
overlaps the gold range. A class chunk (the class outline: header and member signatures,
bodies elided) only counts when the gold location is itself a class or a line range; it does not
count for a method inside it (a second table applies the plain overlap rule, where it does).
A query's rank is that of its first hit in the top 10. Recall@k = share of queries with a hit in
the top k; MRR@10 = mean of 1/rank (0 past 10).

Systems:

- **rg**: keyword search with the `rg` binary. Keywords are the query's words, lower-cased,
  at least 3 characters, minus English/question stopwords; words of 5+ letters lose one
  inflection suffix (-ing, -ed, -es, -s) so "compressed" also finds "compress". One
  `rg --json -i -F -e kw1 -e kw2 ...` over the corpus per query; each matching line is mapped to
  the smallest chunk that contains it; chunks are ranked by distinct keywords matched, then by
  matching lines, then corpus order.
- **bm25s**: the bm25s package (defaults: Lucene BM25, k1=1.5, b=0.75) over `chunk.embed_text`,
  its default tokeniser with English stopwords.
- **bm25s-split**: the same with identifiers also split into words (`send_with_gzip`,
  `isAllowed` -> send, with, gzip / is, allowed) on both sides, originals kept.
- **dense**, **sparse**, **hybrid**: Threadline's `VectorStore` (core/code/vectors.py, embedded
  Qdrant in memory) with `search(mode=...)`; dense vectors from `LocalMiniLM`
  (all-MiniLM-L6-v2), computed once and cached in bench/.cache/vectors-<hash>.npy (the hash
  covers the model name and every embed text).

`--json` prints the metrics as JSON; `--verbose` lists each system's misses; `--append FILE`
appends a dated Markdown section (command, machine, corpus, tables) to FILE.
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
import subprocess
import sys
import time
import zipfile
from collections import Counter, defaultdict
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bench.machine import append_section, machine_facts, threadline_version  # noqa: E402
from core.code.chunking import Chunk, chunk_file  # noqa: E402
from core.code.tools import ripgrep_binary  # noqa: E402

BENCH = ROOT / "bench"
CACHE = BENCH / ".cache"
WHEELS = CACHE / "wheels"
CORPUS = CACHE / "corpus"
QUERIES = BENCH / "search_queries.json"
K = 10

PACKAGES: dict[str, str] = {
    "click": "8.1.7",
    "httpx": "0.28.1",
    "starlette": "0.41.3",
    "werkzeug": "3.1.3",
}
ALL_SYSTEMS = ("rg", "bm25s", "bm25s-split", "dense", "sparse", "hybrid")
STORE_SYSTEMS = ("dense", "sparse", "hybrid")

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


# -- corpus ---------------------------------------------------------------------------------------


def fetch_corpus() -> None:
    """Download the pinned wheels (once) and unpack their .py files under CORPUS/<package>."""
    for name, version in PACKAGES.items():
        target = CORPUS / name
        marker = target / f".unpacked-{version}"
        if marker.exists():
            continue
        wheel = _wheel(name, version)
        if target.exists():
            for old in sorted(target.rglob("*"), reverse=True):
                old.unlink() if old.is_file() else old.rmdir()
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
    """Every chunk of every corpus file, in (package, path, line) order; index = chunk id."""
    chunks: list[Chunk] = []
    for name in PACKAGES:
        base = CORPUS / name
        for file in sorted(base.rglob("*.py")):
            rel = file.relative_to(base).as_posix()
            chunks.extend(chunk_file(name, rel, file.read_text(encoding="utf-8")))
    return chunks


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


def _bare_symbol(chunk: Chunk) -> str:
    return chunk.symbol.split("(", 1)[0]


def resolve_gold(spec: dict[str, Any], by_file: dict[tuple[str, str], list[Chunk]]) -> GoldRange:
    """A gold location as a line range; raises ValueError when it does not resolve."""
    repo, path = spec["repo"], spec["path"]
    in_file = by_file.get((repo, path))
    if not in_file:
        raise ValueError(f"no chunks for {repo}:{path}")
    if "lines" in spec:
        start, end = spec["lines"]
        last = max(c.end_line for c in in_file)
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


def load_queries(chunks: Sequence[Chunk]) -> list[Query]:
    by_file: dict[tuple[str, str], list[Chunk]] = defaultdict(list)
    for c in chunks:
        by_file[(c.repo, c.path)].append(c)
    raw = json.loads(QUERIES.read_text(encoding="utf-8"))["queries"]
    queries: list[Query] = []
    errors: list[str] = []
    for item in raw:
        gold: list[GoldRange] = []
        for spec in item["gold"]:
            try:
                gold.append(resolve_gold(spec, by_file))
            except ValueError as exc:
                errors.append(f"{item['id']}: {exc}")
        queries.append(Query(item["id"], item["query"], item["style"], tuple(gold)))
    ids = Counter(q.id for q in queries)
    errors += [f"duplicate query id {i}" for i, n in ids.items() if n > 1]
    if errors:
        raise SystemExit("unresolved gold locations:\n  " + "\n  ".join(errors))
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


def ranks_of(
    result: SystemResult, queries: Sequence[Query], chunks: Sequence[Chunk], *, outlines: bool
) -> dict[str, int | None]:
    return {
        q.id: first_hit_rank(result.ranked.get(q.id, []), q, chunks, outlines=outlines)
        for q in queries
    }


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


def rg_search(query: str, index: LineIndex, rg: str) -> list[int]:
    words = keywords(query)
    if not words:
        return []
    cmd = [rg, "--json", "-i", "-F", "--no-config", "-g", "*.py"]
    for word in words:
        cmd += ["-e", word]
    proc = subprocess.run([*cmd, "."], cwd=CORPUS, capture_output=True, text=True, check=False)
    if proc.returncode not in (0, 1):
        raise RuntimeError(f"rg failed ({proc.returncode}): {proc.stderr.strip()}")
    matched: dict[int, set[str]] = defaultdict(set)
    lines: Counter[int] = Counter()
    for raw in proc.stdout.splitlines():
        event = json.loads(raw)
        if event["type"] != "match":
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


def run_rg(queries: Sequence[Query], chunks: Sequence[Chunk]) -> SystemResult:
    result = SystemResult("rg")
    t0 = time.perf_counter()
    index, rg = LineIndex(chunks), ripgrep_binary()
    result.setup_seconds = time.perf_counter() - t0
    t0 = time.perf_counter()
    for q in queries:
        result.ranked[q.id] = rg_search(q.text, index, rg)
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
    name: str,
    queries: Sequence[Query],
    chunks: Sequence[Chunk],
    prepare: Callable[[str], str] = lambda s: s,
) -> SystemResult:
    import bm25s

    result = SystemResult(name)
    t0 = time.perf_counter()
    corpus = bm25s.tokenize(
        [prepare(c.embed_text) for c in chunks], stopwords="en", show_progress=False
    )
    retriever = bm25s.BM25()
    retriever.index(corpus, show_progress=False)
    vocab = set(corpus.vocab)
    result.setup_seconds = time.perf_counter() - t0
    t0 = time.perf_counter()
    for q in queries:
        tokens = bm25s.tokenize(
            [prepare(q.text)], stopwords="en", return_ids=False, show_progress=False
        )[0]
        tokens = [t for t in tokens if t in vocab]
        if not tokens:
            result.ranked[q.id] = []
            continue
        docs, scores = retriever.retrieve([tokens], k=K, show_progress=False)
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


def dense_vectors(chunks: Sequence[Chunk], embedder: Any) -> np.ndarray:
    """(n, dim) float32 vectors of the chunks' embed texts, cached on disk by content hash."""
    digest = hashlib.sha256(embedder.name.encode())
    for c in chunks:
        digest.update(b"\0" + c.embed_text.encode("utf-8"))
    path = CACHE / f"vectors-{digest.hexdigest()[:20]}.npy"
    if path.exists():
        cached = np.load(path)
        if cached.shape[0] == len(chunks):
            return cached
    texts = [c.embed_text for c in chunks]
    rows: list[np.ndarray] = []
    t0 = time.perf_counter()
    for start in range(0, len(texts), 64):
        rows.append(embedder.embed(texts[start : start + 64]))
        done = min(start + 64, len(texts))
        rate = done / (time.perf_counter() - t0)
        print(f"\rembedding {done}/{len(texts)} ({rate:.1f}/s)", end="", file=sys.stderr)
    print(file=sys.stderr)
    vectors = np.vstack(rows).astype(np.float32)
    CACHE.mkdir(parents=True, exist_ok=True)
    np.save(path, vectors)
    return vectors


async def _run_store(
    modes: Sequence[str], queries: Sequence[Query], chunks: Sequence[Chunk]
) -> list[SystemResult]:
    from core.code.embeddings import LocalMiniLM
    from core.code.vectors import VectorStore

    embedder = LocalMiniLM()
    results = [SystemResult(mode) for mode in modes]
    t0 = time.perf_counter()
    vectors = dense_vectors(chunks, embedder)
    embed_seconds = time.perf_counter() - t0
    store = VectorStore.memory(embedder)
    try:
        t0 = time.perf_counter()
        await store.upsert(list(enumerate(chunks)), vectors=vectors)
        upsert_seconds = time.perf_counter() - t0
        for result in results:
            result.setup_seconds = embed_seconds + upsert_seconds
            t0 = time.perf_counter()
            for q in queries:
                hits = await store.search(q.text, k=K, mode=result.name)
                result.ranked[q.id] = [int(h.chunk_id) for h in hits][:K]
            result.seconds = time.perf_counter() - t0
    finally:
        await store.close()
    return results


def run_store(
    modes: Sequence[str], queries: Sequence[Query], chunks: Sequence[Chunk]
) -> list[SystemResult]:
    why = store_available()
    if why is not None:
        return [SystemResult(mode, pending=why) for mode in modes]
    return asyncio.run(_run_store(modes, queries, chunks))


# -- report ---------------------------------------------------------------------------------------


@dataclass(slots=True)
class Report:
    chunks: list[Chunk]
    queries: list[Query]
    results: list[SystemResult]
    ranks: dict[str, dict[str, int | None]]  # system -> query id -> rank
    overlap_ranks: dict[str, dict[str, int | None]]  # the same, class outlines always counting

    def ran(self) -> list[SystemResult]:
        return [r for r in self.results if r.pending is None]


def corpus_facts(chunks: Sequence[Chunk]) -> dict[str, Any]:
    files = {(c.repo, c.path) for c in chunks}
    return {
        "packages": {name: version for name, version in PACKAGES.items()},
        "files": len(files),
        "chunks": len(chunks),
        "chunks_by_package": dict(Counter(c.repo for c in chunks)),
        "chunks_by_kind": dict(Counter(c.kind for c in chunks)),
    }


def results_table(report: Report, *, outlines: bool = False) -> str:
    lines = [
        "| system | R@1 | R@5 | R@10 | MRR@10 | queries |",
        "|---|---:|---:|---:|---:|---:|",
    ]
    for r in report.results:
        if r.pending is not None:
            lines.append(f"| {r.name} | – | – | – | – | pending: {r.pending} |")
            continue
        ranks = report.overlap_ranks if outlines else report.ranks
        m = metrics(list(ranks[r.name].values()))
        lines.append(
            f"| {r.name} | {m['R@1']:.3f} | {m['R@5']:.3f} | {m['R@10']:.3f} "
            f"| {m['MRR@10']:.3f} | {len(report.queries)} |"
        )
    return "\n".join(lines)


def style_table(report: Report) -> str:
    styles = sorted({q.style for q in report.queries})
    counts = Counter(q.style for q in report.queries)
    head = " | ".join(f"{s} R@10 / MRR@10 ({counts[s]})" for s in styles)
    lines = [f"| system | {head} |", "|---|" + "---:|" * len(styles)]
    for r in report.ran():
        cells = []
        for style in styles:
            ranks = [report.ranks[r.name][q.id] for q in report.queries if q.style == style]
            m = metrics(ranks)
            cells.append(f"{m['R@10']:.3f} / {m['MRR@10']:.3f}")
        lines.append(f"| {r.name} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def timing_lines(report: Report) -> list[str]:
    out = []
    for r in report.ran():
        per_query = 1000 * r.seconds / max(1, len(report.queries))
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
        missed = [q for q in report.queries if report.ranks[r.name][q.id] is None]
        out.append(f"\n### {r.name}: {len(missed)} misses (no hit in top {K})")
        for q in missed:
            out.append(f"- {q.id} {q.text!r}")
            out.append(f"    gold: {'; '.join(g.label for g in q.gold)}")
            for cid in r.ranked.get(q.id, [])[:3]:
                c = report.chunks[cid]
                out.append(f"    got:  {c.repo}:{c.path}:{c.symbol.split('(')[0]} ({c.kind})")
    return "\n".join(out)


def corpus_line(facts: dict[str, Any]) -> str:
    packages = ", ".join(f"{n} {v}" for n, v in facts["packages"].items())
    return (
        f"- corpus: {packages} (wheel sources); {facts['files']} files, "
        f"{facts['chunks']} chunks {facts['chunks_by_kind']}"
    )


def summary_markdown(report: Report) -> str:
    facts = corpus_facts(report.chunks)
    by_style = Counter(q.style for q in report.queries)
    missed = missed_by_all(report)
    parts = [
        corpus_line(facts),
        f"- queries: {len(report.queries)} ({dict(by_style)}), {QUERIES.relative_to(ROOT)}",
        "",
        results_table(report),
        "",
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


def markdown_section(report: Report, invocation: str) -> str:
    facts = "\n".join(f"- {k}: {v}" for k, v in machine_facts().items())
    stamp = datetime.now(UTC).strftime("%Y-%m-%d %H:%M UTC")
    return (
        f"## Code search quality — {stamp}\n\n"
        f"Command: `{invocation}`\n\n"
        f"{facts}\n\n"
        f"{summary_markdown(report)}\n\n"
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
        ranks = report.ranks[r.name]
        overlap = metrics(list(report.overlap_ranks[r.name].values()))
        systems[r.name] = {
            **metrics(list(ranks.values())),
            "overlap_rule": overlap,
            "queries": len(ranks),
            "ms_per_query": 1000 * r.seconds / max(1, len(ranks)),
            "setup_seconds": r.setup_seconds,
            "ranks": ranks,
        }
    return {
        "threadline": threadline_version(),
        "corpus": corpus_facts(report.chunks),
        "k": K,
        "systems": systems,
    }


# -- main -----------------------------------------------------------------------------------------


def run_systems(
    names: Sequence[str], queries: Sequence[Query], chunks: Sequence[Chunk]
) -> list[SystemResult]:
    results: dict[str, SystemResult] = {}
    if "rg" in names:
        results["rg"] = run_rg(queries, chunks)
    if "bm25s" in names:
        results["bm25s"] = run_bm25("bm25s", queries, chunks)
    if "bm25s-split" in names:
        results["bm25s-split"] = run_bm25("bm25s-split", queries, chunks, split_identifiers)
    modes = [m for m in STORE_SYSTEMS if m in names]
    if modes:
        for result in run_store(modes, queries, chunks):
            results[result.name] = result
    return [results[n] for n in ALL_SYSTEMS if n in results]


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--systems", default=",".join(ALL_SYSTEMS), help="comma-separated")
    parser.add_argument("--verbose", action="store_true", help="list each system's misses")
    parser.add_argument("--json", action="store_true", help="print metrics as JSON only")
    parser.add_argument("--append", type=Path, metavar="FILE", help="append results (Markdown)")
    args = parser.parse_args(argv)
    args.systems = [s.strip() for s in args.systems.split(",") if s.strip()]
    unknown = set(args.systems) - set(ALL_SYSTEMS)
    if unknown:
        parser.error(f"unknown systems {sorted(unknown)}; known: {', '.join(ALL_SYSTEMS)}")
    return args


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    fetch_corpus()
    chunks = load_chunks()
    queries = load_queries(chunks)
    results = run_systems(args.systems, queries, chunks)
    ran = [r for r in results if r.pending is None]
    ranks = {r.name: ranks_of(r, queries, chunks, outlines=False) for r in ran}
    overlap = {r.name: ranks_of(r, queries, chunks, outlines=True) for r in ran}
    report = Report(chunks, queries, results, ranks, overlap)
    if args.json:
        print(json.dumps(metrics_json(report), indent=2))
    else:
        print(summary_markdown(report))
        if args.verbose:
            print(misses_text(report))
    if args.append:
        invocation = shlex.join([".venv/bin/python", "bench/search_quality.py", *sys.argv[1:]])
        append_section(args.append, markdown_section(report, invocation))
        print(f"appended to {args.append}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
