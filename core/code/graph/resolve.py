"""Linking every file's references into edges, through imports, scopes and class hierarchies.

`Resolver(files)` knows every file of a repository (their `FileFacts`). `edges(path)` evaluates
the values of that file's references (see `model`): a dotted import name goes to the longest
module prefix the repository has, then attribute by attribute through module namespaces
(re-exports in `__init__.py` are just names bound there), class members along the method
resolution order (C3), and what calls return. A name found nowhere in the repository stays
what it is called (`os.path.join`) with no target; only a global name bound nowhere at all
falls back to the repository's single top-level definition of that name, at low confidence.
"""

from __future__ import annotations

import builtins
from collections.abc import Iterable
from typing import TYPE_CHECKING, Any

from core.code.graph.gcpause import gc_paused
from core.code.graph.model import (
    FALLBACK,
    IMPLICIT,
    MODULE,
    Definition,
    Edge,
    EdgeKind,
    FileFacts,
    Reference,
)

if TYPE_CHECKING:
    from core.code.graph.resolve_go import GoResolver
    from core.code.graph.resolve_java import JavaResolver

MAX_DEPTH = 30
MAX_ENTITIES = 24
_BUILTINS = frozenset(dir(builtins))
_SOURCE_ROOTS = ("src", "lib", "python", "source")
_CONSTRUCTORS = {"javascript": "constructor", "typescript": "constructor", "tsx": "constructor"}
_INTERFACE_BASES = frozenset({"typing.Protocol", "abc.ABC", "typing_extensions.Protocol"})

# Entities: ("M", path) a module; ("D", path, symbol) a definition; ("I", path, class) an
# instance; ("S", path, class) super() in that class; ("X", dotted) outside the repository;
# ("L", path, items) a container whose items are values of that file.
Entity = tuple[Any, ...]
Found = tuple[Entity, bool]  # (entity, reached through the unique-name fallback)


def _freeze(value: Any) -> Any:
    if isinstance(value, list):
        return tuple(_freeze(v) for v in value)
    return value


def module_keys(facts: FileFacts) -> list[str]:
    """The dotted names a file answers to: its path's, and without a source root folder."""
    if not facts.module:
        return []
    keys = [facts.module]
    head, _, rest = facts.module.partition(".")
    if head in _SOURCE_ROOTS and rest:
        keys.append(rest)
    return keys


class Resolver:
    def __init__(self, files: dict[str, FileFacts]) -> None:
        self.files = files
        self.modules: dict[str, str] = {}
        self.definitions: dict[str, dict[str, Definition]] = {}
        self.top_level: dict[str, list[tuple[str, str]]] = {}
        for path in sorted(files):
            facts = files[path]
            if facts.language in ("go", "java"):  # resolve_go, resolve_java; no fallback onto them
                continue
            for key in module_keys(facts):
                self.modules.setdefault(key, path)
            self.definitions[path] = {d.symbol: d for d in facts.definitions}
            for d in facts.definitions:
                if d.kind in ("function", "class") and "." not in d.symbol:
                    self.top_level.setdefault(d.symbol, []).append((path, d.symbol))
        self._memo: dict[tuple[str, Any], frozenset[Found]] = {}
        self._mros: dict[tuple[str, str], list[Entity]] = {}
        self._subclasses: dict[tuple[str, str], list[tuple[str, str]]] | None = None
        self._active: set[tuple[str, Any]] = set()
        self._go: GoResolver | None = None
        self._java: JavaResolver | None = None

    # -- evaluation ----------------------------------------------------------------------------

    def eval(self, ctx: str, value: Any, depth: int = 0) -> frozenset[Found]:
        key = (ctx, value)
        cached = self._memo.get(key)
        if cached is not None:
            return cached
        if depth > MAX_DEPTH or key in self._active:
            return frozenset()
        self._active.add(key)
        try:
            found = frozenset(list(self._eval(ctx, value, depth + 1))[:MAX_ENTITIES])
        finally:
            self._active.discard(key)
        self._memo[key] = found
        return found

    def _eval(self, ctx: str, value: Any, depth: int) -> Iterable[Found]:
        tag = value[0]
        if tag == "d":
            if value[1] in self.definitions.get(ctx, {}):
                return [(("D", ctx, value[1]), False)]
            return ()
        if tag == "m":
            return self._dotted(value[1], depth)
        if tag == "n":
            return self._global(ctx, value[1], depth)
        if tag == "a":
            return [
                (member, low or low2)
                for entity, low in self.eval(ctx, value[1], depth)
                for member, low2 in self.member(entity, value[2], depth)
            ]
        if tag == "c":
            return [
                (result, low or low2)
                for entity, low in self.eval(ctx, value[1], depth)
                for result, low2 in self.call_result(entity, depth)
            ]
        if tag == "i":
            return [
                (("I", e[1], e[2]), low)
                for e, low in self.eval(ctx, value[1], depth)
                if e[0] == "D" and self._kind(e) == "class"
            ]
        if tag == "s":
            return [(("S", ctx, value[1]), False)]
        if tag == "x":  # outside the repository by construction (a package, a JS global)
            return [(("X", value[1]), False)]
        if tag == "L":
            return [(("L", ctx, value[1]), False)]
        if tag == "k":
            out: list[Found] = []
            for entity, low in self.eval(ctx, value[1], depth):
                if entity[0] == "I" and value[2] is None:
                    # An element of an instance: what its __next__ returns, on what its
                    # __iter__ returns (`for x in Cls()`).
                    out += [
                        (element, low or low2 or low3)
                        for iterator, low2 in self._call_member(entity, "__iter__", depth)
                        for element, low3 in self._call_member(iterator, "__next__", depth)
                    ]
                    continue
                if entity[0] != "L":
                    continue
                items = entity[2]
                chosen = [v for k, v in items if value[2] is not None and k == value[2]]
                for item in chosen or [v for _, v in items]:
                    out += [(e, low or low2) for e, low2 in self.eval(entity[1], item, depth)]
            return out
        return ()

    def _kind(self, entity: Entity) -> str | None:
        definition = self.definitions.get(entity[1], {}).get(entity[2])
        return definition.kind if definition is not None else None

    def _dotted(self, dotted: str, depth: int) -> list[Found]:
        parts = dotted.split(".")
        for cut in range(len(parts), 0, -1):
            path = self.modules.get(".".join(parts[:cut]))
            if path is None:
                continue
            found: list[Found] = [(("M", path), False)]
            for attr in parts[cut:]:
                found = [
                    (m, low or low2)
                    for entity, low in found
                    for m, low2 in self.member(entity, attr, depth)
                ]
            return found
        return [(("X", dotted), False)]

    def _global(self, ctx: str, name: str, depth: int) -> list[Found]:
        facts = self.files.get(ctx)
        if facts is not None:
            for star in facts.stars:
                found = [
                    f
                    for entity, _ in self._dotted(star, depth)
                    for f in self.member(entity, name, depth)
                ]
                if found:
                    return found
        if name in _BUILTINS:
            return [(("X", name), False)]
        candidates = self.top_level.get(name, [])
        if len(candidates) == 1:
            path, symbol = candidates[0]
            return [(("D", path, symbol), True)]
        return []

    def member(self, entity: Entity, attr: str, depth: int) -> list[Found]:
        tag = entity[0]
        if tag == "M":
            facts = self.files[entity[1]]
            if attr in facts.names:
                return [
                    f for v in facts.names[attr] for f in self.eval(entity[1], _freeze(v), depth)
                ]
            sub = self.modules.get(f"{facts.module}.{attr}") if facts.module else None
            if sub is not None:
                return [(("M", sub), False)]
            for star in facts.stars:
                found = [
                    f for e, _ in self._dotted(star, depth) for f in self.member(e, attr, depth)
                ]
                if found:
                    return found
            return []
        if tag == "D" and self._kind(entity) == "class":
            return self._class_member(entity[1], entity[2], attr, 0, depth)
        if tag == "I":
            found = self._class_member(entity[1], entity[2], attr, 0, depth)
            if not found and not (attr.startswith("__") and attr.endswith("__")):
                found = self._subclass_member(entity[1], entity[2], attr, depth)
            return found
        if tag == "S":
            return self._class_member(entity[1], entity[2], attr, 1, depth)
        if tag == "X" and entity[1]:
            return [(("X", f"{entity[1]}.{attr}"), False)]
        return []

    def _class_member(
        self, path: str, symbol: str, attr: str, skip: int, depth: int
    ) -> list[Found]:
        for owner in self.mro(path, symbol)[skip:]:
            if owner[0] == "X":
                return [(("X", f"{owner[1]}.{attr}"), False)]
            facts = self.files[owner[1]].classes.get(owner[2])
            if facts is not None and attr in facts.members:
                return [
                    f for v in facts.members[attr] for f in self.eval(owner[1], _freeze(v), depth)
                ]
        return []

    def _subclass_member(self, path: str, symbol: str, attr: str, depth: int) -> list[Found]:
        """`self.attr` where no class of the MRO has attr (and none is outside the
        repository, which could): it can only come from a subclass, so it is each subclass's
        own attr (`Base.run` calling `self.step()` that subclasses define or assign).
        Special methods are left out: `Base()` never calls a subclass's `__init__`."""
        if self._subclasses is None:
            self._subclasses = {}
            for file_path in sorted(self.definitions):
                for cls in sorted(self.files[file_path].classes):
                    for ancestor in self.mro(file_path, cls)[1:]:
                        if ancestor[0] == "D":
                            key = (ancestor[1], ancestor[2])
                            self._subclasses.setdefault(key, []).append((file_path, cls))
        found: list[Found] = []
        for sub_path, sub in self._subclasses.get((path, symbol), []):
            facts = self.files[sub_path].classes.get(sub)
            if facts is not None and attr in facts.members:
                found += [
                    f for v in facts.members[attr] for f in self.eval(sub_path, _freeze(v), depth)
                ]
        return found

    def _call_member(self, entity: Entity, attr: str, depth: int) -> list[Found]:
        return [
            (result, low or low2)
            for method, low in self.member(entity, attr, depth)
            for result, low2 in self.call_result(method, depth)
        ]

    def call_result(self, entity: Entity, depth: int) -> list[Found]:
        if entity[0] == "D":
            kind = self._kind(entity)
            if kind == "class":
                return [(("I", entity[1], entity[2]), False)]
            returns = self.files[entity[1]].returns.get(entity[2], [])
            return [f for v in returns for f in self.eval(entity[1], _freeze(v), depth)]
        if entity[0] == "I":
            return [
                (result, low or low2)
                for method, low in self._class_member(entity[1], entity[2], "__call__", 0, depth)
                for result, low2 in self.call_result(method, depth)
            ]
        if entity[0] == "X" and entity[1].rpartition(".")[2][:1].isupper():
            # Outside the repository, a capitalised name is most likely a class: its instance
            # keeps the name, so `Path(p).exists()` reads `pathlib.Path.exists`.
            return [(entity, False)]
        return []

    def mro(self, path: str, symbol: str) -> list[Entity]:
        """C3 linearization (depth-first when the bases admit none); outside classes last."""
        key = (path, symbol)
        cached = self._mros.get(key)
        if cached is not None:
            return cached
        me: Entity = ("D", path, symbol)
        self._mros[key] = [me]  # an inheritance cycle ends here
        facts = self.files[path].classes.get(symbol)
        bases: list[Entity] = []
        for value in facts.bases if facts is not None else []:
            for entity, _ in self.eval(path, _freeze(value)):
                if (entity[0] == "D" and self._kind(entity) == "class") or entity[0] == "X":
                    if entity not in bases and entity != me:
                        bases.append(entity)
        lines = [self.mro(b[1], b[2]) if b[0] == "D" else [b] for b in bases]
        result = [me, *_c3([list(line) for line in lines] + [list(bases)])]
        self._mros[key] = result
        return result

    # -- edges ---------------------------------------------------------------------------------

    def call_targets(self, entity: Entity, depth: int = 0) -> list[Entity]:
        tag = entity[0]
        if tag == "D":
            kind = self._kind(entity)
            if kind in ("function", "method"):
                return [entity]
            if kind == "class":  # `Class()` calls `Class.__init__` (when the repository has one)
                init = _CONSTRUCTORS.get(self.files[entity[1]].language, "__init__")
                return [
                    e
                    for e, _ in self._class_member(entity[1], entity[2], init, 0, depth)
                    if e[0] == "X" or self._kind(e) in ("function", "method")
                ]
        if tag == "I":
            return [
                e
                for e, _ in self._class_member(entity[1], entity[2], "__call__", 0, depth)
                if e[0] == "X" or self._kind(e) in ("function", "method")
            ]
        if tag == "X" and entity[1]:
            return [entity]
        return []

    def edges(self, path: str) -> list[Edge]:
        with gc_paused():
            return self._edges(path)

    def _edges(self, path: str) -> list[Edge]:
        facts = self.files[path]
        if facts.language == "go":  # packages are directories: see resolve_go
            if self._go is None:
                from core.code.graph.resolve_go import GoResolver

                self._go = GoResolver(self.files)
            return self._go.edges(path)
        if facts.language == "java":  # packages and imports of types: see resolve_java
            if self._java is None:
                from core.code.graph.resolve_java import JavaResolver

                self._java = JavaResolver(self.files)
            return self._java.edges(path)
        out: list[Edge] = []
        seen: set[tuple[Any, ...]] = set()
        for ref in facts.references:
            for edge in self._ref_edges(path, ref):
                key = edge.key
                if key not in seen:
                    seen.add(key)
                    out.append(edge)
        definitions = self.definitions[path]
        for d in facts.definitions:
            if d.symbol == MODULE:
                continue
            parent = d.symbol.rsplit(".", 1)[0] if "." in d.symbol else MODULE
            if parent not in definitions:
                parent = MODULE
            out.append(
                Edge("contains", path, parent, d.line, path, d.symbol, d.line, d.symbol, 1.0)
            )
        return out

    def _ref_edges(self, path: str, ref: Reference) -> list[Edge]:
        found: list[Found] = []
        for value in ref.targets:
            found += self.eval(path, _freeze(value))
        targets: dict[Entity, bool] = {}
        for entity, low in found:
            if ref.kind == "calls":
                picked = self.call_targets(entity)
            elif ref.kind == "imports":
                picked = [entity] if entity[0] in ("M", "D", "X") else []
            else:
                picked = [entity] if entity[0] == "X" or self._kind(entity) == "class" else []
            for target in picked:
                targets[target] = targets.get(target, True) and low
        implicit = ref.name.startswith(IMPLICIT + ".")
        edges: list[Edge] = []
        for target, low in targets.items():
            if implicit and target[0] == "X":  # a loop over a list, a dependency's object
                continue
            confidence = min(ref.confidence, FALLBACK) if low else ref.confidence
            kind: EdgeKind = ref.kind
            if ref.kind == "inherits" and self._interface(target):
                kind = "implements"
            if target[0] == "X":
                edges.append(
                    Edge(kind, path, ref.source, ref.line, None, None, None, target[1], confidence)
                )
                continue
            if target[0] == "M":
                symbol, line = MODULE, 1
            else:
                symbol = target[2]
                line = self.definitions[target[1]][symbol].line
            edges.append(
                Edge(kind, path, ref.source, ref.line, target[1], symbol, line, symbol, confidence)
            )
        if not edges and not implicit:
            edges.append(
                Edge(
                    ref.kind, path, ref.source, ref.line, None, None, None, ref.name, ref.confidence
                )
            )
        return edges

    def _interface(self, entity: Entity) -> bool:
        """A base that declares an interface (a Protocol or an ABC) is implemented."""
        if entity[0] != "D":
            return False
        return any(
            base[0] == "X" and base[1] in _INTERFACE_BASES
            for base in self.mro(entity[1], entity[2])
        )


def _c3(sequences: list[list[Entity]]) -> list[Entity]:
    out: list[Entity] = []
    seqs = [s for s in sequences if s]
    while seqs:
        for seq in seqs:
            head = seq[0]
            if not any(head in s[1:] for s in seqs):
                break
        else:  # no consistent order: depth-first, first seen wins
            rest: list[Entity] = []
            for s in seqs:
                rest += [e for e in s if e not in out and e not in rest]
            return out + rest
        out.append(head)
        seqs = [[e for e in s if e != head] for s in seqs]
        seqs = [s for s in seqs if s]
    # Outside classes (unknown order among themselves) after the repository's own.
    return [e for e in out if e[0] != "X"] + [e for e in out if e[0] == "X"]
