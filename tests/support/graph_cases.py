"""Shared by the per-language graph tests: the graph of a few files, its call edges in a form
easy to compare, and the bench fixtures (bench/graph_fixtures/LANG/CASE/ with expected.json)."""

from __future__ import annotations

import json

from core.code.graph.build import graph_of_files
from core.code.graph.model import Edge
from tests.support.paths import ROOT_DIR

FIXTURES = ROOT_DIR / "bench" / "graph_fixtures"


def edges_of(sources: dict[str, str]) -> list[Edge]:
    return graph_of_files({p: t.encode() for p, t in sources.items()})


def calls(sources: dict[str, str]) -> set[tuple[str, str]]:
    """("path:symbol", "path:symbol") per call edge; an unresolved target is "?name"."""
    return {
        (f"{e.source_path}:{e.source_symbol}", f"{e.target_path}:{e.target_symbol}")
        if e.target_path is not None
        else (f"{e.source_path}:{e.source_symbol}", f"?{e.target_name}")
        for e in edges_of(sources)
        if e.kind == "calls"
    }


def fixture_cases(*languages: str) -> list[str]:
    return sorted(
        f"{language}/{p.name}"
        for language in languages
        for p in (FIXTURES / language).iterdir()
        if p.is_dir()
    )


def assert_fixture_resolves_exactly(case: str) -> None:
    """The fixture's call edges are exactly its expected ones, and its outside calls keep
    their name with no target."""
    folder = FIXTURES / case
    expected = json.loads((folder / "expected.json").read_text())
    sources = {
        p.relative_to(folder).as_posix(): p.read_text()
        for p in folder.rglob("*")
        if p.is_file() and p.name != "expected.json"
    }
    found = calls(sources)
    assert {e for e in found if not e[1].startswith("?")} == {(a, b) for a, b in expected["calls"]}
    for source, name in expected.get("external", []):
        assert (source, f"?{name}") in found
