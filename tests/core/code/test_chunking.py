"""Chunking source files with tree-sitter: names, kinds and exact lines per language."""

from __future__ import annotations

import itertools

import pytest

from core.code.chunk import MAX_FILE_CHARS, MAX_FUNCTION_CHARS, Chunk
from core.code.chunking import chunk_file
from tests.support.paths import FIXTURES_DIR

FIXTURES = FIXTURES_DIR / "chunking"


def _chunks(name: str) -> list[Chunk]:
    return chunk_file("demo", f"src/{name}", (FIXTURES / name).read_text())


def _outline(chunks: list[Chunk]) -> list[tuple[str, str, int, int]]:
    return [(c.kind, c.symbol, c.start_line, c.end_line) for c in chunks if c.kind != "file"]


EXPECTED: dict[str, tuple[str, list[tuple[str, str, int, int]]]] = {
    "shapes.py": (
        "python",
        [
            ("class", "Circle", 8, 19),
            ("method", "Circle.area(self)", 14, 15),
            ("method", "Circle.diameter(self)", 17, 19),
            ("function", "shapes.describe(shape: Shape, verbose: bool = False)", 22, 24),
        ],
    ),
    "Inventory.java": (
        "java",
        [
            ("class", "Inventory", 5, 21),
            ("method", "Inventory.Inventory(List<String> items)", 8, 10),
            ("method", "Inventory.count(String name)", 12, 20),
            ("class", "Countable", 23, 25),
            ("method", "Countable.size()", 24, 24),
        ],
    ),
    "cart.js": (
        "javascript",
        [
            ("class", "Cart", 3, 12),
            ("method", "Cart.constructor(owner)", 4, 7),
            ("method", "Cart.total(rate)", 9, 11),
            ("function", "cart.emptyCart(owner)", 14, 16),
            ("function", "cart.formatPrice(cents)", 18, 20),
        ],
    ),
    "queue.ts": (
        "typescript",
        [
            ("class", "Job", 1, 4),
            ("class", "JobQueue", 6, 19),
            ("method", "JobQueue.push(job: T)", 9, 12),
            ("method", "JobQueue.drain(limit: number = 10)", 14, 18),
            ("function", "queue.makeQueue()", 21, 23),
        ],
    ),
    "Badge.tsx": (
        "tsx",
        [
            ("class", "Badge", 5, 9),
            ("method", "Badge.render()", 6, 8),
            ("function", "Badge.Counter({ label, count }: Props)", 11, 17),
        ],
    ),
    "server.go": (
        "go",
        [
            ("class", "Server", 5, 8),
            ("function", "server.NewServer(addr string)", 10, 12),
            ("method", "Server.Handle(pattern string, h http.Handler)", 14, 16),
            ("method", "Server.Addr()", 18, 20),
        ],
    ),
    "stack.rs": (
        "rust",
        [
            ("class", "Stack", 3, 5),
            ("class", "Stack", 7, 15),
            ("method", "Stack.new()", 8, 10),
            ("method", "Stack.push(&mut self, item: T)", 12, 14),
            ("class", "Summary", 17, 19),
            ("method", "Summary.summarize(&self)", 18, 18),
            ("function", "stack.largest(values: &[i32])", 21, 23),
        ],
    ),
    "buffer.c": (
        "c",
        [
            ("class", "buffer", 3, 6),
            ("function", "buffer.grow(struct buffer *b, size_t extra)", 8, 15),
            ("function", "buffer.buffer_len(const struct buffer *b)", 17, 19),
        ],
    ),
    "matrix.cpp": (
        "cpp",
        [
            ("class", "Matrix", 5, 15),
            ("method", "Matrix.at(int r, int c)", 8, 10),
            ("method", "Matrix.Matrix(int rows, int cols)", 17, 18),
            ("function", "matrix.trace(const Matrix &m, int n)", 20, 24),
        ],
    ),
    "Account.cs": (
        "csharp",
        [
            ("class", "Account", 5, 19),
            ("method", "Account.Account(decimal opening)", 9, 12),
            ("method", "Account.Deposit(decimal amount)", 14, 18),
        ],
    ),
    "greeter.rb": (
        "ruby",
        [
            ("class", "Greetings", 3, 20),
            ("class", "Greetings.Greeter", 4, 19),
            ("method", "Greetings.Greeter.initialize(name)", 7, 9),
            ("method", "Greetings.Greeter.greet(other, loud: false)", 11, 14),
            ("method", "Greetings.Greeter.default()", 16, 18),
            ("function", "greeter.shout(text)", 22, 24),
        ],
    ),
    "UserRepo.php": (
        "php",
        [
            ("class", "UserRepo", 5, 18),
            ("method", "UserRepo.add(string $name, int $age)", 9, 12),
            ("method", "UserRepo.find(string $name)", 14, 17),
            ("function", "UserRepo.make_repo()", 20, 23),
        ],
    ),
    "Thermostat.kt": (
        "kotlin",
        [
            ("class", "Thermostat", 5, 12),
            ("method", "Thermostat.raise(by: Double)", 8, 11),
            ("class", "Defaults", 14, 16),
            ("method", "Defaults.target()", 15, 15),
            ("function", 'Thermostat.format(value: Double, unit: String = "C")', 18, 20),
        ],
    ),
}


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_definitions_per_language(name: str) -> None:
    language, outline = EXPECTED[name]
    chunks = _chunks(name)
    assert _outline(chunks) == outline
    lines = (FIXTURES / name).read_text().split("\n")
    for chunk in chunks:
        assert chunk.repo == "demo"
        assert chunk.path == f"src/{name}"
        assert chunk.language == language
        assert chunk.embed_text.startswith(f"File: src/{name}\n")
        assert chunk.embed_text.endswith(chunk.text)
        if chunk.kind in ("function", "method", "file"):  # the definition's own lines, verbatim
            assert chunk.text == "\n".join(lines[chunk.start_line - 1 : chunk.end_line])


def test_method_context_and_class_signatures() -> None:
    chunks = {c.symbol: c for c in _chunks("shapes.py")}
    circle = chunks["Circle"]
    assert circle.text.startswith("@dataclass\nclass Circle(Shape):")
    assert "def area(self) -> float:\n        ..." in circle.text
    assert "math.pi" not in circle.text  # member bodies are elided
    area = chunks["Circle.area(self)"]
    assert "Class: Circle" in area.embed_text
    assert "Signature: def area(self) -> float:" in area.embed_text
    java = {c.symbol: c for c in _chunks("Inventory.java")}
    assert "public int count(String name) { ... }" in java["Inventory"].text
    assert "private final List<String> items;" in java["Inventory"].text


def test_module_level_code_becomes_file_chunks() -> None:
    chunks = _chunks("shapes.py")
    head = chunks[0]
    assert (head.kind, head.start_line, head.end_line) == ("file", 1, 7)
    assert "import math" in head.text


def test_markdown_sections_by_heading_path() -> None:
    chunks = _chunks("guide.md")
    assert [(c.kind, c.symbol, c.start_line, c.end_line) for c in chunks] == [
        ("section", "guide.md", 1, 2),
        ("section", "Guide", 3, 6),
        ("section", "Guide > Install", 7, 13),
        ("section", "Guide > Usage", 14, 15),
        ("section", "Guide > Usage > CLI", 16, 19),
        ("section", "Appendix", 20, 20),
    ]
    assert all(c.language == "markdown" for c in chunks)
    assert "Section: Guide > Install" in chunks[2].embed_text


def _assert_covers(chunks: list[Chunk], text: str) -> None:
    lines = text.split("\n")
    if lines[-1] == "":
        lines.pop()
    assert chunks[0].start_line == 1
    assert chunks[-1].end_line == len(lines)
    for before, after in itertools.pairwise(chunks):
        assert after.start_line == before.end_line + 1
    for chunk in chunks:
        assert chunk.kind == "file"
        assert len(chunk.text) <= MAX_FILE_CHARS
        assert chunk.text == "\n".join(lines[chunk.start_line - 1 : chunk.end_line])


def test_file_without_definitions_is_split_under_the_cap() -> None:
    text = "".join(f"SETTING_{i} = {i * 7}  # a constant with a comment\n" for i in range(300))
    chunks = chunk_file("demo", "settings.py", text)
    assert len(chunks) > 5
    _assert_covers(chunks, text)
    assert {c.language for c in chunks} == {"python"}


def test_unknown_extension_gives_file_chunks() -> None:
    text = "".join(f"line {i}: some configuration value\n" for i in range(200))
    chunks = chunk_file("demo", "conf/app.weird", text)
    assert len(chunks) > 1
    _assert_covers(chunks, text)
    assert chunks[0].symbol == "app.weird"
    assert chunk_file("demo", "empty.txt", "\n\n") == []


def test_overlong_single_line_is_capped() -> None:
    chunks = chunk_file("demo", "bundle.min.css", "a{b:c}" * 1000)
    assert len(chunks) == 3
    assert all(len(c.text) <= MAX_FILE_CHARS and c.start_line == c.end_line == 1 for c in chunks)


def test_huge_function_split_at_statement_boundaries() -> None:
    body = []
    for i in range(200):
        body.append(f"    if value > {i}:\n        total += compute_{i}(value, scale={i})")
    text = (
        "import os\n\n\n"
        "def crunch(\n    value: int,\n    total: int = 0,\n) -> int:\n"
        + "\n".join(body)
        + "\n    return total\n"
    )
    source_lines = text.split("\n")
    chunks = chunk_file("demo", "pkg/crunch.py", text)
    pieces = [c for c in chunks if c.kind == "function"]
    assert len(pieces) >= 3
    assert {c.symbol for c in pieces} == {"crunch.crunch(value: int, total: int = 0)"}
    signature = "def crunch(\n    value: int,\n    total: int = 0,\n) -> int:"
    assert pieces[0].start_line == 4
    assert pieces[-1].end_line == len(source_lines) - 1
    for index, piece in enumerate(pieces):
        assert piece.text.startswith(signature)
        assert len(piece.text) <= MAX_FUNCTION_CHARS
        assert f"Part {index + 1} of {len(pieces)}" in piece.embed_text
        own = "\n".join(source_lines[piece.start_line - 1 : piece.end_line])
        assert piece.text.endswith(own)  # whole lines of the source, none cut
        if index:
            assert piece.text == f"{signature}\n{own}"
            assert source_lines[piece.start_line - 1].startswith("    if value")  # a statement
    for before, after in itertools.pairwise(pieces):
        assert after.start_line == before.end_line + 1


def test_syntax_error_still_produces_chunks() -> None:
    text = (
        "def fine(a):\n    return a + 1\n\n\n"
        "def broken(:\n    return ((\n\n\n"
        "class Later:\n    def ok(self):\n        return 2\n"
    )
    chunks = chunk_file("demo", "bad.py", text)
    assert chunks
    symbols = {c.symbol for c in chunks}
    assert "bad.fine(a)" in symbols
    garbage = chunk_file("demo", "bad.go", "}}}{{{ ))) func ( ")
    assert [c.kind for c in garbage] == ["file"]


def test_chunk_is_frozen() -> None:
    chunk = _chunks("server.go")[0]
    with pytest.raises(AttributeError):
        chunk.symbol = "x"  # type: ignore[misc]


def test_dot_h_headers_get_the_c_or_the_cpp_grammar_by_content() -> None:
    c_header = "#include <stddef.h>\n\nsize_t buffer_len(const char *s) {\n    return 0;\n}\n"
    cpp_header = "namespace geo {\nclass Point {\n public:\n  double x() const;\n};\n}\n"
    includes, function = chunk_file("r", "include/buffer.h", c_header)
    assert (includes.language, includes.kind) == ("c", "file")
    assert (function.language, function.kind, function.symbol) == (
        "c",
        "function",
        "buffer.buffer_len(const char *s)",
    )
    assert {c.language for c in chunk_file("r", "include/point.h", cpp_header)} == {"cpp"}


def test_a_go_type_lists_its_methods_in_its_embedding_context() -> None:
    text = (FIXTURES / "server.go").read_text()
    (server,) = [c for c in chunk_file("r", "server.go", text) if c.kind == "class"]
    assert "Methods: Handle(pattern string, h http.Handler); Addr()" in server.embed_text
    assert server.embed_text.endswith(server.text)
    assert "Methods:" not in server.text  # the source itself is untouched
