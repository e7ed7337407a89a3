"""File roles by ecosystem conventions, the roles a question asks for, and role-aware reranking
(core/code/roles.py)."""

from __future__ import annotations

from dataclasses import dataclass, replace

import pytest

from core.code.roles import Role, asked_languages, asked_roles, rerank, role_of


@pytest.mark.parametrize(
    ("path", "role"),
    [
        # source
        ("src/billing/webhooks.py", "source"),
        ("lib/router.js", "source"),
        ("pkg/server/server.go", "source"),
        ("src/main/java/org/acme/RetryPolicy.java", "source"),
        ("crates/core/src/lib.rs", "source"),
        ("index.ts", "source"),
        ("latest.py", "source"),  # "test" inside a word is not a test
        ("contest/score.go", "source"),
        # tests, per ecosystem
        ("tests/test_webhooks.py", "test"),
        ("test_api.py", "test"),
        ("billing/webhooks_test.py", "test"),
        ("conftest.py", "test"),
        ("server_test.go", "test"),
        ("src/test/java/org/acme/RetryPolicyTest.java", "test"),
        ("src/OrderServiceTests.cs", "test"),
        ("lib/router.spec.ts", "test"),
        ("src/app.test.tsx", "test"),
        ("src/__tests__/router.js", "test"),
        ("spec/models/user_spec.rb", "test"),
        ("crates/core/tests/integration.rs", "test"),
        ("internal/testdata/input.go", "test"),
        # docs
        ("README.md", "docs"),
        ("docs/guide/routing.md", "docs"),
        ("docs/conf.py", "source"),  # code in a docs folder keeps its own role
        ("doc/man_docs.go", "source"),  # a Go package named doc
        ("docs/_static/theme.css", "docs"),
        ("LICENSE", "docs"),
        ("CHANGELOG.rst", "docs"),
        ("examples/README.md", "docs"),
        # examples
        ("examples/basic/main.go", "example"),
        ("example/app.js", "example"),
        ("samples/Hello.java", "example"),
        ("example_test.go", "example"),
        ("example_command_test.go", "example"),
        # config
        ("config/settings.yaml", "config"),
        ("package.json", "config"),
        ("pom.xml", "config"),
        ("Dockerfile", "config"),
        ("Makefile", "config"),
        (".github/workflows/ci.yml", "config"),
        (".eslintrc", "config"),
        # generated and vendored
        ("api/service_pb2.py", "generated"),
        ("api/service.pb.go", "generated"),
        ("static/app.min.js", "generated"),
        ("third_party/zlib/inflate.c", "generated"),
        ("pkg/apis/zz_generated.deepcopy.go", "generated"),
        # Python packaging metadata: written by setuptools, its long description is the README
        ("PKG-INFO", "generated"),
        ("src/cachetools.egg-info/PKG-INFO", "generated"),
        ("src/wrapt.egg-info/SOURCES.txt", "generated"),
        ("attrs-24.2.0.dist-info/METADATA", "generated"),
        ("pkg_info.py", "source"),
    ],
)
def test_roles_follow_ecosystem_conventions(path: str, role: Role) -> None:
    assert role_of(path) == role


@pytest.mark.parametrize(
    ("query", "asked"),
    [
        ("where do we retry failed webhooks?", set()),
        ("how is the configuration loaded?", set()),
        ("where is the test for the retry backoff?", {"test"}),
        ("which unit tests cover refunds", {"test"}),
        ("docs on configuring the router", {"docs"}),
        ("is there an example of custom middleware", {"example"}),
        ("the GitHub Actions workflow that runs lint", {"config"}),
    ],
)
def test_asked_roles(query: str, asked: set[str]) -> None:
    assert asked_roles(query) == asked


@dataclass(frozen=True)
class Hit:
    path: str
    kind: str
    symbol: str
    score: float


def ranked(hits: list[Hit], query: str, k: int = 10) -> list[str]:
    out = rerank(hits, query, k, rescore=lambda h, s: replace(h, score=s))
    return [f"{h.path}:{h.symbol}" for h in out]


FUSED = [  # as fusion ranked them: the words are everywhere, the answer is third
    Hit("docs/webhooks.md", "section", "Retrying webhooks", 0.050),
    Hit("tests/test_webhooks.py", "function", "test_retry_backoff()", 0.049),
    Hit("billing/webhooks.py", "function", "retry_failed(event)", 0.048),
    Hit("examples/retry.py", "file", "retry.py", 0.047),
]


def test_source_goes_first_and_the_others_are_still_found() -> None:
    assert ranked(FUSED, "where do we retry failed webhooks?") == [
        "billing/webhooks.py:retry_failed(event)",
        "examples/retry.py:retry.py",
        "tests/test_webhooks.py:test_retry_backoff()",
        "docs/webhooks.md:Retrying webhooks",
    ]


@pytest.mark.parametrize(
    ("query", "first"),
    [
        ("where is the test for the webhook retry?", "tests/test_webhooks.py"),
        ("docs on webhook retries", "docs/webhooks.md"),
        ("an example of retrying webhooks", "examples/retry.py"),
    ],
)
def test_a_role_the_question_asks_for_wins(query: str, first: str) -> None:
    assert ranked(FUSED, query)[0].startswith(first)


def test_a_class_outline_never_outranks_its_own_method() -> None:
    hits = [
        Hit("net/client.py", "class", "Client", 0.06),
        Hit("net/other.py", "function", "send_all()", 0.05),
        Hit("net/client.py", "method", "Client.send(self, request)", 0.04),
        Hit("net/server.py", "class", "Server", 0.03),  # no method of it among the hits
    ]
    assert ranked(hits, "how is a request sent?", k=3) == [
        "net/other.py:send_all()",
        "net/client.py:Client.send(self, request)",
        "net/client.py:Client",
    ]


@pytest.mark.parametrize(
    ("query", "asked"),
    [
        ("multidict pickling support in the C extension", {"c", "cpp"}),
        ("Where is the error raised in multidict's C iterators?", {"c", "cpp"}),
        ("How is sortKeys honoured in the C encoder?", {"c", "cpp"}),
        ("is this done in C?", {"c", "cpp"}),
        ("the C++ implementation of the hash", {"cpp"}),
        ("the Go code that retries uploads", {"go"}),
        ("written in Rust.", {"rust"}),
        ("the pure-Python implementation of the decoder", {"python"}),
        ("the TypeScript side of the client", {"typescript", "tsx"}),
        # Not a language named as the answer's
        ("In the Python stream binding, how is the size written?", set()),  # binding code is C
        ("we go code it later", set()),
        ("what does option -C do", set()),
        ("the Objective-C code", set()),
        ("C# code that calls it", set()),
        ("a Java class loader", set()),
    ],
)
def test_asked_languages(query: str, asked: set[str]) -> None:
    assert asked_languages(query) == asked


@dataclass(frozen=True)
class TwinHit:
    path: str
    kind: str
    symbol: str
    score: float
    language: str


def test_the_language_a_question_names_picks_between_twin_implementations() -> None:
    twins = [
        TwinHit("multidict/_multidict_py.py", "method", "_ItemsView._iter(self)", 0.06, "python"),
        TwinHit("multidict/_multilib/iter.h", "function", "iter_next(self)", 0.055, "cpp"),
    ]

    def order(query: str) -> list[str]:
        out = rerank(
            twins,
            query,
            2,
            rescore=lambda h, s: replace(h, score=s),
            language=lambda h: h.language,
        )
        return [h.language for h in out]

    assert order("where does iteration stop when the dict changes?") == ["python", "cpp"]
    assert order("where do multidict's C iterators stop when the dict changes?") == [
        "cpp",
        "python",
    ]
    assert order("where does the pure-Python implementation stop iterating?") == [
        "python",
        "cpp",
    ]


def test_a_hit_that_mentions_the_questions_identifiers_gains_by_the_share_it_mentions() -> None:
    hits = [
        Hit("render/docs.py", "function", "describe()", 0.10),
        Hit("render/html.py", "function", "open_fence()", 0.08),  # mentions both
        Hit("render/text.py", "function", "plain()", 0.075),  # mentions one of the two
    ]
    shares = {"open_fence()": 1.0, "plain()": 0.5}
    out = rerank(
        hits,
        "with RENDER_PRE_LANG and SAFE_MODE set",
        3,
        rescore=lambda h, s: replace(h, score=s),
        mentions=lambda h: shares.get(h.symbol, 0.0),
    )
    assert [(h.symbol, round(h.score, 4)) for h in out] == [
        ("open_fence()", 0.12),  # x1.5
        ("describe()", 0.1),
        ("plain()", 0.0938),  # x1.25
    ]
