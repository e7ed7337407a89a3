"""Linking Java files' references (see `extract_java`) into edges.

A package is what a file's `package` declaration says (the default package "" without one);
its classes are the top-level classes of its files. A type name inside class C is looked up as
Java does: classes nested in C and its enclosing classes (and their superclasses), the file's
own top-level classes, single-type imports, the same package, on-demand (`.*`) imports, then a
fully qualified name; a name found nowhere (`String`, `java.util.List`, a dependency's class)
is outside the repository.

Methods are looked up along the superclass chain, then the implemented interfaces, preferring
a method whose parameter count fits the call (overloads share the symbol `Class.m`); an
unqualified `m()` tries the class, then its enclosing classes, then static imports. A chain
that reaches a superclass outside the repository before the method is found stops there: the
method may be inherited from outside, so the call keeps its name and gets no target.
`new C()` calls C's declared constructor (`C.C`) or, when C declares none, the class `C`.
"""

from __future__ import annotations

from typing import Any

from core.code.graph.extract_java import IMPLEMENTS, IMPORTS, INIT, PACKAGE
from core.code.graph.model import MODULE, Edge, EdgeKind, FileFacts

MAX_DEPTH = 12
Cls = tuple[str, str]  # (path, class symbol)
Method = tuple[str, str]  # (path, method symbol)


def _package(facts: FileFacts) -> str:
    values = facts.names.get(PACKAGE) or [["package", ""]]
    return str(values[0][1])


def _outer(q: str) -> str:
    return q.rsplit(".", 1)[0] if "." in q else ""


def _dotted(value: Any) -> str:
    """`a.b.C` from the nested field accesses of a qualified name ("" for anything else)."""
    if value[0] == "jid":
        return str(value[2])
    if value[0] == "jf":
        inner = _dotted(value[1])
        return f"{inner}.{value[2]}" if inner else ""
    return ""


class _Unknown(Exception):
    """The answer depends on code outside the repository."""


class JavaResolver:
    def __init__(self, files: dict[str, FileFacts]) -> None:
        self.files = files
        self.packages: dict[str, dict[str, str]] = {}  # package -> top-level class -> path
        self.kinds: dict[str, dict[str, str]] = {}  # path -> class symbol -> kind
        for path in sorted(files):
            facts = files[path]
            if facts.language != "java":
                continue
            table = self.packages.setdefault(_package(facts), {})
            kinds: dict[str, str] = {}
            for q, cf in facts.classes.items():
                kinds[q] = str((cf.members.get("<kind>") or [["class"]])[0][0])
                if "." not in q:
                    table.setdefault(q, path)
            self.kinds[path] = kinds
        self._types: dict[tuple[str, str, str], Cls | None] = {}

    # -- types ------------------------------------------------------------------------------

    def by_fqn(self, dotted: str) -> Cls | None:
        parts = dotted.split(".")
        for cut in range(len(parts) - 1, -1, -1):
            table = self.packages.get(".".join(parts[:cut]))
            if table is None or cut >= len(parts) or parts[cut] not in table:
                continue
            return self._nested((table[parts[cut]], parts[cut]), parts[cut + 1 :])
        return None

    def _nested(self, cls: Cls | None, rest: list[str]) -> Cls | None:
        for part in rest:
            if cls is None:
                return None
            q = f"{cls[1]}.{part}"
            cls = (cls[0], q) if q in self.kinds.get(cls[0], {}) else None
        return cls

    def type_of(self, path: str, scope: str, name: str, depth: int = 0) -> Cls | None:
        key = (path, scope, name)
        if key in self._types:
            return self._types[key]
        self._types[key] = None  # a cycle ends here
        found = self._type_of(path, scope, name, depth)
        self._types[key] = found
        return found

    def _type_of(self, path: str, scope: str, name: str, depth: int) -> Cls | None:
        if not name or depth > MAX_DEPTH:
            return None
        first, *rest = name.split(".")
        kinds = self.kinds.get(path, {})
        s = scope
        while s:  # member classes of the enclosing classes and of their superclasses
            for owner in self._superclasses((path, s), depth + 1):
                q = f"{owner[1]}.{first}"
                if q in self.kinds.get(owner[0], {}):
                    return self._nested((owner[0], q), rest)
            s = _outer(s)
        if first in kinds:
            return self._nested((path, first), rest)
        facts = self.files[path]
        imports = facts.names.get(IMPORTS, [])
        for kind, dotted in imports:
            if kind == "single" and dotted.rsplit(".", 1)[-1] == first:
                return self._nested(self.by_fqn(dotted), rest)
        own = self.packages.get(_package(facts), {})
        if first in own:
            return self._nested((own[first], first), rest)
        for kind, dotted in imports:
            if kind == "star":
                table = self.packages.get(dotted, {})
                if first in table:
                    return self._nested((table[first], first), rest)
                found = self._nested(self.by_fqn(dotted), [first])
                if found is not None:
                    return self._nested(found, rest)
        return self.by_fqn(name) if rest else None

    def _supertypes(self, cls: Cls, depth: int) -> tuple[list[Cls], list[Cls], bool]:
        """(superclass, interfaces, whether a supertype is outside the repository)."""
        facts = self.files[cls[0]].classes.get(cls[1])
        if facts is None:
            return [], [], False
        outside = False
        out: list[list[Cls]] = [[], []]
        for i, values in enumerate((facts.bases, facts.members.get(IMPLEMENTS, []))):
            for value in values:
                found = self.type_of(cls[0], value[1], value[2], depth + 1)
                if found is None:
                    outside = True
                elif found != cls:
                    out[i].append(found)
        return out[0], out[1], outside

    def _superclasses(self, cls: Cls, depth: int) -> list[Cls]:
        chain = [cls]
        while depth < MAX_DEPTH and len(chain) < MAX_DEPTH:
            supers, _, _ = self._supertypes(chain[-1], depth)
            if not supers or supers[0] in chain:
                break
            chain.append(supers[0])
            depth += 1
        return chain

    # -- methods ----------------------------------------------------------------------------

    def method(self, cls: Cls, name: str, argc: int, skip: bool = False) -> Method | None:
        """The method `name` of class cls (its superclass's with skip); raises _Unknown when
        it may be inherited from outside the repository."""
        order: list[Cls] = []
        outside = False
        queue = [cls]
        while queue and len(order) < 32:
            current = queue.pop(0)
            if current in order:
                continue
            order.append(current)
            supers, interfaces, out = self._supertypes(current, 0)
            outside = outside or out
            queue += supers + interfaces
        if skip:
            supers, interfaces, out = self._supertypes(cls, 0)
            if not supers and out:
                raise _Unknown
            order = [c for c in order if c != cls]
        by_name: Method | None = None
        for owner in order:
            for entry in self.files[owner[0]].classes[owner[1]].members.get("m:" + name, []):
                _, symbol, count, varargs, _ = entry
                if count == argc or (varargs and argc >= count - 1):
                    return (owner[0], str(symbol))
                by_name = by_name or (owner[0], str(symbol))
        if outside:
            raise _Unknown
        return by_name

    def constructor(self, cls: Cls, argc: int) -> Method:
        entries = self.files[cls[0]].classes[cls[1]].members.get("m:" + INIT, [])
        for _, symbol, count, varargs, _ in entries:
            if count == argc or (varargs and argc >= count - 1):
                return (cls[0], str(symbol))
        return (cls[0], str(entries[0][1])) if entries else cls

    # -- values -----------------------------------------------------------------------------

    def types(self, path: str, value: Any, depth: int = 0) -> Cls | None:
        """The repository class a receiver value is an instance (or the class) of."""
        if depth > MAX_DEPTH or not value:
            return None
        tag = value[0]
        if tag == "jt":
            return self.type_of(path, value[1], value[2])
        if tag == "jthis":
            return (path, value[1]) if value[1] else None
        if tag == "jid":
            scope = value[1]
            while scope:
                try:
                    typ = self._field((path, scope), value[2])
                except _Unknown:
                    return None
                if typ is not None:
                    return self.type_of(typ[0], typ[1], typ[2]) if typ[2] else None
                scope = _outer(scope)
            return self.type_of(path, value[1], value[2])
        if tag == "jf":
            owner = self.types(path, value[1], depth + 1)
            if owner is None:  # a qualified name: `com.shop.util.Strings`
                dotted = _dotted(value)
                return self.by_fqn(dotted) if dotted else None
            try:
                typ = self._field(owner, value[2])
            except _Unknown:
                return None
            if typ is not None:
                return self.type_of(typ[0], typ[1], typ[2]) if typ[2] else None
            return self._nested(owner, [value[2]])  # `Outer.Inner`
        if tag == "jr":
            target = self.call(path, value[1], depth + 1)
            if target is None:
                return None
            declaring = _outer(target[1])
            cf = self.files[target[0]].classes.get(declaring)
            for key, entries in cf.members.items() if cf is not None else []:
                for entry in entries if key.startswith("m:") else []:
                    if entry[1] == target[1] and entry[4]:
                        return self.type_of(target[0], declaring, str(entry[4]))
            return None
        return None

    def _field(self, cls: Cls, name: str) -> tuple[str, str, str] | None:
        """(path, owner class, declared type) of field `name` along the superclass chain."""
        for owner in self._superclasses(cls, 0):
            members = self.files[owner[0]].classes[owner[1]].members
            if "f:" + name in members:
                types = members["f:" + name]
                return (owner[0], owner[1], str(types[0][0]) if types else "")
        chain = self._superclasses(cls, 0)
        if self._supertypes(chain[-1], 0)[2]:
            raise _Unknown
        return None

    def call(self, path: str, value: Any, depth: int = 0) -> Method | None:
        if depth > MAX_DEPTH or not value:
            return None
        tag = value[0]
        try:
            if tag == "jcall":
                _, scope, name, argc = value
                while scope:
                    found = self.method((path, scope), name, argc)
                    if found is not None:
                        return found
                    scope = _outer(scope)
                return self._static_import(path, name, argc)
            if tag == "jmeth":
                _, receiver, name, argc = value
                if receiver[0] == "jsuper":
                    return self.method((path, receiver[1]), name, argc, skip=True)
                cls = self.types(path, receiver, depth + 1)
                return self.method(cls, name, argc) if cls is not None else None
            if tag == "jnew":
                _, receiver, argc = value
                if receiver[0] == "jsuper":
                    supers, _, _ = self._supertypes((path, receiver[1]), 0)
                    return self.constructor(supers[0], argc) if supers else None
                cls = self.types(path, receiver, depth + 1)
                if cls is None or self.kinds[cls[0]].get(cls[1]) == "interface":
                    return None
                return self.constructor(cls, argc)
        except _Unknown:
            return None
        return None

    def _static_import(self, path: str, name: str, argc: int) -> Method | None:
        for kind, dotted in self.files[path].names.get(IMPORTS, []):
            if kind == "static" and dotted.rsplit(".", 1)[-1] == name:
                cls = self.by_fqn(dotted.rsplit(".", 1)[0])
            elif kind == "staticstar":
                cls = self.by_fqn(dotted)
            else:
                continue
            if cls is not None:
                found = self.method(cls, name, argc)
                if found is not None:
                    return found
        return None

    # -- edges ------------------------------------------------------------------------------

    def _line(self, target: tuple[str, str]) -> int:
        for d in self.files[target[0]].definitions:
            if d.symbol == target[1]:
                return d.line
        return 1

    def _import(self, value: Any) -> tuple[str, str] | None:
        kind, dotted = value
        if kind == "single":
            return self.by_fqn(dotted)
        if kind == "star":
            table = self.packages.get(dotted)
            if table:
                return (sorted(table.values())[0], MODULE)
            return self.by_fqn(dotted)
        if kind in ("static", "staticstar"):
            return self.by_fqn(dotted if kind == "staticstar" else dotted.rsplit(".", 1)[0])
        return None

    def edges(self, path: str) -> list[Edge]:
        facts = self.files[path]
        out: list[Edge] = []
        seen: set[tuple[Any, ...]] = set()
        for ref in facts.references:
            target: tuple[str, str] | None = None
            for value in ref.targets:
                if ref.kind == "calls":
                    target = self.call(path, value)
                elif ref.kind in ("inherits", "implements"):
                    target = self.type_of(path, value[1], value[2])
                elif ref.kind == "imports":
                    target = self._import(value)
            kind: EdgeKind = ref.kind
            if target is None:
                edge = Edge(kind, path, ref.source, ref.line, None, None, None, ref.name, 1.0)
            else:
                edge = Edge(
                    kind,
                    path,
                    ref.source,
                    ref.line,
                    target[0],
                    target[1],
                    self._line(target),
                    target[1],
                    ref.confidence,
                )
            key = edge.key
            if key not in seen:
                seen.add(key)
                out.append(edge)
        symbols = {d.symbol for d in facts.definitions}
        for d in facts.definitions:
            if d.symbol == MODULE:
                continue
            parent = _outer(d.symbol) or MODULE
            if parent not in symbols:
                parent = MODULE
            out.append(
                Edge("contains", path, parent, d.line, path, d.symbol, d.line, d.symbol, 1.0)
            )
        return out
