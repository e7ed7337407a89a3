"""Go extraction and resolution of the code graph, on small in-memory repositories."""

from __future__ import annotations

import json

import pytest

from core.code.graph.extract import extract, graph_language
from core.code.graph.model import FileFacts
from tests.support.graph_cases import (
    assert_fixture_resolves_exactly,
    calls,
    edges_of,
    fixture_cases,
)

GO_MOD = "module example.com/shop\n\ngo 1.22\n"


@pytest.mark.parametrize("case", fixture_cases("go"))
def test_bench_fixtures_resolve_exactly(case: str) -> None:
    assert_fixture_resolves_exactly(case)


def test_go_files_and_go_mod_are_read() -> None:
    assert graph_language("cmd/main.go") == "go"
    assert graph_language("go.mod") == "go"
    assert graph_language("tools/go.mod") == "go"
    facts = extract("go.mod", GO_MOD.encode())
    assert facts is not None and facts.module == "gomod:example.com/shop"
    assert facts.definitions == []


def test_facts_survive_storage() -> None:
    source = b"package a\n\ntype T struct{ B }\n\nfunc (t *T) M() { t.N() }\n"
    facts = extract("a/a.go", source)
    assert facts is not None
    again = FileFacts.from_json("a/a.go", json.loads(json.dumps(facts.as_json())))
    assert again.as_json() == facts.as_json()


def test_contains_imports_and_embedding_edges() -> None:
    edges = edges_of(
        {
            "go.mod": GO_MOD,
            "a/a.go": 'package a\n\nimport (\n\t"fmt"\n\t"example.com/shop/b"\n)\n\n'
            "type T struct {\n\tb.Base\n}\n\nfunc (t *T) M() { fmt.Println(t) }\n",
            "b/b.go": "package b\n\ntype Base struct{}\n",
        }
    )
    shapes = {
        (e.kind, e.source_symbol, e.target_path, e.target_symbol or e.target_name) for e in edges
    }
    assert ("imports", "<module>", "b/b.go", "<module>") in shapes
    assert ("imports", "<module>", None, "fmt") in shapes
    assert ("inherits", "T", "b/b.go", "Base") in shapes
    assert ("contains", "<module>", "a/a.go", "T") in shapes
    assert ("contains", "T", "a/a.go", "T.M") in shapes
    assert ("contains", "<module>", "b/b.go", "Base") in shapes
    first = next(e for e in edges if e.kind == "imports" and e.target_path is None)
    assert first.as_json()["target"] == {"name": "fmt"}


def test_confidence_scoped_for_imports_and_receivers_lower_through_variables() -> None:
    edges = edges_of(
        {
            "go.mod": GO_MOD,
            "a/a.go": 'package a\n\nimport "example.com/shop/b"\n\n'
            "type S struct{}\n\nfunc (s *S) Run() {\n\ts.stop()\n\tb.Do()\n\thelper()\n"
            "\tx := &S{}\n\tx.stop()\n}\n\nfunc (s *S) stop() {}\n",
            "a/helper.go": "package a\n\nfunc helper() {}\n",
            "b/b.go": "package b\n\nfunc Do() {}\n",
        }
    )
    by_line = {e.source_line: e for e in edges if e.kind == "calls"}
    assert (by_line[8].target_symbol, by_line[8].confidence) == ("S.stop", 1.0)
    assert (by_line[9].target_path, by_line[9].confidence) == ("b/b.go", 1.0)
    assert (by_line[10].target_path, by_line[10].confidence) == ("a/helper.go", 1.0)
    assert (by_line[12].target_symbol, by_line[12].confidence) == ("S.stop", 0.9)


def test_unexported_names_of_other_packages_and_test_packages_stay_apart() -> None:
    found = calls(
        {
            "go.mod": GO_MOD,
            "a/a.go": 'package a\n\nimport "example.com/shop/b"\n\n'
            "func Run() {\n\tb.hidden()\n\tlocal()\n}\n",
            "a/a_test.go": "package a_test\n\nfunc local() {}\n",
            "b/b.go": "package b\n\nfunc hidden() {}\n",
        }
    )
    assert ("a/a.go:Run", "?b.hidden") in found
    assert ("a/a.go:Run", "?local") in found  # a_test is another package


def test_ambiguous_promotion_and_interface_calls_have_no_target() -> None:
    found = calls(
        {
            "go.mod": GO_MOD,
            "z.go": "package z\n\ntype A struct{}\n\nfunc (A) Hi() {}\n\ntype B struct{}\n\n"
            "func (B) Hi() {}\n\ntype C struct {\n\tA\n\tB\n}\n\n"
            "type Greeter interface{ Hi() }\n\n"
            "func Run(c C, g Greeter) {\n\tc.Hi()\n\tg.Hi()\n\tc.A.Hi()\n}\n",
        }
    )
    assert ("z.go:Run", "?c.Hi") in found  # two Hi at the same depth: Go rejects it
    assert ("z.go:Run", "?g.Hi") in found
    assert ("z.go:Run", "z.go:A.Hi") in found
    assert not any(t == "z.go:B.Hi" for _, t in found)


def test_nested_module_maps_its_own_import_paths() -> None:
    found = calls(
        {
            "go.mod": GO_MOD,
            "tools/go.mod": "module example.com/tools\n",
            "tools/gen/gen.go": "package gen\n\nfunc Gen() {}\n",
            "tools/main.go": 'package main\n\nimport "example.com/tools/gen"\n\n'
            "func main() { gen.Gen() }\n",
            "gen/gen.go": "package gen\n\nfunc Gen() {}\n",
        }
    )
    assert ("tools/main.go:main", "tools/gen/gen.go:Gen") in found
    assert not any(t == "gen/gen.go:Gen" for _, t in found)


def test_python_names_never_fall_back_onto_go_definitions() -> None:
    found = calls(
        {
            "app.py": "def go():\n    Serve()\n",
            "srv/srv.go": "package srv\n\nfunc Serve() {}\n",
        }
    )
    assert ("app.py:go", "?Serve") in found


def test_implements_where_the_method_sets_are_known() -> None:
    edges = edges_of(
        {
            "go.mod": GO_MOD,
            "io/io.go": "package io\n\ntype Item struct{}\n\n"
            "type Reader interface {\n\tRead(p []byte) (int, error)\n}\n\n"
            "type ReadGetter interface {\n\tReader\n\tGet(key string) *Item\n}\n\n"
            "type Outside interface {\n\tfmt.Stringer\n}\n\n"
            "type Number interface {\n\t~int | ~float64\n}\n\n"
            "type Any interface{}\n",
            "file/file.go": 'package file\n\nimport "example.com/shop/io"\n\n'
            "type Base struct{}\n\n"
            "func (b *Base) Read(buf []byte) (int, error) { return 0, nil }\n\n"
            "type File struct {\n\tBase\n}\n\n"
            "func (f File) Get(k string) *io.Item { return nil }\n\n"
            "type Other struct{}\n\nfunc (o Other) Read(buf []byte) int { return 0 }\n",
        }
    )
    found = {
        (f"{e.source_path}:{e.source_symbol}", f"{e.target_path}:{e.target_symbol}")
        for e in edges
        if e.kind == "implements"
    }
    assert found == {
        ("file/file.go:Base", "io/io.go:Reader"),
        ("file/file.go:File", "io/io.go:Reader"),  # Read promoted from the embedded Base
        ("file/file.go:File", "io/io.go:ReadGetter"),
    }
