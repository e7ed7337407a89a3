"""JavaScript and TypeScript extraction and resolution of the code graph, on small in-memory
repositories and on the bench fixtures."""

from __future__ import annotations

import pytest

from core.code.graph.extract_js import module_name
from tests.support.graph_cases import (
    assert_fixture_resolves_exactly,
    calls,
    edges_of,
    fixture_cases,
)


@pytest.mark.parametrize("case", fixture_cases("js", "ts"))
def test_bench_fixtures_resolve_exactly(case: str) -> None:
    assert_fixture_resolves_exactly(case)


def test_module_names_follow_paths_and_index_files() -> None:
    assert module_name("src/lib/a.ts") == "src.lib.a"
    assert module_name("src/lib/index.js") == "src.lib"
    assert module_name("index.mjs") == ""
    assert module_name("web/App.tsx") == "web.App"


def test_multi_file_imports_requires_and_classes() -> None:
    found = calls(
        {
            "lib/a.js": "export function f() {}\nexport default class A {\n"
            "  constructor() { this.m(); }\n  m() {}\n}\n",
            "lib/index.ts": "export { f as g } from './a';\nexport * from './b';\n",
            "lib/b.ts": "export const h = () => 1;\n",
            "c.cjs": "function k() {}\nmodule.exports = { k };\n",
            "main.ts": "import A, { f as ff } from './lib/a.js';\nimport * as lib from './lib';\n"
            "const { k: kk } = require('./c.cjs');\n"
            "function go() {\n  ff();\n  lib.g();\n  lib.h();\n  kk();\n  new A().m();\n}\n",
        }
    )
    assert found >= {
        ("main.ts:go", "lib/a.js:f"),
        ("main.ts:go", "lib/b.ts:h"),
        ("main.ts:go", "c.cjs:k"),
        ("main.ts:go", "lib/a.js:A.constructor"),
        ("main.ts:go", "lib/a.js:A.m"),
        ("lib/a.js:A.constructor", "lib/a.js:A.m"),
    }


def test_packages_and_globals_never_land_on_local_symbols() -> None:
    found = calls(
        {
            "console.js": "export function log() {}\n",  # a file named like a global
            "lodash.js": "export function map() {}\n",  # and one named like a package
            "app.js": "import _ from 'lodash';\nimport { readFile } from 'node:fs';\n"
            "function go() {\n  console.log(1);\n  _.map([]);\n  readFile('x');\n"
            "  JSON.parse('{}');\n}\n",
        }
    )
    assert {e for e in found if e[0] == "app.js:go"} == {
        ("app.js:go", "?console.log"),
        ("app.js:go", "?lodash.map"),
        ("app.js:go", "?node:fs.readFile"),
        ("app.js:go", "?JSON.parse"),
    }


def test_this_and_super_follow_the_extends_chain() -> None:
    found = calls(
        {
            "a.ts": "export class A {\n  run() { this.step(); }\n  step() {}\n  done() {}\n}\n",
            "b.ts": "import { A } from './a';\nexport class B extends A {\n"
            "  step() { super.step(); this.done(); }\n}\n",
        }
    )
    assert ("a.ts:A.run", "a.ts:A.step") in found
    assert ("b.ts:B.step", "a.ts:A.step") in found
    assert ("b.ts:B.step", "a.ts:A.done") in found


def test_followed_variables_have_lower_confidence() -> None:
    edges = edges_of(
        {
            "m.js": "function f() {}\nconst g = f;\nfunction go(cb) {\n  f();\n  g();\n  cb();\n}\n"
            "go(f);\n"
        }
    )
    by_line = {e.source_line: e for e in edges if e.kind == "calls" and e.target_path}
    assert by_line[4].confidence == 1.0
    assert by_line[5].confidence < 1.0 and by_line[5].target_symbol == "f"
    assert by_line[6].confidence < 1.0 and by_line[6].target_symbol == "f"


def test_relations_other_than_calls() -> None:
    edges = edges_of(
        {
            "base.ts": "export interface Port { send(): void }\n"
            "export interface Big extends Port {}\nexport class Base {}\n",
            "impl.ts": "import { Base, Port } from './base';\nimport express from 'express';\n"
            "export class Impl extends Base implements Port {\n  send() {\n"
            "    const local = () => 1;\n  }\n}\n",
        }
    )
    shape = {(e.kind, e.source_path, e.source_symbol, e.target_path, e.target_name) for e in edges}
    assert ("inherits", "impl.ts", "Impl", "base.ts", "Base") in shape
    assert ("implements", "impl.ts", "Impl", "base.ts", "Port") in shape
    assert ("inherits", "base.ts", "Big", "base.ts", "Port") in shape
    assert ("imports", "impl.ts", "<module>", "base.ts", "<module>") in shape
    assert ("imports", "impl.ts", "<module>", None, "express") in shape
    assert ("contains", "impl.ts", "Impl", "impl.ts", "Impl.send") in shape
    assert ("contains", "impl.ts", "Impl.send", "impl.ts", "Impl.send.local") in shape
    assert ("contains", "impl.ts", "<module>", "impl.ts", "Impl") in shape


def test_edge_json_shape_and_string_literals_left_out() -> None:
    edges = edges_of(
        {"m.js": "function f() {\n  g();\n  connect('pg://u:pw@db').q();\n}\nfunction g() {}\n"}
    )
    call = next(e for e in edges if e.kind == "calls" and e.target_path)
    assert call.as_json() == {
        "kind": "calls",
        "source": {"path": "m.js", "symbol": "f", "line": 2},
        "target": {"path": "m.js", "symbol": "g", "line": 5},
        "confidence": 1.0,
    }
    names = {e.target_name for e in edges if e.kind == "calls" and e.target_path is None}
    assert names == {"connect", 'connect("…").q'}


def test_broken_source_still_gives_what_parses() -> None:
    found = calls(
        {"x.js": "function a() {\n  let = ;\n}\nfunction b() {\n  c();\n}\nfunction c() {}\n"}
    )
    assert ("x.js:b", "x.js:c") in found
