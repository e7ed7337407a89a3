"""Chunks of a file parsed with its tree-sitter grammar: class chunks with member bodies elided,
one chunk per function or method (long ones cut between statements), and file chunks for the
rows between definitions. Apart because it is the one chunker that reads syntax trees, with the
node helpers that cover the grammars' differences."""

from __future__ import annotations

import itertools
import re
from dataclasses import dataclass
from pathlib import PurePosixPath
from typing import TYPE_CHECKING

from core.code.chunk import (
    MAX_CLASS_CHARS,
    MAX_FUNCTION_CHARS,
    MAX_SIGNATURE_CHARS,
    Chunk,
    Kind,
    embed_header,
)
from core.code.chunk_text import file_chunks, split_lines
from core.code.languages import SPECS, LanguageSpec, parser_for

if TYPE_CHECKING:
    from tree_sitter import Node

_NAME_TYPES = frozenset(
    {
        "identifier",
        "type_identifier",
        "simple_identifier",
        "constant",
        "name",
        "field_identifier",
        "property_identifier",
    }
)
_PARAM_TYPES = frozenset(
    {
        "parameters",
        "formal_parameters",
        "parameter_list",
        "method_parameters",
        "function_value_parameters",
    }
)
_BODY_TYPES = frozenset({"function_body", "class_body", "block"})
_CONTAINERS = frozenset(
    {
        "block",
        "statements",
        "statement_list",
        "body_statement",
        "compound_statement",
        "statement_block",
    }
)
_JS_FUNCTION_VALUES = frozenset(
    {"arrow_function", "function_expression", "function", "generator_function"}
)
_JS_BINDINGS = frozenset({"variable_declarator", "public_field_definition", "field_definition"})
_JS_LANGUAGES = frozenset({"javascript", "typescript", "tsx"})
_BRACED_CLASSES = frozenset({"struct_specifier", "class_specifier", "union_specifier"})
_SPACES = re.compile(r"\s+")
_LINE_COMMENT = re.compile(r"//.*")
_NOISE = re.compile(r"[\s{}()\[\];,]+")


@dataclass(slots=True)
class _Definition:
    kind: Kind
    node: Node  # the class or function node itself
    start_row: int  # 0-based, leading comments / decorators / export included
    end_row: int
    start_byte: int
    classes: tuple[str, ...]  # enclosing class path (for a class: its own path)
    name: str
    params: str


def _text(node: Node | None) -> str:
    if node is None or node.text is None:
        return ""
    return node.text.decode("utf-8", "replace")


def _collapse(text: str, limit: int = MAX_SIGNATURE_CHARS) -> str:
    text = _SPACES.sub(" ", text).strip()
    return text if len(text) <= limit else text[: limit - 3].rstrip() + "..."


def _first_named(node: Node, types: frozenset[str]) -> Node | None:
    for child in node.named_children:
        if child.type in types:
            return child
    return None


def _name_node(node: Node) -> Node | None:
    return node.child_by_field_name("name") or _first_named(node, _NAME_TYPES)


def _body(node: Node) -> Node | None:
    return node.child_by_field_name("body") or _first_named(node, _BODY_TYPES)


def _statements(body: Node) -> list[Node]:
    """The top-level statements of a function body (through `{ statements }` wrappers)."""
    current = body
    while True:
        named = current.named_children
        if len(named) == 1 and named[0].type in _CONTAINERS:
            current = named[0]
            continue
        return named


def _c_declarator(node: Node) -> Node | None:
    """The function_declarator of a C/C++ function_definition (through pointers, references)."""
    current = node.child_by_field_name("declarator")
    while current is not None and current.type != "function_declarator":
        current = current.child_by_field_name("declarator") or _first_named(
            current, frozenset({"function_declarator"})
        )
    return current


class ChunkBuilder:
    def __init__(self, repo: str, path: str, language: str, text: str) -> None:
        self.repo = repo
        self.path = path
        self.language = language
        self.spec: LanguageSpec = SPECS[language]
        self.text = text
        self.source = text.encode("utf-8")
        self.lines = split_lines(text)
        self.stem = PurePosixPath(path).stem
        self.definitions: list[_Definition] = []

    # finding definitions

    def build(self) -> list[Chunk]:
        tree = parser_for(self.language).parse(self.source)
        self._collect(tree.root_node)
        if not self.definitions:
            return file_chunks(self.repo, self.path, self.language, self.lines)
        self.definitions.sort(key=lambda d: (d.start_row, -d.end_row))
        chunks: list[Chunk] = []
        for definition in self.definitions:
            if definition.kind == "class":
                chunks.append(self._class_chunk(definition))
            else:
                chunks.extend(self._function_chunks(definition))
        chunks.extend(self._gap_chunks())
        chunks.sort(key=lambda c: (c.start_line, -c.end_line))
        return chunks

    def _collect(self, root: Node) -> None:
        stack: list[tuple[Node, tuple[str, ...]]] = [(root, ())]
        while stack:
            node, classes = stack.pop()
            for child in reversed(node.named_children):
                kind = child.type
                if kind in self.spec.classes and self._is_class(child):
                    path = (*classes, self._class_name(child))
                    self._add("class", child, path, path[-1], "")
                    stack.append((child, path))
                elif kind in self.spec.functions:
                    self._add_function(child, child, classes)
                elif (
                    self.language in _JS_LANGUAGES
                    and kind in _JS_BINDINGS
                    and (value := child.child_by_field_name("value")) is not None
                    and value.type in _JS_FUNCTION_VALUES
                ):
                    self._add_function(child, value, classes)
                else:
                    stack.append((child, classes))

    def _is_class(self, node: Node) -> bool:
        if node.type in _BRACED_CLASSES:  # C/C++ `struct x *p` is a use, not a declaration
            return node.child_by_field_name("body") is not None
        if self.language == "go":
            kind = node.child_by_field_name("type")
            return kind is not None and kind.type in ("struct_type", "interface_type")
        return True

    def _class_name(self, node: Node) -> str:
        if node.type == "impl_item":  # Rust: impl [Trait for] Type
            return _text(node.child_by_field_name("type")).split("<")[0].strip() or "impl"
        return _text(_name_node(node)) or "<anonymous>"

    def _add_function(self, node: Node, function: Node, classes: tuple[str, ...]) -> None:
        name_node: Node | None
        params_node: Node | None
        if self.language in ("c", "cpp"):
            declarator = _c_declarator(node)
            if declarator is None:
                return
            name_node = declarator.child_by_field_name("declarator")
            params_node = declarator.child_by_field_name("parameters")
        else:
            name_node = _name_node(node)
            params_node = (
                function.child_by_field_name("parameters")
                or function.child_by_field_name("parameter")
                or _first_named(function, _PARAM_TYPES)
            )
        name = _text(name_node) or "<anonymous>"
        if "::" in name:  # C++ `Matrix::at` defined outside its class
            owner, name = name.rsplit("::", 1)
            classes = (*classes, *(part for part in owner.split("::") if part))
        if self.language == "go" and node.type == "method_declaration":
            receiver = node.child_by_field_name("receiver")
            declaration = (
                receiver.named_children[0] if receiver and receiver.named_children else None
            )
            owner = _text(declaration.child_by_field_name("type") if declaration else None)
            classes = (*classes, owner.lstrip("*").split("[")[0].strip() or "<receiver>")
        params = _collapse(_text(params_node)) if params_node is not None else ""
        if params.startswith("(") and params.endswith(")"):
            params = params[1:-1]
        params = "(" + params.strip().rstrip(",").strip() + ")"
        self._add("method" if classes else "function", node, classes, name, params)

    def _add(
        self, kind: Kind, node: Node, classes: tuple[str, ...], name: str, params: str
    ) -> None:
        outer = node
        while (parent := outer.parent) is not None and (
            parent.type in self.spec.wrappers
            or (
                parent.type in ("lexical_declaration", "variable_declaration", "type_declaration")
                and parent.named_child_count == 1
            )
        ):
            outer = parent
        start_row, start_byte = outer.start_point.row, outer.start_byte
        previous = outer.prev_named_sibling
        while (
            previous is not None
            and ("comment" in previous.type or previous.type == "attribute_item")
            and previous.end_point.row >= start_row - 1
        ):
            start_row, start_byte = previous.start_point.row, previous.start_byte
            previous = previous.prev_named_sibling
        self.definitions.append(
            _Definition(
                kind, node, start_row, outer.end_point.row, start_byte, classes, name, params
            )
        )

    # making chunks

    def _rows(self, first: int, last: int) -> str:
        return "\n".join(self.lines[first : last + 1])

    def _signature(self, definition: _Definition) -> str:
        node = definition.node
        body = _body(node)
        if body is None or body.start_byte <= node.start_byte:
            head = self.source[node.start_byte : node.end_byte].split(b"\n", 1)[0]
        else:
            head = self.source[node.start_byte : body.start_byte]
        return _collapse(head.decode("utf-8", "replace"))

    def _symbol(self, definition: _Definition) -> str:
        if definition.kind == "class":
            return ".".join(definition.classes)
        owner = ".".join(definition.classes) if definition.classes else self.stem
        return f"{owner}.{definition.name}{definition.params}"

    def _chunk(
        self, definition: _Definition, start_row: int, end_row: int, text: str, *header: str
    ) -> Chunk:
        return Chunk(
            self.repo,
            self.path,
            self.language,
            self._symbol(definition),
            definition.kind,
            start_row + 1,
            end_row + 1,
            text,
            embed_header(self.path, *header) + text,
        )

    def _class_chunk(self, definition: _Definition) -> Chunk:
        """The declaration with the bodies of its member functions elided."""
        node = definition.node
        start, end = definition.start_byte, node.end_byte
        cuts: list[tuple[int, int, bytes]] = []
        for other in self.definitions:
            if other.kind == "class" or not (start <= other.node.start_byte < end):
                continue
            body = _body(other.node)
            if body is None or body.end_byte > end:
                continue
            content = self.source[body.start_byte : body.end_byte]
            if content.startswith(b"{"):
                replacement = b"{ ... }"
            elif content.startswith(b"=") and len(content) <= 80:
                continue
            else:
                replacement = b"= ..." if content.startswith(b"=") else b"..."
            cuts.append((body.start_byte, body.end_byte, replacement))
        cuts.sort()
        parts: list[bytes] = []
        position = start
        for cut_start, cut_end, replacement in cuts:
            if cut_start < position:  # nested inside a body already elided
                continue
            parts += [self.source[position:cut_start], replacement]
            position = cut_end
        parts.append(self.source[position:end])
        text = b"".join(parts).decode("utf-8", "replace")
        if len(text) > MAX_CLASS_CHARS:
            kept: list[str] = []
            size = 0
            for line in text.split("\n"):
                if size + len(line) + 1 > MAX_CLASS_CHARS - 4 and kept:
                    break
                kept.append(line[:MAX_CLASS_CHARS])
                size += len(line) + 1
            text = "\n".join([*kept, "..."])
        parents = ".".join(definition.classes[:-1])
        return self._chunk(
            definition,
            definition.start_row,
            definition.end_row,
            text,
            f"Inside: {parents}" if parents else "",
            f"Declaration: {self._signature(definition)}",
        )

    def _function_chunks(self, definition: _Definition) -> list[Chunk]:
        first, last = definition.start_row, definition.end_row
        text = self._rows(first, last)
        signature = self._signature(definition)
        context = "Class: " + ".".join(definition.classes) if definition.classes else ""
        if len(text) <= MAX_FUNCTION_CHARS:
            return [self._chunk(definition, first, last, text, context, f"Signature: {signature}")]
        pieces = self._split(definition)
        chunks = []
        for index, (start, end, body) in enumerate(pieces, 1):
            chunks.append(
                self._chunk(
                    definition,
                    start,
                    end,
                    body,
                    context,
                    f"Signature: {signature}",
                    f"Part {index} of {len(pieces)}",
                )
            )
        return chunks

    def _split(self, definition: _Definition) -> list[tuple[int, int, str]]:
        """A long definition in pieces cut between top-level statements of its body."""
        first, last = definition.start_row, definition.end_row
        whole = [(first, last, self._rows(first, last))]
        body = _body(definition.node)
        statements = _statements(body) if body is not None else []
        if len(statements) < 2:
            return whole
        node_row = definition.node.start_point.row
        body_row = statements[0].start_point.row
        if body_row <= node_row:
            return whole
        header = self._rows(node_row, body_row - 1)
        if len(header) > MAX_SIGNATURE_CHARS * 3:
            header = self._signature(definition)
        candidates = [
            statement.start_point.row
            for previous, statement in itertools.pairwise(statements)
            if statement.start_point.row > previous.end_point.row
        ]
        offsets = [0]
        for line in self.lines:
            offsets.append(offsets[-1] + len(line) + 1)

        def size(start: int, stop: int) -> int:
            extra = 0 if start == first else len(header) + 1
            return offsets[stop] - offsets[start] + extra

        cuts: list[int] = []
        start, candidate = first, None
        for point in [*candidates, last + 1]:
            if size(start, point) > MAX_FUNCTION_CHARS and candidate is not None:
                cuts.append(candidate)
                start = candidate
            candidate = point if point <= last else None
        bounds = [first, *cuts, last + 1]
        pieces = []
        for index, (start, stop) in enumerate(itertools.pairwise(bounds)):
            code = self._rows(start, stop - 1)
            pieces.append((start, stop - 1, code if index == 0 else f"{header}\n{code}"))
        return pieces

    def _gap_chunks(self) -> list[Chunk]:
        """File chunks for the rows that no definition covers (imports, module-level code)."""
        covered = [False] * len(self.lines)
        for definition in self.definitions:
            for row in range(definition.start_row, min(definition.end_row, len(covered) - 1) + 1):
                covered[row] = True
        chunks: list[Chunk] = []
        row = 0
        while row < len(covered):
            if covered[row]:
                row += 1
                continue
            stop = row
            while stop + 1 < len(covered) and not covered[stop + 1]:
                stop += 1
            for chunk in file_chunks(self.repo, self.path, self.language, self.lines, (row, stop)):
                if _NOISE.sub("", _LINE_COMMENT.sub("", chunk.text)):  # not just `}  // end`
                    chunks.append(chunk)
            row = stop + 1
        return chunks
