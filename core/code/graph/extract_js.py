"""JavaScript and TypeScript: definitions, name bindings and references of one file.

Same two passes as `extract_python`: a walk binds every name of every scope (imports, function
and class declarations, `const`/`let`/`var`, parameters) and notes every call and `new`; then
each callee is evaluated lazily into the value language of `model`. Modules are named by path:
`src/lib/a.ts` and `src/lib/a/index.js` are both the module `src.lib.a`, so `import {y} from
'./lib/a'` is `["a", ["m", "src.lib.a"], "y"]`, whatever the extension. A bare specifier (a
package) and a name bound nowhere in the file (a global: `console`, `JSON`, `Promise`) are
`["x", name]`: outside the repository, never matched onto a local symbol.
"""

from __future__ import annotations

import posixpath
import re
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from core.code.graph.model import (
    FLOW,
    MODULE,
    SCOPED,
    ClassFacts,
    Definition,
    FileFacts,
    Reference,
    capped,
    reference,
    stored,
)

if TYPE_CHECKING:
    from tree_sitter import Node

MAX_VALUES = 16
MAX_DEPTH = 40
JS_EXTENSIONS = (".js", ".jsx", ".mjs", ".cjs", ".ts", ".tsx", ".mts", ".cts")
CONSTRUCTOR = "constructor"

V = tuple[Any, ...]

_FUNCTIONS = frozenset({"function_expression", "function", "arrow_function", "generator_function"})
_STRINGS = re.compile(r"""("|'|`)(?:\\.|(?!\1).)*\1""", re.DOTALL)
_CLASSES = frozenset({"class_declaration", "abstract_class_declaration", "class"})
_FUNCTION_DECLS = frozenset({"function_declaration", "generator_function_declaration"})


def module_name(path: str) -> str:
    """ "src.lib.a" for src/lib/a.ts and for src/lib/a/index.js."""
    stem = path
    for ext in JS_EXTENSIONS:
        if stem.endswith(ext):
            stem = stem[: -len(ext)]
            break
    parts = [p for p in stem.split("/") if p]
    if parts and parts[-1] == "index":
        parts.pop()
    return ".".join(parts)


def _text(node: Node | None) -> str:
    if node is None or node.text is None:
        return ""
    return node.text.decode("utf-8", "replace")


def _string(node: Node | None) -> str | None:
    if node is None or node.type != "string":
        return None
    return "".join(_text(c) for c in node.named_children if c.type == "string_fragment")


@dataclass(eq=False)
class _Binding:
    kind: str  # "v" a value, "e" an expression, "p" a parameter
    value: V | None = None
    node: Node | None = None
    scope: _Scope | None = None
    key: Any = None  # "p": (function symbol, position)


@dataclass(eq=False)
class _Scope:
    kind: str  # "module", "class", "function", "arrow"
    symbol: str
    parent: _Scope | None
    cls: str | None = None  # the class `this` means here
    bindings: dict[str, list[_Binding]] = field(default_factory=dict)

    @property
    def prefix(self) -> str:
        return "" if self.kind == "module" else self.symbol + "."

    def bind(self, name: str, binding: _Binding) -> None:
        self.bindings.setdefault(name, []).append(binding)


@dataclass(eq=False)
class _Site:
    callee: Node
    scope: _Scope
    line: int
    args: Node | None


class JsExtractor:
    def __init__(self, path: str, source: bytes, language: str) -> None:
        self.path = path
        self.source = source
        self.language = language
        self.module = module_name(path)
        self.definitions: dict[str, Definition] = {}
        self.params: dict[str, list[str | None]] = {}
        self.class_bases: dict[str, tuple[list[Node], list[Node], _Scope, int]] = {}
        self.members: dict[str, dict[str, list[_Binding]]] = {}
        self.returns: dict[str, list[_Binding]] = {}
        self.sites: list[_Site] = []
        self.imports: list[tuple[str, int, V, str]] = []
        self.exports: dict[str, list[_Binding]] = {}
        self.stars: list[str] = []
        self._memo: dict[tuple[int, int], frozenset[V]] = {}
        self._active: set[tuple[int, int]] = set()
        self._callers: dict[str, list[tuple[_Site, int]]] | None = None
        self.functions: dict[int, str] = {}  # a function node's definition
        self.anonymous: set[int] = set()

    def extract(self) -> FileFacts:
        from core.code.languages import parser_for

        root = parser_for(self.language).parse(self.source).root_node
        self.module_scope = _Scope("module", MODULE, None)
        lines = max(1, root.end_point.row + (0 if root.end_point.column == 0 else 1))
        self.definitions[MODULE] = Definition(MODULE, "module", 1, lines)
        self._visit_children(root, self.module_scope)
        return self._facts()

    # -- walk ----------------------------------------------------------------------------------

    def _define(self, symbol: str, kind: Any, node: Node) -> str:
        if symbol not in self.definitions:
            self.definitions[symbol] = Definition(
                symbol, kind, node.start_point.row + 1, node.end_point.row + 1
            )
        return symbol

    def _visit_children(self, node: Node, scope: _Scope) -> None:
        for child in node.named_children:
            self._visit(child, scope)

    def _visit(self, node: Node, scope: _Scope) -> None:
        t = node.type
        if t == "import_statement":
            self._import(node, scope)
        elif t == "export_statement":
            self._export(node, scope)
        elif t in _CLASSES:
            named = node.child_by_field_name("name")
            self._class(node, scope, _text(named) if named is not None else None)
        elif t in ("interface_declaration",):
            self._interface(node, scope)
        elif t in _FUNCTION_DECLS:
            name = _text(node.child_by_field_name("name"))
            symbol = self._function(node, scope, name)
            scope.bind(name, _Binding("v", ("d", symbol)))
        elif t == "variable_declarator":
            self._declarator(node, scope)
        elif t in _FUNCTIONS:
            self._function(node, scope, None)
        elif t in ("call_expression", "new_expression"):
            self._call(node, scope)
        elif t == "assignment_expression":
            self._assignment(node, scope)
            right = node.child_by_field_name("right")
            assigned = self._assigned_name(node.child_by_field_name("left"))
            if right is not None and right.type in _FUNCTIONS and assigned is not None:
                self._function(right, scope, assigned)
            else:
                self._visit_children(node, scope)
        elif t == "return_statement":
            if scope.kind == "function":
                for child in node.named_children:
                    self.returns.setdefault(scope.symbol, []).append(
                        _Binding("e", node=child, scope=scope)
                    )
            self._visit_children(node, scope)
        else:
            self._visit_children(node, scope)

    def _spec(self, spec: str) -> V:
        """What an import specifier names: a module of the repository, or a package."""
        if not spec.startswith("."):
            return ("x", spec)
        joined = posixpath.normpath(posixpath.join(posixpath.dirname(self.path), spec))
        if joined == ".." or joined.startswith("../"):
            return ("x", spec)
        return ("m", module_name("" if joined == "." else joined))

    def _import(self, node: Node, scope: _Scope) -> None:
        spec = _string(node.child_by_field_name("source"))
        if spec is None:
            return
        module = self._spec(spec)
        self.imports.append((scope.symbol, node.start_point.row + 1, module, spec))
        for clause in node.named_children:
            if clause.type != "import_clause":
                continue
            for part in clause.named_children:
                if part.type == "identifier":
                    default = module if module[0] == "x" else ("a", module, "default")
                    scope.bind(_text(part), _Binding("v", default))
                elif part.type == "namespace_import":
                    for ident in part.named_children:
                        scope.bind(_text(ident), _Binding("v", module))
                elif part.type == "named_imports":
                    for item in part.named_children:
                        if item.type != "import_specifier":
                            continue
                        name = _text(item.child_by_field_name("name"))
                        alias = item.child_by_field_name("alias")
                        local = _text(alias) if alias is not None else name
                        scope.bind(local, _Binding("v", ("a", module, name)))

    def _export(self, node: Node, scope: _Scope) -> None:
        spec = _string(node.child_by_field_name("source"))
        declaration = node.child_by_field_name("declaration")
        value = node.child_by_field_name("value")
        default = any(c.type == "default" for c in node.children)
        if spec is not None:
            module = self._spec(spec)
            self.imports.append((scope.symbol, node.start_point.row + 1, module, spec))
            clause = next((c for c in node.named_children if c.type == "export_clause"), None)
            namespace = next((c for c in node.named_children if c.type == "namespace_export"), None)
            if clause is not None:
                for item in clause.named_children:
                    name = _text(item.child_by_field_name("name"))
                    alias = item.child_by_field_name("alias")
                    exported = _text(alias) if alias is not None else name
                    self.exports.setdefault(exported, []).append(_Binding("v", ("a", module, name)))
            elif namespace is not None:
                for ident in namespace.named_children:
                    self.exports.setdefault(_text(ident), []).append(_Binding("v", module))
            elif module[0] == "m":
                self.stars.append(module[1])
            return
        if declaration is not None:
            self._visit(declaration, scope)
            if default:
                declared = declaration.child_by_field_name("name")
                if declared is not None:
                    self.exports.setdefault("default", []).append(
                        _Binding("e", node=declared, scope=scope)
                    )
            return
        if value is not None:
            if value.type in _FUNCTIONS or value.type in _CLASSES:
                symbol = (
                    self._function(value, scope, "default")
                    if value.type in _FUNCTIONS
                    else self._class(value, scope, "default")
                )
                self.exports.setdefault("default", []).append(_Binding("v", ("d", symbol)))
            else:
                self._visit(value, scope)
                self.exports.setdefault("default", []).append(
                    _Binding("e", node=value, scope=scope)
                )
            return
        for clause in node.named_children:
            if clause.type == "export_clause":
                for item in clause.named_children:
                    local = item.child_by_field_name("name")
                    alias = item.child_by_field_name("alias")
                    exported = _text(alias) if alias is not None else _text(local)
                    if local is not None and exported != _text(local):
                        self.exports.setdefault(exported, []).append(
                            _Binding("e", node=local, scope=scope)
                        )

    def _class(self, node: Node, scope: _Scope, name: str | None) -> str:
        name = name or "<class>"
        symbol = self._define(scope.prefix + name, "class", node)
        if node.type != "class" or node.child_by_field_name("name") is not None:
            scope.bind(name, _Binding("v", ("d", symbol)))
        extends: list[Node] = []
        implements: list[Node] = []
        for heritage in node.named_children:
            if heritage.type != "class_heritage":
                continue
            for part in heritage.named_children:
                if part.type == "extends_clause":
                    value = part.child_by_field_name("value")
                    if value is not None:
                        extends.append(value)
                elif part.type == "implements_clause":
                    implements += [t for t in part.named_children if "type" in t.type]
                else:  # JavaScript: `extends Expression` straight under the heritage
                    extends.append(part)
        self.class_bases[symbol] = (extends, implements, scope, node.start_point.row + 1)
        inner = _Scope("class", symbol, scope, cls=symbol)
        members = self.members.setdefault(symbol, {})
        body = node.child_by_field_name("body")
        for item in body.named_children if body is not None else []:
            key = item.child_by_field_name("name") or item.child_by_field_name("property")
            if item.type == "method_definition" and key is not None:
                method = self._function(item, inner, _text(key), kind="method", cls=symbol)
                members.setdefault(_text(key), []).append(_Binding("v", ("d", method)))
            elif item.type in ("public_field_definition", "field_definition") and key:
                value = item.child_by_field_name("value")
                if value is not None and value.type in _FUNCTIONS:
                    method = self._function(value, inner, _text(key), kind="method", cls=symbol)
                    members.setdefault(_text(key), []).append(_Binding("v", ("d", method)))
                elif value is not None:
                    field_scope = _Scope("arrow", symbol, scope, cls=symbol)
                    self._visit(value, field_scope)
                    members.setdefault(_text(key), []).append(
                        _Binding("e", node=value, scope=field_scope)
                    )
            else:
                self._visit(item, inner)
        return symbol

    def _interface(self, node: Node, scope: _Scope) -> None:
        name = _text(node.child_by_field_name("name"))
        symbol = self._define(scope.prefix + name, "class", node)
        scope.bind(name, _Binding("v", ("d", symbol)))
        bases = [
            t
            for clause in node.named_children
            if clause.type == "extends_type_clause"
            for t in clause.named_children
        ]
        self.class_bases[symbol] = (bases, [], scope, node.start_point.row + 1)
        self.members.setdefault(symbol, {})

    def _function(
        self,
        node: Node,
        scope: _Scope,
        name: str | None,
        kind: str = "function",
        cls: str | None = None,
    ) -> str:
        """A named function gets a definition and a scope; an anonymous one only a scope (its
        calls belong to the enclosing definition)."""
        if name is None:
            self.anonymous.add(node.id)
            inner = _Scope("arrow", scope.symbol, scope, cls=scope.cls)
            if node.type != "arrow_function":
                inner.cls = None
            symbol = scope.symbol
        else:
            symbol = self._define(scope.prefix + name, kind, node)
            this = (
                cls if cls is not None else (scope.cls if node.type == "arrow_function" else None)
            )
            inner = _Scope("function", symbol, scope, cls=this)
            self.functions[node.id] = symbol
        params = node.child_by_field_name("parameters")
        single = node.child_by_field_name("parameter")
        names: list[str | None] = []
        for position, param in enumerate(
            [single] if single is not None else (params.named_children if params else [])
        ):
            names.append(self._parameter(param, inner, symbol, position))
        if name is not None:
            self.params[symbol] = names
        body = node.child_by_field_name("body")
        if body is not None:
            if body.type == "statement_block":
                self._visit_children(body, inner)
            else:  # an arrow function's expression body is what it returns
                self._visit(body, inner)
                if name is not None:
                    self.returns.setdefault(symbol, []).append(
                        _Binding("e", node=body, scope=inner)
                    )
        return symbol

    def _parameter(self, param: Node, scope: _Scope, symbol: str, position: int) -> str | None:
        pattern = param.child_by_field_name("pattern") or param
        if pattern.type == "assignment_pattern":
            pattern = pattern.child_by_field_name("left") or pattern
        if pattern.type != "identifier":
            return None
        name = _text(pattern)
        scope.bind(name, _Binding("p", key=(symbol, position)))
        bindings = [_Binding("p", key=(symbol, position))]
        annotation = param.child_by_field_name("type")
        if annotation is not None:
            for t in annotation.named_children:
                if t.type == "type_identifier":
                    bindings.append(_Binding("i", node=t, scope=scope))
        for binding in bindings[1:]:
            scope.bind(name, binding)
        # `constructor(private store: Store)`: a TypeScript parameter property
        if scope.cls is not None and any(
            c.type in ("accessibility_modifier", "readonly") for c in param.children
        ):
            self.members.setdefault(scope.cls, {}).setdefault(name, []).extend(bindings)
        return name

    def _require(self, node: Node | None) -> V | None:
        if node is None or node.type != "call_expression":
            return None
        callee = node.child_by_field_name("function")
        args = node.child_by_field_name("arguments")
        if _text(callee) != "require" or args is None or len(args.named_children) != 1:
            return None
        spec = _string(args.named_children[0])
        if spec is None:
            return None
        module = self._spec(spec)
        return module

    def _declarator(self, node: Node, scope: _Scope) -> None:
        target = node.child_by_field_name("name")
        value = node.child_by_field_name("value")
        if target is None:
            return
        module = self._require(value)
        if module is not None and value is not None:
            self.imports.append((scope.symbol, node.start_point.row + 1, module, _text(value)))
            if target.type == "identifier":
                scope.bind(_text(target), _Binding("v", module))
            elif target.type == "object_pattern":
                for item in target.named_children:
                    if item.type == "shorthand_property_identifier_pattern":
                        scope.bind(_text(item), _Binding("v", ("a", module, _text(item))))
                    elif item.type == "pair_pattern":
                        key = _text(item.child_by_field_name("key"))
                        local = item.child_by_field_name("value")
                        if local is not None and local.type == "identifier":
                            scope.bind(_text(local), _Binding("v", ("a", module, key)))
            return
        if target.type != "identifier":
            if value is not None:
                self._visit(value, scope)
            return
        name = _text(target)
        if value is None:
            return
        if value.type in _FUNCTIONS:
            symbol = self._function(value, scope, name)
            scope.bind(name, _Binding("v", ("d", symbol)))
        elif value.type == "class":
            self._class(value, scope, name)
        elif value.type == "object":
            self._object(value, scope, name)
            scope.bind(name, _Binding("e", node=value, scope=scope))
        else:
            self._visit(value, scope)
            scope.bind(name, _Binding("e", node=value, scope=scope))

    def _object(self, node: Node, scope: _Scope, name: str) -> None:
        """Functions written in an object literal bound to a name are `name.key`."""
        for item in node.named_children:
            if item.type == "method_definition":
                key = _text(item.child_by_field_name("name"))
                self._function(item, scope, f"{name}.{key}")
            elif item.type == "pair":
                key = _text(item.child_by_field_name("key"))
                value = item.child_by_field_name("value")
                if value is not None and value.type in _FUNCTIONS:
                    self._function(value, scope, f"{name}.{key}")
                elif value is not None:
                    self._visit(value, scope)
            else:
                self._visit(item, scope)

    def _assignment(self, node: Node, scope: _Scope) -> None:
        left = node.child_by_field_name("left")
        right = node.child_by_field_name("right")
        if left is None or right is None:
            return
        binding = _Binding("e", node=right, scope=scope)
        if left.type == "identifier":
            holder = self._holder(_text(left), scope)
            holder.bind(_text(left), binding)
            return
        if left.type != "member_expression":
            return
        obj = left.child_by_field_name("object")
        prop = _text(left.child_by_field_name("property"))
        if obj is None:
            return
        if obj.type == "this" and scope.cls is not None:
            self.members.setdefault(scope.cls, {}).setdefault(prop, []).append(binding)
        elif _text(obj) in ("exports", "module.exports"):
            self.exports.setdefault(prop, []).append(binding)
        elif _text(left) == "module.exports":
            if right.type == "object":
                for item in right.named_children:
                    if item.type == "shorthand_property_identifier":
                        self.exports.setdefault(_text(item), []).append(
                            _Binding("e", node=item, scope=scope)
                        )
                    elif item.type == "pair":
                        value = item.child_by_field_name("value")
                        self.exports.setdefault(_text(item.child_by_field_name("key")), []).append(
                            _Binding("e", node=value, scope=scope)
                        )
            else:
                self.exports.setdefault("default", []).append(binding)

    @staticmethod
    def _assigned_name(left: Node | None) -> str | None:
        """`exports.f = function` defines `f`; `obj.f = function` defines `obj.f`."""
        if left is None or left.type != "member_expression":
            return None
        obj = left.child_by_field_name("object")
        prop = _text(left.child_by_field_name("property"))
        if obj is None or not prop:
            return None
        if _text(obj) in ("exports", "module.exports"):
            return prop
        if obj.type == "identifier":
            return f"{_text(obj)}.{prop}"
        return None

    def _holder(self, name: str, scope: _Scope) -> _Scope:
        s: _Scope | None = scope
        while s is not None:
            if name in s.bindings:
                return s
            s = s.parent
        return scope

    def _call(self, node: Node, scope: _Scope) -> None:
        callee = node.child_by_field_name("function") or node.child_by_field_name("constructor")
        args = node.child_by_field_name("arguments")
        if callee is not None and _text(callee) != "require":
            if node.type == "new_expression":
                self.sites.append(_Site(callee, scope, node.start_point.row + 1, args))
            elif callee.type not in ("import",):
                self.sites.append(_Site(callee, scope, node.start_point.row + 1, args))
        self._visit_children(node, scope)

    # -- evaluation ----------------------------------------------------------------------------

    def eval(self, node: Node, scope: _Scope, depth: int = 0) -> frozenset[V]:
        key = (node.id, id(scope))
        cached = self._memo.get(key)
        if cached is not None:
            return cached
        if depth > MAX_DEPTH or key in self._active:
            return frozenset()
        self._active.add(key)
        try:
            found = frozenset(capped(list(self._eval(node, scope, depth + 1)), MAX_VALUES))
        finally:
            self._active.discard(key)
        self._memo[key] = found
        return found

    def _eval(self, node: Node, scope: _Scope, depth: int) -> Iterable[V]:
        t = node.type
        if t in _FUNCTIONS or t == "method_definition":
            symbol = self.functions.get(node.id)
            return [("d", symbol)] if symbol is not None else []
        if t in ("identifier", "type_identifier", "shorthand_property_identifier"):
            return self.lookup(_text(node), scope, depth)
        if t == "this":
            return [("i", ("d", scope.cls))] if scope.cls else []
        if t == "super":  # `super(...)`: the base class's constructor
            return [("a", ("s", scope.cls), CONSTRUCTOR)] if scope.cls else []
        if t in ("member_expression", "subscript_expression"):
            obj = node.child_by_field_name("object")
            if obj is None:
                return []
            if t == "member_expression":
                prop = node.child_by_field_name("property")
                key: Any = _text(prop)
            else:
                index = node.child_by_field_name("index")
                key = _string(index) if index is not None and index.type == "string" else None
                if index is not None and index.type == "number":
                    key = _text(index)
            if obj.type == "super":
                return [("a", ("s", scope.cls), key)] if scope.cls and key else []
            out: list[V] = []
            for value in self.eval(obj, scope, depth):
                if value[0] == "L":
                    out += [v for k, v in value[1] if key is None or k == key]
                elif key is not None:
                    out.append(("a", value, key))
            return out
        if t in ("call_expression", "new_expression"):
            callee = node.child_by_field_name("function") or node.child_by_field_name("constructor")
            if callee is None:
                return []
            module = self._require(node)
            if module is not None:
                return [module]
            return [("c", v) for v in self.eval(callee, scope, depth)]
        if t in ("parenthesized_expression", "await_expression", "non_null_expression"):
            inner = node.named_children
            return self.eval(inner[0], scope, depth) if inner else []
        if t in ("as_expression", "satisfies_expression"):
            inner = node.named_children
            return self.eval(inner[0], scope, depth) if inner else []
        if t == "object":
            items: list[tuple[Any, V]] = []
            for item in node.named_children:
                if item.type == "pair":
                    k = item.child_by_field_name("key")
                    v = item.child_by_field_name("value")
                    if k is not None and v is not None:
                        name = _string(k) if k.type == "string" else _text(k)
                        items += [(name, x) for x in self.eval(v, scope, depth)]
                elif item.type == "shorthand_property_identifier":
                    items += [(_text(item), x) for x in self.eval(item, scope, depth)]
                elif item.type == "method_definition":
                    key = _text(item.child_by_field_name("name"))
                    items += [(key, x) for x in self.eval(item, scope, depth)]
            return [("L", tuple(items))] if items else []
        if t == "array":
            items = [
                (str(i), x)
                for i, item in enumerate(node.named_children)
                for x in self.eval(item, scope, depth)
            ]
            return [("L", tuple(items))] if items else []
        if t in ("ternary_expression", "binary_expression"):
            parts = [
                node.child_by_field_name(f) for f in ("consequence", "alternative", "left", "right")
            ]
            return [v for p in parts if p is not None for v in self.eval(p, scope, depth)]
        return []

    def lookup(self, name: str, scope: _Scope, depth: int = 0) -> frozenset[V]:
        s: _Scope | None = scope
        while s is not None:
            bindings = s.bindings.get(name)
            if bindings:
                out: set[V] = set()
                for binding in bindings:
                    out.update(self._binding_values(binding, depth))
                return frozenset(out)
            s = s.parent
        return frozenset({("x", name)})  # a global: console, JSON, Promise, window...

    def _binding_values(self, binding: _Binding, depth: int) -> list[V]:
        if binding.kind == "v" and binding.value is not None:
            return [binding.value]
        if binding.kind == "e" and binding.node is not None and binding.scope is not None:
            return list(self.eval(binding.node, binding.scope, depth))
        if binding.kind == "i" and binding.node is not None and binding.scope is not None:
            return [("i", v) for v in self.eval(binding.node, binding.scope, depth)]
        if binding.kind == "p":
            symbol, position = binding.key
            out: list[V] = []
            for site, skip in self.callers().get(symbol, []):
                args = [a for a in site.args.named_children] if site.args is not None else []
                if position + skip < len(args):
                    out += self.eval(args[position + skip], site.scope, depth)
            return out
        return []

    def callers(self) -> dict[str, list[tuple[_Site, int]]]:
        """Call sites of each function of this file whose callee is known here."""
        if self._callers is None:
            self._callers = {}
            for site in self.sites:
                for value in self._local_values(site.callee, site.scope):
                    if value[0] != "d":
                        continue
                    symbol = value[1]
                    if symbol in self.class_bases:  # `new C(...)` passes to its constructor
                        symbol = f"{symbol}.{CONSTRUCTOR}"
                    if symbol in self.params:
                        self._callers.setdefault(symbol, []).append((site, 0))
        return self._callers

    def _local_values(self, node: Node, scope: _Scope) -> list[V]:
        """The callee's definitions of this file, without parameter flow (no recursion)."""
        if node.type == "identifier":
            s: _Scope | None = scope
            while s is not None:
                bindings = s.bindings.get(_text(node))
                if bindings:
                    return [b.value for b in bindings if b.kind == "v" and b.value is not None]
                s = s.parent
            return []
        if node.type == "member_expression":
            obj = node.child_by_field_name("object")
            prop = _text(node.child_by_field_name("property"))
            if obj is not None and obj.type == "this" and scope.cls is not None:
                return [
                    b.value
                    for b in self.members.get(scope.cls, {}).get(prop, [])
                    if b.kind == "v" and b.value is not None
                ]
            if obj is not None and obj.type == "identifier":
                symbol = f"{_text(obj)}.{prop}"
                if symbol in self.params:
                    return [("d", symbol)]
        return []

    def _direct(self, node: Node, scope: _Scope) -> bool:
        """Bound by declarations and imports only (no variable or parameter on the way)."""
        while node.type == "member_expression":
            obj = node.child_by_field_name("object")
            if obj is None:
                return False
            node = obj
        if node.type in ("this", "super"):
            return True
        if node.type != "identifier":
            return False
        s: _Scope | None = scope
        while s is not None:
            bindings = s.bindings.get(_text(node))
            if bindings:
                return all(b.kind == "v" for b in bindings)
            s = s.parent
        return True

    # -- facts ---------------------------------------------------------------------------------

    def _facts(self) -> FileFacts:
        refs: list[Reference] = []
        for source, line, module, spec in self.imports:
            refs.append(Reference("imports", source, line, (module,), spec))
        classes: dict[str, ClassFacts] = {}
        for symbol, (extends, implements, scope, line) in self.class_bases.items():
            bases: list[V] = []
            for base in extends:
                values = self.eval(base, scope)
                bases += values
                refs.append(reference("inherits", symbol, line, values, _text(base), SCOPED))
            for iface in implements:
                values = self.eval(iface, scope)
                refs.append(reference("implements", symbol, line, values, _text(iface), SCOPED))
            members = {
                name: stored(frozenset(v for b in bindings for v in self._binding_values(b, 0)))
                for name, bindings in self.members.get(symbol, {}).items()
            }
            classes[symbol] = ClassFacts(stored(frozenset(bases)), members)
        for site in self.sites:
            values = self.eval(site.callee, site.scope)
            confidence = SCOPED if self._direct(site.callee, site.scope) else FLOW
            # String literals stay out of the name (a key passed to a factory, a URL).
            name = _STRINGS.sub('"…"', " ".join(_text(site.callee).split()))
            if len(name) > 200:
                name = name[:197] + "..."
            refs.append(reference("calls", site.scope.symbol, site.line, values, name, confidence))
        scope = self.module_scope
        names = {
            name: stored(self.lookup(name, scope))
            for name in scope.bindings
            if not any(b.kind == "p" for b in scope.bindings[name])
        }
        for name, bindings in self.exports.items():
            names[name] = stored(frozenset(v for b in bindings for v in self._binding_values(b, 0)))
        returns = {
            symbol: stored(frozenset(v for b in bindings for v in self._binding_values(b, 0)))
            for symbol, bindings in self.returns.items()
        }
        return FileFacts(
            path=self.path,
            language=self.language,
            module=self.module,
            definitions=sorted(self.definitions.values(), key=lambda d: (d.line, d.symbol)),
            names=names,
            classes=classes,
            returns={k: v for k, v in returns.items() if v},
            stars=self.stars,
            references=refs,
        )


def extract_js(path: str, source: bytes, language: str) -> FileFacts:
    return JsExtractor(path, source, language).extract()
