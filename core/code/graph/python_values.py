"""Python, pass 2 of 2: the evaluator. What each call's callee may be, evaluated lazily and
flow-insensitively over the scopes the scope pass built (see `model` for the value language): a
name is looked up through the enclosing scopes (class bodies skipped, as Python does), a
parameter takes the values of the arguments that calls of its function in this file pass
(`_flow`, a round at a time), a variable those of its assignments."""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Iterator
from typing import TYPE_CHECKING, Any

from core.code.graph.model import capped
from core.code.graph.python_bindings import Binding, Function, Scope, Site, V, literal_key
from core.code.graph.python_containers import select_items, slice_items
from core.code.graph.python_scopes import ScopePass

if TYPE_CHECKING:
    from tree_sitter import Node

MAX_VALUES = 16  # per name: a name assigned more often than that is not followed further
MAX_DEPTH = 40

_FUNCTIONISH = frozenset(
    {"identifier", "attribute", "lambda", "list", "tuple", "dictionary", "subscript"}
)
NOTHING: frozenset[V] = frozenset()


class Evaluator(ScopePass):
    """Pass 2 over what `ScopePass` built: values of expressions and names, and which
    arguments reach which parameters."""

    def __init__(self, path: str, source: bytes) -> None:
        super().__init__(path, source)
        self.arguments: dict[tuple[str, str], list[Binding]] = {}
        # Evaluations are memoized twice: `_memo`/`_names` for this flow round only (values
        # that read a parameter, or were cut short by a cycle or the depth limit), and
        # `_stable`/`_stable_names` for the whole file (values that did neither are the same
        # in every round, and most values are such). `_tainted` says whether the evaluation
        # under way has read a round-only value.
        self._memo: dict[tuple[int, Scope], frozenset[V]] = {}
        self._names: dict[tuple[Scope, str], frozenset[V]] = {}
        self._stable: dict[tuple[int, Scope], frozenset[V]] = {}
        self._stable_names: dict[tuple[Scope, str], frozenset[V]] = {}
        self._tainted = False
        # The arguments the last flow round found, as `_flow` compares them (none at first).
        self._reached: dict[tuple[str, str], Counter[tuple[Any, ...]]] = {}

    def _flow(self) -> bool:
        """Which arguments reach which parameters of this file's functions (rebuilt per round,
        so a function passed on through two calls is followed too). False when nothing
        reaches a parameter that another round could follow further."""
        arguments: dict[tuple[str, str], list[Binding]] = {}
        for site in self.sites:
            if site.decorates is not None:
                # `@dec def f`: dec is called with f, as the decorators below it left it
                for function, _ in self._local_callees(site):
                    if function.params:
                        arguments.setdefault((function.symbol, function.params[0]), []).extend(
                            Binding("raw", value=v)
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
                                Binding("e", node=value, scope=site.scope)
                            )
                    elif arg.type in ("list_splat", "dictionary_splat"):
                        break
                    else:
                        if position < len(params):
                            arguments.setdefault((function.symbol, params[position]), []).append(
                                Binding("e", node=arg, scope=site.scope)
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

    def _local_callees(self, site: Site) -> Iterator[tuple[Function, bool]]:
        """This file's functions a call site may call, and whether the call is bound (the
        first parameter, self, is not passed)."""
        for value in self.eval(site.callee, site.scope):
            yield from self._local_function(value, 0)

    def _local_function(self, value: V, depth: int) -> Iterator[tuple[Function, bool]]:
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

    def eval(self, node: Node, scope: Scope, depth: int = 0) -> frozenset[V]:
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
            return NOTHING
        memo[key] = NOTHING  # a cycle evaluates to nothing
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

    def _eval(self, node: Node, scope: Scope, depth: int) -> Iterable[V]:
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
                and isinstance(name := literal_key(args.named_children[1]), str)
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
                    results = select_items(self.eval(given[1], scope, depth), None)
                return [("L", tuple((None, v) for v in results))] if results else ()
            return [("c", v) for v in self.eval(function, scope, depth)]
        if kind == "subscript":
            container = node.child_by_field_name("value")
            if container is None:
                return ()
            subscript = node.child_by_field_name("subscript")
            if subscript is not None and subscript.type == "slice":
                return slice_items(self.eval(container, scope, depth), subscript)
            return select_items(self.eval(container, scope, depth), literal_key(subscript))
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
                key = literal_key(pair.child_by_field_name("key"))
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

    def _enclosing_class(self, scope: Scope) -> str | None:
        current: Scope | None = scope
        while current is not None:
            if current.cls is not None:
                return current.cls
            current = current.parent
        return None

    def lookup(self, name: str, scope: Scope, depth: int = 0) -> frozenset[V]:
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
        names[key] = NOTHING
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

    def _binding_values(self, binding: Binding, depth: int) -> list[V]:
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
            return select_items(self.eval(binding.node, binding.scope, depth), None)
        if binding.kind == "ix":
            return select_items(self.eval(binding.node, binding.scope, depth), binding.key)
        if binding.kind == "yield":
            yielded = self.eval(binding.node, binding.scope, depth)
            items = select_items(yielded, None) if binding.key else list(yielded)
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

    def _decorator_functions(self, value: V, depth: int) -> list[Function | None]:
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

    def _returned(self, function: Function, argument: list[V], depth: int) -> list[V] | None:
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

    def _annotation(self, node: Node, scope: Scope, depth: int) -> list[V]:
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

    def _builtin(self, name: str, scope: Scope) -> bool:
        """Whether `name` is unbound here (the builtin, unless a star import shadows it)."""
        return name not in self._lookup_scope(name, scope).bindings

    def _iterated(self, site: Site) -> list[V]:
        """What a loop's implicit call may call: `it.__iter__`, or `__next__` on its result
        (containers written out iterate as builtins: nothing of this repository)."""
        iters = [("a", v, "__iter__") for v in self.eval(site.callee, site.scope) if v[0] != "L"]
        if site.implicit == "__iter__":
            return iters
        return [("a", ("c", v), "__next__") for v in iters]

    def _direct(self, callee: Node, scope: Scope) -> bool:
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
