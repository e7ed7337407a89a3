"""What both passes of the Python extractor share: the scopes and bindings the scope pass
(`python_scopes`) builds and the evaluator (`python_values`) reads, the value tuple, and how a
node's text and literal keys are read."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from tree_sitter import Node

V = tuple[Any, ...]  # a value while extracting (a tuple: hashable); stored as lists


@dataclass(eq=False, slots=True)
class Binding:
    kind: str  # "v" value, "e" expression, "it" element of, "p" parameter, "ann", "si"
    value: V | None = None
    node: Node | None = None
    scope: Scope | None = None
    key: Any = None  # "si": the subscript key; "p": (function, position, name)


@dataclass(eq=False, slots=True)
class Scope:
    kind: str  # "module", "class", "function"
    symbol: str
    parent: Scope | None
    cls: str | None = None  # class scope: its class; method scope: the method's class
    bindings: dict[str, list[Binding]] = field(default_factory=dict)
    globals: set[str] = field(default_factory=set)
    lambdas: int = 0

    @property
    def prefix(self) -> str:
        return "" if self.kind == "module" else self.symbol + "."

    def bind(self, name: str, binding: Binding) -> None:
        target = self
        if name in self.globals:
            while target.parent is not None:
                target = target.parent
        target.bindings.setdefault(name, []).append(binding)


@dataclass(eq=False, slots=True)
class Function:
    symbol: str
    params: list[str]  # in order: those that can be passed by position, then keyword-only
    bound: bool  # a method taking self/cls: a call through an instance skips the first
    positional: int = 0  # how many of `params` a call can pass by position


@dataclass(eq=False, slots=True)
class Site:
    callee: Node
    scope: Scope
    line: int
    args: Node | None  # argument_list, for parameter flow
    decorator: bool = False
    decorates: str | None = None  # a decorator site: the decorated definition (its argument)
    layer: int = 0  # how many decorators of that definition are applied before this one
    implicit: str | None = None  # `for x in it`: "__iter__" or "__next__", called on `it`
    by: str | None = None  # the builtin that calls the callee (`map(f, xs)` calls f)


def node_text(node: Node | None) -> str:
    if node is None or node.text is None:
        return ""
    return node.text.decode("utf-8", "replace")


def literal_key(node: Node | None) -> Any:
    """The key a subscript or dict entry spells literally (a string or an int), else None."""
    if node is None:
        return None
    if node.type == "integer":
        try:
            return int(node_text(node), 0)
        except ValueError:
            return None
    if node.type == "string":
        parts = [c for c in node.named_children if c.type == "string_content"]
        if len(parts) == 1 and len(node.named_children) == 3:
            return node_text(parts[0])
        if len(node.named_children) == 2:
            return ""
    return None
