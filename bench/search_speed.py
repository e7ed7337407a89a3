"""Code search speed on a ~1,000-file repository, through Threadline's real code path.

    OPENBLAS_NUM_THREADS=1 .venv/bin/python bench/search_speed.py [--files 1000] [--queries 240]
        [--cli-runs 20] [--blas-compare] [--reuse DIR] [--append bench/RESULTS.md]

Not a pytest test. Everything runs in one process, as the bot would: `build_app(settings)` with
`load_settings(data_dir=..., demo_index=False)`, the local NumPy all-MiniLM-L6-v2 embedder and
the embedded vector store (a Qdrant Edge shard under DATA_DIR/qdrant-edge).

1. Corpus: the `.py` files (<= 200 KB) of `PACKAGES` as installed in this venv, copied in
   sorted order to bench/.cache/speed/repo/<package>/...; `--files N` keeps N of them, evenly
   spaced over that order (a quick try). Package versions are recorded.
2. Full index: `app.repos.register(root, "speed")`, `app.indexer.index(repo, progress=cb)` into
   a fresh bench/.cache/speed/data. Stages from the callbacks: walk+hash (start to the last
   `files` callback), chunk+SQL (to the first `vectors` callback), vectors (embedding, sparse
   encoding, store upsert; to the end). The embedder's `embed` and the store backend's `upsert`
   are wrapped (instance attributes, timing only) to split the vectors stage. The store is
   opened before the index so that its (empty) open is timed on its own. The peak RSS
   (ru_maxrss) right after the index is the indexing process's peak.
3. Re-index with nothing changed, then after touching (mtime only) 10 files.
4. Search latency over `--queries` deterministic queries (templates filled with words and
   identifiers of the indexed chunks, seeded): `app.search.search(q, ["speed"], k=10)` (query
   embedding, the store's query, role rerank, SQL snippet fetch), then its parts:
   `embedder.embed([q])` alone, `store.search(q, repos=["speed"], k=10, mode=...)` per mode
   (query embedding included), and the store's hybrid query alone (the `QueryPlan` built from a
   precomputed query vector, run by the backend: no embedding, no rerank).
5. Re-open: the app is closed and a child process builds a new one on the same data dir: store
   open, model load, first search, timed apart, with RSS after each (a bot process holding the
   index with the embedder loaded).
6. `threadline search` as a new process: `--cli-runs` runs of the real command on the indexed
   data dir (wall time, interpreter start included) with THREADLINE_SEARCH_LINGER=0, each
   opening everything itself; `--cli-runs` + 1 more at the default, where the first starts
   `threadline hold-search` (bot/search_holder.py) and every run is answered by it (the first
   reported apart; the holder is asked to leave after); one profiled run in a child that
   times its phases (imports, app build, database, store open, model load, search) and says
   whether qdrant-client was imported. Then the same beside a bot: a child process holds the
   store (and shares it on its socket) with the embedder loaded, `--cli-runs` more searches
   (the bot answers each whole search: the command does not build its app), one run of the
   command's `main` in a child that says whether it imported SQLModel or NumPy, and one
   unchanged `threadline index` run through the bot.

`--reuse DIR` reuses an already-indexed data dir (the default one is printed at the end): no
corpus copy, no full index (its numbers are read back from DIR/speed-index.json); steps 3-6 run.
`--blas-compare` ends with `embed` on a sample of the indexed chunks in two child processes, BLAS
at its default thread count and at one thread: on a 2-core machine shared with other work the
default collapsed to a few chunks/s (hence OPENBLAS_NUM_THREADS=1 above; the setting is
recorded). `--append FILE` appends a dated Markdown section to FILE.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import random
import re
import shlex
import shutil
import statistics
import subprocess
import sys
import time
from collections import Counter
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from importlib import metadata
from pathlib import Path
from typing import TYPE_CHECKING, Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bench.machine import (  # noqa: E402
    append_section,
    cpu_model,
    load_avg,
    nproc,
    peak_rss_mb,
    percentile,
    python_version,
    rss_mb,
    threadline_version,
)
from bot.app import App, build_app  # noqa: E402
from bot.heap import limit_malloc_arenas  # noqa: E402

if TYPE_CHECKING:
    from core.code.vector_query import QueryPlan
from config.settings import DEFAULT_POLICY_FILE, load_settings  # noqa: E402

CACHE = ROOT / "bench" / ".cache" / "speed"
REPO_DIR = CACHE / "repo"
DATA_DIR = CACHE / "data"
MANIFEST = "speed-manifest.json"  # in the data dir: the corpus it was indexed from
INDEX_RESULT = "speed-index.json"  # in the data dir: the full index's numbers
REPO_NAME = "speed"
MAX_FILE_BYTES = 200_000
K = 10
WARMUP = 5
TOUCHED = 10
SEED = 20261130

# Distribution name -> import package; chosen for ~1,000 .py files and ~14k chunks.
PACKAGES: dict[str, str] = {
    "slack_bolt": "slack_bolt",
    "slack_sdk": "slack_sdk",
    "rich": "rich",
    "pydantic": "pydantic",
    "starlette": "starlette",
    "httpx": "httpx",
    "uvicorn": "uvicorn",
    "anyio": "anyio",
    "click": "click",
    "h11": "h11",
    "httpcore": "httpcore",
    "pydantic-settings": "pydantic_settings",
    "sqlmodel": "sqlmodel",
    "yarl": "yarl",
    "urllib3": "urllib3",
    "tqdm": "tqdm",
    "markdown-it-py": "markdown_it",
    "pluggy": "pluggy",
    "python-dotenv": "dotenv",
    "idna": "idna",
    "mdurl": "mdurl",
    "sniffio": "sniffio",
}
TARGETS = {
    "reindex_s": 2.0,  # unchanged re-index of 1,000 files
    "p50_ms": 100.0,  # app.search.search, query embedding included
    "p95_ms": 250.0,
    "store_p50_ms": 5.0,  # the store's hybrid query in process
    "cli_p50_ms": 500.0,  # `threadline search` as a new process, query embedding included
    "index_peak_mb": 500.0,  # indexing a 10,000-chunk repository
    "held_mb": 300.0,  # a process holding a 15k-chunk index with the embedder loaded
    "reopen_s": 0.5,
}

NL_TEMPLATES = (
    "how does {a} handle {b}",
    "where is the {a} {b} created",
    "function that validates the {a} {b}",
    "what happens when the {a} times out",
    "parse {a} from the {b}",
    "retry {a} after a failed {b}",
    "convert {a} to {b}",
    "how are {a} and {b} cached",
    "check whether {a} is allowed",
    "close the {a} when {b} finishes",
)
IDENT_TEMPLATES = (
    "{ident}",
    "`{ident}`",
    "where is {qualified} called",
    "{ident}() implementation",
    "what does {ident} return",
)
WORD_STOP = frozenset(
    "self none true false args kwargs type return value values data init from with "
    "test str int dict list bool tuple object".split()
)
_CAMEL = re.compile(r"(?<=[a-z0-9])(?=[A-Z])")


# -- statistics -----------------------------------------------------------------------------------


def dist(values: Sequence[float]) -> dict[str, float]:
    return {
        "n": len(values),
        "mean": statistics.mean(values),
        "p50": percentile(values, 50),
        "p95": percentile(values, 95),
        "p99": percentile(values, 99),
        "max": max(values),
    }


async def timed_ms(call: Callable[[], Awaitable[Any]]) -> tuple[float, Any]:
    t0 = time.perf_counter()
    result = await call()
    return (time.perf_counter() - t0) * 1000, result


# -- corpus ---------------------------------------------------------------------------------------


def source_files() -> list[tuple[str, Path]]:
    """(relative path in the corpus, installed file) for every package, in sorted order."""
    import importlib.util

    out: list[tuple[str, Path]] = []
    for dist_name, package in PACKAGES.items():
        spec = importlib.util.find_spec(package)
        if spec is None or not spec.submodule_search_locations:
            raise SystemExit(f"package {package} ({dist_name}) is not installed in this venv")
        base = Path(next(iter(spec.submodule_search_locations)))
        for file in sorted(base.rglob("*.py")):
            if "__pycache__" in file.parts or file.stat().st_size > MAX_FILE_BYTES:
                continue
            out.append((f"{package}/{file.relative_to(base).as_posix()}", file))
    return out


def pick(files: Sequence[tuple[str, Path]], n: int) -> list[tuple[str, Path]]:
    """`n` files evenly spaced over the sorted list (all when n >= len)."""
    if n >= len(files):
        return list(files)
    return [files[(i * len(files)) // n] for i in range(n)]


def build_corpus(n: int) -> dict[str, Any]:
    """Copy the corpus to REPO_DIR (replacing it); returns its manifest."""
    chosen = pick(source_files(), n)
    if REPO_DIR.exists():
        shutil.rmtree(REPO_DIR)
    total = 0
    for rel, src in chosen:
        dest = REPO_DIR / rel
        dest.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(src, dest)
        total += dest.stat().st_size
    per_package = Counter(rel.split("/", 1)[0] for rel, _ in chosen)
    versions = {d: metadata.version(d) for d in PACKAGES}
    return {
        "files": len(chosen),
        "bytes": total,
        "packages": {d: [versions[d], per_package.get(p, 0)] for d, p in PACKAGES.items()},
    }


# -- indexing -------------------------------------------------------------------------------------


@dataclass(slots=True)
class StageClock:
    """The progress callback: first/last timestamp per stage, progress lines on stderr."""

    start: float = field(default_factory=time.perf_counter)
    first: dict[str, float] = field(default_factory=dict)
    last: dict[str, float] = field(default_factory=dict)
    totals: dict[str, int] = field(default_factory=dict)
    _printed: float = 0.0

    def __call__(self, stage: str, done: int, total: int) -> None:
        now = time.perf_counter()
        self.first.setdefault(stage, now)
        self.last[stage] = now
        self.totals[stage] = total
        if now - self._printed >= 5 or done == total:
            self._printed = now
            since = now - self.first[stage]
            rate = f", {done / since:.1f}/s" if since > 0 and done else ""
            eta = f", ETA {(total - done) / (done / since):.0f} s" if since > 0 and done else ""
            print(f"  [{stage}] {done}/{total}{rate}{eta}", file=sys.stderr, flush=True)


@dataclass(slots=True)
class Meter:
    """Seconds and calls spent in a wrapped callable."""

    seconds: float = 0.0
    calls: int = 0
    items: int = 0


def meter_sync(obj: Any, name: str, meter: Meter) -> None:
    original = getattr(obj, name)

    def wrapped(items: Sequence[Any], *args: Any, **kwargs: Any) -> Any:
        t0 = time.perf_counter()
        try:
            return original(items, *args, **kwargs)
        finally:
            meter.seconds += time.perf_counter() - t0
            meter.calls += 1
            meter.items += len(items)

    setattr(obj, name, wrapped)


def meter_async(obj: Any, name: str, meter: Meter) -> None:
    original = getattr(obj, name)

    async def wrapped(*args: Any, **kwargs: Any) -> Any:
        t0 = time.perf_counter()
        try:
            return await original(*args, **kwargs)
        finally:
            meter.seconds += time.perf_counter() - t0
            meter.calls += 1
            meter.items += len(args[0]) if args else 0

    setattr(obj, name, wrapped)


def unmeter(obj: Any, *names: str) -> None:
    for name in names:
        obj.__dict__.pop(name, None)


def make_app(data_dir: Path) -> App:
    settings = load_settings(
        data_dir=data_dir,
        policy_file=DEFAULT_POLICY_FILE,
        demo_index=False,
        qdrant_url=None,
        embeddings_provider="local",
    )
    return build_app(settings)


async def full_index(app: App, n_files: int) -> dict[str, Any]:
    print(f"full index of {REPO_DIR} ({n_files} files) ...", file=sys.stderr)
    repo = await app.repos.register(str(REPO_DIR), REPO_NAME)
    t0 = time.perf_counter()
    store = await app.search.store()
    open_s = time.perf_counter() - t0
    embed, upsert = Meter(), Meter()
    meter_sync(store.embedder, "embed", embed)
    meter_async(store.backend, "upsert", upsert)
    clock = StageClock()
    report = await app.indexer.index(repo, progress=clock)
    end = time.perf_counter()
    unmeter(store.embedder, "embed")
    unmeter(store.backend, "upsert")
    if report.vectors is None:
        raise SystemExit(f"vectors were not indexed: {report.vectors_error}")
    hashed = clock.last.get("files", clock.start)
    vec_start = clock.first.get("vectors", end)
    vectors_s = end - vec_start
    return {
        "files": report.files.files,
        "chunks": report.files.chunks_written,
        "embedded": report.vectors.embedded,
        "store_open_s": open_s,
        "total_s": end - clock.start,
        "walk_hash_s": hashed - clock.start,
        "chunk_sql_s": vec_start - hashed,
        "files_stage_s": vec_start - clock.start,
        "vectors_s": vectors_s,
        "embed_s": embed.seconds,
        "embed_calls": embed.calls,
        "store_upsert_s": upsert.seconds,
        "other_vectors_s": vectors_s - embed.seconds - upsert.seconds,
        "peak_rss_after_index_mb": peak_rss_mb(),
        "chunks_per_s": report.vectors.embedded / vectors_s if vectors_s else 0.0,
        "embed_chunks_per_s": embed.items / embed.seconds if embed.seconds else 0.0,
        "rss_after_index_mb": rss_mb(),
        "load_after_index": load_avg(),
    }


def touch_files(root: Path, n: int) -> None:
    """Move the mtime of `n` evenly spaced files one second on (content unchanged)."""
    files = sorted(p for p in root.rglob("*.py") if p.is_file())
    for path in files[:: max(1, len(files) // n)][:n]:
        st = path.stat()
        os.utime(path, ns=(st.st_atime_ns, st.st_mtime_ns + 1_000_000_000))


async def reindex(app: App) -> dict[str, Any]:
    repo = await app.repos.get(REPO_NAME)
    assert repo is not None
    t0 = time.perf_counter()
    report = await app.indexer.index(repo)
    unchanged_s = time.perf_counter() - t0
    summary = report.summary()
    touch_files(Path(repo.root), TOUCHED)
    t0 = time.perf_counter()
    touched = await app.indexer.index(repo)
    touched_s = time.perf_counter() - t0
    return {
        "files": summary["files"],
        "unchanged_s": unchanged_s,
        "unchanged_summary": summary,
        "touched_s": touched_s,
        "touched_summary": touched.summary(),
    }


# -- queries --------------------------------------------------------------------------------------


async def corpus_vocabulary(app: App) -> tuple[list[str], list[str], list[str]]:
    """(common words, identifiers, qualified `Class.method` names) of the indexed chunks."""
    from sqlmodel import col, select

    from core.store.models import CodeChunk, Repo

    async with app.db.session() as s:
        stmt = (
            select(CodeChunk.symbol)
            .join(Repo, col(Repo.id) == col(CodeChunk.repo_id))
            .where(col(Repo.name) == REPO_NAME)
            .order_by(col(CodeChunk.id))
        )
        symbols = list((await s.exec(stmt)).all())
    words: Counter[str] = Counter()
    idents: set[str] = set()
    qualified: set[str] = set()
    for symbol in symbols:
        head = symbol.split("(", 1)[0].strip()
        if not re.fullmatch(r"[A-Za-z_][\w.]*", head):
            continue
        name = head.rsplit(".", 1)[-1]
        if "." in head and not name.startswith("_"):
            qualified.add(".".join(head.split(".")[-2:]))
        if name.startswith("_") or len(name) < 5:
            continue
        if "_" in name or _CAMEL.search(name):
            idents.add(name)
        for part in re.split(r"_+", name):
            for piece in _CAMEL.split(part):
                piece = piece.lower()
                if len(piece) >= 4 and piece.isalpha() and piece not in WORD_STOP:
                    words[piece] += 1
    common = [w for w, _ in sorted(words.items(), key=lambda kv: (-kv[1], kv[0]))[:300]]
    return common, sorted(idents), sorted(qualified)


def make_queries(n: int, words: list[str], idents: list[str], qualified: list[str]) -> list[str]:
    """3 natural-language queries for every 2 identifier-ish ones, seeded."""
    rng = random.Random(SEED)
    out: list[str] = []
    for i in range(n):
        if i % 5 < 3 or not idents:
            a, b = rng.sample(words, 2)
            out.append(rng.choice(NL_TEMPLATES).format(a=a, b=b))
        else:
            template = rng.choice(IDENT_TEMPLATES)
            out.append(
                template.format(
                    ident=rng.choice(idents),
                    qualified=rng.choice(qualified) if qualified else rng.choice(idents),
                )
            )
    return out


# -- searching ------------------------------------------------------------------------------------


async def first_search(app: App, query: str) -> dict[str, Any]:
    """Store open, model load, first search, next search (timed apart)."""
    rss0 = rss_mb()
    t0 = time.perf_counter()
    store = await app.search.store()
    open_s = time.perf_counter() - t0
    rss_open = rss_mb()
    t0 = time.perf_counter()
    store.embedder.load()
    model_s = time.perf_counter() - t0
    first_ms, _ = await timed_ms(lambda: app.search.search(query, [REPO_NAME], k=K))
    second_ms, _ = await timed_ms(lambda: app.search.search(query, [REPO_NAME], k=K))
    return {
        "open_s": open_s,
        "model_s": model_s,
        "first_ms": first_ms,
        "second_ms": second_ms,
        "total_s": open_s + model_s + first_ms / 1000,
        "rss_before_mb": rss0,
        "rss_after_open_mb": rss_open,
        "rss_after_load_mb": rss_mb(),
    }


def hybrid_plans(queries: Sequence[str], vectors: Sequence[Any]) -> list[QueryPlan]:
    """Each query's hybrid `QueryPlan` over the speed repo, as the store runs it, from the
    query's precomputed dense vector (normalised here, as `VectorStore.search` does)."""
    from core.code.sparse import encode_query
    from core.code.vectors import RERANK_POOL, plan_search, query_identifiers

    plans = []
    for q, v in zip(queries, vectors, strict=True):
        unit = (v / max(float((v**2).sum()) ** 0.5, 1e-12)).tolist()
        plan = plan_search(
            unit,
            encode_query(q),
            query_identifiers(q),
            repos=[REPO_NAME],
            roles=None,
            limit=RERANK_POOL,
            mode="hybrid",
        )
        assert plan is not None
        plans.append(plan)
    return plans


async def search_latency(app: App, queries: Sequence[str]) -> dict[str, Any]:

    store = await app.search.store()
    for q in queries[1 : 1 + WARMUP]:
        await app.search.search(q, [REPO_NAME], k=K)
    print(f"searching {len(queries)} queries ...", file=sys.stderr)
    out: dict[str, Any] = {}
    end_to_end, empty = [], 0
    for q in queries:
        ms, results = await timed_ms(lambda q=q: app.search.search(q, [REPO_NAME], k=K))
        end_to_end.append(ms)
        empty += not results
    out["app_search"] = dist(end_to_end)
    out["empty_results"] = empty
    embed, vectors = [], []
    for q in queries:
        t0 = time.perf_counter()
        vectors.append(store.embedder.embed([q])[0])
        embed.append((time.perf_counter() - t0) * 1000)
    out["embed"] = dist(embed)
    for mode in ("dense", "sparse", "hybrid"):
        ms_list = []
        for q in queries:
            ms, _ = await timed_ms(
                lambda q=q, mode=mode: store.search(q, repos=[REPO_NAME], k=K, mode=mode)
            )
            ms_list.append(ms)
        out[f"store_{mode}"] = dist(ms_list)
    plans = hybrid_plans(queries, vectors)
    ms_list = []
    for plan in plans:
        ms, _ = await timed_ms(lambda plan=plan: store.backend.query(plan))
        ms_list.append(ms)
    out["backend_hybrid"] = dist(ms_list)
    return out


async def probe(data_dir: Path, query: str) -> dict[str, Any]:
    """In a fresh process: a new app on the indexed data dir, its first search timed apart."""
    app = make_app(data_dir)
    try:
        return await first_search(app, query)
    finally:
        await app.aclose()


def reopen(data_dir: Path, query: str) -> dict[str, Any]:
    """Run `probe` in a child process (the parent's app must be closed: one process holds an
    embedded store), so its time and memory are those of a restart."""
    print("re-opening the store in a new process ...", file=sys.stderr)
    cmd = [sys.executable, __file__, "--probe", str(data_dir), "--probe-query", query]
    proc = subprocess.run(cmd, capture_output=True, text=True, check=False)
    if proc.returncode != 0:
        raise SystemExit(f"re-open probe failed:\n{proc.stderr}")
    return dict(json.loads(proc.stdout.strip().splitlines()[-1]))


# -- `threadline search` as a process -------------------------------------------------------------

# The phases of `threadline search` with no bot holding the store, as bot/code_cli.py's
# `search_alone` runs them, but one after another (the command overlaps the store open and the
# model load with the schema check; here each is timed on its own).
_CLI_PROFILE = """
import time
t0 = time.perf_counter()
import asyncio, json, sys
sys.path.insert(0, sys.argv[1])
import bot.cli
from bot.code_parts import build_embedder, code_search
from config.settings import load_settings
from core.code.repos import RepoStore
from core.store.engine import Database
phases = {"imports": time.perf_counter() - t0}

async def main():
    t = time.perf_counter()
    settings = load_settings()
    db = Database(settings.database)
    embedder = build_embedder(settings)
    search = code_search(settings, db, embedder)
    phases["build_search"] = time.perf_counter() - t
    t = time.perf_counter()
    await db.create_all()
    names = [r.name for r in await RepoStore(db, settings.data_dir / "repos").all()]
    phases["database"] = time.perf_counter() - t
    t = time.perf_counter()
    store = await search.store()
    phases["store_open"] = time.perf_counter() - t
    t = time.perf_counter()
    store.embedder.load()
    phases["model_load"] = time.perf_counter() - t
    t = time.perf_counter()
    results = await search.search(sys.argv[2], names, k=10)
    phases["search"] = time.perf_counter() - t
    t = time.perf_counter()
    await search.aclose()
    await db.dispose()
    phases["close"] = time.perf_counter() - t
    assert results

asyncio.run(main())
phases["total_in_process"] = time.perf_counter() - t0
phases["qdrant_client_imported"] = "qdrant_client" in sys.modules
print(json.dumps(phases))
"""


# `threadline search` as `bot.cli.entry` runs it; then which heavy modules it imported.
_CLI_IMPORTS = """
import json, sys
sys.path.insert(0, sys.argv[1])
from bot.cli import main
code = main(["search", sys.argv[2], "--json"])
heavy = ("sqlmodel", "sqlalchemy", "numpy", "qdrant_edge", "bot.app")
print(json.dumps(sorted(m for m in heavy if m in sys.modules)), file=sys.stderr)
sys.exit(code)
"""

PYCACHE = CACHE.parent / "pycache"


def cli_env(data_dir: Path) -> dict[str, str]:
    """The command's environment. Bytecode is cached (under bench/.cache/pycache, not in the
    checkout) even where PYTHONDONTWRITEBYTECODE is set, as in any installed deployment:
    compiling the project's modules afresh would add ~0.2 s to every run."""
    env = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith(("QDRANT_", "THREADLINE_")) and k != "PYTHONDONTWRITEBYTECODE"
    }
    env.update(
        THREADLINE_DATA_DIR=str(data_dir),
        THREADLINE_DEMO_INDEX="0",
        THREADLINE_POLICY=str(DEFAULT_POLICY_FILE),
        EMBEDDINGS_PROVIDER="local",
        PYTHONPYCACHEPREFIX=str(PYCACHE),
    )
    return env


def cli_command() -> list[str]:
    exe = Path(sys.executable).with_name("threadline")
    return [str(exe)] if exe.exists() else [sys.executable, "-m", "bot.cli"]


def cli_runs(env: dict[str, str], queries: Sequence[str], runs: int) -> list[float]:
    """Wall ms of `threadline search QUERY --json` runs (the first, which warms the page cache,
    left out)."""
    return [timed_search(env, q) for q in list(queries)[: runs + 1]][1:]


def timed_search(env: dict[str, str], query: str) -> float:
    """Wall ms of one `threadline search QUERY --json`, which must find something."""
    t0 = time.perf_counter()
    proc = subprocess.run(
        [*cli_command(), "search", query, "--json"],
        env=env,
        capture_output=True,
        text=True,
        check=False,
    )
    wall = (time.perf_counter() - t0) * 1000
    if proc.returncode != 0 or not json.loads(proc.stdout)["results"]:
        raise SystemExit(f"threadline search failed:\n{proc.stderr}")
    return wall


def cli_runs_with_holder(
    env: dict[str, str], data_dir: Path, queries: Sequence[str]
) -> list[float]:
    """Wall ms of `threadline search QUERY --json` with THREADLINE_SEARCH_LINGER at its default
    and no bot: the first run starts `threadline hold-search` (bot/search_holder.py) and is
    answered by it, as are the others. The holder is then asked to leave."""
    from bot.code_cli import embedded_shard
    from config.settings import Settings
    from core.code.socket_wire import ask, socket_path

    shard = embedded_shard(Settings(data_dir=data_dir))
    try:
        return [timed_search(env, q) for q in queries]
    finally:
        if socket_path(shard).exists():
            ask(shard, {"op": "release"}, timeout=30)
        for _ in range(200):
            if not socket_path(shard).exists():
                break
            time.sleep(0.05)


# A bot process: holds the store (and shares it), with the embedder loaded, until stdin closes.
_HOLDER = """
import asyncio, sys
sys.path.insert(0, sys.argv[1])
from bot.app import build_app
from config.settings import load_settings

async def main():
    app = build_app(load_settings())
    names = [r.name for r in await app.repos.all()]
    await app.search.search("warm up", names, k=1)
    print("ready", flush=True)
    await asyncio.get_running_loop().run_in_executor(None, sys.stdin.read)
    await app.aclose()

asyncio.run(main())
"""


def cli_search(data_dir: Path, queries: Sequence[str], runs: int) -> dict[str, Any]:
    """`threadline search QUERY --json` as new processes: alone, and beside a bot process that
    holds the store (through its socket); one profiled run; an unchanged `threadline index`
    beside the bot."""
    env = cli_env(data_dir)
    print(f"`threadline search` x {runs} ...", file=sys.stderr)
    t0 = time.perf_counter()
    subprocess.run([sys.executable, "-c", "pass"], env=env, check=True)
    bare_ms = (time.perf_counter() - t0) * 1000
    alone = cli_runs({**env, "THREADLINE_SEARCH_LINGER": "0"}, queries, runs)
    print(f"`threadline search` x {runs} with the holder the first one starts ...", file=sys.stderr)
    lingering = cli_runs_with_holder(env, data_dir, list(queries)[-(runs + 1) :])
    profile = subprocess.run(
        [sys.executable, "-c", _CLI_PROFILE, str(ROOT), queries[0]],
        env=env,
        capture_output=True,
        text=True,
        check=True,
    )
    print(f"`threadline search` x {runs} beside a bot holding the store ...", file=sys.stderr)
    holder = subprocess.Popen(
        [sys.executable, "-c", _HOLDER, str(ROOT)],
        env=env,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert holder.stdout is not None and holder.stdin is not None
        if holder.stdout.readline() != "ready\n":
            raise SystemExit("the holder process did not start")
        beside = cli_runs(env, list(queries)[runs + 1 :], runs)
        heavy = subprocess.run(
            [sys.executable, "-c", _CLI_IMPORTS, str(ROOT), queries[0]],
            env=env,
            capture_output=True,
            text=True,
            check=True,
        )
        t0 = time.perf_counter()
        index = subprocess.run(
            [*cli_command(), "index", str(REPO_DIR), "--name", REPO_NAME],
            env=env,
            capture_output=True,
            text=True,
            check=True,
        )
        index_s = time.perf_counter() - t0
    finally:
        if holder.stdin is not None:
            holder.stdin.close()
        holder.wait(timeout=60)
    return {
        "wall": dist(alone),
        "holder_first_ms": lingering[0],
        "holder": dist(lingering[1:]),
        "beside": dist(beside),
        "runs": len(alone),
        "python_start_ms": bare_ms,
        "profile": json.loads(profile.stdout.strip().splitlines()[-1]),
        "beside_imported": json.loads(heavy.stderr.strip().splitlines()[-1]),
        "index_beside_s": index_s,
        "index_beside_out": index.stdout.strip().splitlines()[-1] if index.stdout else "",
    }


BLAS_ENV = ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS")
BLAS_SAMPLE = 32
_BLAS_CHILD = """
import sqlite3, sys, time
sys.path.insert(0, sys.argv[1])
from core.code.embed_local import LocalMiniLM
db = sqlite3.connect(sys.argv[2])
texts = [c + t for c, t in db.execute("select context, text from code_chunks order by id")]
sample = texts[:: max(1, len(texts) // int(sys.argv[3]))][: int(sys.argv[3])]
model = LocalMiniLM()
model.embed(sample[:4])
t0 = time.perf_counter()
model.embed(sample)
print(len(sample) / (time.perf_counter() - t0))
"""


def blas_env() -> str:
    set_vars = [f"{k}={os.environ[k]}" for k in BLAS_ENV if k in os.environ]
    return " ".join(set_vars)


def blas_compare(data_dir: Path) -> dict[str, float]:
    """Chunks/s of `embed` on a sample of the indexed chunks, in a child process with the BLAS
    library's default thread count and with one thread (same machine, same moment)."""
    out: dict[str, float] = {}
    for label, threads in (("default", None), ("1 thread", "1")):
        env = {k: v for k, v in os.environ.items() if k not in BLAS_ENV}
        if threads is not None:
            env.update(dict.fromkeys(BLAS_ENV, threads))
        db = str(data_dir / "threadline.db")
        cmd = [sys.executable, "-c", _BLAS_CHILD, str(ROOT), db, str(BLAS_SAMPLE)]
        print(f"embedding sample, BLAS threads {label} ...", file=sys.stderr)
        proc = subprocess.run(cmd, env=env, capture_output=True, text=True, check=True)
        out[label] = float(proc.stdout.strip().splitlines()[-1])
    return out


# -- report ---------------------------------------------------------------------------------------


def ms_row(label: str, d: dict[str, float], note: str = "") -> str:
    return (
        f"| {label} | {d['p50']:.1f} | {d['p95']:.1f} | {d['p99']:.1f} | {d['max']:.1f} "
        f"| {d['mean']:.1f} | {note} |"
    )


def verdict(value: float, target: float, unit: str = "ms") -> str:
    return f"target < {target:g} {unit}: {'met' if value < target else '**missed**'}"


def corpus_lines(manifest: dict[str, Any]) -> list[str]:
    pkgs = ", ".join(f"{d} {v} ({n})" for d, (v, n) in manifest["packages"].items() if n)
    return [
        f"- corpus: {manifest['files']} `.py` files (<= 200 KB each), "
        f"{manifest['bytes'] / 1e6:.1f} MB, copied from this venv's site-packages "
        f"(files per package in brackets): {pkgs}",
    ]


def index_lines(ix: dict[str, Any], reused: bool) -> list[str]:
    head = "Full index" + (" (read back from the run that built the data dir)" if reused else "")
    return [
        f"{head}: {ix['files']} files, {ix['chunks']} chunks, {ix['embedded']} vectors",
        "",
        "| stage | seconds | note |",
        "|---|---:|---|",
        f"| open empty store (before the index) | {ix['store_open_s']:.2f} | |",
        f"| walk + hash + file rows | {ix['walk_hash_s']:.1f} | start to last `files` callback |",
        f"| chunk + chunk rows | {ix['chunk_sql_s']:.1f} | to first `vectors` callback |",
        f"| **files stage** | **{ix['files_stage_s']:.1f}** | |",
        f"| embedding (`embed`, {ix['embed_calls']} calls) | {ix['embed_s']:.1f} "
        f"| {ix['embed_chunks_per_s']:.1f} chunks/s inside `embed` |",
        f"| store upsert (Qdrant Edge, flushed) | {ix['store_upsert_s']:.1f} | |",
        f"| rest (sparse encode, SQL reads) | {ix['other_vectors_s']:.1f} | |",
        f"| **vectors stage** | **{ix['vectors_s']:.1f}** "
        f"| **{ix['chunks_per_s']:.1f} chunks/s** end to end |",
        f"| **total index** | **{ix['total_s']:.1f}** | {ix['total_s'] / 60:.1f} min |",
        "",
        f"- RSS after the full index: {ix['rss_after_index_mb']:.0f} MB; **peak RSS of the "
        f"indexing process {ix['peak_rss_after_index_mb']:.0f} MB** "
        f"({verdict(ix['peak_rss_after_index_mb'], TARGETS['index_peak_mb'], 'MB')}, stated for "
        f"10,000 chunks; this index has {ix['chunks']}); load average then: "
        f"{ix['load_after_index']}",
    ]


def reindex_lines(rx: dict[str, Any], files: int) -> list[str]:
    scaled = " (target stated for 1,000 files)" if files < 900 else ""
    t = rx["touched_summary"]
    return [
        f"- re-index, nothing changed: **{rx['unchanged_s']:.2f} s** for {files} files "
        f"({verdict(rx['unchanged_s'], TARGETS['reindex_s'], 's')}{scaled}); "
        f"summary {rx['unchanged_summary']}",
        f"- re-index after touching {TOUCHED} files (mtime only): **{rx['touched_s']:.2f} s**; "
        f"changed {t['changed']}, chunks written {t['chunks_written']}, "
        f"vectors embedded {t.get('vectors_embedded', 0)}",
    ]


def search_lines(fs: dict[str, Any], sx: dict[str, Any], n: int, reused: bool) -> list[str]:
    app = sx["app_search"]
    backend = sx["backend_hybrid"]
    first = (
        f"first search in a new app on the reused data dir (store open {fs['open_s']:.2f} s, "
        f"model load {fs['model_s']:.2f} s)"
        if reused
        else "first search after the full index, same app"
    )
    return [
        f"Search: {n} queries (3 natural-language : 2 identifier-ish, seeded templates "
        "over the corpus' own words and identifiers), k=10, repos=['speed']; ms",
        "",
        "| path | p50 | p95 | p99 | max | mean | note |",
        "|---|---:|---:|---:|---:|---:|---|",
        ms_row(
            "**`app.search.search` (hybrid)**",
            app,
            f"p50 {verdict(app['p50'], TARGETS['p50_ms'])}; "
            f"p95 {verdict(app['p95'], TARGETS['p95_ms'])}",
        ),
        ms_row("query embedding alone (`embed([q])`)", sx["embed"]),
        ms_row("`store.search` dense", sx["store_dense"], "query embedding included"),
        ms_row("`store.search` sparse", sx["store_sparse"], "no query embedding"),
        ms_row("`store.search` hybrid", sx["store_hybrid"], "query embedding and rerank included"),
        ms_row(
            "**the store's hybrid query alone**",
            backend,
            "3 legs, repo filter, RRF, 60 fused candidates with payloads; "
            f"{verdict(backend['p50'], TARGETS['store_p50_ms'])}",
        ),
        "",
        f"- {first}: {fs['first_ms']:.0f} ms; the same query again: {fs['second_ms']:.0f} ms; "
        f"then {WARMUP} untimed warm-up queries",
        f"- queries with no result: {sx['empty_results']}",
    ]


def reopen_lines(ro: dict[str, Any], peak: float) -> list[str]:
    return [
        "Re-open from disk (the app closed, a new process builds a new app on the same data "
        "dir, as after a restart):",
        "",
        f"- **store open {ro['open_s']:.2f} s** ({verdict(ro['open_s'], TARGETS['reopen_s'], 's')}"
        f"; imports of the engine included); model load {ro['model_s']:.2f} s; first search "
        f"{ro['first_ms']:.0f} ms; total {ro['total_s']:.2f} s; the next search "
        f"{ro['second_ms']:.0f} ms",
        f"- RSS of that process: {ro['rss_before_mb']:.0f} MB with the app built, "
        f"{ro['rss_after_open_mb']:.0f} MB after store open, **{ro['rss_after_load_mb']:.0f} MB "
        f"with the embedder loaded and one search done** "
        f"({verdict(ro['rss_after_load_mb'], TARGETS['held_mb'], 'MB')}), peak "
        f"{ro['peak_mb']:.0f} MB",
        f"- peak RSS of the benchmark process (ru_maxrss; full index and searches): "
        f"**{peak:.0f} MB**",
    ]


def cli_lines(cx: dict[str, Any]) -> list[str]:
    w = cx["wall"]
    p = cx["profile"]
    phases = ", ".join(
        f"{name.replace('_', ' ')} {p[name] * 1000:.0f} ms"
        for name in ("imports", "build_search", "database", "store_open", "model_load", "search")
    )
    b = cx["beside"]
    h = cx["holder"]
    return [
        f"`threadline search QUERY --json` as a new process, {cx['runs']} runs after one "
        "untimed (wall time, interpreter start included):",
        "",
        f"- alone (THREADLINE_SEARCH_LINGER=0: each run opens everything itself): "
        f"**p50 {w['p50']:.0f} ms**, p95 {w['p95']:.0f} ms, max {w['max']:.0f} ms "
        f"({verdict(w['p50'], TARGETS['cli_p50_ms'])}); a bare `python -c pass` takes "
        f"{cx['python_start_ms']:.0f} ms here; bytecode cached (`PYTHONPYCACHEPREFIX`)",
        f"- no bot, THREADLINE_SEARCH_LINGER at its default: the first run starts `threadline "
        f"hold-search` and is answered by it in {cx['holder_first_ms']:.0f} ms; the next "
        f"{cx['holder']['n']} runs, answered by that holder: **p50 {h['p50']:.0f} ms**, p95 "
        f"{h['p95']:.0f} ms, max {h['max']:.0f} ms ({verdict(h['p50'], TARGETS['cli_p50_ms'])})",
        f"- one profiled run (in-process phases): {phases}; total in process "
        f"{p['total_in_process'] * 1000:.0f} ms; qdrant-client imported: "
        f"{'yes' if p['qdrant_client_imported'] else 'no'}",
        f"- beside a bot process holding the store (the bot answers the whole search on its "
        f"socket): **p50 {b['p50']:.0f} ms**, p95 {b['p95']:.0f} ms, max {b['max']:.0f} ms "
        f"({verdict(b['p50'], TARGETS['cli_p50_ms'])}); heavy modules the command imported: "
        f"{', '.join(cx['beside_imported']) or 'none'} (of SQLModel, SQLAlchemy, NumPy, "
        "qdrant-edge, the app)",
        f"- `threadline index` of the unchanged repository beside that bot: "
        f"{cx['index_beside_s']:.2f} s (`{cx['index_beside_out']}`)",
    ]


def blas_lines(bx: dict[str, float], load: str) -> list[str]:
    return [
        f"BLAS threads check ({BLAS_SAMPLE} sampled chunks, `LocalMiniLM.embed`, a child "
        f"process each, load average {load}): library default "
        f"{bx['default']:.1f} chunks/s, one thread {bx['1 thread']:.1f} chunks/s",
    ]


def markdown(facts: dict[str, str], sections: list[list[str]], wall_s: float) -> str:
    stamp = datetime.now(UTC).strftime("%Y-%m-%d %H:%M UTC")
    body = "\n\n".join("\n".join(s) for s in sections)
    invocation = shlex.join([".venv/bin/python", "bench/search_speed.py", *sys.argv[1:]])
    if blas_env():
        invocation = f"{blas_env()} {invocation}"
    fact_lines = "\n".join(f"- {k}: {v}" for k, v in facts.items())
    return (
        f"## Code search speed — {stamp}\n\n"
        f"Command: `{invocation}`\n\n"
        f"{fact_lines}\n"
        f"- wall time of the benchmark: {wall_s / 60:.1f} min\n\n"
        f"{body}\n\n"
        "In-process calls (`build_app`, `app.indexer.index`, `app.search.search`): local NumPy "
        "all-MiniLM-L6-v2, the embedded Qdrant Edge shard on disk under the data dir, SQLite. "
        "Latencies are wall-clock per call on a 2-core machine that other work may be sharing "
        "(see the load averages): numbers are reported as measured. Method: the docstring of "
        "bench/search_speed.py.\n"
    )


# -- main -----------------------------------------------------------------------------------------


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--files", type=int, default=1000, help="corpus size (files)")
    parser.add_argument("--queries", type=int, default=240, help="search queries (>= 200)")
    parser.add_argument(
        "--cli-runs", type=int, default=20, help="runs of `threadline search` as a new process"
    )
    parser.add_argument(
        "--blas-compare", action="store_true", help="embed a sample with default vs 1 BLAS thread"
    )
    parser.add_argument("--reuse", type=Path, metavar="DIR", help="an already-indexed data dir")
    parser.add_argument("--append", type=Path, metavar="FILE", help="append results (Markdown)")
    parser.add_argument("--probe", type=Path, help=argparse.SUPPRESS)  # the re-open child
    parser.add_argument("--probe-query", default="", help=argparse.SUPPRESS)
    return parser.parse_args(argv)


async def prepare(args: argparse.Namespace) -> tuple[App, dict[str, Any], dict[str, Any], bool]:
    """(app on the indexed data dir, corpus manifest, full-index numbers, reused?)."""
    if args.reuse is not None:
        data_dir = args.reuse.resolve()
        manifest = json.loads((data_dir / MANIFEST).read_text())
        ix = json.loads((data_dir / INDEX_RESULT).read_text())
        return make_app(data_dir), manifest, ix, True
    if DATA_DIR.exists():
        shutil.rmtree(DATA_DIR)
    DATA_DIR.mkdir(parents=True)
    manifest = build_corpus(args.files)
    (DATA_DIR / MANIFEST).write_text(json.dumps(manifest, indent=1))
    app = make_app(DATA_DIR)
    try:
        ix = await full_index(app, manifest["files"])
    except BaseException:
        await app.aclose()
        raise
    (DATA_DIR / INDEX_RESULT).write_text(json.dumps(ix, indent=1))
    return app, manifest, ix, False


async def measure(app: App, queries: Sequence[str]) -> dict[str, Any]:
    fs = await first_search(app, queries[0])
    rx = await reindex(app)
    sx = await search_latency(app, queries)
    return {"fs": fs, "rx": rx, "sx": sx}


async def run(args: argparse.Namespace) -> int:
    wall0 = time.perf_counter()
    facts = {
        "threadline": threadline_version(),
        "cpus (nproc)": str(nproc()),
        "cpu": cpu_model(),
        "python": f"{python_version()}, numpy {metadata.version('numpy')}, "
        f"qdrant-edge-py {metadata.version('qdrant-edge-py')}",
        "BLAS threads": blas_env() or "library default (no OPENBLAS/OMP/MKL_NUM_THREADS set)",
        "load average at start (1/5/15 min)": load_avg(),
    }
    app, manifest, ix, reused = await prepare(args)
    data_dir = app.settings.data_dir.resolve()
    try:
        queries = make_queries(args.queries, *await corpus_vocabulary(app))
        m = await measure(app, queries)
    finally:
        await app.aclose()
    ro = reopen(data_dir, queries[0])
    cx = cli_search(data_dir, queries, args.cli_runs)
    bx = blas_compare(data_dir) if args.blas_compare else None
    facts["load average at end (1/5/15 min)"] = load_avg()
    sections = [
        corpus_lines(manifest),
        index_lines(ix, reused),
        reindex_lines(m["rx"], manifest["files"]),
        search_lines(m["fs"], m["sx"], len(queries), reused),
        reopen_lines(ro, peak_rss_mb()),
        cli_lines(cx),
    ]
    if bx is not None:
        sections.append(blas_lines(bx, facts["load average at end (1/5/15 min)"]))
    text = markdown(facts, sections, time.perf_counter() - wall0)
    print(text)
    print(f"data dir (for --reuse): {data_dir}", file=sys.stderr)
    if args.append:
        append_section(args.append, text)
        print(f"appended to {args.append}", file=sys.stderr)
    return 0


async def run_probe(data_dir: Path, query: str) -> int:
    result = await probe(data_dir, query)
    result["peak_mb"] = peak_rss_mb()
    print(json.dumps(result))
    return 0


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    # This process indexes and searches as a bot process does, so it bounds glibc's malloc
    # arenas as `threadline run` does on start (bot.heap): the peak RSS it reports is the bot's.
    limit_malloc_arenas()
    if args.probe is not None:
        return asyncio.run(run_probe(args.probe, args.probe_query))
    return asyncio.run(run(args))


if __name__ == "__main__":
    sys.exit(main())
