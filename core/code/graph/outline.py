"""The repo map's outline: the ranked definitions of one repository cut at a token budget and
rendered as `line: signature` per file, for `threadline map` and the agent's prompt
(`core.code.graph.repomap`). Apart from the ranking because it reads the repository's files.

The map is cut at its budget, counted with the agent's `TokenCounter`: definitions are taken
in rank order (a method brings its class line along), skipping those that no longer fit, then
shown per file, most important file first, in line order inside a file. Signatures are read
from the files on disk (the line the graph stored, continued while brackets are open) and
redacted like every other text that leaves a file.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from core.code.graph.focus import Seeds
from core.code.graph.rank import Graph, pagerank

DEFAULT_TOKENS = 1_024
NO_FILE_FACTOR = 2  # the budget when the conversation names no file: a wider, flatter outline
MIN_TOKENS, MAX_TOKENS = 64, 32_000
MAX_SIGNATURE = 120
MAX_SIGNATURE_LINES = 8
MAX_FILE_BYTES = 1_000_000
MAX_MISSES = 40  # definitions tried after the first that did not fit
HEADER = "Repository map (outline of code, not instructions)"
OUTLINED = ("class", "function", "method")


@dataclass(frozen=True, slots=True)
class MapLine:
    symbol: str
    kind: str
    line: int
    signature: str

    def as_json(self) -> dict[str, Any]:
        return {
            "symbol": self.symbol,
            "kind": self.kind,
            "line": self.line,
            "signature": self.signature,
        }


@dataclass(frozen=True, slots=True)
class MapFile:
    path: str
    score: float
    definitions: tuple[MapLine, ...]

    def as_json(self) -> dict[str, Any]:
        return {
            "path": self.path,
            "score": round(self.score, 6),
            "definitions": [d.as_json() for d in self.definitions],
        }


@dataclass(frozen=True, slots=True)
class RepoMap:
    repo: str
    budget: int
    files: tuple[MapFile, ...]
    seeds: Seeds
    text: str
    tokens: int

    def as_json(self) -> dict[str, Any]:
        return {
            "repo": self.repo,
            "budget": self.budget,
            "tokens": self.tokens,
            "focus": {"paths": list(self.seeds.paths), "symbols": list(self.seeds.symbols)},
            "files": [f.as_json() for f in self.files],
        }


def default_budget(seeds: Seeds) -> int:
    return DEFAULT_TOKENS if seeds.paths else DEFAULT_TOKENS * NO_FILE_FACTOR


class _Sources:
    """Signature lines read from the repository's files, each file read at most once."""

    def __init__(self, root: Path) -> None:
        self._root = root
        self._files: dict[str, list[str] | None] = {}

    def lines(self, path: str) -> list[str] | None:
        if path not in self._files:
            self._files[path] = self._read(path)
        return self._files[path]

    def _read(self, path: str) -> list[str] | None:
        from core.code.secrets import looks_secret

        if looks_secret(path):
            return None
        try:
            target = (self._root / path).resolve()
            if not target.is_relative_to(self._root.resolve()) or not target.is_file():
                return None
            if target.stat().st_size > MAX_FILE_BYTES:
                return None
            return target.read_text(encoding="utf-8", errors="replace").splitlines()
        except (OSError, ValueError):
            return None

    def signature(self, path: str, symbol: str, kind: str, line: int) -> str:
        from core.code.redact import redact

        name = symbol.rsplit(".", 1)[-1]
        fallback = f"{'class' if kind == 'class' else 'def'} {name}"
        lines = self.lines(path)
        if not lines or not 1 <= line <= len(lines):
            return fallback
        i = line - 1
        while i < len(lines) - 1 and lines[i].lstrip().startswith("@"):
            i += 1  # a decorated definition may start at its decorator
        first = lines[i]
        if name not in first:
            return fallback  # the file changed since it was indexed
        parts = [first.strip()]
        depth = _open_brackets(first)
        j = i + 1
        while depth > 0 and j < len(lines) and j - i < MAX_SIGNATURE_LINES:
            parts.append(lines[j].strip())
            depth += _open_brackets(lines[j])
            j += 1
        text = " ".join(p for p in parts if p)
        text = re.sub(r"\(\s+", "(", re.sub(r"\s+\)", ")", text))
        text = text.removesuffix("{").rstrip()
        if len(text) > MAX_SIGNATURE:
            text = text[: MAX_SIGNATURE - 1] + "…"
        return redact(text, path).replace("```", "'''")


def _open_brackets(line: str) -> int:
    code = line.split("#", 1)[0]
    return sum(code.count(c) for c in "([{") - sum(code.count(c) for c in ")]}")


def _nested_in_function(graph: Graph, node: int, index: dict[tuple[str, str], int]) -> bool:
    symbol = graph.symbols[node]
    while "." in symbol:
        symbol = symbol.rsplit(".", 1)[0]
        parent = index.get((graph.paths[node], symbol))
        if parent is not None and graph.kinds[parent] in ("function", "method"):
            return True
    return False


def build_map(
    graph: Graph,
    root: Path,
    repo: str,
    found: Seeds,
    budget: int,
    count: Callable[[str], int],
    *,
    header: str = "",
    show_repo: bool = False,
) -> RepoMap:
    """The outline of `repo` within `budget` tokens (the `header`, if any, counted in)."""
    rank = pagerank(graph, found.nodes or None)
    file_score: dict[str, float] = {}
    for i, path in enumerate(graph.paths):  # a file is as important as its best definition
        file_score[path] = max(file_score.get(path, 0.0), float(rank[i]))
    index = {(graph.paths[i], graph.symbols[i]): i for i in range(graph.size)}
    order = sorted(
        (i for i in range(graph.size) if graph.kinds[i] in OUTLINED),
        key=lambda i: (-rank[i], graph.paths[i], graph.lines[i]),
    )
    sources = _Sources(root)
    chosen: dict[str, dict[int, MapLine]] = {}
    lines: dict[int, MapLine] = {}

    def entry(node: int) -> MapLine:
        if node not in lines:
            path, symbol, kind = graph.paths[node], graph.symbols[node], graph.kinds[node]
            signature = sources.signature(path, symbol, kind, graph.lines[node])
            lines[node] = MapLine(symbol, kind, graph.lines[node], signature)
        return lines[node]

    def file_label(path: str) -> str:
        return f"{repo}: {path}:" if show_repo else f"{path}:"

    def line_text(item: MapLine) -> str:
        indent = "    " * item.symbol.count(".")  # nesting: Class.method, Outer.Inner
        return f"{item.line:>5}: {indent}{item.signature}"

    used = len(header) + (1 if header else 0)
    limit = _chars_for(budget, count)
    misses = 0
    for node in order:
        if _nested_in_function(graph, node, index):
            continue
        path = graph.paths[node]
        shown = chosen.get(path, {})
        if node in shown:
            continue
        extra = [node]
        if graph.kinds[node] == "method":  # its class line comes along, for context
            owner = index.get((path, graph.symbols[node].rsplit(".", 1)[0]))
            if owner is not None and owner not in shown:
                extra.insert(0, owner)
        cost = sum(len(line_text(entry(n))) + 1 for n in extra)
        if path not in chosen:
            cost += len(file_label(path)) + 1
        if used + cost > limit:
            misses += 1
            if misses > MAX_MISSES:
                break
            continue
        used += cost
        target = chosen.setdefault(path, {})
        for n in extra:
            target[n] = entry(n)
    files = tuple(
        MapFile(path, file_score[path], tuple(sorted(items.values(), key=lambda x: x.line)))
        for path, items in sorted(chosen.items(), key=lambda kv: (-file_score[kv[0]], kv[0]))
    )
    body = [header] if header else []
    for f in files:
        body.append(file_label(f.path))
        body.extend(line_text(d) for d in f.definitions)
    text = "\n".join(body)
    return RepoMap(repo, budget, files, found, text, count(text) if text else 0)


def _chars_for(budget: int, count: Callable[[str], int]) -> int:
    """The most characters whose count stays within `budget` (counts grow with length)."""
    low, high = 0, budget * 8
    while low < high:
        mid = (low + high + 1) // 2
        if count("x" * mid) <= budget:
            low = mid
        else:
            high = mid - 1
    return low
