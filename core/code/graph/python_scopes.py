"""Python, pass 1 of 2: the scope pass. It walks the tree once, creating scopes (module, class,
function, lambda) with every binding of every name in them (definitions, imports, assignments,
parameters, `for` targets, `with ... as`), and noting every call site. The evaluator
(`python_values`) then reads what it built."""

from __future__ import annotations

from collections.abc import Iterator
from functools import cache
from pathlib import PurePosixPath
from typing import TYPE_CHECKING, Any

from core.code.graph.model import MODULE, Definition
from core.code.graph.python_bindings import (
    Binding,
    Function,
    Scope,
    Site,
    literal_key,
    node_text,
)

if TYPE_CHECKING:
    from tree_sitter import Language, Node, Tree

# The node kinds `_visit` does more for than visiting their children.
_VISITED = frozenset(
    {
        "decorated_definition",
        "class_definition",
        "function_definition",
        "lambda",
        "import_statement",
        "import_from_statement",
        "future_import_statement",
        "global_statement",
        "nonlocal_statement",
        "assignment",
        "for_statement",
        "for_in_clause",
        "as_pattern",
        "return_statement",
        "yield",
        "call",
    }
)


@cache
def _visited_ids(language: Language) -> frozenset[int]:
    """The kind ids of the named nodes in `_VISITED` (an id compares faster than a type
    string, which tree-sitter decodes anew each time)."""
    ids = (language.id_for_node_kind(kind, True) for kind in _VISITED)
    return frozenset(i for i in ids if i is not None)


# Builtins that call a function they are given: its position, or the keyword naming it.
_CALLS_ARGUMENT: dict[str, int | str] = {
    "map": 0,
    "filter": 0,
    "sorted": "key",
    "min": "key",
    "max": "key",
}


def _called_argument(builtin: str, args: Node) -> Node | None:
    """The argument node a builtin of `_CALLS_ARGUMENT` calls, if the call passes it."""
    which = _CALLS_ARGUMENT.get(builtin)
    if which is None:
        return None
    position = 0
    for arg in args.named_children:
        if arg.type == "keyword_argument":
            name = arg.child_by_field_name("name")
            if isinstance(which, str) and name is not None and name.text == which.encode():
                return arg.child_by_field_name("value")
        elif arg.type in ("list_splat", "dictionary_splat"):
            return None
        else:
            if position == which:
                return arg
            position += 1
    return None


def module_name(path: str) -> tuple[str, bool]:
    """("pkg.mod", False) for pkg/mod.py; ("pkg", True) for pkg/__init__.py."""
    pure = PurePosixPath(path)
    parts = list(pure.parent.parts) if pure.parent != PurePosixPath(".") else []
    if pure.stem == "__init__":
        return ".".join(parts), True
    return ".".join([*parts, pure.stem]), False


class ScopePass:
    """Pass 1: scopes, bindings, definitions and call sites of one file."""

    def __init__(self, path: str, source: bytes) -> None:
        self.path = path
        self.source = source
        self.module, self.package = module_name(path)
        self.definitions: dict[str, Definition] = {}
        self.functions: dict[str, Function] = {}
        self.class_scopes: dict[str, Scope] = {}
        self.class_bases: dict[str, tuple[list[Node], Scope, int]] = {}
        self.self_attrs: dict[str, dict[str, list[Binding]]] = {}
        self.returns: dict[str, list[Binding]] = {}
        self.sites: list[Site] = []
        self.imports: list[tuple[str, int, str]] = []  # (source symbol, line, dotted)
        self.stars: list[str] = []
        self.lambda_names: dict[int, str] = {}
        # Decorated functions: the scope of the decorators and their expressions, the one
        # applied first (the last written) first; and each function's own name binding.
        self.decorations: dict[str, tuple[Scope, list[Node]]] = {}
        self._def_bindings: dict[str, Binding] = {}
        self._function_scopes: dict[str, Scope] = {}
        self._last_symbol: str | None = None
        self._texts: dict[int, str] = {}
        self._ascii: str | None = source.decode("ascii") if source.isascii() else None

    def _t(self, node: Node | None) -> str:
        """`node_text(node)`: a slice of the decoded source when it is ASCII (byte offsets are then
        character offsets), else decoded once per node."""
        if node is None:
            return ""
        if self._ascii is not None:
            return self._ascii[node.start_byte : node.end_byte]
        key = node.id
        text = self._texts.get(key)
        if text is None:
            text = self._texts[key] = node_text(node)
        return text

    def _scan(self) -> Tree:
        """Parse the file and walk it once; the tree is returned to be kept alive while the
        evaluator reads its nodes."""
        from core.code.languages import parser_for

        parser = parser_for("python")
        language = parser.language
        assert language is not None
        self._visited_ids = _visited_ids(language)
        tree = parser.parse(self.source)
        root = tree.root_node
        module = Scope("module", MODULE, None)
        self.module_scope = module
        lines = max(1, root.end_point.row + (0 if root.end_point.column == 0 else 1))
        self.definitions[MODULE] = Definition(MODULE, "module", 1, lines)
        self._visit_block(root, module)
        return tree

    def _define(self, symbol: str, kind: Any, node: Node) -> str:
        # A redefinition (a conditional def, a property setter) stays one symbol, at the
        # first location.
        if symbol not in self.definitions:
            self.definitions[symbol] = Definition(
                symbol, kind, node.start_point.row + 1, node.end_point.row + 1
            )
        return symbol

    def _visit_block(self, node: Node, scope: Scope) -> None:
        """`_visit` each node under `node` whose kind binds or calls, in source order, and
        nothing below it (its own `_visit` goes on where it should, in the right scope)."""
        visited = self._visited_ids
        for child in node.named_children:
            # Kind ids, not type strings: tree-sitter makes a new string at each `.type`.
            if child.kind_id in visited:
                self._visit(child, scope)
            elif child.named_child_count:  # leaves bind and call nothing
                self._visit_block(child, scope)

    def _visit(self, node: Node, scope: Scope) -> None:
        kind = node.type
        if kind == "call":  # the most frequent kind here, first
            self._call(node, scope)
            self._visit_block(node, scope)
            return
        if kind not in _VISITED:  # most nodes: only their children bind or call
            self._visit_block(node, scope)
            return
        if kind == "decorated_definition":
            definition = node.child_by_field_name("definition")
            decorators = [c for c in node.named_children if c.type == "decorator"]
            if definition is not None:
                self._visit(definition, scope)
                symbol = self._last_symbol
                exprs = [d.named_children[0] for d in decorators if d.named_children]
                for position, expr in enumerate(exprs):
                    self._visit(expr, scope)  # `@dec(1)`: the call of dec itself
                    self.sites.append(
                        Site(
                            expr,
                            scope,
                            expr.start_point.row + 1,
                            None,
                            decorator=True,
                            decorates=symbol,
                            layer=len(exprs) - 1 - position,  # the last one is applied first
                        )
                    )
                    if symbol is not None and self._t(expr) in ("staticmethod", "classmethod"):
                        self._static(symbol, self._t(expr))
                named = self._def_bindings.get(symbol) if symbol is not None else None
                if symbol is not None and named is not None and exprs:
                    # `@dec def f` binds f to what dec(f) returns as well (`_decorated`).
                    named.kind = "dec"
                    self.decorations[symbol] = (scope, exprs[::-1])
            return
        if kind == "class_definition":
            self._class(node, scope)
            return
        if kind == "function_definition":
            self._function(node, scope)
            return
        if kind == "lambda":
            self._lambda(node, scope, None)
            return
        if kind in ("import_statement", "import_from_statement", "future_import_statement"):
            self._import(node, scope)
            return
        if kind in ("global_statement", "nonlocal_statement"):
            if kind == "global_statement":
                scope.globals.update(self._t(c) for c in node.named_children)
            return
        if kind == "assignment":
            self._assignment(node, scope)
        elif kind in ("for_statement", "for_in_clause"):
            left, right = node.child_by_field_name("left"), node.child_by_field_name("right")
            if left is not None and right is not None:
                for name in self._target_names(left):
                    scope.bind(name, Binding("it", node=right, scope=scope))
                # A loop calls its iterable's __iter__, then __next__ on what that returns.
                line = node.start_point.row + 1
                for method in ("__iter__", "__next__"):
                    self.sites.append(Site(right, scope, line, None, implicit=method))
        elif kind == "as_pattern" and node.parent is not None and node.parent.type == "with_item":
            alias = node.child_by_field_name("alias")
            value = node.named_children[0] if node.named_children else None
            if alias is not None and value is not None:
                for name in self._target_names(alias):
                    scope.bind(name, Binding("e", node=value, scope=scope))
        elif kind == "return_statement":
            value = node.named_children[0] if node.named_children else None
            if value is not None and scope.kind == "function":
                self.returns.setdefault(scope.symbol, []).append(
                    Binding("e", node=value, scope=scope)
                )
        elif kind == "yield":
            # A generator's call returns what it yields, as the elements of a container
            # (`for f in gen(): f()`); `yield from xs` yields the elements of xs.
            value = node.named_children[0] if node.named_children else None
            if value is not None and scope.kind == "function":
                spread = any(c.type == "from" for c in node.children)
                self.returns.setdefault(scope.symbol, []).append(
                    Binding("yield", node=value, scope=scope, key=spread)
                )
        self._visit_block(node, scope)

    def _call(self, node: Node, scope: Scope) -> None:
        function = node.child_by_field_name("function")
        if function is None:
            return
        is_name = function.type == "identifier"
        if is_name and self._t(function) == "super":
            return
        args = node.child_by_field_name("arguments")
        line = node.start_point.row + 1
        self.sites.append(Site(function, scope, line, args))
        if is_name and args is not None:
            builtin = self._t(function)
            called = _called_argument(builtin, args)
            if called is not None:  # `map(f, xs)` calls f (if map is the builtin)
                self.sites.append(Site(called, scope, line, None, by=builtin))
        elif function.type == "attribute" and args is not None:
            self._update(function, args, scope)

    def _update(self, function: Node, args: Node, scope: Scope) -> None:
        """`d.update({"k": f}, k2=g)` stores items in d, as `d["k"] = f` does."""
        obj = function.child_by_field_name("object")
        if obj is None or obj.type != "identifier":
            return
        if self._t(function.child_by_field_name("attribute")) != "update":
            return
        name = self._t(obj)
        holder = self._lookup_scope(name, scope)
        for arg in args.named_children:
            if arg.type == "keyword_argument":
                key: Any = self._t(arg.child_by_field_name("name"))
                pairs = [(key, arg.child_by_field_name("value"))]
            elif arg.type == "dictionary":
                pairs = [
                    (
                        literal_key(pair.child_by_field_name("key")),
                        pair.child_by_field_name("value"),
                    )
                    for pair in arg.named_children
                    if pair.type == "pair"
                ]
            else:
                continue
            for key, value in pairs:
                if value is not None:
                    holder.bind(name, Binding("si", node=value, scope=scope, key=key))

    def _class(self, node: Node, scope: Scope) -> None:
        name = self._t(node.child_by_field_name("name")) or "<anonymous>"
        symbol = self._define(scope.prefix + name, "class", node)
        self._last_symbol = symbol
        scope.bind(name, Binding("v", value=("d", symbol)))
        inner = Scope("class", symbol, scope, cls=symbol)
        self.class_scopes[symbol] = inner
        superclasses = node.child_by_field_name("superclasses")
        bases: list[Node] = []
        if superclasses is not None:
            for child in superclasses.named_children:
                if child.type == "keyword_argument":
                    self._visit(child, scope)
                    continue
                bases.append(child)
                self._visit(child, scope)
        self.class_bases[symbol] = (bases, scope, node.start_point.row + 1)
        body = node.child_by_field_name("body")
        if body is not None:
            self._visit_block(body, inner)
        self._last_symbol = symbol

    def _function(self, node: Node, scope: Scope) -> None:
        name = self._t(node.child_by_field_name("name")) or "<anonymous>"
        kind = "method" if scope.kind == "class" else "function"
        symbol = self._define(scope.prefix + name, kind, node)
        named = Binding("v", value=("d", symbol))
        scope.bind(name, named)
        self._def_bindings[symbol] = named
        inner = Scope("function", symbol, scope, cls=scope.cls if kind == "method" else None)
        parameters = node.child_by_field_name("parameters")
        self._parameters(parameters, symbol, inner, scope, method=kind == "method")
        return_type = node.child_by_field_name("return_type")
        if return_type is not None:
            self.returns.setdefault(symbol, []).append(
                Binding("ann", node=return_type, scope=scope)
            )
        body = node.child_by_field_name("body")
        if body is not None:
            self._visit_block(body, inner)
        self._last_symbol = symbol

    def _static(self, symbol: str, decorator: str) -> None:
        """`@staticmethod` takes no self; `@classmethod` takes the class, not an instance."""
        function = self.functions.get(symbol)
        if function is None or not function.params:
            return
        first = function.params[0]
        owner = symbol.rsplit(".", 1)[0]
        scope = self._function_scopes.get(symbol)
        if scope is None:
            return
        bindings = scope.bindings.get(first, [])
        if decorator == "staticmethod":
            # Its first parameter is an ordinary one: it takes what callers pass.
            function.bound = False
            scope.bindings[first] = [
                *(b for b in bindings if b.kind != "v"),
                Binding("p", key=(symbol, first)),
            ]
        else:
            scope.bindings[first] = [
                Binding("v", value=("d", owner)) if b.kind == "v" else b for b in bindings
            ]

    def _parameters(
        self, parameters: Node | None, symbol: str, inner: Scope, outer: Scope, *, method: bool
    ) -> None:
        self._function_scopes[symbol] = inner
        names: list[str] = []
        positional: int | None = None  # names before `*` or `*args`, when there is one
        if parameters is not None:
            for child in parameters.named_children:
                kind = child.type
                name_node: Node | None = None
                annotation = child.child_by_field_name("type")
                default = child.child_by_field_name("value")
                if kind == "identifier":
                    name_node = child
                elif kind == "typed_parameter":
                    first = child.named_children[0] if child.named_child_count else None
                    if first is not None and first.type == "identifier":
                        name_node = first
                    elif first is not None and first.type == "list_splat_pattern":
                        positional = len(names) if positional is None else positional
                elif kind in ("default_parameter", "typed_default_parameter"):
                    name_node = child.child_by_field_name("name")
                elif kind in ("list_splat_pattern", "keyword_separator") and positional is None:
                    positional = len(names)  # what follows `*args` or `*` is keyword-only
                if default is not None:
                    self._visit(default, outer)
                if name_node is None:
                    continue
                name = self._t(name_node)
                position = len(names)
                names.append(name)
                if method and position == 0 and outer.cls is not None:
                    inner.bind(name, Binding("v", value=("i", ("d", outer.cls))))
                    continue
                inner.bind(name, Binding("p", key=(symbol, name)))
                if default is not None:
                    inner.bind(name, Binding("e", node=default, scope=outer))
                if annotation is not None:
                    inner.bind(name, Binding("ann", node=annotation, scope=outer))
        self.functions[symbol] = Function(
            symbol,
            names,
            method and outer.cls is not None,
            len(names) if positional is None else positional,
        )

    def _lambda(self, node: Node, scope: Scope, name: str | None) -> str:
        if node.id in self.lambda_names:
            return self.lambda_names[node.id]
        if name is None:
            scope.lambdas += 1
            name = f"<lambda{scope.lambdas}>"
        symbol = self._define(scope.prefix + name, "function", node)
        self.lambda_names[node.id] = symbol
        inner = Scope("function", symbol, scope)
        self._parameters(node.child_by_field_name("parameters"), symbol, inner, scope, method=False)
        body = node.child_by_field_name("body")
        if body is not None:
            self.returns.setdefault(symbol, []).append(Binding("e", node=body, scope=inner))
            self._visit(body, inner)
        return symbol

    def _import(self, node: Node, scope: Scope) -> None:
        line = node.start_point.row + 1
        if node.type == "import_statement":
            for child in node.named_children:
                if child.type == "aliased_import":
                    dotted = self._t(child.child_by_field_name("name"))
                    alias = self._t(child.child_by_field_name("alias"))
                    scope.bind(alias, Binding("v", value=("m", dotted)))
                else:
                    dotted = self._t(child)
                    head = dotted.split(".", 1)[0]
                    scope.bind(head, Binding("v", value=("m", head)))
                self.imports.append((scope.symbol, line, dotted))
            return
        if node.type == "future_import_statement":
            return
        module_node = node.child_by_field_name("module_name")
        base = self._absolute(module_node)
        for child in node.named_children:
            if child == module_node:
                continue
            if child.type == "wildcard_import":
                if base:
                    self.stars.append(base)
                    self.imports.append((scope.symbol, line, base))
                continue
            if child.type == "aliased_import":
                name = self._t(child.child_by_field_name("name"))
                alias = self._t(child.child_by_field_name("alias"))
            elif child.type == "dotted_name":
                name = alias = self._t(child)
            else:
                continue
            dotted = f"{base}.{name}" if base else name
            scope.bind(alias, Binding("v", value=("m", dotted)))
            self.imports.append((scope.symbol, line, dotted))

    def _absolute(self, module_node: Node | None) -> str:
        """The absolute dotted name of `from X import` (relative imports from this file)."""
        if module_node is None:
            return ""
        if module_node.type != "relative_import":
            return self._t(module_node)
        prefix = next((c for c in module_node.named_children if c.type == "import_prefix"), None)
        level = self._t(prefix).count(".")
        rest = next((c for c in module_node.named_children if c.type == "dotted_name"), None)
        parts = self.module.split(".") if self.module else []
        # A package's __init__ is the package itself; a module's level 1 is its package.
        drop = level - 1 if self.package else level
        parts = parts[: len(parts) - drop] if drop <= len(parts) else []
        if rest is not None:
            parts.append(self._t(rest))
        return ".".join(p for p in parts if p)

    def _target_names(self, node: Node) -> Iterator[str]:
        if node.type == "identifier":
            yield self._t(node)
        elif node.type in ("pattern_list", "tuple_pattern", "list_pattern", "as_pattern_target"):
            for child in node.named_children:
                yield from self._target_names(child)

    def _assignment(self, node: Node, scope: Scope) -> None:
        targets: list[Node] = []
        current: Node | None = node
        value: Node | None = None
        annotation: Node | None = None
        while current is not None and current.type == "assignment":
            left = current.child_by_field_name("left")
            if left is not None:
                targets.append(left)
            annotation = annotation or current.child_by_field_name("type")
            value = current.child_by_field_name("right")
            current = value
        if value is not None and value.type == "lambda" and targets[0].type == "identifier":
            self._lambda(value, scope, self._t(targets[0]))
        for target in targets:
            self._bind_target(target, value, annotation, scope)

    def _bind_target(
        self, target: Node, value: Node | None, annotation: Node | None, scope: Scope
    ) -> None:
        if target.type == "identifier":
            name = self._t(target)
            if value is not None:
                scope.bind(name, Binding("e", node=value, scope=scope))
            if annotation is not None:
                scope.bind(name, Binding("ann", node=annotation, scope=scope))
        elif target.type in ("pattern_list", "tuple_pattern", "list_pattern"):
            if value is not None:
                self._bind_items(target.named_children, value, scope)
        elif target.type == "attribute" and value is not None:
            obj = target.child_by_field_name("object")
            attr = self._t(target.child_by_field_name("attribute"))
            owner = self._self_class(obj, scope)
            if owner is not None:
                self.self_attrs.setdefault(owner, {}).setdefault(attr, []).append(
                    Binding("e", node=value, scope=scope)
                )
        elif target.type == "subscript" and value is not None:
            container = target.child_by_field_name("value")
            if container is not None and container.type == "identifier":
                key = literal_key(target.child_by_field_name("subscript"))
                self._lookup_scope(self._t(container), scope).bind(
                    self._t(container), Binding("si", node=value, scope=scope, key=key)
                )

    def _bind_items(self, items: list[Node], value: Node, scope: Scope) -> None:
        """`a, *rest, z = value`: each target its item of the value (`*rest` a list of
        those in the middle), written out or, for any other value, item i of it."""
        star = next((i for i, item in enumerate(items) if item.type == "list_splat_pattern"), None)
        if value.type in ("expression_list", "tuple", "list"):
            values = value.named_children
            if star is None:
                if len(values) == len(items):
                    for item, item_value in zip(items, values, strict=True):
                        self._bind_target(item, item_value, None, scope)
                return
            after = len(items) - star - 1
            if len(values) < star + after:
                return
            for item, item_value in zip(items[:star], values[:star], strict=True):
                self._bind_target(item, item_value, None, scope)
            for item, item_value in zip(
                items[star + 1 :], values[len(values) - after :], strict=True
            ):
                self._bind_target(item, item_value, None, scope)
            rest = items[star].named_children
            if rest and rest[0].type == "identifier":
                name = self._t(rest[0])
                for position, item_value in enumerate(values[star : len(values) - after]):
                    scope.bind(name, Binding("si", node=item_value, scope=scope, key=position))
            return
        if star is not None:
            return
        for position, item in enumerate(items):
            if item.type == "identifier":
                scope.bind(self._t(item), Binding("ix", node=value, scope=scope, key=position))

    def _lookup_scope(self, name: str, scope: Scope) -> Scope:
        """The scope that binds `name` as seen from `scope` (the module's when none does)."""
        current: Scope | None = scope
        first = True
        while current is not None:
            if name in current.globals:
                return self.module_scope
            if (first or current.kind != "class") and name in current.bindings:
                return current
            first = False
            current = current.parent
        return self.module_scope

    def _self_class(self, obj: Node | None, scope: Scope) -> str | None:
        """The class when `obj` is a method's `self` (also inside functions nested in it)."""
        if obj is None or obj.type != "identifier":
            return None
        name = self._t(obj)
        holder = self._lookup_scope(name, scope)
        for binding in holder.bindings.get(name, []):
            if binding.kind == "v" and binding.value and binding.value[0] == "i":
                inner = binding.value[1]
                if inner[0] == "d" and inner[1] in self.class_scopes:
                    return str(inner[1])
        return None
