"""The console's policy view (core.operator.policy): a tenant's admin sees the rules that can
apply in their tenant only, and the explainer's fields are checked before anything is asked."""

from __future__ import annotations

import pytest

from core.operator.policy import PolicyView, describe_match
from core.policy import Match, Policy

POLICY = Policy.from_dict(
    {
        "rules": [
            {"name": "all", "grant": ["code.read"]},
            {"name": "t1 ops", "match": {"tenant": ["T1"], "channel": ["ops"]}, "grant": ["tts"]},
            {"name": "t2", "match": {"tenant": ["T2"]}, "grant": ["tts"]},
            {"name": "discord", "match": {"platform": ["discord"]}, "grant": ["tts"]},
        ]
    },
    source="/etc/threadline/policy.toml",
)


def test_the_rules_of_a_tenant() -> None:
    rules = PolicyView(POLICY).rules("slack", "T1")
    assert [r.label for r in rules.rules] == ["all", "t1 ops"]
    assert [r.position for r in rules.rules] == [1, 2]
    assert rules.hidden == 2 and rules.defaults.grant == ("ask",)
    assert rules.rules[1].match == "tenant T1 · channel ops"


def test_matches_read_as_lines() -> None:
    match = Match(channel=["ops", "help"], roles=["admin"], tenant=["T1"])
    assert describe_match(match) == "tenant T1 · channel ops, help · roles admin"
    assert describe_match(match, within_tenant=True) == "channel ops, help · roles admin"
    assert describe_match(Match()) == "everyone"


@pytest.mark.parametrize(
    ("channel", "user", "roles", "error"),
    [
        ("", "ada", "", "Give a channel."),
        ("ops", " ", "", "Give a user."),
        ("o" * 129, "ada", "", "longer than 128"),
        ("ops", "ada\x00", "", "may hold only"),
        ("ops", "ada", "admin, o'brien", "Roles may hold only"),
        ("ops", "ada", "r" * 65, "longer than 64"),
        ("ops", "ada", ",".join(["r"] * 21), "at most 20"),
        ("ops", "ada", "x" * 2000, "too long"),
    ],
)
def test_the_explainers_fields_are_checked(channel: str, user: str, roles: str, error: str) -> None:
    form = PolicyView.read_form(channel, user, roles)
    assert any(error in e for e in form.errors), form.errors
    with pytest.raises(ValueError, match="errors"):
        PolicyView(POLICY).explain("slack", "T1", form)


def test_a_good_question_is_answered_in_the_operators_tenant() -> None:
    form = PolicyView.read_form(" ops ", "ada", " admin ,, dev ")
    assert form.errors == () and form.channel == "ops"
    explained = PolicyView(POLICY).explain("slack", "T1", form)
    assert explained.identity.roles == frozenset({"admin", "dev"})
    assert explained.rules == ("all", "t1 ops")
