"""What part a file plays in its repository, and ranking that prefers the code itself.

Teams index whole repositories: next to the source are its tests, docs, examples, generated
and configuration files. They all mention the words of a question, so on "where do we retry
webhooks?" a docs section or a test that calls the retry easily outranks the function that does
it. Every file gets a role from its path (the conventions of each ecosystem, not of one
project); search prefers `source`, and the other roles win when the question asks for them
("the test for ...", "docs on ...", "an example of ...") or a filter picks them.

Roles, checked in this order (the first that applies):

- `generated`: vendored or machine-written code (`vendor/`, `third_party/`, `*_pb2.py`,
  `*.pb.go`, `*.min.js`, `zz_generated*`, `*.generated.*`, `generated/` folders), and Python
  packaging metadata (`PKG-INFO`, `*.egg-info/`, `*.dist-info/`: setuptools writes them, and
  the long description they carry is the README again);
- `docs`: prose (Markdown, reStructuredText, AsciiDoc, plain text, LICENSE and friends), and
  pages under `docs/` folders (code there keeps its own role);
- `example`: `examples/`, `example/`, `samples/`, `demo/`, `cookbook/` folders, and Go's
  `example_test.go` files;
- `test`: test folders (`tests/`, `test/`, `__tests__/`, `spec/`, `testdata/`, `src/test/`,
  `fixtures/`) and test files (`test_*.py`, `*_test.py`, `conftest.py`, `*_test.go`,
  `*Test.java`, `*Tests.cs`, `*.test.ts`, `*.spec.js`, `*_spec.rb`, ...);
- `config`: configuration and build files (YAML, TOML, JSON, INI, XML, Dockerfile, Makefile,
  CI workflows, dotfiles);
- `source`: everything else.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from pathlib import PurePosixPath
from typing import Literal, Protocol, TypeVar, get_args

Role = Literal["source", "test", "docs", "example", "config", "generated"]
ROLES: tuple[Role, ...] = get_args(Role)

_GENERATED_DIRS = frozenset({"vendor", "vendored", "third_party", "thirdparty", "generated"})
_GENERATED_FILE = re.compile(
    r"(_pb2(_grpc)?\.pyi?|\.pb(\.gw)?\.go|\.pb\.(h|cc)|\.min\.(js|css)|_generated\.\w+"
    r"|\.generated\.\w+|\.g\.dart|\.designer\.cs)$|^zz_generated",
)
_PACKAGING_DIRS = (".egg-info", ".dist-info")
_DOC_SUFFIXES = frozenset({".md", ".markdown", ".mdx", ".rst", ".adoc", ".asciidoc", ".txt"})
_DOC_NAMES = re.compile(r"^(license|licence|copying|notice|authors|contributors|changelog)\b", re.I)
# In these folders only prose and pages are docs: code there can be a real package (Go's
# `doc` packages generate documentation) and keeps its own role.
_DOC_DIRS = frozenset({"docs", "doc", "documentation", "website", "site", "man"})
_PAGE_SUFFIXES = frozenset({".html", ".htm", ".css", ".svg", ".png", ".tex", ".texi", ""})
_TEST_DIRS = frozenset(
    {"test", "tests", "__tests__", "__test__", "spec", "specs", "testdata", "testing", "fixtures"}
)
_TEST_FILE = re.compile(
    r"^(test_.+\.py|.+_test\.(py|go|rs|c|cc|cpp|rb|exs?|dart)|conftest\.py"
    r"|.+(Test|Tests|TestCase|IT|Spec)\.(java|kt|scala|cs|groovy|swift|php)"
    r"|.+\.(test|spec|e2e-spec)\.(js|jsx|ts|tsx|mjs|cjs|mts|cts)|.+_spec\.rb|test\.(js|ts))$"
)
# Go's testable examples (`Example...` functions) live in example_test.go files.
_EXAMPLE_FILE = re.compile(r"^example(_\w+)?_test\.go$")
_EXAMPLE_DIRS = frozenset(
    {"examples", "example", "_examples", "samples", "sample", "demo", "demos", "cookbook"}
)
_CONFIG_SUFFIXES = frozenset(
    {".yaml", ".yml", ".toml", ".json", ".jsonc", ".ini", ".cfg", ".conf", ".xml", ".properties"}
)
_CONFIG_NAMES = frozenset(
    {"dockerfile", "makefile", "containerfile", "jenkinsfile", "procfile", "justfile"}
)


def role_of(path: str) -> Role:
    """The role of the repo-relative `path` ("a/b.py"), by the conventions above."""
    parts = PurePosixPath(path).parts
    if not parts:
        return "source"
    name = parts[-1]
    folders = {p.lower() for p in parts[:-1]}
    suffix = PurePosixPath(name).suffix.lower()
    if (
        folders & _GENERATED_DIRS
        or _GENERATED_FILE.search(name)
        or name == "PKG-INFO"
        or any(f.endswith(_PACKAGING_DIRS) for f in folders)
    ):
        return "generated"
    if (
        suffix in _DOC_SUFFIXES
        or _DOC_NAMES.match(name)
        or (folders & _DOC_DIRS and suffix in _PAGE_SUFFIXES)
    ):
        return "docs"
    if folders & _EXAMPLE_DIRS or _EXAMPLE_FILE.match(name):
        return "example"
    if folders & _TEST_DIRS or _TEST_FILE.match(name):
        return "test"
    if (
        suffix in _CONFIG_SUFFIXES
        or name.lower() in _CONFIG_NAMES
        or name.lower().startswith("dockerfile")
        or ".github" in folders
        or (name.startswith(".") and suffix == "")  # dotfiles: .eslintrc, .editorconfig
    ):
        return "config"
    return "source"


# Words that ask for a role. Plain "configuration" or "documented behaviour" are left out: a
# question about how configuration is loaded wants the code that loads it.
_ASKS: dict[Role, re.Pattern[str]] = {
    "test": re.compile(
        r"\b(tests?|tested|testing|unit[- ]?tests?|test ?cases?|specs?|fixtures?"
        r"|assert(s|ions?)?)\b"
    ),
    "docs": re.compile(
        r"\b(docs?|documentation|readme|guides?|tutorials?|changelog|release notes|manual)\b"
    ),
    "example": re.compile(r"\b(examples?|samples?|demos?|cookbook|snippets?)\b"),
    "config": re.compile(
        r"\b(config(uration)? files?|ya?ml|toml|dockerfile|makefile|ci (workflow|pipeline)s?"
        r"|github actions?|package\.json|pom\.xml)\b"
    ),
    "generated": re.compile(r"\b(generated|vendored|protobuf stubs?)\b"),
}


def asked_roles(query: str) -> frozenset[Role]:
    """The roles a question asks for by name ("the test for the retry" -> {"test"})."""
    text = query.lower()
    return frozenset(role for role, pattern in _ASKS.items() if pattern.search(text))


# A language named as what the answer is written in: "the C extension", "multidict's C
# iterators", "the Rust implementation", "written in Go". Only with such a noun after it, or
# "in X" (case kept: "go" and "c" are words too); "the Python binding" of a C library is C, so
# "binding" is not one of the nouns. A project with twin implementations (a pure-Python module
# and its C accelerator) otherwise answers with whichever twin uses the question's words.
_LANGUAGE_NOUNS = (
    r"(?:extensions?|code|implementations?|modules?|version|side|sources?|library|core"
    r"|speedups?|accelerators?|decoder|encoder|parser|iterators?|functions?|structs?|helpers?)"
)
_LANGUAGE_NAMES: dict[str, tuple[str, ...]] = {
    r"C(?![+#\w])": ("c", "cpp"),  # headers are read with the C++ grammar
    r"C\+\+": ("cpp",),
    r"Rust": ("rust",),
    r"Go": ("go",),
    r"Java(?!Script)": ("java",),
    r"JavaScript": ("javascript",),
    r"TypeScript": ("typescript", "tsx"),
    r"(?:pure[- ])?Python": ("python",),
}
_ASKED_LANGUAGES = [
    (
        re.compile(
            rf"(?<![\w+#.-])(?:{name})(?:'s)?[ -](?:\w+[ -])?{_LANGUAGE_NOUNS}\b"
            rf"|\b(?:in|written in) (?:{name})(?=$|[\s.,;:?!)])"
        ),
        languages,
    )
    for name, languages in _LANGUAGE_NAMES.items()
]
ASKED_LANGUAGE_WEIGHT = 1.25  # a chunk in the language the question names
# A chunk that uses every identifier the question writes (a flag, a constant, a method it calls)
# gains half its score: the exact-symbol leg finds only chunks *named* so.
MENTION_WEIGHT = 0.5


def asked_languages(query: str) -> frozenset[str]:
    """The chunk languages a question names as the answer's ("the C extension" -> c, cpp)."""
    return frozenset(
        language
        for pattern, languages in _ASKED_LANGUAGES
        if pattern.search(query)
        for language in languages
    )


# How much of its fused score a result keeps when its role was not asked for. Source keeps it
# all; what merely mentions the question's words (docs, tests) keeps least.
DEFAULT_WEIGHTS: dict[Role, float] = {
    "source": 1.0,
    "config": 0.75,
    "example": 0.7,
    "test": 0.65,
    "docs": 0.6,
    "generated": 0.4,
}
ASKED_WEIGHT = 1.1  # a role the question names goes ahead of source of equal score


class Ranked(Protocol):
    @property
    def path(self) -> str: ...
    @property
    def kind(self) -> str: ...
    @property
    def symbol(self) -> str: ...
    @property
    def score(self) -> float: ...


R = TypeVar("R", bound=Ranked)


def weight(role: Role, asked: frozenset[Role]) -> float:
    if role in asked:
        return ASKED_WEIGHT
    return DEFAULT_WEIGHTS[role]


def _class_of(symbol: str) -> str:
    """`Client.send(self, request)` -> `Client`; "" for a symbol without an owner."""
    head = symbol.split("(", 1)[0]
    return head.rsplit(".", 1)[0] if "." in head else ""


def rerank(
    hits: Sequence[R],
    query: str,
    k: int,
    *,
    rescore: Callable[[R, float], R],
    role: Callable[[R], Role] | None = None,
    quoting: Callable[[R], bool] | None = None,
    language: Callable[[R], str] | None = None,
    mentions: Callable[[R], float] | None = None,
) -> list[R]:
    """The best `k` of `hits` (fused candidates, best first) once roles are weighed in: each
    score is multiplied by its role's weight (`weight`), and by `ASKED_LANGUAGE_WEIGHT` when
    `language(hit)` is a language the question names (`asked_languages`), and by
    1 + `MENTION_WEIGHT` x `mentions(hit)`, the share of the identifiers the question writes
    that the hit's text mentions (`SESSION_TIMEOUT`, `sortKeys`). A class outline
    never ranks above one of its own methods that is among the candidates (the method is what
    answers). `rescore(hit, score)` returns the hit with the new score; `role(hit)` defaults to the
    role of its path. Hits for which `quoting(hit)` holds (they contain a message the question
    quotes) rank ahead of all others, in the same order among themselves."""
    asked = asked_roles(query)
    languages = asked_languages(query) if language is not None else frozenset()
    role_for = role or (lambda h: role_of(h.path))

    def weighed(h: R) -> float:
        score = h.score * weight(role_for(h), asked)
        if languages and language is not None and language(h) in languages:
            score *= ASKED_LANGUAGE_WEIGHT
        if mentions is not None:
            score *= 1.0 + MENTION_WEIGHT * mentions(h)
        return score

    scored = [(h, weighed(h)) for h in hits]
    best_method: dict[tuple[str, str], float] = {}
    for h, score in scored:
        if h.kind == "method":
            key = (h.path, _class_of(h.symbol))
            best_method[key] = max(score, best_method.get(key, 0.0))
    adjusted = []
    for h, score in scored:
        if h.kind == "class":
            method = best_method.get((h.path, h.symbol.split("(", 1)[0]))
            if method is not None and method <= score:
                score = method * 0.999
        adjusted.append((h, score))
    # Equal scores are ordered by place, not by the order the engine happened to return them.
    quoted = quoting or (lambda _: False)
    adjusted.sort(key=lambda pair: (not quoted(pair[0]), -pair[1], pair[0].path, pair[0].symbol))
    return [rescore(h, score) for h, score in adjusted[:k]]
