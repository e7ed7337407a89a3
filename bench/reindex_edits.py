"""Re-indexing after small edits: vectors reused from the store against everything embedded again.

    OPENBLAS_NUM_THREADS=1 .venv/bin/python bench/reindex_edits.py [--package rich] [--files 20]
        [--append bench/RESULTS.md]

Not a pytest test. The corpus is the `.py` files of one package installed in this venv (default:
rich), copied to bench/.cache/reindex-edits/src. For each mode, in a new data dir, the app that
`threadline index` builds (`bench.search_speed.make_app`: the local NumPy embedder, the embedded
Qdrant Edge shard, SQLite) indexes the corpus; then one line is added inside one function of
each of the `--files` files with the most definitions (a comment line in the function's body, the
same edit in both modes), and the repository is indexed again: that second index is what is
timed and counted. A file that changes is re-chunked whole, so every chunk of it gets a new id.

- `reuse`: as shipped, a new chunk whose text was embedded before takes the stored vector;
- `embed-all`: the same code with no vector offered for reuse (`core.code.search._donors`
  returns nothing), as indexing did before reuse: every chunk of a changed file is embedded.

The two modes run one after the other in this process; the load average is reported.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import shutil
import sys
import time
from importlib import metadata
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from bench.index_memory import corpus  # noqa: E402
from bench.machine import append_results  # noqa: E402

CACHE = ROOT / "bench" / ".cache" / "reindex-edits"
MODES = ("reuse", "embed-all")


def edit(src: Path, files: int) -> list[str]:
    """Add a comment line at the top of one function's body in each of the `files` files with
    the most definitions (the function in the middle of the file); the edited paths."""
    from core.code.chunking import chunk_file

    counted = []
    for path in sorted(src.rglob("*.py")):
        rel = path.relative_to(src).as_posix()
        chunks = chunk_file(src.name, rel, path.read_text(encoding="utf-8"))
        functions = [c for c in chunks if c.kind in ("function", "method")]
        if functions:
            counted.append((len(chunks), rel, functions))
    counted.sort(key=lambda row: (-row[0], row[1]))
    edited = []
    for _, rel, functions in counted[:files]:
        target = functions[len(functions) // 2]
        path = src / rel
        lines = path.read_text(encoding="utf-8").split("\n")
        signature_end = target.start_line  # 1-based: the line after the `def` line
        while signature_end <= target.end_line and not lines[signature_end - 1].rstrip().endswith(
            ":"
        ):
            signature_end += 1
        body = lines[signature_end] if signature_end < len(lines) else ""
        indent = body[: len(body) - len(body.lstrip())] or "    "
        lines.insert(signature_end, f"{indent}# edited by bench/reindex_edits.py")
        path.write_text("\n".join(lines), encoding="utf-8")
        edited.append(rel)
    return edited


async def run(mode: str, package: str, files: int) -> dict[str, Any]:
    import core.code.search as search_module
    from bench.search_speed import make_app

    src = corpus(package, CACHE)
    data = CACHE / f"data-{mode}"
    shutil.rmtree(data, ignore_errors=True)
    app = make_app(data)
    original = search_module._donors
    try:
        repo = await app.repos.register(str(src), src.name)
        first = await app.indexer.index(repo)
        if first.vectors is None:
            raise SystemExit(f"vectors were not indexed: {first.vectors_error}")
        edited = edit(src, files)
        if mode == "embed-all":
            search_module._donors = lambda *args, **kwargs: {}
        start = time.perf_counter()
        again = await app.indexer.index(repo)
        seconds = time.perf_counter() - start
    finally:
        search_module._donors = original
        await app.aclose()
    assert again.vectors is not None
    return {
        "chunks": first.files.chunks_written,
        "edited": len(edited),
        "written": again.files.chunks_written,
        "embedded": again.vectors.embedded,
        "reused": again.vectors.reused,
        "seconds": seconds,
        "load": os.getloadavg(),
    }


def markdown(package: str, results: dict[str, dict[str, Any]]) -> str:
    any_run = next(iter(results.values()))
    lines = [
        f"Corpus: the `.py` files of {package} {metadata.version(package)} "
        f"({any_run['chunks']} chunks); one line added inside one function of each of the "
        f"{any_run['edited']} files with the most definitions, then indexed again.",
        "",
        "| mode | chunks re-made | embedded | vectors reused | re-index (s) | load average |",
        "|---|---:|---:|---:|---:|---|",
    ]
    for mode, r in results.items():
        load = " / ".join(f"{x:.2f}" for x in r["load"])
        lines.append(
            f"| {mode} | {r['written']} | {r['embedded']} | {r['reused']} | "
            f"{r['seconds']:.1f} | {load} |"
        )
    return "\n".join(lines) + "\n"


def main() -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--package", default="rich", help="the installed package to index")
    parser.add_argument("--files", type=int, default=20, help="files edited")
    parser.add_argument("--append", type=Path, metavar="FILE")
    args = parser.parse_args()
    results = {}
    for mode in MODES:
        results[mode] = asyncio.run(run(mode, args.package, args.files))
        print(f"{mode}: {results[mode]}", file=sys.stderr)
    text = markdown(args.package, results)
    print(text)
    if args.append:
        append_results(args.append, "Re-indexing after small edits", text)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
