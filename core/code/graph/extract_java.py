"""Java: classes, methods, fields, imports and call sites of one file, from its tree-sitter tree.

What a type name means depends on other files (same-package classes, imports), so the values
stay symbolic and `resolve_java` links them once every file is known. Values (stored as lists):

- `["jt", SCOPE, "Type"]` the type spelled `Type` inside class SCOPE (a qualified class
  symbol of this file, "" at the top level); `["jthis", SCOPE]` / `["jsuper", SCOPE]` the class
  itself / its superclass; `["jid", SCOPE, "x"]` a name not declared in the method: a field of
  the class (or an enclosing one) or else a type (`C.m()`); `["jf", V, "f"]` the type of field
  f of V; `["jr", CALL]` the declared result type of the method CALL resolves to;
- calls: `["jcall", SCOPE, "m", ARGC]` an unqualified `m()`; `["jmeth", V, "m", ARGC]` `v.m()`;
  `["jnew", V, ARGC]` `new C()`, `super()` and `this()`.

Class facts: `bases` are the `extends` types; members `"m:NAME"` hold the methods
(`["m", SYMBOL, ARGC, VARARGS, RESULT_TYPE]`, constructors under `"m:<init>"`), `"f:NAME"` the
declared type of field NAME, `"<implements>"` the implemented types, `"<kind>"` the kind.
A method's symbol is `Class.name` (overloads share it); a constructor's is `Class.Class`.

Locals and parameters are typed flow-insensitively inside their method: by their declared type
(confidence 1.0) or, for `var x = new Foo()`, by the created type (0.9).
"""

from __future__ import annotations

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

PACKAGE = "<package>"  # names key: [["package", NAME]]
IMPORTS = "<imports>"  # names key: [["single"|"star"|"static"|"staticstar", DOTTED], ...]
DEPS = "<deps>"  # names key, as in extract_go
IMPLEMENTS = "<implements>"
KIND = "<kind>"
INIT = "<init>"
_CLASSES = {
    "class_declaration": "class",
    "interface_declaration": "interface",
    "enum_declaration": "enum",
    "record_declaration": "record",
    "annotation_type_declaration": "annotation",
}
_BODIES = frozenset({"class_body", "interface_body", "enum_body", "enum_body_declarations"})
_LOCAL_TYPED = frozenset(
    {"local_variable_declaration", "formal_parameter", "catch_formal_parameter", "resource"}
)


def _text(node: Node | None) -> str:
    if node is None or node.text is None:
        return ""
    return node.text.decode("utf-8", "replace")


def type_name(node: Node | None) -> str:
    """`Foo`, `a.b.Foo`, `Outer.Inner` for a class type (generics dropped); "" otherwise."""
    if node is None:
        return ""
    if node.type == "generic_type":
        return type_name(node.named_children[0]) if node.named_children else ""
    if node.type == "type_identifier":
        return _text(node)
    if node.type == "scoped_type_identifier":
        parts = [type_name(c) for c in node.named_children if c.type != "annotation"]
        return ".".join(p for p in parts if p)
    if node.type == "annotated_type":
        return type_name(node.named_children[-1]) if node.named_children else ""
    return ""


def _argc(node: Node) -> int:
    args = node.child_by_field_name("arguments")
    return len(args.named_children) if args is not None else 0


def _params(node: Node) -> tuple[int, bool]:
    params = node.child_by_field_name("parameters")
    if params is None:
        return 0, False
    kids = [c for c in params.named_children if c.type in ("formal_parameter", "spread_parameter")]
    return len(kids), any(c.type == "spread_parameter" for c in kids)


class _Locals:
    def __init__(self) -> None:
        self.types: dict[str, tuple[str, float]] = {}

    def bind(self, name: str, typ: str, confidence: float) -> None:
        old = self.types.get(name)
        if not name:
            return
        if old is None:
            self.types[name] = (typ, confidence)
        elif old[0] != typ:
            self.types[name] = ("", 0.0)  # two declarations of one name: no type


class JavaExtractor:
    def __init__(self, path: str, source: bytes) -> None:
        self.path = path
        self.source = source
        self.package = ""
        self.imports: list[Value] = []
        self.definitions: dict[str, Definition] = {}
        self.classes: dict[str, ClassFacts] = {}
        self.references: list[Reference] = []

    def extract(self) -> FileFacts:
        from core.code.languages import parser_for

        root = parser_for("java").parse(self.source).root_node
        deps: list[str] = []
        lines = max(1, root.end_point.row + (0 if root.end_point.column == 0 else 1))
        self.definitions[MODULE] = Definition(MODULE, "module", 1, lines)
        for child in root.named_children:
            if child.type == "package_declaration":
                names = [c for c in child.named_children if c.type != "annotation"]
                self.package = _text(names[0]) if names else ""
            elif child.type == "import_declaration":
                self._import(child)
                deps += [str(self.imports[-1][1])] if self.imports else []
            elif child.type in _CLASSES:
                self._class(child, "")
        return FileFacts(
            path=self.path,
            language="java",
            module=self.package,
            definitions=sorted(self.definitions.values(), key=lambda d: (d.line, d.symbol)),
            names={
                PACKAGE: [["package", self.package]],
                IMPORTS: self.imports,
                # for `store`: the packages this file's resolution depends on
                DEPS: [["m", p] for p in dict.fromkeys([self.package, *deps]) if p],
            },
            classes=self.classes,
            returns={},
            stars=[],
            references=self.references,
        )

    def _import(self, node: Node) -> None:
        is_static = any(c.type == "static" for c in node.children)
        star = any(c.type == "asterisk" for c in node.children)
        names = [c for c in node.named_children if c.type in ("scoped_identifier", "identifier")]
        if not names:
            return
        dotted = _text(names[0])
        kind = ("static" if is_static else "") + ("star" if star else "") or "single"
        self.imports.append([kind, dotted])
        line = node.start_point.row + 1
        written = dotted + (".*" if star else "")
        self.references.append(Reference("imports", MODULE, line, ([kind, dotted],), written))

    # -- declarations ------------------------------------------------------------------------

    def _define(self, symbol: str, kind: Any, node: Node) -> None:
        if symbol not in self.definitions:
            self.definitions[symbol] = Definition(
                symbol, kind, node.start_point.row + 1, node.end_point.row + 1
            )

    def _class(self, node: Node, outer: str) -> None:
        name = _text(node.child_by_field_name("name"))
        if not name:
            return
        q = f"{outer}.{name}" if outer else name
        kind = _CLASSES[node.type]
        self._define(q, "class", node)
        facts = ClassFacts()
        facts.members[KIND] = [[kind]]
        self.classes[q] = facts
        line = node.start_point.row + 1
        for child in node.children:
            if child.type == "superclass":
                for t in child.named_children:
                    self._base(q, facts, "inherits", type_name(t), line)
            elif child.type in ("super_interfaces", "extends_interfaces"):
                ref_kind = "inherits" if kind == "interface" else "implements"
                for lst in child.named_children:
                    for t in lst.named_children if lst.type == "type_list" else [lst]:
                        self._base(q, facts, ref_kind, type_name(t), line)
        if kind == "record":
            for param in (node.child_by_field_name("parameters") or node).named_children:
                if param.type == "formal_parameter":
                    field = _text(param.child_by_field_name("name"))
                    typ = type_name(param.child_by_field_name("type"))
                    facts.members["f:" + field] = [[typ]] if typ else []
        body = node.child_by_field_name("body")
        if body is not None:
            self._body(body, q, facts)

    def _base(self, q: str, facts: ClassFacts, kind: Any, typ: str, line: int) -> None:
        if not typ:
            return
        value = ["jt", _outer(q), typ]
        if kind == "implements":
            facts.members.setdefault(IMPLEMENTS, []).append(value)
        else:
            facts.bases.append(value)
        self.references.append(Reference(kind, q, line, (value,), typ))

    def _body(self, body: Node, q: str, facts: ClassFacts) -> None:
        for child in body.named_children:
            if child.type in _BODIES:
                self._body(child, q, facts)
            elif child.type in _CLASSES:
                self._class(child, q)
            elif child.type in ("method_declaration", "constructor_declaration"):
                self._method(child, q, facts)
            elif child.type == "compact_constructor_declaration":
                self._method(child, q, facts, compact=True)
            elif child.type in ("field_declaration", "constant_declaration"):
                typ = type_name(child.child_by_field_name("type"))
                for decl in child.named_children:
                    if decl.type == "variable_declarator":
                        field = _text(decl.child_by_field_name("name"))
                        facts.members["f:" + field] = [[typ]] if typ else []
                self._calls(child, q, q, _Locals())
            elif child.type in ("static_initializer", "block", "enum_constant"):
                self._calls(child, q, q, _Locals())

    def _method(self, node: Node, q: str, facts: ClassFacts, compact: bool = False) -> None:
        simple = q.rsplit(".", 1)[-1]
        constructor = compact or node.type == "constructor_declaration"
        name = simple if constructor else _text(node.child_by_field_name("name"))
        if not name:
            return
        symbol = f"{q}.{name}"
        self._define(symbol, "method", node)
        count, varargs = _params(node)
        if compact and node.parent is not None and node.parent.parent is not None:
            count, varargs = _params(node.parent.parent)  # the record's components
        result = "" if constructor else type_name(node.child_by_field_name("type"))
        key = "m:" + (INIT if constructor else name)
        facts.members.setdefault(key, []).append(["m", symbol, count, varargs, result])
        scope = _Locals()
        for child in _walk(node, stop_classes=True):
            if child.type in _LOCAL_TYPED or child.type == "spread_parameter":
                self._bind(child, scope)
            elif child.type == "enhanced_for_statement":
                typ = type_name(child.child_by_field_name("type"))
                scope.bind(_text(child.child_by_field_name("name")), typ, SCOPED)
            elif child.type == "lambda_expression":  # untyped parameters shadow fields
                params = child.child_by_field_name("parameters")
                for ident in [params] if params is not None else []:
                    for p in [ident, *ident.named_children]:
                        if p.type == "identifier":
                            scope.bind(_text(p), "", 0.0)
        self._calls(node, q, symbol, scope)

    def _bind(self, node: Node, scope: _Locals) -> None:
        type_node = node.child_by_field_name("type")
        if type_node is None:
            kids = [c for c in node.named_children if c.type != "modifiers"]
            type_node = kids[0] if kids else None
        declared = _text(type_node) if type_node is not None else ""
        typ = type_name(type_node)
        name = node.child_by_field_name("name")
        if name is not None:
            scope.bind(_text(name), typ, SCOPED)
        for decl in node.named_children:
            if decl.type != "variable_declarator":
                continue
            var = _text(decl.child_by_field_name("name"))
            if declared == "var":
                value = decl.child_by_field_name("value")
                if value is not None and value.type == "object_creation_expression":
                    created = type_name(value.child_by_field_name("type"))
                    if value.child_by_field_name("body") is None:
                        scope.bind(var, created, FLOW)
                        continue
                scope.bind(var, "", 0.0)
            else:
                scope.bind(var, typ, SCOPED)

    # -- calls ---------------------------------------------------------------------------------

    def _calls(self, node: Node, q: str, source: str, scope: _Locals) -> None:
        for child in _walk(node, stop_classes=True):
            if child.type == "method_invocation":
                self._invocation(child, q, source, scope)
            elif child.type == "object_creation_expression":
                typ = type_name(child.child_by_field_name("type"))
                line = child.start_point.row + 1
                if typ and child.child_by_field_name("object") is None:
                    value = ["jnew", ["jt", q, typ], _argc(child)]
                    self.references.append(Reference("calls", source, line, (value,), typ))
            elif child.type == "explicit_constructor_invocation":
                ctor = child.child_by_field_name("constructor")
                line = child.start_point.row + 1
                if ctor is not None and ctor.type in ("this", "super"):
                    target = ["jthis", q] if ctor.type == "this" else ["jsuper", q]
                    value = ["jnew", target, _argc(child)]
                    self.references.append(Reference("calls", source, line, (value,), ctor.type))

    def _invocation(self, node: Node, q: str, source: str, scope: _Locals) -> None:
        name = _text(node.child_by_field_name("name"))
        obj = node.child_by_field_name("object")
        line = node.start_point.row + 1
        argc = _argc(node)
        confidence = SCOPED
        if obj is None:
            value: list[Any] | None = ["jcall", q, name, argc]
            written = name
        else:
            written = f"{_text(obj)}.{name}"
            receiver, confidence = self._receiver(obj, q, scope)
            value = ["jmeth", receiver, name, argc] if receiver is not None else None
        if len(written) > 80 or "\n" in written:
            written = name
        targets = (value,) if value is not None else ()
        self.references.append(Reference("calls", source, line, targets, written, confidence))

    def _receiver(self, node: Node, q: str, scope: _Locals) -> tuple[list[Any] | None, float]:
        kind = node.type
        if kind == "this":
            return ["jthis", q], SCOPED
        if kind == "super":
            return ["jsuper", q], SCOPED
        if kind == "identifier":
            name = _text(node)
            if name in scope.types:
                typ, confidence = scope.types[name]
                return (["jt", q, typ], confidence) if typ else (None, SCOPED)
            return ["jid", q, name], SCOPED
        if kind == "field_access":
            obj = node.child_by_field_name("object")
            field = _text(node.child_by_field_name("field"))
            if obj is None:
                return None, SCOPED
            inner, confidence = self._receiver(obj, q, scope)
            return (["jf", inner, field], confidence) if inner is not None else (None, SCOPED)
        if kind == "method_invocation":
            name = _text(node.child_by_field_name("name"))
            obj = node.child_by_field_name("object")
            if obj is None:
                return ["jr", ["jcall", q, name, _argc(node)]], SCOPED
            inner, confidence = self._receiver(obj, q, scope)
            if inner is None:
                return None, SCOPED
            return ["jr", ["jmeth", inner, name, _argc(node)]], confidence
        if kind == "object_creation_expression" and node.child_by_field_name("body") is None:
            typ = type_name(node.child_by_field_name("type"))
            return (["jt", q, typ], SCOPED) if typ else (None, SCOPED)
        if kind == "parenthesized_expression" and node.named_children:
            return self._receiver(node.named_children[0], q, scope)
        if kind == "cast_expression":
            typ = type_name(node.child_by_field_name("type"))
            return (["jt", q, typ], SCOPED) if typ else (None, SCOPED)
        return None, SCOPED


def _outer(q: str) -> str:
    return q.rsplit(".", 1)[0] if "." in q else ""


def _walk(node: Node, stop_classes: bool) -> list[Node]:
    """Descendants, not entering nested class declarations (they are their own scopes) nor
    anonymous class bodies (their `this` is another object)."""
    out: list[Node] = []
    stack = list(reversed(node.named_children))
    while stack:
        child = stack.pop()
        out.append(child)
        if stop_classes and (child.type in _CLASSES or child.type == "class_body"):
            continue
        stack.extend(reversed(child.named_children))
    return out


def extract_java(path: str, source: bytes) -> FileFacts:
    return JavaExtractor(path, source).extract()
