"""`Policy.explain`: the same answer as `Policy.resolve` (a property over generated policies
and identities), with the rule behind each part named."""

from __future__ import annotations

from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from core.policy import DEFAULTS, Identity, Policy

PLATFORMS = ["slack", "discord"]
TENANTS = ["T1", "T2"]
CHANNELS = ["c1", "c2", "c3"]
USERS = ["u1", "u2"]
ROLES = ["admin", "ops", "dev"]
PERMISSIONS = ["ask", "code.read", "code.index", "skills.use", "admin", "tts", "mcp:t"]
PERMISSIONS += ["mcp:t.lookup"]
NAMES = ["deploy", "triage", "*"]
BUDGETS = {
    "tool_calls_per_request": st.integers(0, 20),
    "iterations_per_request": st.integers(1, 9),
    "tokens_per_user_per_day": st.integers(0, 10**6),
}


def _some(values: list[str]) -> st.SearchStrategy[list[str] | None]:
    return st.none() | st.lists(st.sampled_from(values), min_size=1, max_size=2, unique=True)


def _optional(key: str, strategy: st.SearchStrategy[Any]) -> st.SearchStrategy[dict[str, Any]]:
    return st.none().map(lambda _: {}) | strategy.map(lambda v: {key: v})


@st.composite
def rules(draw: st.DrawFn) -> dict[str, Any]:
    match = {
        k: v
        for k, v in {
            "platform": draw(_some(PLATFORMS)),
            "tenant": draw(_some(TENANTS)),
            "channel": draw(_some(CHANNELS)),
            "user": draw(_some(USERS)),
            "roles": draw(_some(ROLES)),
        }.items()
        if v is not None
    }
    rule: dict[str, Any] = {
        "match": match,
        "grant": draw(st.lists(st.sampled_from(PERMISSIONS), max_size=3)),
        "deny": draw(st.lists(st.sampled_from(PERMISSIONS), max_size=2)),
        "budgets": draw(st.fixed_dictionaries({}, optional=BUDGETS)),
    }
    rule |= draw(_optional("name", st.sampled_from(["a", "b", "ops rule"])))
    for key in ("repos", "skills", "pinned_skills"):
        rule |= draw(_optional(key, st.lists(st.sampled_from(NAMES), min_size=1, max_size=2)))
    rule |= draw(_optional("model", st.sampled_from(["strong", "cheap"])))
    return rule


@st.composite
def policies(draw: st.DrawFn) -> Policy:
    defaults: dict[str, Any] = {
        "permissions": draw(st.lists(st.sampled_from(PERMISSIONS), max_size=3)),
        "budgets": draw(st.fixed_dictionaries({}, optional=BUDGETS)),
    }
    defaults |= draw(_optional("skills", st.lists(st.sampled_from(NAMES), max_size=2)))
    defaults |= draw(_optional("model", st.sampled_from(["default-ish"])))
    return Policy.from_dict({"defaults": defaults, "rules": draw(st.lists(rules(), max_size=6))})


identities = st.builds(
    Identity,
    platform=st.sampled_from(PLATFORMS),
    tenant=st.sampled_from(TENANTS),
    channel=st.sampled_from(CHANNELS),
    user=st.sampled_from(USERS),
    roles=st.frozensets(st.sampled_from(ROLES), max_size=2),
)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(policy=policies(), who=st.lists(identities, min_size=1, max_size=8))
def test_explain_agrees_with_resolve(policy: Policy, who: list[Identity]) -> None:
    for identity in who:
        explained = policy.explain(identity)
        assert explained.grant() == policy.resolve(identity)
        # Every source named is the defaults or a rule that matched.
        named = {s for p in explained.permissions for s in p.sources}
        named |= {b.source for b in explained.budgets} | {r for _, r in explained.denied}
        named |= {explained.skills.source, explained.model.source, explained.repos.source}
        assert named <= {DEFAULTS, *explained.rules}
        # A denied permission is not held.
        assert not {p for p, _ in explained.denied} & {p.permission for p in explained.permissions}


POLICY = Policy.from_dict(
    {
        "defaults": {
            "permissions": ["ask", "skills.use"],
            "budgets": {"tokens_per_user_per_day": 9},
        },
        "rules": [
            {"name": "admins", "match": {"roles": ["admin"]}, "grant": ["admin", "ask"]},
            {
                "name": "ops",
                "match": {"channel": ["ops"]},
                "grant": ["mcp:t"],
                "skills": ["deploy"],
                "budgets": {"tokens_per_user_per_day": 500},
                "model": "strong",
            },
            {"match": {"channel": ["ops"], "user": ["mallory"]}, "deny": ["mcp:t", "ask"]},
        ],
    }
)


def test_each_part_names_the_rule_that_decided_it() -> None:
    explained = POLICY.explain(Identity("slack", "T1", "ops", "ada", frozenset({"admin"})))
    assert explained.rules == ("admins", "ops")
    held = {p.permission: p.sources for p in explained.permissions}
    assert held == {
        "ask": ("defaults", "admins"),
        "admin": ("admins",),
        "mcp:t": ("ops",),
        "skills.use": ("defaults",),
    }
    assert [p.permission for p in explained.mcp] == ["mcp:t"]
    budgets = {b.name: (b.value, b.source) for b in explained.budgets}
    assert budgets["tokens_per_user_per_day"] == (500, "ops")
    assert budgets["tool_calls_per_request"] == (8, "defaults")
    assert (explained.model.value, explained.model.source) == ("strong", "ops")
    assert explained.skills.value == frozenset({"deploy"}) and explained.skills.source == "ops"
    assert explained.denied == ()


def test_a_deny_names_its_rule_and_an_unnamed_rule_its_place() -> None:
    explained = POLICY.explain(Identity("slack", "T1", "ops", "mallory", frozenset()))
    assert explained.rules == ("ops", "rule #3")
    assert dict(explained.denied) == {"mcp:t": "rule #3", "ask": "rule #3"}
    assert {p.permission for p in explained.permissions} == {"skills.use"}
    assert explained.grant() == POLICY.resolve(explained.identity)
