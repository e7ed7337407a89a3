"""Java extraction and resolution of the code graph, on small in-memory repositories."""

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

SHAPES = """package app.shapes;

import java.util.List;

public abstract class Shape implements Comparable<Shape> {
    public abstract double area();

    public int compareTo(Shape other) {
        return Double.compare(area(), other.area());
    }
}
"""
CIRCLE = """package app.shapes;

public class Circle extends Shape {
    private final double r;

    public Circle(double r) { this.r = r; }

    public double area() { return Math.PI * r * r; }

    public double area(int scale) { return area() * scale; }
}
"""
MAIN = """package app;

import app.shapes.Circle;
import app.shapes.*;
import java.util.ArrayList;

public class Main {
    private Circle unit = new Circle(1);

    static double total(Shape s) { return s.area(); }

    void run() {
        var c = new Circle(2.0);
        c.area(3);
        unit.area();
        total(c);
        new ArrayList<String>().add("x");
        Helper.help();
    }

    static class Helper {
        static void help() { total(null); }
    }
}
"""
OTHER = """package other;

public class Circle {
    public double area() { return 0; }
}
"""


REPO = {
    "src/app/shapes/Shape.java": SHAPES,
    "src/app/shapes/Circle.java": CIRCLE,
    "src/app/Main.java": MAIN,
    "src/other/Circle.java": OTHER,
}


@pytest.mark.parametrize("case", fixture_cases("java"))
def test_bench_fixtures_resolve_exactly(case: str) -> None:
    assert_fixture_resolves_exactly(case)


def test_java_files_are_read() -> None:
    assert graph_language("src/app/Main.java") == "java"
    facts = extract("src/app/Main.java", MAIN.encode())
    assert facts is not None and facts.module == "app"
    symbols = {d.symbol: d.kind for d in facts.definitions}
    assert symbols["Main.Helper"] == "class"
    assert symbols["Main.Helper.help"] == "method"


def test_facts_survive_storage() -> None:
    facts = extract("src/app/Main.java", MAIN.encode())
    assert facts is not None
    stored = FileFacts.from_json(facts.path, json.loads(json.dumps(facts.as_json())))
    assert stored.as_json() == facts.as_json()


def test_calls_resolve_through_packages_not_names() -> None:
    found = calls(REPO)
    main = "src/app/Main.java"
    circle = "src/app/shapes/Circle.java"
    assert (f"{main}:Main.run", f"{circle}:Circle.Circle") in found
    assert (f"{main}:Main.run", f"{circle}:Circle.area") in found
    assert (f"{main}:Main.run", f"{main}:Main.total") in found
    assert (f"{main}:Main.run", f"{main}:Main.Helper.help") in found
    assert (f"{main}:Main.Helper.help", f"{main}:Main.total") in found  # the enclosing class
    assert (f"{main}:Main", f"{circle}:Circle.Circle") in found  # a field initializer
    assert (f"{main}:Main.total", "src/app/shapes/Shape.java:Shape.area") in found
    assert (f"{main}:Main.run", "?new ArrayList<String>().add") in found  # outside: no target
    assert not any(target.startswith("src/other/") for _, target in found)
    shape = "src/app/shapes/Shape.java"
    assert (f"{shape}:Shape.compareTo", f"{shape}:Shape.area") in found
    assert (f"{shape}:Shape.compareTo", "?Double.compare") in found


def test_overloads_match_the_argument_count() -> None:
    found = calls(REPO)
    circle = "src/app/shapes/Circle.java"
    # area(int) calls area(): the same class's symbol, never the abstract Shape.area
    assert (f"{circle}:Circle.area", f"{circle}:Circle.area") in found
    sources = {
        "A.java": "class A { void m(int a, int b) {} }",
        "B.java": "class B extends A { void m(int a) {} void go() { m(1, 2); m(1); } }",
    }
    assert calls(sources) >= {("B.java:B.go", "A.java:A.m"), ("B.java:B.go", "B.java:B.m")}


def test_confidence_is_lower_through_inferred_variables() -> None:
    edges = [e for e in edges_of(REPO) if e.kind == "calls" and e.target_path is not None]
    by_line = {(e.source_line, e.target_symbol): e.confidence for e in edges}
    assert by_line[(14, "Circle.area")] == 0.9  # var c = new Circle(...)
    assert by_line[(15, "Circle.area")] == 1.0  # a declared field
    assert by_line[(13, "Circle.Circle")] == 1.0


def test_hierarchy_and_imports() -> None:
    edges = edges_of(REPO)
    kinds = {
        (e.kind, e.source_symbol, e.target_path, e.target_name)
        for e in edges
        if e.kind in ("inherits", "implements", "imports")
    }
    assert ("inherits", "Circle", "src/app/shapes/Shape.java", "Shape") in kinds
    assert ("implements", "Shape", None, "Comparable") in kinds
    assert ("imports", "<module>", "src/app/shapes/Circle.java", "Circle") in kinds
    assert ("imports", "<module>", None, "java.util.ArrayList") in kinds
    contains = {(e.source_symbol, e.target_symbol) for e in edges if e.kind == "contains"}
    assert ("Main", "Main.Helper") in contains
    assert ("Main.Helper", "Main.Helper.help") in contains


def test_a_superclass_outside_the_repository_leaves_inherited_calls_open() -> None:
    sources = {
        "W.java": (
            "import javax.swing.JPanel;\n"
            "class W extends JPanel { void paint() { repaint(); this.helper(); }"
            " void helper() {} }"
        )
    }
    found = calls(sources)
    assert ("W.java:W.paint", "?repaint") in found
    assert ("W.java:W.paint", "W.java:W.helper") in found


def test_interfaces_extend_and_implement() -> None:
    sources = {
        "p/I.java": "package p; public interface I { void a(); }",
        "p/J.java": "package p; public interface J extends I { }",
        "p/K.java": "package p; enum K implements J { X; public void a() {} }",
    }
    kinds = {(e.kind, e.source_symbol, e.target_name) for e in edges_of(sources)}
    assert ("inherits", "J", "I") in kinds
    assert ("implements", "K", "J") in kinds
    sources["p/U.java"] = "package p; class U { void u(J j) { j.a(); } }"
    assert ("p/U.java:U.u", "p/I.java:I.a") in calls(sources)
