"""Keyword ranking for long-term memory (core/memory/ranking.py): tokenizer and Okapi BM25."""

from __future__ import annotations

import math

import pytest

from core.memory.ranking import STOPWORDS, bm25_scores, identifier_parts, rank, tokenize

# -- tokenizer -------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "tokens"),
    [
        ("getUserName", ["getusername", "get", "user", "name"]),
        ("HTTPServer", ["httpserver", "http", "server"]),
        ("parseJSONBody", ["parsejsonbody", "parse", "json", "body"]),
        ("helm_values_file", ["helm_values_file", "helm", "values", "file"]),
        ("blue-green-deploy", ["blue-green-deploy", "blue", "green", "deploy"]),
        ("MAX_RETRIES", ["max_retries", "max", "retries"]),
        ("x_axis", ["x_axis", "axis"]),  # one-letter parts are dropped, the whole stays
        ("__init__", ["init"]),  # leading/trailing underscores are not part of the name
        ("sha256 v2", ["sha256", "v2"]),  # digits do not split a word
        ("Deploy", ["deploy"]),
    ],
)
def test_identifiers_are_kept_whole_and_split_into_parts(text: str, tokens: list[str]) -> None:
    assert tokenize(text) == tokens


def test_sentences_are_lower_cased_and_lose_stopwords_and_punctuation() -> None:
    assert tokenize("We deploy to Production with Helm, not kubectl!") == [
        "deploy",
        "production",
        "helm",
        "not",  # negation matters in a fact: it is not a stopword
        "kubectl",
    ]
    assert tokenize("what is the") == []
    assert {"the", "a", "is", "we", "with"} <= STOPWORDS
    assert "not" not in STOPWORDS


def test_stopword_parts_are_dropped_but_the_identifier_is_kept() -> None:
    assert tokenize("is_ready") == ["is_ready", "ready"]


def test_non_latin_words_are_tokens() -> None:
    assert tokenize("部署 用 Helm") == ["部署", "用", "helm"]


def test_identifier_parts_of_a_single_word_are_empty() -> None:
    assert identifier_parts("deploy") == []
    assert identifier_parts("deployNow") == ["deploy", "now"]


# -- BM25 ------------------------------------------------------------------------------------


def test_bm25_matches_the_okapi_formula() -> None:
    docs = [["alpha", "beta"], ["beta", "gamma", "gamma"]]
    k1, b = 1.5, 0.75
    avgdl = 2.5
    idf_gamma = math.log(1 + (2 - 1 + 0.5) / (1 + 0.5))
    tf, dl = 2, 3
    expected = idf_gamma * tf * (k1 + 1) / (tf + k1 * (1 - b + b * dl / avgdl))
    scores = bm25_scores(["gamma"], docs)
    assert scores[0] == 0.0
    assert scores[1] == pytest.approx(expected)


def test_repeated_query_terms_count_once() -> None:
    docs = [["deploy", "helm"], ["lunch"]]
    assert bm25_scores(["deploy", "deploy"], docs) == bm25_scores(["deploy"], docs)


def test_the_relevant_fact_ranks_first() -> None:
    facts = [
        "Lunch is at noon on Fridays.",
        "We deploy to production with Helm from the release branch.",
        "The staging database is restored every night.",
        "Code review needs two approvals.",
    ]
    ranked = rank("how do we deploy to production?", facts)
    assert ranked[0][0] == 1
    assert [i for i, _ in ranked] == [1]  # nothing else shares a term
    assert ranked[0][1] > 0


def test_rare_terms_weigh_more_than_common_ones() -> None:
    facts = [
        "deploy the api with the deploy script",
        "deploy dashboards after the api",
        "deploy with helm",
    ]
    # "deploy" is everywhere, "helm" in one fact only: that fact wins despite fewer hits.
    assert rank("deploy helm", facts)[0][0] == 2


def test_shorter_documents_win_on_equal_term_frequency() -> None:
    facts = ["helm charts live in the infra repository under charts slash services", "use helm"]
    assert [i for i, _ in rank("helm", facts)] == [1, 0]


def test_identifier_queries_find_facts_that_spell_them_differently() -> None:
    facts = ["Values live in helm_values.yaml", "Lunch menu"]
    assert [i for i, _ in rank("helm", facts)] == [0]
    assert [i for i, _ in rank("helmValues", facts)] == [0]
    assert [i for i, _ in rank("retry policy", ["set maxRetryPolicy to 3", "no"])] == [0]


def test_empty_and_stopword_only_queries_match_nothing() -> None:
    facts = ["We deploy with Helm", "The build is green"]
    assert rank("", facts) == []
    assert rank("   ", facts) == []
    assert rank("what is the", facts) == []
    assert bm25_scores([], [["deploy"]]) == [0.0]


def test_no_documents() -> None:
    assert bm25_scores(["deploy"], []) == []
    assert rank("deploy", []) == []


def test_rank_top_k_and_ties_keep_input_order() -> None:
    facts = ["helm one", "helm two", "helm three"]
    assert [i for i, _ in rank("helm", facts)] == [0, 1, 2]
    assert [i for i, _ in rank("helm", facts, k=2)] == [0, 1]
    assert rank("helm", facts, k=0) == []
