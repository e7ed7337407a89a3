"""Precision and recall of the code graph's call edges on hand-written fixtures (not a pytest
test).

    .venv/bin/python bench/graph_quality.py [--append bench/RESULTS.md] [--verbose] [--language go]

Each folder under bench/graph_fixtures/LANGUAGE/ is a small program written for this bench,
with `expected.json`: the feature it exercises, the call edges a correct graph has
(`["path:symbol", "path:symbol"]`, one per caller/callee pair, whatever the number of call
sites) and calls that leave the repository (`external`: `["path:symbol", "name"]`).

Every file of a fixture is extracted and resolved as indexing does (`core.code.graph.build`).
A resolved call edge (one with a target) that is not expected is a false positive: among them,
a call into the standard library that landed on a local symbol. Recall = expected edges found /
expected edges. "External kept" = expected outside calls that appear unresolved under that
name (not guessed onto a local symbol).
"""

from __future__ import annotations

import argparse
import json
import sys
from datetime import UTC, datetime
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bench.machine import append_section, machine_facts  # noqa: E402
from core.code.graph.build import graph_of_files  # noqa: E402

FIXTURES = ROOT / "bench" / "graph_fixtures"


def load(case: Path) -> dict[str, bytes]:
    return {
        p.relative_to(case).as_posix(): p.read_bytes()
        for p in sorted(case.rglob("*"))
        if p.is_file() and p.name != "expected.json"
    }


def measure(case: Path) -> dict[str, object]:
    expected = json.loads((case / "expected.json").read_text())
    edges = graph_of_files(load(case))
    found = {
        (f"{e.source_path}:{e.source_symbol}", f"{e.target_path}:{e.target_symbol}")
        for e in edges
        if e.kind == "calls" and e.target_path is not None
    }
    outside = {
        (f"{e.source_path}:{e.source_symbol}", e.target_name)
        for e in edges
        if e.kind == "calls" and e.target_path is None
    }
    want = {(a, b) for a, b in expected["calls"]}
    external = {(a, b) for a, b in expected.get("external", [])}
    return {
        "feature": expected["feature"],
        "tp": len(found & want),
        "fp": sorted(found - want),
        "fn": sorted(want - found),
        "expected": len(want),
        "external": len(external),
        "external_kept": len(external & outside),
    }


def ratio(a: int, b: int) -> str:
    return f"{a / b:.3f}" if b else "n/a"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--append", type=Path, help="append the tables to this Markdown file")
    parser.add_argument("--verbose", action="store_true", help="list every miss")
    parser.add_argument("--language", action="append", help="only this fixture folder (repeatable)")
    args = parser.parse_args()

    sections = []
    for language_dir in sorted(p for p in FIXTURES.iterdir() if p.is_dir()):
        if args.language and language_dir.name not in args.language:
            continue
        rows = []
        totals = {"tp": 0, "fp": 0, "fn": 0, "external": 0, "kept": 0}
        for case in sorted(p for p in language_dir.iterdir() if p.is_dir()):
            m = measure(case)
            tp, fp, fn = int(m["tp"]), len(m["fp"]), len(m["fn"])  # type: ignore[arg-type, call-overload]
            totals["tp"] += tp
            totals["fp"] += fp
            totals["fn"] += fn
            totals["external"] += int(m["external"])  # type: ignore[call-overload]
            totals["kept"] += int(m["external_kept"])  # type: ignore[call-overload]
            rows.append(
                f"| {m['feature']} | {m['expected']} | {tp} | {fp} | {fn} | "
                f"{ratio(tp, tp + fp)} | {ratio(tp, tp + fn)} | "
                f"{m['external_kept']}/{m['external']} |"
            )
            if args.verbose:
                for edge in m["fp"]:  # type: ignore[attr-defined]
                    print(f"  {language_dir.name}/{case.name} FP {edge}")
                for edge in m["fn"]:  # type: ignore[attr-defined]
                    print(f"  {language_dir.name}/{case.name} FN {edge}")
        tp, fp, fn = totals["tp"], totals["fp"], totals["fn"]
        rows.append(
            f"| **all** | {tp + fn} | {tp} | {fp} | {fn} | **{ratio(tp, tp + fp)}** | "
            f"**{ratio(tp, tp + fn)}** | {totals['kept']}/{totals['external']} |"
        )
        header = (
            f"### {language_dir.name}\n\n"
            "| feature | expected | found | false + | missed | precision | recall | "
            "external kept |\n|---|---:|---:|---:|---:|---:|---:|---:|"
        )
        sections.append("\n".join([header, *rows]))
    text = "\n\n".join(sections)
    print(text)
    if args.append:
        stamp = datetime.now(UTC).strftime("%Y-%m-%d %H:%M UTC")
        facts = "\n".join(f"- {k}: {v}" for k, v in machine_facts().items())
        append_section(
            args.append,
            f"## Code graph: call-edge precision and recall — {stamp}\n\n"
            f"Command: `.venv/bin/python bench/graph_quality.py {' '.join(sys.argv[1:])}`\n\n"
            f"{facts}\n\n{text}\n\n"
            "Fixtures: bench/graph_fixtures/LANGUAGE/CASE (programs written for this bench, "
            "expected edges listed by hand). An edge = one caller/callee pair with a target; "
            "external kept = calls into the standard library left unresolved under their own "
            "name instead of landing on a local symbol.\n",
        )


if __name__ == "__main__":
    main()
