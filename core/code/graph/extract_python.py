"""Python: definitions, name bindings and references of one file, from its tree-sitter tree.

Two passes. The first walks the tree once, creating scopes (module, class, function, lambda)
with every binding of every name in them (definitions, imports, assignments, parameters,
`for` targets, `with ... as`), and noting every call site. The second evaluates, lazily and
flow-insensitively, what each call's callee may be (see `model` for the value language): a
name is looked up through the enclosing scopes (class bodies skipped, as Python does), a
parameter takes the values of the arguments that calls of its function in this file pass, a
variable those of its assignments. What is left symbolic (imports, other files) is resolved by
`resolve` once the whole repository is known.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from functools import cache
from pathlib import PurePosixPath
from typing import TYPE_CHECKING, Any

from core.code.graph.gcpause import gc_paused
from core.code.graph.model import (
    FLOW,
    IMPLICIT,
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
    from tree_sitter import Language, Node

MAX_VALUES = 16  # per name: a name assigned more often than that is not followed further
MAX_DEPTH = 40
ROUNDS = 2  # parameter flow: a function passed through two calls is still followed

_STRINGS = re.compile(r"""[rbfuRBFU]*("|')(?:\\.|(?!\1).)*\1""")
_PLAIN = re.compile(r"[\w.]*")  # no string literal and no whitespace: a name as it is
_FUNCTIONISH = frozenset(
    {"identifier", "attribute", "lambda", "list", "tuple", "dictionary", "subscript"}
)

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


V = tuple[Any, ...]  # a value while extracting (a tuple: hashable); stored as lists
_NOTHING: frozenset[V] = frozenset()


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


@dataclass(eq=False, slots=True)
class _Binding:
    kind: str  # "v" value, "e" expression, "it" element of, "p" parameter, "ann", "si"
    value: V | None = None
    node: Node | None = None
    scope: _Scope | None = None
    key: Any = None  # "si": the subscript key; "p": (function, position, name)


@dataclass(eq=False, slots=True)
class _Scope:
    kind: str  # "module", "class", "function"
    symbol: str
    parent: _Scope | None
    cls: str | None = None  # class scope: its class; method scope: the method's class
    bindings: dict[str, list[_Binding]] = field(default_factory=dict)
    globals: set[str] = field(default_factory=set)
    lambdas: int = 0

    @property
    def prefix(self) -> str:
        return "" if self.kind == "module" else self.symbol + "."

    def bind(self, name: str, binding: _Binding) -> None:
        target = self
        if name in self.globals:
            while target.parent is not None:
                target = target.parent
        target.bindings.setdefault(name, []).append(binding)


@dataclass(eq=False, slots=True)
class _Function:
    symbol: str
    params: list[str]  # in order: those that can be passed by position, then keyword-only
    bound: bool  # a method taking self/cls: a call through an instance skips the first
    positional: int = 0  # how many of `params` a call can pass by position


@dataclass(eq=False, slots=True)
class _Site:
    callee: Node
    scope: _Scope
    line: int
    args: Node | None  # argument_list, for parameter flow
    decorator: bool = False
    decorates: str | None = None  # a decorator site: the decorated definition (its argument)
    layer: int = 0  # how many decorators of that definition are applied before this one
    implicit: str | None = None  # `for x in it`: "__iter__" or "__next__", called on `it`
    by: str | None = None  # the builtin that calls the callee (`map(f, xs)` calls f)


def _text(node: Node | None) -> str:
    if node is None or node.text is None:
        return ""
    return node.text.decode("utf-8", "replace")


def _literal(node: Node | None) -> Any:
    """The key a subscript or dict entry spells literally (a string or an int), else None."""
    if node is None:
        return None
    if node.type == "integer":
        try:
            return int(_text(node), 0)
        except ValueError:
            return None
    if node.type == "string":
        parts = [c for c in node.named_children if c.type == "string_content"]
        if len(parts) == 1 and len(node.named_children) == 3:
            return _text(parts[0])
        if len(node.named_children) == 2:
            return ""
    return None


class PythonExtractor:
    def __init__(self, path: str, source: bytes) -> None:
        self.path = path
        self.source = source
        self.module, self.package = module_name(path)
        self.definitions: dict[str, Definition] = {}
        self.functions: dict[str, _Function] = {}
        self.class_scopes: dict[str, _Scope] = {}
        self.class_bases: dict[str, tuple[list[Node], _Scope, int]] = {}
        self.self_attrs: dict[str, dict[str, list[_Binding]]] = {}
        self.returns: dict[str, list[_Binding]] = {}
        self.sites: list[_Site] = []
        self.imports: list[tuple[str, int, str]] = []  # (source symbol, line, dotted)
        self.stars: list[str] = []
        self.lambda_names: dict[int, str] = {}
        # Decorated functions: the scope of the decorators and their expressions, the one
        # applied first (the last written) first; and each function's own name binding.
        self.decorations: dict[str, tuple[_Scope, list[Node]]] = {}
        self._def_bindings: dict[str, _Binding] = {}
        self.arguments: dict[tuple[str, str], list[_Binding]] = {}
        # Evaluations are memoized twice: `_memo`/`_names` for this flow round only (values
        # that read a parameter, or were cut short by a cycle or the depth limit), and
        # `_stable`/`_stable_names` for the whole file (values that did neither are the same
        # in every round, and most values are such). `_tainted` says whether the evaluation
        # under way has read a round-only value.
        self._memo: dict[tuple[int, _Scope], frozenset[V]] = {}
        self._names: dict[tuple[_Scope, str], frozenset[V]] = {}
        self._stable: dict[tuple[int, _Scope], frozenset[V]] = {}
        self._stable_names: dict[tuple[_Scope, str], frozenset[V]] = {}
        self._tainted = False
        # The arguments the last flow round found, as `_flow` compares them (none at first).
        self._reached: dict[tuple[str, str], Counter[tuple[Any, ...]]] = {}
        self._function_scopes: dict[str, _Scope] = {}
        self._last_symbol: str | None = None
        self._texts: dict[int, str] = {}
        self._ascii: str | None = source.decode("ascii") if source.isascii() else None

    def _t(self, node: Node | None) -> str:
        """`_text(node)`: a slice of the decoded source when it is ASCII (byte offsets are then
        character offsets), else decoded once per node."""
        if node is None:
            return ""
        if self._ascii is not None:
            return self._ascii[node.start_byte : node.end_byte]
        key = node.id
        text = self._texts.get(key)
        if text is None:
            text = self._texts[key] = _text(node)
        return text

    # -- pass 1: scopes and bindings ----------------------------------------------------------

    def extract(self) -> FileFacts:
        from core.code.languages import parser_for

        parser = parser_for("python")
        language = parser.language
        assert language is not None
        self._visited_ids = _visited_ids(language)
        tree = parser.parse(self.source)
        root = tree.root_node
        module = _Scope("module", MODULE, None)
        self.module_scope = module
        lines = max(1, root.end_point.row + (0 if root.end_point.column == 0 else 1))
        self.definitions[MODULE] = Definition(MODULE, "module", 1, lines)
        self._visit_block(root, module)
        for _ in range(ROUNDS):
            if not self._flow():
                break
        facts = self._facts()
        # Bindings point back at their scope: without these cycles, all of this file's
        # scaffolding is freed here by reference counting instead of waiting for (and
        # lengthening) the next garbage collection.
        for scope in (
            self.module_scope,
            *self.class_scopes.values(),
            *self._function_scopes.values(),
        ):
            scope.bindings.clear()
        return facts

    def _define(self, symbol: str, kind: Any, node: Node) -> str:
        # A redefinition (a conditional def, a property setter) stays one symbol, at the
        # first location.
        if symbol not in self.definitions:
            self.definitions[symbol] = Definition(
                symbol, kind, node.start_point.row + 1, node.end_point.row + 1
            )
        return symbol

    def _visit_block(self, node: Node, scope: _Scope) -> None:
        """`_visit` each node under `node` whose kind binds or calls, in source order, and
        nothing below it (its own `_visit` goes on where it should, in the right scope)."""
        visited = self._visited_ids
        for child in node.named_children:
            # Kind ids, not type strings: tree-sitter makes a new string at each `.type`.
            if child.kind_id in visited:
                self._visit(child, scope)
            elif child.named_child_count:  # leaves bind and call nothing
                self._visit_block(child, scope)

    def _visit(self, node: Node, scope: _Scope) -> None:
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
                        _Site(
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
                    scope.bind(name, _Binding("it", node=right, scope=scope))
                # A loop calls its iterable's __iter__, then __next__ on what that returns.
                line = node.start_point.row + 1
                for method in ("__iter__", "__next__"):
                    self.sites.append(_Site(right, scope, line, None, implicit=method))
        elif kind == "as_pattern" and node.parent is not None and node.parent.type == "with_item":
            alias = node.child_by_field_name("alias")
            value = node.named_children[0] if node.named_children else None
            if alias is not None and value is not None:
                for name in self._target_names(alias):
                    scope.bind(name, _Binding("e", node=value, scope=scope))
        elif kind == "return_statement":
            value = node.named_children[0] if node.named_children else None
            if value is not None and scope.kind == "function":
                self.returns.setdefault(scope.symbol, []).append(
                    _Binding("e", node=value, scope=scope)
                )
        elif kind == "yield":
            # A generator's call returns what it yields, as the elements of a container
            # (`for f in gen(): f()`); `yield from xs` yields the elements of xs.
            value = node.named_children[0] if node.named_children else None
            if value is not None and scope.kind == "function":
                spread = any(c.type == "from" for c in node.children)
                self.returns.setdefault(scope.symbol, []).append(
                    _Binding("yield", node=value, scope=scope, key=spread)
                )
        self._visit_block(node, scope)

    def _call(self, node: Node, scope: _Scope) -> None:
        function = node.child_by_field_name("function")
        if function is None:
            return
        is_name = function.type == "identifier"
        if is_name and self._t(function) == "super":
            return
        args = node.child_by_field_name("arguments")
        line = node.start_point.row + 1
        self.sites.append(_Site(function, scope, line, args))
        if is_name and args is not None:
            builtin = self._t(function)
            called = _called_argument(builtin, args)
            if called is not None:  # `map(f, xs)` calls f (if map is the builtin)
                self.sites.append(_Site(called, scope, line, None, by=builtin))
        elif function.type == "attribute" and args is not None:
            self._update(function, args, scope)

    def _update(self, function: Node, args: Node, scope: _Scope) -> None:
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
                    (_literal(pair.child_by_field_name("key")), pair.child_by_field_name("value"))
                    for pair in arg.named_children
                    if pair.type == "pair"
                ]
            else:
                continue
            for key, value in pairs:
                if value is not None:
                    holder.bind(name, _Binding("si", node=value, scope=scope, key=key))

    def _class(self, node: Node, scope: _Scope) -> None:
        name = self._t(node.child_by_field_name("name")) or "<anonymous>"
        symbol = self._define(scope.prefix + name, "class", node)
        self._last_symbol = symbol
        scope.bind(name, _Binding("v", value=("d", symbol)))
        inner = _Scope("class", symbol, scope, cls=symbol)
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

    def _function(self, node: Node, scope: _Scope) -> None:
        name = self._t(node.child_by_field_name("name")) or "<anonymous>"
        kind = "method" if scope.kind == "class" else "function"
        symbol = self._define(scope.prefix + name, kind, node)
        named = _Binding("v", value=("d", symbol))
        scope.bind(name, named)
        self._def_bindings[symbol] = named
        inner = _Scope("function", symbol, scope, cls=scope.cls if kind == "method" else None)
        parameters = node.child_by_field_name("parameters")
        self._parameters(parameters, symbol, inner, scope, method=kind == "method")
        return_type = node.child_by_field_name("return_type")
        if return_type is not None:
            self.returns.setdefault(symbol, []).append(
                _Binding("ann", node=return_type, scope=scope)
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
                _Binding("p", key=(symbol, first)),
            ]
        else:
            scope.bindings[first] = [
                _Binding("v", value=("d", owner)) if b.kind == "v" else b for b in bindings
            ]

    def _parameters(
        self, parameters: Node | None, symbol: str, inner: _Scope, outer: _Scope, *, method: bool
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
                    inner.bind(name, _Binding("v", value=("i", ("d", outer.cls))))
                    continue
                inner.bind(name, _Binding("p", key=(symbol, name)))
                if default is not None:
                    inner.bind(name, _Binding("e", node=default, scope=outer))
                if annotation is not None:
                    inner.bind(name, _Binding("ann", node=annotation, scope=outer))
        self.functions[symbol] = _Function(
            symbol,
            names,
            method and outer.cls is not None,
            len(names) if positional is None else positional,
        )

    def _lambda(self, node: Node, scope: _Scope, name: str | None) -> str:
        if node.id in self.lambda_names:
            return self.lambda_names[node.id]
        if name is None:
            scope.lambdas += 1
            name = f"<lambda{scope.lambdas}>"
        symbol = self._define(scope.prefix + name, "function", node)
        self.lambda_names[node.id] = symbol
        inner = _Scope("function", symbol, scope)
        self._parameters(node.child_by_field_name("parameters"), symbol, inner, scope, method=False)
        body = node.child_by_field_name("body")
        if body is not None:
            self.returns.setdefault(symbol, []).append(_Binding("e", node=body, scope=inner))
            self._visit(body, inner)
        return symbol

    def _import(self, node: Node, scope: _Scope) -> None:
        line = node.start_point.row + 1
        if node.type == "import_statement":
            for child in node.named_children:
                if child.type == "aliased_import":
                    dotted = self._t(child.child_by_field_name("name"))
                    alias = self._t(child.child_by_field_name("alias"))
                    scope.bind(alias, _Binding("v", value=("m", dotted)))
                else:
                    dotted = self._t(child)
                    head = dotted.split(".", 1)[0]
                    scope.bind(head, _Binding("v", value=("m", head)))
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
            scope.bind(alias, _Binding("v", value=("m", dotted)))
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

    def _assignment(self, node: Node, scope: _Scope) -> None:
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
        self, target: Node, value: Node | None, annotation: Node | None, scope: _Scope
    ) -> None:
        if target.type == "identifier":
            name = self._t(target)
            if value is not None:
                scope.bind(name, _Binding("e", node=value, scope=scope))
            if annotation is not None:
                scope.bind(name, _Binding("ann", node=annotation, scope=scope))
        elif target.type in ("pattern_list", "tuple_pattern", "list_pattern"):
            if value is not None:
                self._bind_items(target.named_children, value, scope)
        elif target.type == "attribute" and value is not None:
            obj = target.child_by_field_name("object")
            attr = self._t(target.child_by_field_name("attribute"))
            owner = self._self_class(obj, scope)
            if owner is not None:
                self.self_attrs.setdefault(owner, {}).setdefault(attr, []).append(
                    _Binding("e", node=value, scope=scope)
                )
        elif target.type == "subscript" and value is not None:
            container = target.child_by_field_name("value")
            if container is not None and container.type == "identifier":
                key = _literal(target.child_by_field_name("subscript"))
                self._lookup_scope(self._t(container), scope).bind(
                    self._t(container), _Binding("si", node=value, scope=scope, key=key)
                )

    def _bind_items(self, items: list[Node], value: Node, scope: _Scope) -> None:
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
                    scope.bind(name, _Binding("si", node=item_value, scope=scope, key=position))
            return
        if star is not None:
            return
        for position, item in enumerate(items):
            if item.type == "identifier":
                scope.bind(self._t(item), _Binding("ix", node=value, scope=scope, key=position))

    def _lookup_scope(self, name: str, scope: _Scope) -> _Scope:
        """The scope that binds `name` as seen from `scope` (the module's when none does)."""
        current: _Scope | None = scope
        first = True
        while current is not None:
            if name in current.globals:
                return self.module_scope
            if (first or current.kind != "class") and name in current.bindings:
                return current
            first = False
            current = current.parent
        return self.module_scope

    def _self_class(self, obj: Node | None, scope: _Scope) -> str | None:
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

    # -- pass 2: values ----------------------------------------------------------------------

    def _flow(self) -> bool:
        """Which arguments reach which parameters of this file's functions (rebuilt per round,
        so a function passed on through two calls is followed too). False when nothing
        reaches a parameter that another round could follow further."""
        arguments: dict[tuple[str, str], list[_Binding]] = {}
        for site in self.sites:
            if site.decorates is not None:
                # `@dec def f`: dec is called with f, as the decorators below it left it
                for function, _ in self._local_callees(site):
                    if function.params:
                        arguments.setdefault((function.symbol, function.params[0]), []).extend(
                            _Binding("raw", value=v)
                            for v in self._decorated(site.decorates, site.layer, 0)
                        )
                continue
            if site.args is None:
                continue
            for function, skip in self._local_callees(site):
                params = function.params[int(skip) : function.positional]
                position = 0
                for arg in site.args.named_children:
                    if arg.type == "keyword_argument":
                        name = self._t(arg.child_by_field_name("name"))
                        value = arg.child_by_field_name("value")
                        if value is not None and name in function.params:
                            arguments.setdefault((function.symbol, name), []).append(
                                _Binding("e", node=value, scope=site.scope)
                            )
                    elif arg.type in ("list_splat", "dictionary_splat"):
                        break
                    else:
                        if position < len(params):
                            arguments.setdefault((function.symbol, params[position]), []).append(
                                _Binding("e", node=arg, scope=site.scope)
                            )
                        position += 1
        # What reaches the parameters is what this round read from them: a fixed point, so the
        # round's evaluations hold for the facts too, and another round would change nothing.
        reached = {
            key: Counter(
                (b.kind, None if b.node is None else b.node.id, id(b.scope), b.value)
                for b in bindings
            )
            for key, bindings in arguments.items()
        }
        self.arguments = arguments
        if reached == self._reached:
            return False
        self._reached = reached
        self._memo.clear()
        self._names.clear()
        # Another round matters only when a parameter may receive a function or a container
        # (whose own calls may then reach further parameters).
        return any(
            argument.kind in ("v", "raw")
            or (argument.node is not None and argument.node.type in _FUNCTIONISH)
            for bindings in arguments.values()
            for argument in bindings
        )

    def _local_callees(self, site: _Site) -> Iterator[tuple[_Function, bool]]:
        """This file's functions a call site may call, and whether the call is bound (the
        first parameter, self, is not passed)."""
        for value in self.eval(site.callee, site.scope):
            yield from self._local_function(value, 0)

    def _local_function(self, value: V, depth: int) -> Iterator[tuple[_Function, bool]]:
        if depth > 4:
            return
        if value[0] == "d":
            symbol = value[1]
            definition = self.definitions.get(symbol)
            if definition is None:
                return
            if definition.kind == "class":
                init = self.functions.get(symbol + ".__init__")
                if init is not None:
                    yield init, True
            elif symbol in self.functions:
                yield self.functions[symbol], False
        elif value[0] == "a":
            owner, attr = value[1], value[2]
            # An instance: `self` (annotated or a method's first parameter) or what calling
            # one of this file's classes made (`a = C(); a.m(f)` passes f to C.m).
            if (owner[0] == "i" and owner[1][0] == "d") or (
                owner[0] == "c" and owner[1][0] == "d" and owner[1][1] in self.class_scopes
            ):
                method = self.functions.get(f"{owner[1][1]}.{attr}")
                if method is not None:
                    yield method, method.bound
            elif owner[0] == "d" and owner[1] in self.class_scopes:
                method = self.functions.get(f"{owner[1]}.{attr}")
                if method is not None:
                    yield method, False
        elif value[0] == "c" and value[1][0] == "d":
            for binding in self.returns.get(value[1][1], []):
                for returned in self._binding_values(binding, depth + 1):
                    yield from self._local_function(returned, depth + 1)

    def eval(self, node: Node, scope: _Scope, depth: int = 0) -> frozenset[V]:
        key = (node.id, scope)
        cached = self._stable.get(key)
        if cached is not None:
            return cached
        memo = self._memo
        cached = memo.get(key)
        if cached is not None:  # a round-only value, or a cycle's placeholder
            self._tainted = True
            return cached
        if depth > MAX_DEPTH:
            self._tainted = True
            return _NOTHING
        memo[key] = _NOTHING  # a cycle evaluates to nothing
        outer, self._tainted = self._tainted, False
        values = self._eval(node, scope, depth + 1)
        items = values if isinstance(values, list) else list(values)
        result = frozenset(capped(items, MAX_VALUES))
        if self._tainted:
            memo[key] = result
        else:
            del memo[key]
            self._stable[key] = result
        self._tainted = outer or self._tainted
        return result

    def _eval(self, node: Node, scope: _Scope, depth: int) -> Iterable[V]:
        kind = node.type
        if kind == "identifier":
            return self.lookup(self._t(node), scope, depth)
        if kind == "attribute":
            obj = node.child_by_field_name("object")
            attr = self._t(node.child_by_field_name("attribute"))
            if obj is None:
                return ()
            return [("a", v, attr) for v in self.eval(obj, scope, depth)]
        if kind == "call":
            function = node.child_by_field_name("function")
            if function is None:
                return ()
            if function.type == "identifier" and self._t(function) == "super":
                owner = self._enclosing_class(scope)
                return [("s", owner)] if owner else ()
            args = node.child_by_field_name("arguments")
            if (
                function.type == "identifier"
                and self._t(function) == "getattr"
                and args is not None
                and len(args.named_children) >= 2
                and isinstance(name := _literal(args.named_children[1]), str)
            ):
                return [("a", v, name) for v in self.eval(args.named_children[0], scope, depth)]
            if (
                function.type == "identifier"
                and args is not None
                and self._t(function) in ("map", "filter")
                and self._builtin(self._t(function), scope)
            ):
                # map(f, xs): what f returns, filter(f, xs): items of xs, as a container.
                given = [a for a in args.named_children if a.type != "keyword_argument"]
                results: list[V] = []
                if self._t(function) == "map" and given:
                    results = [("c", v) for v in self.eval(given[0], scope, depth)]
                elif len(given) > 1:
                    results = self._select(self.eval(given[1], scope, depth), None)
                return [("L", tuple((None, v) for v in results))] if results else ()
            return [("c", v) for v in self.eval(function, scope, depth)]
        if kind == "subscript":
            container = node.child_by_field_name("value")
            if container is None:
                return ()
            subscript = node.child_by_field_name("subscript")
            if subscript is not None and subscript.type == "slice":
                return self._slice(self.eval(container, scope, depth), subscript)
            return self._select(self.eval(container, scope, depth), _literal(subscript))
        if kind in ("list", "tuple", "set", "expression_list"):
            items = tuple(
                (i, v)
                for i, child in enumerate(node.named_children)
                for v in self.eval(child, scope, depth)
            )
            return [("L", items)] if items else ()
        if kind == "dictionary":
            pairs = []
            for pair in node.named_children:
                if pair.type != "pair":
                    continue
                value = pair.child_by_field_name("value")
                if value is None:
                    continue
                key = _literal(pair.child_by_field_name("key"))
                pairs += [(key, v) for v in self.eval(value, scope, depth)]
            return [("L", tuple(pairs))] if pairs else ()
        if kind in ("list_comprehension", "set_comprehension", "generator_expression"):
            body = node.child_by_field_name("body")
            made: tuple[tuple[Any, V], ...] = (
                tuple((None, v) for v in self.eval(body, scope, depth)) if body else ()
            )
            return [("L", made)] if made else ()
        if kind == "dictionary_comprehension":
            body = node.child_by_field_name("body")
            value = body.child_by_field_name("value") if body is not None else None
            made = tuple((None, v) for v in self.eval(value, scope, depth)) if value else ()
            return [("L", made)] if made else ()
        if kind == "lambda":
            return [("d", self._lambda(node, scope, None))]
        if kind == "conditional_expression":
            children = node.named_children
            picks = [children[0], children[2]] if len(children) == 3 else children
            return [v for c in picks for v in self.eval(c, scope, depth)]
        if kind == "boolean_operator":
            return [
                v
                for c in (node.child_by_field_name("left"), node.child_by_field_name("right"))
                if c is not None
                for v in self.eval(c, scope, depth)
            ]
        if kind in ("parenthesized_expression", "await", "type"):
            inner = node.named_children[0] if node.named_children else None
            return self.eval(inner, scope, depth) if inner is not None else ()
        return ()

    @staticmethod
    def _select(containers: Iterable[V], key: Any) -> list[V]:
        out: list[V] = []
        for value in containers:
            if value[0] != "L":
                out.append(("k", value, key))
                continue
            items = value[1]
            chosen = [v for k, v in items if key is not None and k == key]
            out += chosen or [v for _, v in items]
        return out

    @staticmethod
    def _slice(containers: Iterable[V], node: Node) -> list[V]:
        """`xs[a:b:c]`: a container of the items at those positions, numbered from 0 again
        (every item, unnumbered, when a bound is not a literal); anything else sliced is of
        its own type still (a list, a string), so it stays what it was."""
        bounds: list[Node | None] = [None, None, None]
        part = 0
        for child in node.children:
            if child.type == ":":
                part += 1
            elif child.is_named and part < 3:
                bounds[part] = child
        literal = [_literal(b) if b is not None else None for b in bounds]
        known = all(b is None or isinstance(v, int) for b, v in zip(bounds, literal, strict=True))
        out: list[V] = []
        for value in containers:
            if value[0] != "L":
                out.append(value)
                continue
            items = value[1]
            indexes = [k for k, _ in items if isinstance(k, int)]
            if not known or len(indexes) != len(items) or literal[2] == 0:
                out.append(("L", tuple((None, v) for _, v in items)))
                continue
            kept = range(max(indexes) + 1)[literal[0] : literal[1] : literal[2]]
            position = {index: n for n, index in enumerate(kept)}
            picked = tuple((position[k], v) for k, v in items if k in position)
            if picked:
                out.append(("L", picked))
        return out

    def _enclosing_class(self, scope: _Scope) -> str | None:
        current: _Scope | None = scope
        while current is not None:
            if current.cls is not None:
                return current.cls
            current = current.parent
        return None

    def lookup(self, name: str, scope: _Scope, depth: int = 0) -> frozenset[V]:
        holder = self._lookup_scope(name, scope)
        if name not in holder.bindings:
            return frozenset({("n", name)})
        key = (holder, name)
        cached = self._stable_names.get(key)
        if cached is not None:
            return cached
        names = self._names
        cached = names.get(key)
        if cached is not None:  # a round-only value, or a cycle's placeholder
            self._tainted = True
            return cached
        names[key] = _NOTHING
        outer, self._tainted = self._tainted, False
        values: list[V] = []
        elements: list[tuple[Any, V]] = []
        for binding in holder.bindings[name]:
            if binding.kind == "si":
                assert binding.node is not None and binding.scope is not None
                elements += [
                    (binding.key, v) for v in self.eval(binding.node, binding.scope, depth)
                ]
            else:
                values += self._binding_values(binding, depth)
        if elements:
            values.append(("L", tuple(elements)))
        result = frozenset(capped(values, MAX_VALUES))
        if self._tainted:
            names[key] = result
        else:
            del names[key]
            self._stable_names[key] = result
        self._tainted = outer or self._tainted
        return result

    def _binding_values(self, binding: _Binding, depth: int) -> list[V]:
        if binding.kind in ("v", "raw"):
            assert binding.value is not None
            return [binding.value]
        if binding.kind == "dec":
            # The function as written too: at run time the call goes through the wrapper,
            # but "who calls f" must not become "who calls any function that dec wraps".
            assert binding.value is not None
            wrapped = self._decorated(binding.value[1], MAX_DEPTH, depth)
            return [binding.value, *(v for v in wrapped if v != binding.value)]
        if binding.kind == "p":
            self._tainted = True  # what reaches a parameter changes from round to round
            symbol, name = binding.key
            return [
                v
                for argument in self.arguments.get((symbol, name), [])
                for v in self._binding_values(argument, depth)
            ]
        assert binding.node is not None and binding.scope is not None
        if binding.kind == "e":
            return list(self.eval(binding.node, binding.scope, depth))
        if binding.kind == "it":
            return self._select(self.eval(binding.node, binding.scope, depth), None)
        if binding.kind == "ix":
            return self._select(self.eval(binding.node, binding.scope, depth), binding.key)
        if binding.kind == "yield":
            yielded = self.eval(binding.node, binding.scope, depth)
            items = self._select(yielded, None) if binding.key else list(yielded)
            return [("L", tuple((None, v) for v in items))] if items else []
        if binding.kind == "ann":
            return [("i", v) for v in self._annotation(binding.node, binding.scope, depth)]
        return []

    def _decorated(self, symbol: str, layers: int, depth: int) -> list[V]:
        """What the name of a decorated function holds once its first `layers` decorators
        are applied: what each one returns when it is a function of this file whose every
        return is its own first parameter (a decorator that registers) or a function of this
        file (a wrapper). Any other decorator (imported, a class, a builtin like `property`,
        returning anything else) leaves the function itself: it is most likely still what
        runs, and a guess would lose the edge."""
        this: list[V] = [("d", symbol)]
        if symbol not in self.decorations:
            return this
        scope, exprs = self.decorations[symbol]
        current = this
        for expr in exprs[:layers]:
            applied: list[V] = []
            for decorator in self.eval(expr, scope, depth):
                for function in self._decorator_functions(decorator, depth):
                    if function is None:
                        return this
                    returned = self._returned(function, current, depth)
                    if returned is None:
                        return this
                    applied += returned
            if not applied:
                return this
            current = applied
        return current

    def _decorator_functions(self, value: V, depth: int) -> list[_Function | None]:
        """The functions of this file a decorator value calls (`dec`, or `factory()` that
        returns one); None for anything else."""
        if value[0] == "d":
            definition = self.definitions.get(value[1])
            function = self.functions.get(value[1])
            if definition is None or definition.kind == "class" or function is None:
                return [None]
            return [function]
        if value[0] == "c" and value[1][0] == "d" and value[1][1] in self.functions:
            made = [
                v
                for binding in self.returns.get(value[1][1], [])
                if binding.kind != "ann"
                for v in self._binding_values(binding, depth)
            ]
            return [f for v in made for f in self._decorator_functions(v, depth)] or [None]
        return [None]

    def _returned(self, function: _Function, argument: list[V], depth: int) -> list[V] | None:
        """What calling a decorator with `argument` returns, or None when not a function."""
        if not function.params:
            return None
        own = self._function_scopes.get(function.symbol)
        out: list[V] = []
        for binding in self.returns.get(function.symbol, []):
            if binding.kind == "ann":
                continue
            node = binding.node
            if (
                node is not None
                and node.type == "identifier"
                and self._t(node) == function.params[0]
                and binding.scope is not None
                and self._lookup_scope(function.params[0], binding.scope) is own
            ):
                out += argument  # `return f`: this call's argument, not every decorated one
                continue
            values = self._binding_values(binding, depth)
            if not values or any(v[0] != "d" or v[1] not in self.functions for v in values):
                return None
            out += values
        return out or None

    def _annotation(self, node: Node, scope: _Scope, depth: int) -> list[V]:
        """The classes an annotation names: `Foo`, `mod.Foo`, "Foo", `Foo | None`,
        `Optional[Foo]` (containers like `list[Foo]` are not followed)."""
        kind = node.type
        if kind == "type":
            return [v for c in node.named_children for v in self._annotation(c, scope, depth)]
        if kind in ("identifier", "attribute"):
            if self._t(node) == "None":
                return []
            return [v for v in self.eval(node, scope, depth) if v[0] != "n"]
        if kind == "string":
            content = next((c for c in node.named_children if c.type == "string_content"), None)
            dotted = self._t(content).strip()
            if not dotted.replace(".", "").replace("_", "").isalnum():
                return []
            head, *rest = dotted.split(".")
            values = list(self.lookup(head, scope, depth))
            for attr in rest:
                values = [("a", v, attr) for v in values]
            return [v for v in values if v[0] != "n"]
        if kind == "binary_operator":
            return [
                v
                for c in (node.child_by_field_name("left"), node.child_by_field_name("right"))
                if c is not None
                for v in self._annotation(c, scope, depth)
            ]
        if kind in ("generic_type", "subscript"):
            generic = node.named_children[0] if node.named_children else None
            if generic is not None and self._t(generic).rsplit(".", 1)[-1] in ("Optional", "Union"):
                return [
                    v for c in node.named_children[1:] for v in self._annotation(c, scope, depth)
                ]
            return []
        if kind == "type_parameter":
            return [v for c in node.named_children for v in self._annotation(c, scope, depth)]
        return []

    def _builtin(self, name: str, scope: _Scope) -> bool:
        """Whether `name` is unbound here (the builtin, unless a star import shadows it)."""
        return name not in self._lookup_scope(name, scope).bindings

    def _iterated(self, site: _Site) -> list[V]:
        """What a loop's implicit call may call: `it.__iter__`, or `__next__` on its result
        (containers written out iterate as builtins: nothing of this repository)."""
        iters = [("a", v, "__iter__") for v in self.eval(site.callee, site.scope) if v[0] != "L"]
        if site.implicit == "__iter__":
            return iters
        return [("a", ("c", v), "__next__") for v in iters]

    def _direct(self, callee: Node, scope: _Scope) -> bool:
        """Whether the callee is reached only through definitions, imports, self/cls and
        super() (confidence SCOPED) rather than through values that flowed (FLOW)."""
        node: Node | None = callee
        while node is not None and node.type == "attribute":
            node = node.child_by_field_name("object")
        if node is None:
            return False
        if node.type == "call":
            function = node.child_by_field_name("function")
            return function is not None and self._t(function) == "super"
        if node.type != "identifier":
            return False
        name = self._t(node)
        holder = self._lookup_scope(name, scope)
        return all(b.kind in ("v", "dec") for b in holder.bindings.get(name, []))

    # -- facts -------------------------------------------------------------------------------

    def _facts(self) -> FileFacts:
        refs: list[Reference] = []
        for source, line, dotted in self.imports:
            refs.append(Reference("imports", source, line, (["m", dotted],), dotted))
        for symbol, (bases, scope, line) in self.class_bases.items():
            for base in bases:
                values = self.eval(base, scope)
                refs.append(reference("inherits", symbol, line, values, self._t(base), SCOPED))
        for site in self.sites:
            if site.implicit is not None:
                iterated = self._iterated(site)
                if iterated:  # the resolver keeps only what lands in the repository
                    name = f"{IMPLICIT}.{site.implicit}"
                    refs.append(
                        reference("calls", site.scope.symbol, site.line, iterated, name, FLOW)
                    )
                continue
            if site.by is not None:
                if self._builtin(site.by, site.scope):
                    values = self.eval(site.callee, site.scope)
                    name = f"{IMPLICIT}.{site.by}"
                    refs.append(
                        reference("calls", site.scope.symbol, site.line, values, name, FLOW)
                    )
                continue
            values = self.eval(site.callee, site.scope)
            confidence = SCOPED if self._direct(site.callee, site.scope) else FLOW
            # The callee as written names an unresolved edge: string literals in it are left
            # out (a key passed to a factory must not end up in the graph).
            name = self._t(site.callee)
            if not _PLAIN.fullmatch(name):  # most callees are dotted names: nothing to tidy
                name = _STRINGS.sub('"…"', " ".join(name.split()))
            if len(name) > 200:
                name = name[:197] + "..."
            refs.append(reference("calls", site.scope.symbol, site.line, values, name, confidence))
        classes: dict[str, ClassFacts] = {}
        for symbol, scope in self.class_scopes.items():
            bases, outer, _ = self.class_bases[symbol]
            members = {name: stored(self.lookup(name, scope)) for name in scope.bindings}
            for attr, bindings in self.self_attrs.get(symbol, {}).items():
                assigned = [v for b in bindings for v in self._binding_values(b, 0)]
                members.setdefault(attr, []).extend(stored(frozenset(assigned)))
            classes[symbol] = ClassFacts(
                [v for base in bases for v in self.eval(base, outer)], members
            )
        module_scope = self.module_scope
        names = {name: stored(self.lookup(name, module_scope)) for name in module_scope.bindings}
        returns = {
            symbol: stored(frozenset(v for b in bindings for v in self._binding_values(b, 0)))
            for symbol, bindings in self.returns.items()
        }
        return FileFacts(
            path=self.path,
            language="python",
            module=self.module,
            definitions=sorted(self.definitions.values(), key=lambda d: (d.line, d.symbol)),
            names=names,
            classes=classes,
            returns={k: v for k, v in returns.items() if v},
            stars=self.stars,
            references=refs,
        )


def extract_python(path: str, source: bytes) -> FileFacts:
    with gc_paused():
        return PythonExtractor(path, source).extract()
