"""Python call edges checked against an outside call-graph suite (not a pytest test).

    .venv/bin/python bench/graph_external.py --suite DIR [--verbose] [--append bench/RESULTS.md]

The suite is NOT shipped with Threadline and nothing of it is copied here: get one yourself.
It is read in the layout of PyCG's micro-benchmark (github.com/vitsalis/PyCG,
`micro-benchmark/snippets/`): DIR/CATEGORY/CASE/ holds a small program (`main.py` and any
modules it imports) and `callgraph.json`, which maps each caller to its callees, both named
`module.qualname` (`main.A.func`; the module alone for its top-level code), builtins as
`<builtin>.len`, methods of literal types as `<**PyStr**>.join`, and modules that are not in
the folder (`ext.Cls.fun`) under their import name. A case whose modules are not all there
simply has fewer edges.

Each case folder is one repository for our graph: every `.py` file under it is extracted and
resolved as indexing does (`core.code.graph.build.graph_of_files`), and each call edge of ours
is named the suite's way: the file's dotted module (`pkg/mod.py` -> `pkg.mod`, a package's
`__init__.py` -> `pkg`), then the qualified symbol (`<module>` -> the module name alone). One
naming difference is translated: we name a lambda assigned to a variable after the variable
(`x = lambda: ...` defines `x`), the suite numbers every lambda of a scope (`<lambda1>`,
`<lambda2>`, ... in source order), so lambdas are renumbered that way before comparing.

Two numbers per category:

- local: edges whose callee is defined in the case's own files. Precision = our resolved call
  edges that the suite lists / our resolved call edges; recall = suite edges we found / suite
  edges. Our resolved edges only ever point into the case's files, so a builtin or an outside
  call that landed on a local symbol counts against precision here.
- outside: suite edges into builtins or modules not in the folder. We record such a call with
  no target under the name it resolves to (`len`, `ext.Cls.fun`) instead of guessing a local
  symbol; "named" counts those whose name equals the suite's callee (its `<builtin>.` prefix
  dropped). Methods of literal types (`<**PyStr**>.join`) are not typed by our graph: they
  stay under the name as written and are never counted as named.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from collections import defaultdict
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bench.machine import append_results  # noqa: E402
from core.code.graph.build import extract_files  # noqa: E402
from core.code.graph.extract_python import module_name  # noqa: E402
from core.code.graph.model import MODULE, Edge, FileFacts  # noqa: E402
from core.code.graph.resolve import Resolver  # noqa: E402

_LAMBDA = re.compile(r"<lambda(\d+)>")

Pair = tuple[str, str]


@dataclass
class Tally:
    cases: int = 0
    tp: int = 0
    fp: list[tuple[str, Pair]] = field(default_factory=list)
    fn: list[tuple[str, Pair]] = field(default_factory=list)
    outside: int = 0
    named: int = 0
    unnamed: list[tuple[str, Pair]] = field(default_factory=list)

    def add(self, other: Tally) -> None:
        self.cases += other.cases
        self.tp += other.tp
        self.fp += other.fp
        self.fn += other.fn
        self.outside += other.outside
        self.named += other.named
        self.unnamed += other.unnamed


def _lambda_names(facts: FileFacts, source: str) -> dict[str, str]:
    """Our symbol -> the suite's, for the lambdas of one file (see the module docstring)."""
    lines = source.splitlines()
    by_scope: dict[str, list[tuple[int, int, str]]] = defaultdict(list)
    for d in facts.definitions:
        scope, _, last = d.symbol.rpartition(".")
        numbered = _LAMBDA.fullmatch(last)
        if numbered:
            by_scope[scope].append((d.line, int(numbered.group(1)), d.symbol))
            continue
        text = lines[d.line - 1] if 0 < d.line <= len(lines) else ""
        if d.kind == "function" and re.match(rf"\s*{re.escape(last)}\s*=\s*lambda\b", text):
            by_scope[scope].append((d.line, 0, d.symbol))
    out: dict[str, str] = {}
    for scope, found in by_scope.items():
        for n, (_, _, symbol) in enumerate(sorted(found), 1):
            out[symbol] = f"{scope}.<lambda{n}>" if scope else f"<lambda{n}>"
    return out


def our_edges(case: Path) -> tuple[set[Pair], set[Pair], set[str]]:
    """(resolved call edges, unresolved ones as (caller, name), the case's module names)."""
    sources = {p.relative_to(case).as_posix(): p.read_bytes() for p in sorted(case.rglob("*.py"))}
    files = extract_files(sources)
    resolver = Resolver(files)
    renames: dict[str, dict[str, str]] = {
        path: _lambda_names(facts, sources[path].decode("utf-8", "replace"))
        for path, facts in files.items()
    }
    modules = {path: module_name(path)[0] for path in files}

    def name(path: str, symbol: str) -> str:
        symbol = renames[path].get(symbol, symbol)
        return modules[path] if symbol == MODULE else f"{modules[path]}.{symbol}"

    resolved: set[Pair] = set()
    unresolved: set[Pair] = set()
    for path in sorted(files):
        edge: Edge
        for edge in resolver.edges(path):
            if edge.kind != "calls":
                continue
            caller = name(path, edge.source_symbol)
            if edge.target_path is not None and edge.target_symbol is not None:
                resolved.add((caller, name(edge.target_path, edge.target_symbol)))
            else:
                unresolved.add((caller, edge.target_name))
    return resolved, unresolved, set(modules.values())


def _local(callee: str, modules: set[str]) -> bool:
    return any(callee == m or callee.startswith(m + ".") for m in modules)


def measure(case: Path, label: str) -> Tally:
    expected = json.loads((case / "callgraph.json").read_text())
    resolved, unresolved, modules = our_edges(case)
    want = {(caller, callee) for caller, callees in expected.items() for callee in callees}
    local = {e for e in want if _local(e[1], modules)}
    tally = Tally(cases=1, tp=len(resolved & local))
    tally.fp = [(label, e) for e in sorted(resolved - local)]
    tally.fn = [(label, e) for e in sorted(local - resolved)]
    for caller, callee in sorted(want - local):
        tally.outside += 1
        outside_name = callee.removeprefix("<builtin>.")
        if not callee.startswith("<**") and (caller, outside_name) in unresolved:
            tally.named += 1
        else:
            tally.unnamed.append((label, (caller, callee)))
    return tally


def ratio(a: int, b: int) -> str:
    return f"{a / b:.3f}" if b else "n/a"


def row(name: str, t: Tally, bold: bool = False) -> str:
    fp, fn = len(t.fp), len(t.fn)
    p, r = ratio(t.tp, t.tp + fp), ratio(t.tp, t.tp + fn)
    if bold:
        p, r = f"**{p}**", f"**{r}**"
    return (
        f"| {name} | {t.cases} | {t.tp + fn} | {t.tp} | {fp} | {fn} | {p} | {r} | "
        f"{t.named}/{t.outside} |"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--suite", type=Path, required=True, help="DIR/CATEGORY/CASE/ folders")
    parser.add_argument("--append", type=Path, help="append the table to this Markdown file")
    parser.add_argument("--verbose", action="store_true", help="list every miss")
    args = parser.parse_args()
    suite = args.suite.resolve()

    categories: dict[str, Tally] = defaultdict(Tally)
    for spec in sorted(suite.rglob("callgraph.json")):
        case = spec.parent
        label = case.relative_to(suite).as_posix()
        categories[label.split("/", 1)[0]].add(measure(case, label))
    if not categories:
        raise SystemExit(f"no CATEGORY/CASE/callgraph.json under {suite}")
    total = Tally()
    rows = []
    for category, tally in sorted(categories.items()):
        total.add(tally)
        rows.append(row(category, tally))
    rows.append(row("**all**", total, bold=True))
    if args.verbose:
        for label, edge in total.fp:
            print(f"  {label} FP {edge[0]} -> {edge[1]}")
        for label, edge in total.fn:
            print(f"  {label} FN {edge[0]} -> {edge[1]}")
        for label, edge in total.unnamed:
            print(f"  {label} outside, not named {edge[0]} -> {edge[1]}")
    header = (
        "| category | cases | expected local | found | false + | missed | precision | recall | "
        "outside named |\n|---|---:|---:|---:|---:|---:|---:|---:|---:|"
    )
    table = "\n".join([header, *rows])
    print(table)
    if args.append:
        append_results(
            args.append,
            "Code graph: Python call edges on an outside suite",
            f"{table}\n\n"
            "Suite: programs and expected call graphs in the layout of PyCG's micro-benchmark, "
            "obtained separately (not shipped, not copied into the repository). Local = callee "
            "defined in the case's files; outside named = builtin/outside calls we kept with no "
            "target under the suite's name. Method: the docstring of bench/graph_external.py.\n",
        )


if __name__ == "__main__":
    main()
