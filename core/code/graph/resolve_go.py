"""Linking Go files' references (see `extract_go`) into edges.

A package is a directory (and a package name: `x_test` files beside `x` are another package).
An import path names a directory of the repository when it is the module path of a go.mod
(`module example.com/shop`) or below it, the directory being the rest of the path under that
go.mod's folder; a repository without go.mod falls back to the longest directory that ends the
import path, never for a standard-library path (no dot in its first element). Everything else
is outside the repository: the call keeps its name and has no target.

Methods are looked up on the named type in its package's files, then through embedded fields,
shallowest depth first (Go's promotion rule; two candidates at one depth: no target).

A type implements an interface of the repository when every method of the interface's method
set is found on the type (declared on it or its pointer, or promoted) with the same signature,
named types compared by package directory. An interface whose method set is not known (a
constraint, a type not understood, an interface from outside embedded) is never implemented:
what cannot be decided is left out.
"""

from __future__ import annotations

import re
from pathlib import PurePosixPath
from typing import Any

from core.code.graph.extract_go import INTERFACE, PACKAGE, SIGNATURES, VARIABLES, package_dir
from core.code.graph.model import MODULE, Edge, EdgeKind, FileFacts

MAX_DEPTH = 8
Def = tuple[str, str]  # (path, symbol)
Pkg = tuple[str, str]  # (directory, package name)
Type = tuple[Pkg, str]  # (package, type name)
_NAMED = re.compile(r"\{([^|{}]*)\|([^|{}]*)\}")


def _package_name(facts: FileFacts) -> str:
    values = facts.names.get(PACKAGE) or [["package", ""]]
    return str(values[0][1])


class GoResolver:
    def __init__(self, files: dict[str, FileFacts]) -> None:
        self.files = files
        self.mods: list[tuple[str, str]] = []  # (module path, directory), longest path first
        self.packages: dict[Pkg, list[str]] = {}
        self.by_dir: dict[str, list[Pkg]] = {}
        for path in sorted(files):
            facts = files[path]
            if facts.language != "go":
                continue
            if PurePosixPath(path).name == "go.mod":
                if facts.module.startswith("gomod:") and len(facts.module) > 6:
                    self.mods.append((facts.module[6:], package_dir(path)))
                continue
            pkg = (package_dir(path), _package_name(facts))
            if pkg not in self.packages:
                self.by_dir.setdefault(pkg[0], []).append(pkg)
            self.packages.setdefault(pkg, []).append(path)
        self.mods.sort(key=lambda m: -len(m[0]))
        self.members: dict[Pkg, dict[str, Def]] = {}
        for pkg, paths in self.packages.items():
            table: dict[str, Def] = {}
            for path in paths:
                for d in files[path].definitions:
                    if d.symbol != MODULE:
                        table.setdefault(d.symbol, (path, d.symbol))
            self.members[pkg] = table
        self.signatures: dict[Def, str] = {}
        for path, facts in files.items():
            for symbol, signature in (
                facts.names.get(SIGNATURES, []) if facts.language == "go" else []
            ):
                self.signatures[(path, symbol)] = signature
        self._interfaces: list[tuple[Def, dict[str, str]]] | None = None
        self.variables: dict[Pkg, dict[str, list[tuple[str, Any]]]] = {}
        for pkg, paths in self.packages.items():
            for path in paths:
                for name, value in files[path].names.get(VARIABLES, []):
                    self.variables.setdefault(pkg, {}).setdefault(name, []).append((path, value))

    # -- packages -------------------------------------------------------------------------------

    def own(self, path: str) -> Pkg:
        return (package_dir(path), _package_name(self.files[path]))

    def package_of(self, import_path: str) -> Pkg | None:
        directory: str | None = None
        for module, folder in self.mods:
            if import_path == module or import_path.startswith(module + "/"):
                rest = import_path[len(module) + 1 :]
                directory = "/".join(p for p in (folder, rest) if p)
                break
        else:
            if not self.mods and "." in import_path.split("/", 1)[0]:
                parts = import_path.split("/")
                for i in range(1, len(parts)):
                    if "/".join(parts[i:]) in self.by_dir:
                        directory = "/".join(parts[i:])
                        break
        if directory is None:
            return None
        pkgs = [p for p in self.by_dir.get(directory, []) if not p[1].endswith("_test")]
        return pkgs[0] if pkgs else None

    # -- values ---------------------------------------------------------------------------------

    def types(self, ctx: str, value: Any, depth: int = 0) -> list[Type]:
        """The named types of the repository a type value may be."""
        if depth > MAX_DEPTH or not isinstance(value, list) or not value:
            return []
        tag = value[0]
        if tag == "gt":
            pkg = self.own(ctx) if value[1] == "" else self.package_of(value[1])
            if pkg is None:
                return []
            found = self.members.get(pkg, {}).get(value[2])
            if found is None or self._kind(found) != "class":
                return []
            return [(pkg, value[2])]
        if tag == "gv":
            bound = self.variables.get(self.own(ctx), {}).get(value[1], [])
            return [t for path, v in bound for t in self.types(path, v, depth + 1)]
        if tag == "gf":
            out: list[Type] = []
            for owner in self.types(ctx, value[1], depth + 1):
                for path, field_type in self._field(owner, value[2], 0):
                    out += self.types(path, field_type, depth + 1)
            return out
        if tag == "gr":
            out = []
            for path, symbol in self.functions(ctx, value[1], depth + 1):
                for result in self.files[path].returns.get(symbol, []):
                    out += self.types(path, result, depth + 1)
            return out
        return []

    def functions(self, ctx: str, value: Any, depth: int = 0) -> list[Def]:
        """The functions and methods of the repository a function value may be."""
        if depth > MAX_DEPTH or not isinstance(value, list) or not value:
            return []
        tag = value[0]
        found: Def | None = None
        if tag == "gl":
            found = self.members.get(self.own(ctx), {}).get(value[1])
        elif tag == "gp":
            pkg = self.package_of(value[1])
            if pkg is not None and value[2][:1].isupper():
                found = self.members.get(pkg, {}).get(value[2])
        elif tag == "gm":
            out: list[Def] = []
            for owner in self.types(ctx, value[1], depth + 1):
                out += self.method(owner, value[2])
            return out
        if found is not None and self._kind(found) in ("function", "method"):
            return [found]
        return []

    def _kind(self, found: Def) -> str | None:
        for d in self.files[found[0]].definitions:
            if d.symbol == found[1]:
                return d.kind
        return None

    def _type_def(self, owner: Type) -> tuple[str, Any] | None:
        found = self.members.get(owner[0], {}).get(owner[1])
        if found is None:
            return None
        facts = self.files[found[0]].classes.get(owner[1])
        return (found[0], facts) if facts is not None else None

    def _promoted(self, owner: Type, pick: Any) -> list[Any]:
        """Go's selector rule: the shallowest depth that has the name, unique there."""
        level: list[Type] = [owner]
        seen: set[Type] = set()
        for _ in range(MAX_DEPTH):
            hits: list[Any] = []
            following: list[Type] = []
            for current in level:
                if current in seen:
                    continue
                seen.add(current)
                hits += pick(current)
                type_def = self._type_def(current)
                if type_def is not None:
                    path, facts = type_def
                    for base in facts.bases:
                        following += self.types(path, base)
            if hits:
                return hits if len(hits) == 1 else []
            if not following:
                return []
            level = following
        return []

    def method(self, owner: Type, name: str) -> list[Def]:
        def pick(current: Type) -> list[Def]:
            found = self.members.get(current[0], {}).get(f"{current[1]}.{name}")
            return [found] if found is not None else []

        return list(self._promoted(owner, pick))

    def _field(self, owner: Type, name: str, _depth: int) -> list[tuple[str, Any]]:
        def pick(current: Type) -> list[tuple[str, Any]]:
            type_def = self._type_def(current)
            if type_def is None:
                return []
            path, facts = type_def
            if name in facts.members:
                return [(path, v) for v in facts.members[name][:1]]
            # An embedded field is named after its type: `d.Animal`.
            return [(path, v) for v in facts.bases if v[0] == "gt" and v[2] == name][:1]

        return list(self._promoted(owner, pick))

    # -- implements ------------------------------------------------------------------------------

    def canonical(self, path: str, signature: str) -> str:
        """A signature with its named types spelled by package directory, not by import."""

        def named(match: re.Match[str]) -> str:
            pkg = self.own(path) if match.group(1) == "" else self.package_of(match.group(1))
            where = pkg[0] if pkg is not None else match.group(1)
            return "{" + where + "|" + match.group(2) + "}"

        return _NAMED.sub(named, signature)

    def method_set(self, owner: Type, depth: int = 0) -> dict[str, str] | None:
        """An interface's methods (name: canonical signature), None when not decidable
        (a constraint, a type not understood, an interface from outside embedded)."""
        type_def = self._type_def(owner)
        if type_def is None or depth > MAX_DEPTH:
            return None
        path, facts = type_def
        if facts.members.get(INTERFACE) != []:
            return None
        out: dict[str, str] = {}
        for base in facts.bases:
            embedded = self.types(path, base)
            inner = self.method_set(embedded[0], depth + 1) if len(embedded) == 1 else None
            if inner is None:
                return None
            out.update(inner)
        for name, values in facts.members.items():
            if name != INTERFACE and values and values[0][0] == "sig":
                out[name] = self.canonical(path, values[0][1])
        return out

    def interfaces(self) -> list[tuple[Def, dict[str, str]]]:
        if self._interfaces is None:
            self._interfaces = []
            for pkg, table in sorted(self.members.items()):
                for name, found in sorted(table.items()):
                    facts = self.files[found[0]].classes.get(name)
                    if facts is None or INTERFACE not in facts.members:
                        continue
                    methods = self.method_set((pkg, name))
                    if methods:  # the empty interface is implemented by everything
                        self._interfaces.append((found, methods))
        return self._interfaces

    def implemented(self, path: str, name: str) -> list[Def]:
        """The repository's interfaces whose every method the type (or a pointer to it)
        has, with the same signature, declared or promoted."""
        facts = self.files[path].classes.get(name)
        if facts is None or INTERFACE in facts.members:
            return []
        owner = (self.own(path), name)
        out: list[Def] = []
        for interface, methods in self.interfaces():
            for method, signature in methods.items():
                found = self.method(owner, method)
                if len(found) != 1 or found[0] not in self.signatures:
                    break
                if self.canonical(found[0][0], self.signatures[found[0]]) != signature:
                    break
            else:
                out.append(interface)
        return out

    # -- edges ---------------------------------------------------------------------------------

    def _line(self, found: Def) -> int:
        for d in self.files[found[0]].definitions:
            if d.symbol == found[1]:
                return d.line
        return 1

    def edges(self, path: str) -> list[Edge]:
        facts = self.files[path]
        if PurePosixPath(path).name == "go.mod":
            return []
        out: list[Edge] = []
        seen: set[tuple[Any, ...]] = set()
        for ref in facts.references:
            targets: list[Def] = []
            for value in ref.targets:
                if ref.kind == "calls":
                    targets += self.functions(path, value)
                elif ref.kind == "inherits":
                    targets += [(self.members[t[0]][t[1]]) for t in self.types(path, value)]
                elif ref.kind == "imports" and value[0] == "gi":
                    pkg = self.package_of(value[1])
                    if pkg is not None:
                        targets.append((sorted(self.packages[pkg])[0], MODULE))
            kind: EdgeKind = ref.kind
            edges = [
                Edge(
                    kind,
                    path,
                    ref.source,
                    ref.line,
                    target_path,
                    symbol,
                    self._line((target_path, symbol)),
                    symbol,
                    ref.confidence,
                )
                for target_path, symbol in dict.fromkeys(targets)
            ]
            if not edges:
                edges = [
                    Edge(
                        kind, path, ref.source, ref.line, None, None, None, ref.name, ref.confidence
                    )
                ]
            for edge in edges:
                key = edge.key
                if key not in seen:
                    seen.add(key)
                    out.append(edge)
        for d in facts.definitions:
            if d.kind == "class":
                for target_path, symbol in self.implemented(path, d.symbol):
                    out.append(
                        Edge(
                            "implements",
                            path,
                            d.symbol,
                            d.line,
                            target_path,
                            symbol,
                            self._line((target_path, symbol)),
                            symbol,
                            1.0,
                        )
                    )
        names = {d.symbol for d in facts.definitions}
        for d in facts.definitions:
            if d.symbol == MODULE:
                continue
            parent = d.symbol.rsplit(".", 1)[0] if "." in d.symbol else MODULE
            if parent not in names:
                parent = MODULE
            out.append(
                Edge("contains", path, parent, d.line, path, d.symbol, d.line, d.symbol, 1.0)
            )
        return out
