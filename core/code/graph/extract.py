"""Which extractor reads which file: `extract(path, source)` gives a file's `FileFacts`, or None
for a language the graph does not read (yet)."""

from __future__ import annotations

from core.code.graph.model import FileFacts
from core.code.languages import language_for

GRAPH_LANGUAGES = frozenset({"python", "javascript", "typescript", "tsx", "go", "java"})


def graph_language(path: str) -> str | None:
    if path == "go.mod" or path.endswith("/go.mod"):  # Go's module path maps import paths
        return "go"
    language = language_for(path)
    return language if language in GRAPH_LANGUAGES else None


def extract(path: str, source: bytes) -> FileFacts | None:
    language = graph_language(path)
    if language == "python":
        from core.code.graph.extract_python import extract_python

        return extract_python(path, source)
    if language in ("javascript", "typescript", "tsx"):
        from core.code.graph.extract_js import extract_js

        return extract_js(path, source, language)
    if language == "go":
        from core.code.graph.extract_go import extract_go

        return extract_go(path, source)
    if language == "java":
        from core.code.graph.extract_java import extract_java

        return extract_java(path, source)
    return None
