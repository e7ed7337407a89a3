"""Which extractor reads which file: `extract(path, source)` gives a file's `FileFacts`, or None
for a language the graph does not read (yet)."""

from __future__ import annotations

from core.code.graph.model import FileFacts
from core.code.languages import language_for

GRAPH_LANGUAGES = frozenset({"python", "javascript", "typescript", "tsx"})


def graph_language(path: str) -> str | None:
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
    return None
