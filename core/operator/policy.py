"""The console's view of the policy: the rules as loaded that can apply in one tenant, and the
explainer's question (an identity of that tenant, checked) answered by `Policy.explain`.

A tenant's admin sees the defaults and the rules that may match someone of their platform and
tenant; rules naming only other tenants or platforms are counted, not shown (they name other
tenants' channels and users).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from core.policy import Explanation, Identity, Match, Policy, Rule, rule_label

MAX_NAME = 128  # a channel's or user's id, as the database stores them
MAX_ROLE = 64
MAX_ROLES = 20
# Channel and user ids as the platforms write them (Slack's C0123, Discord's snowflakes,
# console names, e-mail-like user names): no spaces, quotes or angle brackets.
_NAME = re.compile(r"^[\w.@:#/+-]+$")
_ROLE = re.compile(r"^[\w.:-]+$")
NAME_CHARS = "letters, digits and . _ - @ : # / +"
ROLE_CHARS = "letters, digits and . _ - :"


def applies_in(match: Match, platform: str, tenant: str) -> bool:
    """Whether a rule with this match may apply to someone of `platform` and `tenant`."""
    return (match.platform is None or platform in match.platform) and (
        match.tenant is None or tenant in match.tenant
    )


def describe_match(match: Match, *, within_tenant: bool = False) -> str:
    """A match as a line: `channel ops, help · roles admin`; `everyone` when it is empty.
    `within_tenant`: leave out the platform and tenant (a page about one tenant)."""
    fields = [("channel", match.channel), ("user", match.user), ("roles", match.roles)]
    if not within_tenant:
        fields = [("platform", match.platform), ("tenant", match.tenant), *fields]
    parts = [f"{field} {', '.join(values)}" for field, values in fields if values is not None]
    return " · ".join(parts) or ("everyone in the tenant" if within_tenant else "everyone")


@dataclass(frozen=True, slots=True)
class RuleRow:
    """One rule of the file, or the defaults (label "defaults", match "everyone")."""

    label: str
    position: int  # 1-based place in the file; 0 for the defaults
    match: str
    specificity: int
    grant: tuple[str, ...]
    deny: tuple[str, ...]
    budgets: tuple[tuple[str, int], ...]
    repos: tuple[str, ...] | None
    skills: tuple[str, ...] | None
    pinned_skills: tuple[str, ...] | None
    model: str | None


@dataclass(frozen=True, slots=True)
class PolicyRules:
    source: str  # the policy file
    defaults: RuleRow
    rules: tuple[RuleRow, ...]  # those that may apply in the tenant, in file order
    hidden: int  # rules for other tenants or platforms only


@dataclass(frozen=True, slots=True)
class ExplainForm:
    """The explainer's fields as typed (shown again in the form), and what is wrong with them."""

    channel: str
    user: str
    roles: str
    errors: tuple[str, ...] = ()


def _rule_row(position: int, rule: Rule) -> RuleRow:
    return RuleRow(
        label=rule_label(position - 1, rule),
        position=position,
        match=describe_match(rule.match),
        specificity=rule.match.specificity(),
        grant=tuple(rule.grant),
        deny=tuple(rule.deny),
        budgets=tuple(rule.budgets.model_dump(exclude_none=True).items()),
        repos=tuple(rule.repos) if rule.repos is not None else None,
        skills=tuple(rule.skills) if rule.skills is not None else None,
        pinned_skills=tuple(rule.pinned_skills) if rule.pinned_skills is not None else None,
        model=rule.model,
    )


def _name_errors(label: str, value: str) -> list[str]:
    if not value:
        return [f"Give a {label}."]
    if len(value) > MAX_NAME:
        return [f"The {label} is longer than {MAX_NAME} characters."]
    if not _NAME.match(value):
        return [f"The {label} may hold only {NAME_CHARS}."]
    return []


def parse_roles(text: str) -> tuple[frozenset[str], list[str]]:
    """Comma-separated roles (blank ones ignored), and what is wrong with them."""
    roles = [r.strip() for r in text.split(",") if r.strip()]
    errors: list[str] = []
    if len(roles) > MAX_ROLES:
        errors.append(f"Give at most {MAX_ROLES} roles.")
    for role in roles:
        if len(role) > MAX_ROLE:
            errors.append(f"A role is longer than {MAX_ROLE} characters.")
            break
        if not _ROLE.match(role):
            errors.append(f"Roles may hold only {ROLE_CHARS}, separated by commas.")
            break
    return frozenset(roles), errors


class PolicyView:
    def __init__(self, policy: Policy) -> None:
        self._policy = policy

    def rules(self, platform: str, tenant: str) -> PolicyRules:
        doc = self._policy.document
        d = doc.defaults
        defaults = RuleRow(
            label="defaults",
            position=0,
            match="everyone",
            specificity=0,
            grant=tuple(d.permissions),
            deny=(),
            budgets=tuple(d.budgets.model_dump().items()),
            repos=tuple(d.repos),
            skills=tuple(d.skills),
            pinned_skills=tuple(d.pinned_skills),
            model=d.model,
        )
        shown = tuple(
            _rule_row(i + 1, r)
            for i, r in enumerate(doc.rules)
            if applies_in(r.match, platform, tenant)
        )
        return PolicyRules(self._policy.source, defaults, shown, len(doc.rules) - len(shown))

    @staticmethod
    def read_form(channel: str, user: str, roles: str) -> ExplainForm:
        """The explainer's fields, checked (lengths and characters)."""
        channel, user = channel.strip(), user.strip()
        errors = _name_errors("channel", channel) + _name_errors("user", user)
        if len(roles) > MAX_ROLES * (MAX_ROLE + 2):
            errors.append("The roles are too long.")
        else:
            errors += parse_roles(roles)[1]
        return ExplainForm(channel, user, roles.strip(), tuple(errors))

    def explain(self, platform: str, tenant: str, form: ExplainForm) -> Explanation:
        """The explanation for the identity the (valid) form names, in `platform`/`tenant`."""
        if form.errors:
            raise ValueError("the form has errors: " + "; ".join(form.errors))
        who = Identity(platform, tenant, form.channel, form.user, parse_roles(form.roles)[0])
        return self._policy.explain(who)
