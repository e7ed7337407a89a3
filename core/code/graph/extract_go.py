"""Go: definitions, imports, struct fields and call sites of one file, from its tree-sitter tree.

A Go package is a directory, so a file alone cannot say where `pkg.Func` or a same-package
`helper()` lives: the values here stay symbolic and `resolve_go` links them once every file
(and go.mod) of the repository is known. Values (stored as lists):

- `["gl", "F"]` a package-level name of this file's own package; `["gp", IMPORT, "F"]` a member
  of the imported package IMPORT (an import path);
- `["gt", IMPORT, "T"]` the type T (IMPORT "" for the own package); `["gm", TYPE, "m"]` the
  method m of a type value; `["gf", TYPE, "f"]` the type of field f; `["gr", FUNC]` the
  (first) result type of a function or method value; `["gv", "x"]` the type of the own
  package's variable x (declared at the top level of any of its files).

Variables are typed flow-insensitively inside their function: the receiver and parameters by
their declared types, `x := &T{}`, `x := T{}`, `var x T`, `x := new(T)` and `x := NewT()`
(through NewT's declared result type). A call on anything else (an interface whose dynamic
type is unknown, a value of unknown type, a function value) keeps its name and gets no target.

`go.mod` is read too: its facts carry the module path (`module` = "gomod:PATH"), which maps
import paths to the repository's directories.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import PurePosixPath
from typing import TYPE_CHECKING, Any

from core.code.graph.model import (
    FLOW,
    MODULE,
    SCOPED,
    ClassFacts,
    Definition,
    FileFacts,
    Reference,
    Value,
)

if TYPE_CHECKING:
    from tree_sitter import Node

V = list[Any]
_MODULE_LINE = re.compile(rb"^\s*module\s+\"?([^\s\"]+)\"?", re.MULTILINE)
PACKAGE = "<package>"  # names key: [["package", NAME]]
DEPS = "<deps>"  # names key: the directories this file's resolution depends on (for `store`)
SIGNATURES = "<signatures>"  # names key: [["T.m", SIGNATURE], ...] of the methods declared here
VARIABLES = "<variables>"  # names key: [["x", TYPE], ...] package-level variables typed here
INTERFACE = "<interface>"  # member key marking an interface type (its methods: ["sig", S])
_PREDECLARED = frozenset(
    "any bool byte comparable complex64 complex128 error float32 float64 int int8 int16 int32 "
    "int64 rune string uint uint8 uint16 uint32 uint64 uintptr".split()
)


def _text(node: Node | None) -> str:
    if node is None or node.text is None:
        return ""
    return node.text.decode("utf-8", "replace")


def package_dir(path: str) -> str:
    parent = PurePosixPath(path).parent.as_posix()
    return "" if parent == "." else parent


def dir_key(directory: str) -> str:
    return "go:" + directory


def _candidate_dirs(import_path: str) -> list[str]:
    """Every repository directory an import path may name (each of its suffixes)."""
    parts = import_path.split("/")
    return [dir_key("/".join(parts[i:])) for i in range(len(parts))] + [dir_key("")]


def extract_gomod(path: str, source: bytes) -> FileFacts:
    match = _MODULE_LINE.search(source)
    module = match.group(1).decode("utf-8", "replace") if match else ""
    return FileFacts(path=path, language="go", module="gomod:" + module)


class _Function:
    """The variables of one function (its literals included) and their possible types."""

    def __init__(self, symbol: str) -> None:
        self.symbol = symbol
        self.types: dict[str, list[tuple[V, float]]] = {}

    def bind(self, name: str, value: V | None, confidence: float) -> None:
        if not name or name == "_":
            return
        bound = self.types.setdefault(name, [])
        if value is not None and all(v != value for v, _ in bound) and len(bound) < 8:
            bound.append((value, confidence))


class GoExtractor:
    def __init__(self, path: str, source: bytes) -> None:
        self.path = path
        self.source = source
        self.package = ""
        self.imports: dict[str, str] = {}  # alias -> import path
        self.dot_imports: list[str] = []
        self.definitions: dict[str, Definition] = {}
        self.classes: dict[str, ClassFacts] = {}
        self.returns: dict[str, list[Value]] = {}
        self.signatures: list[Value] = []
        self.variables: list[Value] = []  # package-level [name, TYPE] pairs
        self.references: list[Reference] = []

    def extract(self) -> FileFacts:
        from core.code.languages import parser_for

        root = parser_for("go").parse(self.source).root_node
        lines = max(1, root.end_point.row + (0 if root.end_point.column == 0 else 1))
        self.definitions[MODULE] = Definition(MODULE, "module", 1, lines)
        for child in root.named_children:
            if child.type == "package_clause":
                self.package = _text(child.named_children[0]) if child.named_children else ""
            elif child.type == "import_declaration":
                self._imports(child)
        for child in root.named_children:
            if child.type == "type_declaration":
                for spec in child.named_children:
                    if spec.type == "type_spec":
                        self._type(spec)
            elif child.type in ("function_declaration", "method_declaration"):
                self._function(child)
            elif child.type in ("var_declaration", "const_declaration"):
                module = _Function(MODULE)
                if child.type == "var_declaration":
                    for spec in child.named_children:
                        specs = spec.named_children if spec.type == "var_spec_list" else [spec]
                        for var_spec in specs:
                            if var_spec.type == "var_spec":
                                self._var_spec(var_spec, module)
                    for name, bound in module.types.items():
                        self.variables += [[name, value] for value, _ in bound]
                self._calls(child, module)
        names: dict[str, list[Value]] = {PACKAGE: [["package", self.package]]}
        for alias, import_path in self.imports.items():
            names[alias] = [["gi", import_path]]
        deps = [dir_key(package_dir(self.path))]
        for import_path in [*self.imports.values(), *self.dot_imports]:
            deps += _candidate_dirs(import_path)
        names[DEPS] = [["m", key] for key in dict.fromkeys(deps)]
        if self.signatures:
            names[SIGNATURES] = self.signatures
        if self.variables:
            names[VARIABLES] = self.variables
        return FileFacts(
            path=self.path,
            language="go",
            module=dir_key(package_dir(self.path)),
            definitions=sorted(self.definitions.values(), key=lambda d: (d.line, d.symbol)),
            names=names,
            classes=self.classes,
            returns={k: v for k, v in self.returns.items() if v},
            stars=[],
            references=self.references,
        )

    # -- declarations ------------------------------------------------------------------------

    def _define(self, symbol: str, kind: Any, node: Node) -> None:
        if symbol not in self.definitions:
            self.definitions[symbol] = Definition(
                symbol, kind, node.start_point.row + 1, node.end_point.row + 1
            )

    def _imports(self, node: Node) -> None:
        for spec in _descendants(node, "import_spec"):
            path_node = spec.child_by_field_name("path")
            import_path = _text(path_node).strip('"`')
            if not import_path:
                continue
            name = spec.child_by_field_name("name")
            line = spec.start_point.row + 1
            self.references.append(
                Reference("imports", MODULE, line, (["gi", import_path],), import_path)
            )
            if name is None:
                self.imports.setdefault(import_path.rsplit("/", 1)[-1], import_path)
            elif name.type == "dot":
                self.dot_imports.append(import_path)
            elif name.type != "blank_identifier":
                self.imports[_text(name)] = import_path

    def _type(self, spec: Node) -> None:
        name = _text(spec.child_by_field_name("name"))
        body = spec.child_by_field_name("type")
        if not name or body is None:
            return
        self._define(name, "class", spec)
        facts = ClassFacts()
        self.classes[name] = facts
        line = spec.start_point.row + 1
        if body.type == "struct_type":
            for field in _descendants(body, "field_declaration"):
                type_node = field.child_by_field_name("type")
                value = self.type_value(type_node)
                names = [c for c in field.named_children if c.type == "field_identifier"]
                if names:
                    for field_name in names:
                        facts.members[_text(field_name)] = [value] if value is not None else []
                elif value is not None:  # embedded: its methods are promoted
                    facts.bases.append(value)
                    self.references.append(
                        Reference("inherits", name, line, (value,), _text(type_node).lstrip("*"))
                    )
        elif body.type == "interface_type":
            # Its method set, when it can be compared: ["undecidable"] marks a constraint
            # (`~int | string`) or a method whose types are not understood.
            decidable = True
            for elem in body.named_children:
                if elem.type == "method_elem":
                    method = _text(elem.child_by_field_name("name"))
                    signature = self.signature(elem)
                    if signature is None:
                        decidable = False
                    elif method:
                        facts.members[method] = [["sig", signature]]
                elif elem.type == "type_elem":  # an embedded interface (or a type constraint)
                    values = [self.type_value(t) for t in elem.named_children]
                    if len(values) != 1 or values[0] is None:
                        decidable = False
                        continue
                    facts.bases.append(values[0])
                    self.references.append(
                        Reference("inherits", name, line, (values[0],), _text(elem))
                    )
            facts.members[INTERFACE] = [] if decidable else [["undecidable"]]

    def _function(self, node: Node) -> None:
        name = _text(node.child_by_field_name("name"))
        if not name:
            return
        scope: _Function
        receiver = node.child_by_field_name("receiver")
        if node.type == "method_declaration" and receiver is not None:
            param = next(
                (c for c in receiver.named_children if c.type == "parameter_declaration"), None
            )
            type_node = param.child_by_field_name("type") if param is not None else None
            owner = self.type_value(type_node)
            if owner is None or owner[1] != "":
                return
            symbol = f"{owner[2]}.{name}"
            self._define(symbol, "method", node)
            signature = self.signature(node)
            if signature is not None:
                self.signatures.append([symbol, signature])
            scope = _Function(symbol)
            receiver_name = param.child_by_field_name("name") if param is not None else None
            if receiver_name is not None:
                scope.bind(_text(receiver_name), owner, SCOPED)
        else:
            symbol = name
            self._define(symbol, "function", node)
            scope = _Function(symbol)
        self._parameters(node.child_by_field_name("parameters"), scope)
        result = node.child_by_field_name("result")
        if result is not None:
            if result.type == "parameter_list":
                self._parameters(result, scope)  # named results are variables too
                first = next(
                    (c for c in result.named_children if c.type == "parameter_declaration"), None
                )
                result = first.child_by_field_name("type") if first is not None else None
            value = self.type_value(result)
            if value is not None:
                self.returns[symbol] = [value]
        body = node.child_by_field_name("body")
        if body is not None:
            self._bindings(body, scope)
            self._calls(body, scope)

    def _parameters(self, params: Node | None, scope: _Function) -> None:
        if params is None:
            return
        for param in params.named_children:
            if param.type not in ("parameter_declaration", "variadic_parameter_declaration"):
                continue
            value = self.type_value(param.child_by_field_name("type"))
            if param.type == "variadic_parameter_declaration":
                value = None
            for child in param.named_children:
                if child.type == "identifier":
                    scope.bind(_text(child), value, SCOPED)

    # -- signatures (for `implements`) --------------------------------------------------------

    def signature(self, node: Node) -> str | None:
        """`(params)(results)` with parameter names left out and named types spelled
        `{IMPORT|Name}` (IMPORT "" for the own package); None when a type is not understood."""
        parts: list[str] = []
        for field in ("parameters", "result"):
            child = node.child_by_field_name(field)
            types: list[str] = []
            if child is not None and child.type == "parameter_list":
                for param in child.named_children:
                    if param.type not in (
                        "parameter_declaration",
                        "variadic_parameter_declaration",
                    ):
                        continue
                    spelled = self._spell(param.child_by_field_name("type"))
                    if spelled is None:
                        return None
                    if param.type == "variadic_parameter_declaration":
                        spelled = "..." + spelled
                    count = sum(1 for c in param.named_children if c.type == "identifier")
                    types += [spelled] * max(1, count)
            elif child is not None:
                spelled = self._spell(child)
                if spelled is None:
                    return None
                types.append(spelled)
            parts.append("(" + ",".join(types) + ")")
        return "".join(parts)

    def _spell(self, node: Node | None) -> str | None:
        if node is None:
            return None
        kind = node.type
        if kind == "type_identifier":
            name = _text(node)
            return name if name in _PREDECLARED else "{|" + name + "}"
        if kind == "qualified_type":
            package = _text(node.child_by_field_name("package"))
            if package not in self.imports:
                return None
            return "{" + self.imports[package] + "|" + _text(node.child_by_field_name("name")) + "}"
        if node.child_count == 0:
            return _text(node)
        spelled = [self._spell(c) for c in node.children]
        if any(s is None for s in spelled):
            return None
        return " ".join(s for s in spelled if s)

    # -- types and values ------------------------------------------------------------------

    def type_value(self, node: Node | None) -> V | None:
        if node is None:
            return None
        kind = node.type
        if kind == "type_identifier":
            return ["gt", "", _text(node)]
        if kind in ("pointer_type", "parenthesized_type"):
            inner = node.named_children[-1] if node.named_children else None
            return self.type_value(inner)
        if kind == "generic_type":
            return self.type_value(node.child_by_field_name("type"))
        if kind == "qualified_type":
            package = _text(node.child_by_field_name("package"))
            name = _text(node.child_by_field_name("name"))
            if package in self.imports and name:
                return ["gt", self.imports[package], name]
        return None

    def _bindings(self, body: Node, scope: _Function) -> None:
        """Every variable declared in a function body, with the types evident from its
        declaration (flow-insensitive: all declarations of a name count)."""
        for node in _walk(body):
            kind = node.type
            if kind == "short_var_declaration" or (
                kind == "assignment_statement" and _text(node.child(1)) == "="
            ):
                left = node.child_by_field_name("left")
                right = node.child_by_field_name("right")
                lefts = left.named_children if left is not None else []
                rights = right.named_children if right is not None else []
                for i, target in enumerate(lefts):
                    if target.type != "identifier":
                        continue
                    value = None
                    if len(rights) == len(lefts):
                        value = self.expr_type(rights[i], scope)
                    elif i == 0 and len(rights) == 1:
                        value = self.expr_type(rights[0], scope)
                    if kind == "short_var_declaration" or _text(target) in scope.types:
                        scope.bind(_text(target), value, FLOW)
            elif kind == "var_spec":
                self._var_spec(node, scope)
            elif kind in ("range_clause", "type_switch_statement", "receive_statement"):
                left = node.child_by_field_name("left") or node.child_by_field_name("alias")
                for target in left.named_children if left is not None else []:
                    if target.type == "identifier":
                        scope.bind(_text(target), None, FLOW)
            elif kind == "func_literal":
                self._parameters(node.child_by_field_name("parameters"), scope)

    def _var_spec(self, node: Node, scope: _Function) -> None:
        type_value = self.type_value(node.child_by_field_name("type"))
        value_node = node.child_by_field_name("value")
        values = value_node.named_children if value_node is not None else []
        names = [c for c in node.named_children if c.type == "identifier"]
        for i, target in enumerate(names):
            value = type_value
            if value is None and len(values) == len(names):
                value = self.expr_type(values[i], scope)
            elif value is None and i == 0 and len(values) == 1:  # `var a, err = NewA()`
                value = self.expr_type(values[0], scope)
            scope.bind(_text(target), value, FLOW)

    def expr_type(self, node: Node | None, scope: _Function) -> V | None:
        if node is None:
            return None
        kind = node.type
        if kind == "unary_expression" and _text(node.child(0)) == "&":
            return self.expr_type(node.child_by_field_name("operand"), scope)
        if kind == "parenthesized_expression" and node.named_children:
            return self.expr_type(node.named_children[0], scope)
        if kind == "composite_literal":
            return self.type_value(node.child_by_field_name("type"))
        if kind == "call_expression":
            function = node.child_by_field_name("function")
            if function is not None and function.type == "identifier" and _text(function) == "new":
                args = node.child_by_field_name("arguments")
                first = args.named_children[0] if args is not None and args.named_children else None
                return self.type_value(first)
            callee = self.callee(function, scope)
            return ["gr", callee[0][0]] if len(callee) == 1 else None
        if kind == "identifier":
            bound = scope.types.get(_text(node), [])
            return bound[0][0] if len(bound) == 1 else None
        if kind == "selector_expression":
            operand = node.child_by_field_name("operand")
            field = _text(node.child_by_field_name("field"))
            owner = self.operand_types(operand, scope)
            return ["gf", owner[0][0], field] if len(owner) == 1 else None
        return None

    def operand_types(self, node: Node | None, scope: _Function) -> list[tuple[V, float]]:
        """The types the operand of a selector may have, with their confidence."""
        if node is None:
            return []
        if node.type == "identifier":
            return list(scope.types.get(_text(node), []))
        value = self.expr_type(node, scope)
        return [(value, FLOW)] if value is not None else []

    def callee(self, function: Node | None, scope: _Function) -> list[tuple[V, float]]:
        """What a call's function expression may be: values with their confidence."""
        if function is None:
            return []
        if function.type == "identifier":
            name = _text(function)
            if name in scope.types:
                return []  # a function value in a variable
            return [(["gl", name], SCOPED)]
        if function.type == "selector_expression":
            operand = function.child_by_field_name("operand")
            field = _text(function.child_by_field_name("field"))
            if operand is None or not field:
                return []
            if operand.type == "identifier":
                name = _text(operand)
                if name not in scope.types and name in self.imports:
                    return [(["gp", self.imports[name], field], SCOPED)]
                if name not in scope.types and scope.symbol != MODULE:
                    return [(["gm", ["gv", name], field], FLOW)]  # a package-level variable
            return [(["gm", t, field], c) for t, c in self.operand_types(operand, scope)]
        if function.type == "parenthesized_expression" and function.named_children:
            return self.callee(function.named_children[0], scope)
        return []

    def _calls(self, body: Node, scope: _Function) -> None:
        for node in _walk(body):
            if node.type != "call_expression":
                continue
            function = node.child_by_field_name("function")
            if function is None or function.type == "func_literal":
                continue
            found = self.callee(function, scope)
            name = " ".join(_text(function).split())
            if len(name) > 200:
                name = name[:197] + "..."
            confidence = min((c for _, c in found), default=SCOPED)
            self.references.append(
                Reference(
                    "calls",
                    scope.symbol,
                    node.start_point.row + 1,
                    tuple(v for v, _ in found),
                    name,
                    confidence,
                )
            )


def _walk(node: Node) -> Iterator[Node]:
    stack = list(reversed(node.named_children))
    while stack:
        current = stack.pop()
        yield current
        stack.extend(reversed(current.named_children))


def _descendants(node: Node, kind: str) -> Iterator[Node]:
    return (n for n in _walk(node) if n.type == kind)


def extract_go(path: str, source: bytes) -> FileFacts:
    if PurePosixPath(path).name == "go.mod":
        return extract_gomod(path, source)
    return GoExtractor(path, source).extract()
