"""A message the question quotes (a pasted error, a log line) is exact evidence: hybrid search
ranks the candidates that contain it ahead of the rest, on both backends, when it is given the
chunks' texts (`VectorStore.search(texts=...)`; `CodeSearch` reads them from SQL). Matched as
the code writes it: over string literals continued on the next line, with the user's "..." for
the variable parts."""

from __future__ import annotations

from collections.abc import AsyncIterator, Sequence

import pytest

from core.code.chunking import chunk_file
from core.code.query_terms import contains_phrase, literal_text, quoted_phrases
from core.code.vectors import VectorStore
from tests.support.vector_scenario import BagOfWords, server_standin

# The source raises the message over two literals; another function says its words more often,
# so on words alone (both legs) it ranks above the one that raises it.
FILES = {
    "signing.py": '''
def check_signature(request, secret):
    """Compare the request's signature with ours."""
    if not verify(request.body, request.headers.get("sig"), secret):
        raise SignatureError(
            "the upstream refused the webhook signature "
            f"after {request.attempts} attempts"
        )
    return True
''',
    "retry.py": '''
def retry_refused_signature(webhook):
    """When the upstream refused the webhook signature, the webhook signature is checked
    again: the upstream webhook signature refused means the signature of the webhook was
    refused upstream, and refused webhook signatures are retried after attempts."""
    return schedule(webhook, attempts=3)
''',
    "tests/test_signing.py": """
def test_a_refused_signature_raises():
    with pytest.raises(SignatureError, match="the upstream refused the webhook signature"):
        check_signature(bad_request(), "s")
""",
}
QUESTION = 'Where is "the upstream refused the webhook signature after ... attempts" raised?'


@pytest.fixture(params=["edge", "server"])
async def store(
    request: pytest.FixtureRequest,
) -> AsyncIterator[tuple[VectorStore, dict[int, str]]]:
    chunks = [c for path, text in FILES.items() for c in chunk_file("api", path, text)]
    s = VectorStore.memory(BagOfWords()) if request.param == "edge" else server_standin()
    await s.upsert(list(enumerate(chunks, start=1)))
    yield s, {i: c.text for i, c in enumerate(chunks, start=1)}
    await s.close()


async def test_the_chunk_with_the_quoted_message_ranks_first(
    store: tuple[VectorStore, dict[int, str]],
) -> None:
    s, by_id = store
    asked: list[list[int]] = []

    async def texts(ids: Sequence[int]) -> dict[int, str]:
        asked.append(list(ids))
        return {i: by_id[i] for i in ids if i in by_id}

    plain = await s.search(QUESTION, k=3)
    assert plain[0].path == "retry.py"  # the words alone favour the wordier function

    hits = await s.search(QUESTION, k=3, texts=texts)
    assert hits[0].path == "signing.py"
    # The test quotes only the message's start: "after ... attempts" is not in it.
    assert "tests/test_signing.py" not in [h.path for h in hits[:2]]
    assert hits[0].symbol.startswith("signing.check_signature")
    assert asked and set(asked[0]) >= {h.chunk_id for h in hits}  # one read of the candidates


async def test_no_quote_no_text_read_and_the_ranking_unchanged(
    store: tuple[VectorStore, dict[int, str]],
) -> None:
    s, _ = store

    async def texts(ids: Sequence[int]) -> dict[int, str]:
        raise AssertionError("texts read for a question that quotes nothing")

    unquoted = "Where is the upstream refused the webhook signature error raised?"
    assert await s.search(unquoted, k=3, texts=texts) == await s.search(unquoted, k=3)
    # Baselines never reorder.
    for mode in ("dense", "sparse"):
        assert await s.search(QUESTION, k=3, mode=mode, texts=texts) == await s.search(
            QUESTION, k=3, mode=mode
        )


@pytest.mark.parametrize(
    ("question", "phrases"),
    [
        (
            'raise "No mandatory attributes allowed after a default"?',
            [("no mandatory attributes allowed after a default",)],
        ),
        ("the “Connection reset by peer” log", [("connection reset by peer",)]),
        (
            "raises 'Invalid lgblock. Can be 0 or in range 16 to 24.'?",
            [("invalid lgblock. can be 0 or in range 16 to 24.",)],
        ),
        ('"Signature age ... > ... seconds"', [("signature age", "seconds")]),
        ("I don't know why it isn't refusing the webhook", []),  # apostrophes, not quotes
        ('the "id" field and "utf-8"', []),  # words, not messages
        ("", []),
    ],
)
def test_quoted_phrases(question: str, phrases: list[tuple[str, ...]]) -> None:
    assert quoted_phrases(question) == phrases


@pytest.mark.parametrize(
    "code",
    [
        '"no mandatory attributes allowed "\n    "after a default"',  # Python, C
        'f"no mandatory attributes allowed "\n    f"after a default"',
        "'no mandatory attributes allowed ' +\n  'after a default'",  # JavaScript, Java
        '"No  mandatory attributes\tallowed after a default"',
    ],
)
def test_messages_continued_over_literals_are_found(code: str) -> None:
    (phrase,) = quoted_phrases('"no mandatory attributes allowed after a default"')
    assert contains_phrase(literal_text(code), phrase)


def test_fragments_must_come_in_order() -> None:
    assert contains_phrase("signature age 5 > 3 seconds", ("signature age", "seconds"))
    assert not contains_phrase("seconds: signature age", ("signature age", "seconds"))


@pytest.mark.parametrize(
    "text",
    ['"' + "\n" * 4000, '" ' + " " * 4000, ('" +' + "\n" * 10) * 300, '"' * 4000],
)
def test_a_quote_before_a_long_blank_run_is_read_in_one_pass(text: str) -> None:
    # Two whitespace runs meeting in the pattern made these take minutes (backtracking).
    assert literal_text(text).strip(' "+') == ""
