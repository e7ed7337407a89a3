"""The code graph's data: what extraction says about one file, and the edges resolution makes.

Values are small JSON-able lists describing what a name may hold, in the file that holds it:

- `["d", "A.m"]` a definition of this file; `["m", "pkg.mod.f"]` an absolute dotted name from
  an import; `["n", "name"]` a global name bound nowhere in the file (a builtin, a star import,
  or unknown);
- `["a", V, "attr"]` an attribute of V; `["c", V]` what calling V returns; `["i", V]` an
  instance of class V (from an annotation); `["s", "A"]` `super()` inside class A;
- `["x", "name"]` outside the repository by construction (a JavaScript package or global).

They stay symbolic because what an import means depends on other files: `resolve` evaluates
them once every file of the repository is known.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal, TypeVar

EdgeKind = Literal["calls", "inherits", "implements", "imports", "contains"]
EDGE_KINDS: tuple[EdgeKind, ...] = ("calls", "inherits", "implements", "imports", "contains")
RefKind = Literal["calls", "inherits", "implements", "imports"]
DefKind = Literal["module", "class", "function", "method"]

MODULE = "<module>"  # the symbol of a file's top-level code
# The name of calls nobody writes (a loop's `<implicit>.__iter__` and `.__next__`, the function
# a builtin calls, `<implicit>.map`): never source text, so the resolver knows to keep them only
# when they land on a definition of the repository.
IMPLICIT = "<implicit>"

Value = list[Any] | tuple[Any, ...]  # see the module docstring (tuples while extracting)

# Confidence of an edge, by how its target was found.
SCOPED = 1.0  # a name bound by a definition or an import, self/cls/super through the MRO
FLOW = 0.9  # through a variable, a parameter, a return value or a container
FALLBACK = 0.5  # the only definition of that name in the repository: a guess


@dataclass(frozen=True, slots=True)
class Definition:
    symbol: str  # qualified inside its file: "Class.method", "function.inner", "<module>"
    kind: DefKind
    line: int  # 1-based
    end_line: int


@dataclass(frozen=True, slots=True)
class Reference:
    """Something the source symbol does to a target not known yet (a call, an import, a
    base class). `name` is how the source spells it, shown when nothing resolves."""

    kind: RefKind
    source: str
    line: int
    targets: tuple[Value, ...]
    name: str
    confidence: float = SCOPED


@dataclass(slots=True)
class ClassFacts:
    bases: list[Value] = field(default_factory=list)
    members: dict[str, list[Value]] = field(default_factory=dict)  # methods, attributes


@dataclass(slots=True)
class FileFacts:
    """All resolution needs of one file; `as_json`/`from_json` are how it is stored."""

    path: str
    language: str
    module: str  # dotted name ("pkg.mod"; a package's __init__ is "pkg"); "" when none
    definitions: list[Definition] = field(default_factory=list)
    names: dict[str, list[Value]] = field(default_factory=dict)  # the module's namespace
    classes: dict[str, ClassFacts] = field(default_factory=dict)
    returns: dict[str, list[Value]] = field(default_factory=dict)
    stars: list[str] = field(default_factory=list)  # modules imported with `*`
    references: list[Reference] = field(default_factory=list)

    def as_json(self) -> dict[str, Any]:
        return {
            "language": self.language,
            "module": self.module,
            "defs": [[d.symbol, d.kind, d.line, d.end_line] for d in self.definitions],
            "names": self.names,
            "classes": {q: [c.bases, c.members] for q, c in self.classes.items()},
            "returns": self.returns,
            "stars": self.stars,
            "refs": [
                [r.kind, r.source, r.line, list(r.targets), r.name, r.confidence]
                for r in self.references
            ],
        }

    @classmethod
    def from_json(cls, path: str, data: dict[str, Any]) -> FileFacts:
        return cls(
            path=path,
            language=data["language"],
            module=data["module"],
            definitions=[Definition(s, k, a, b) for s, k, a, b in data["defs"]],
            names=data["names"],
            classes={q: ClassFacts(b, m) for q, (b, m) in data["classes"].items()},
            returns=data["returns"],
            stars=data["stars"],
            references=[
                Reference(k, s, line, tuple(t), n, c) for k, s, line, t, n, c in data["refs"]
            ],
        )


@dataclass(frozen=True, slots=True)
class Edge:
    kind: EdgeKind
    source_path: str
    source_symbol: str
    source_line: int
    target_path: str | None  # None: unresolved (outside the repository, or unknown)
    target_symbol: str | None
    target_line: int | None
    target_name: str  # the qualified symbol when resolved, else the name as written
    confidence: float

    @property
    def key(self) -> tuple[Any, ...]:
        """What makes two edges the same edge (a call made twice on one line is one edge)."""
        return (self.kind, self.source_symbol, self.source_line, self.target_path, self.target_name)

    def as_json(self) -> dict[str, Any]:
        """The shape `threadline graph --edges --json` prints (documented in the README)."""
        target: dict[str, Any]
        if self.target_path is None:
            target = {"name": self.target_name}
        else:
            target = {
                "path": self.target_path,
                "symbol": self.target_symbol,
                "line": self.target_line,
            }
        return {
            "kind": self.kind,
            "source": {
                "path": self.source_path,
                "symbol": self.source_symbol,
                "line": self.source_line,
            },
            "target": target,
            "confidence": round(self.confidence, 3),
        }


T = TypeVar("T")


def capped(values: Sequence[T], limit: int) -> list[T]:
    """At most `limit` of `values`, the same ones in every process: extractors gather values in
    sets, whose order follows hashes that differ between runs (hash(None) is its address on
    3.11), so a cut in iteration order kept different values, and made different edges, each
    time."""
    if len(values) <= limit:
        return list(values)
    return sorted(values, key=repr)[:limit]


STORED_VALUES = 16  # values kept per name, base or call target in the stored facts


def stored(values: Iterable[Any]) -> list[Any]:
    """Values as the facts store them: sorted (the same in every process) and at most
    `STORED_VALUES`. Tuples: JSON writes them as arrays, and the resolver reads either."""
    items = list(values)
    if len(items) < 2:  # most names and calls have one value: no repr to sort by
        return items
    return sorted(items, key=repr)[:STORED_VALUES]


def reference(
    kind: RefKind, source: str, line: int, values: Iterable[Any], name: str, confidence: float
) -> Reference:
    return Reference(kind, source, line, tuple(stored(values)), name, confidence)
