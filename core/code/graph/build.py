"""Extraction and resolution of a set of files, without storage: what indexing runs in a worker
thread (`extract_batch`, `resolve_paths`) and what the bench runs on fixtures
(`graph_of_files`). All of it is CPU-bound and synchronous.

Each call pauses the cyclic garbage collector for the whole batch, not file by file: every
re-enabling let a collection walk the facts built so far again (a tenth of the build), while a
file leaves next to no cyclic garbage (its scaffolding is freed by reference counting), so
memory does not grow for the pause.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from pathlib import Path

from core.code.graph.extract import extract
from core.code.graph.gcpause import gc_paused
from core.code.graph.model import Edge, FileFacts
from core.code.graph.resolve import Resolver


def extract_files(sources: Mapping[str, bytes]) -> dict[str, FileFacts]:
    out: dict[str, FileFacts] = {}
    with gc_paused():
        for path, source in sources.items():
            facts = extract(path, source)
            if facts is not None:
                out[path] = facts
    return out


def extract_batch(root: Path, paths: Iterable[str]) -> dict[str, FileFacts | None]:
    """The facts of each path read from `root` (None: gone, unreadable, or no extractor)."""
    out: dict[str, FileFacts | None] = {}
    with gc_paused():
        for rel in paths:
            try:
                source = (root / rel).read_bytes()
            except OSError:
                out[rel] = None
                continue
            try:
                out[rel] = extract(rel, source)
            except RecursionError:  # pathologically nested code: the file simply has no graph
                out[rel] = None
    return out


def resolve_paths(files: dict[str, FileFacts], paths: Iterable[str]) -> dict[str, list[Edge]]:
    with gc_paused():
        resolver = Resolver(files)
        edges = {path: resolver.edges(path) for path in paths if path in files}
        # Its memo goes now, by reference counting: alive when the collector is back on, it
        # would be walked once more (a fifth of the resolution time on SQLAlchemy).
        del resolver
    return edges


def graph_of_files(sources: Mapping[str, bytes]) -> list[Edge]:
    files = extract_files(sources)
    edges = resolve_paths(files, sorted(files))
    return [edge for path in sorted(files) for edge in edges[path]]
