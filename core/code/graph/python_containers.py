"""Containers in the evaluator's value language (`("L", ((key, value), ...))`): the items a
subscript picks, and what a slice keeps (see `model` for the values)."""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING, Any

from core.code.graph.python_bindings import V, literal_key

if TYPE_CHECKING:
    from tree_sitter import Node


def select_items(containers: Iterable[V], key: Any) -> list[V]:
    out: list[V] = []
    for value in containers:
        if value[0] != "L":
            out.append(("k", value, key))
            continue
        items = value[1]
        chosen = [v for k, v in items if key is not None and k == key]
        out += chosen or [v for _, v in items]
    return out


def slice_items(containers: Iterable[V], node: Node) -> list[V]:
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
    literal = [literal_key(b) if b is not None else None for b in bounds]
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
