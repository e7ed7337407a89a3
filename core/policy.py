"""The policy file: who may do what, and how much.

Format (TOML), documented in the README:

    [defaults]
    permissions = ["ask", "code.read"]
    [defaults.budgets]
    tool_calls_per_request = 8

    [[rules]]
    name = "ops can index"
    match = { platform = "slack", tenant = "T1", roles = ["ops"] }
    grant = ["code.index"]
    deny = []
    budgets = { tokens_per_user_per_day = 500000 }
    repos = ["api", "web"]
    skills = ["incident-triage"]
    pinned_skills = ["incident-triage"]
    model = "strong"

Resolution: permissions start from the defaults; matching rules are applied from least to most
specific (ties in file order), each adding its grants and then removing its denies, so the most
specific rule has the last word. Each budget comes from the most specific matching rule that
sets it (ties: later in the file), else from the defaults. `repos` (the code repositories a
conversation may read; `"*"` = all), `skills` (the skills it may use; `"*"` = all),
`pinned_skills` (loaded in full up front) and `model` (a `[providers.NAME]` of the settings
file) are resolved the same way as a budget.
"""

from __future__ import annotations

import re
import tomllib
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated, Generic, Literal, TypeVar, get_args

from pydantic import AfterValidator, BaseModel, BeforeValidator, ConfigDict, Field, ValidationError

from core.errors import ConfigError

Permission = Literal[
    "ask",
    "code.read",
    "code.index",
    "memory.read",
    "memory.write",
    "memory.write_global",
    "memory.delete",
    "skills.use",
    "tts",
    "digest.manage",
    "admin",
]
ALL_PERMISSIONS: frozenset[str] = frozenset(get_args(Permission))
# MCP servers' tools: `mcp:NAME` (every tool of server NAME) or `mcp:NAME.tool` (one tool).
MCP_PERMISSION = re.compile(
    r"^mcp:([a-z0-9](?:[a-z0-9-]|_(?!_)){0,30})(?:\.([A-Za-z0-9_-]{1,64}))?$"
)


def is_permission(value: str) -> bool:
    return value in ALL_PERMISSIONS or MCP_PERMISSION.match(value) is not None


def _permission(value: str) -> str:
    if is_permission(value):
        return value
    if value.startswith("mcp:"):
        raise ValueError(
            f"malformed MCP permission {value!r}; write mcp:SERVER or mcp:SERVER.tool "
            "(server: lower-case letters, digits, '-', '_'; tool: letters, digits, '-', '_')"
        )
    raise ValueError(
        f"unknown permission {value!r}; known: {', '.join(sorted(ALL_PERMISSIONS))}, "
        "mcp:SERVER, mcp:SERVER.tool"
    )


PermissionName = Annotated[str, AfterValidator(_permission)]


class PolicyError(ConfigError, ValueError):
    """The policy file cannot be used; the message says where and why."""


def _one_or_many(value: object) -> object:
    # Anything but an array counts as one item, so that `user = 42` is reported as "must be a
    # string" rather than as a puzzling "must be a list".
    return value if isinstance(value, list) else [value]


StrList = Annotated[list[str], BeforeValidator(_one_or_many)]


class _Strict(BaseModel):
    # strict: TOML values are typed, so `tokens_per_user_per_day = true` (or 1.5, or "10") is a
    # mistake to report, not a value to convert.
    model_config = ConfigDict(extra="forbid", frozen=True, strict=True)


class Budgets(_Strict):
    """Limits; 0 means nothing is allowed. Daily quotas reset at 00:00 UTC."""

    tool_calls_per_request: int = Field(8, ge=0)
    iterations_per_request: int = Field(5, ge=1)
    tokens_per_user_per_day: int = Field(200_000, ge=0)
    tokens_per_channel_per_day: int = Field(1_000_000, ge=0)
    tts_chars_per_user_per_day: int = Field(20_000, ge=0)


class PartialBudgets(_Strict):
    tool_calls_per_request: int | None = Field(None, ge=0)
    iterations_per_request: int | None = Field(None, ge=1)
    tokens_per_user_per_day: int | None = Field(None, ge=0)
    tokens_per_channel_per_day: int | None = Field(None, ge=0)
    tts_chars_per_user_per_day: int | None = Field(None, ge=0)


class Match(_Strict):
    """Every field given must match; a list matches any of its values. `roles` matches when the
    user holds at least one of them. An empty match applies to everyone."""

    platform: StrList | None = None
    tenant: StrList | None = None
    channel: StrList | None = None
    user: StrList | None = None
    roles: StrList | None = None

    def specificity(self) -> int:
        return sum(
            v is not None for v in (self.platform, self.tenant, self.channel, self.user, self.roles)
        )


ALL_REPOS = "*"
ALL_SKILLS = "*"


def _repo_names(value: list[str]) -> list[str]:
    for name in value:
        if not name.strip():
            raise ValueError("repository names must not be empty")
    return value


RepoList = Annotated[list[str], BeforeValidator(_one_or_many), AfterValidator(_repo_names)]


def _skill_names(value: list[str]) -> list[str]:
    for name in value:
        if not name.strip():
            raise ValueError("skill names must not be empty")
    return [name.strip().lower() for name in value]


SkillList = Annotated[list[str], BeforeValidator(_one_or_many), AfterValidator(_skill_names)]


def _model_name(value: str) -> str:
    if not value.strip():
        raise ValueError("the model must name a [providers.NAME] entry of the settings file")
    return value.strip()


ModelName = Annotated[str, AfterValidator(_model_name)]


class Rule(_Strict):
    name: str = ""
    match: Match = Match()
    grant: list[PermissionName] = []
    deny: list[PermissionName] = []
    budgets: PartialBudgets = PartialBudgets()
    repos: RepoList | None = None  # None: this rule does not decide which repos are readable
    skills: SkillList | None = None  # None: this rule does not decide which skills are usable
    pinned_skills: SkillList | None = None
    model: ModelName | None = None  # None: this rule does not choose the model


class Defaults(_Strict):
    permissions: list[PermissionName] = ["ask"]
    budgets: Budgets = Budgets()
    repos: RepoList = [ALL_REPOS]
    skills: SkillList = [ALL_SKILLS]
    pinned_skills: SkillList = []
    model: ModelName | None = None  # None: the configured default model


class PolicyDocument(_Strict):
    defaults: Defaults = Defaults()
    rules: list[Rule] = []


@dataclass(frozen=True, slots=True)
class Identity:
    """The verified identity a policy is resolved for (built from `core.Request` only)."""

    platform: str
    tenant: str
    channel: str
    user: str
    roles: frozenset[str]


@dataclass(frozen=True, slots=True)
class Grant:
    """The outcome of resolving the policy for one identity."""

    permissions: frozenset[str]
    budgets: Budgets
    rules: tuple[str, ...]
    repos: frozenset[str] = frozenset({ALL_REPOS})  # repository names; "*" = every repository
    skills: frozenset[str] = frozenset({ALL_SKILLS})  # skill names; "*" = every skill
    pinned_skills: tuple[str, ...] = ()
    model: str | None = None  # a provider name; None = the default model


T = TypeVar("T")
DEFAULTS = "defaults"  # where a part of an explanation came from when no rule decided it


def rule_label(index: int, rule: Rule) -> str:
    """A rule as people see it: its name, or its place in the file (`rule #3`)."""
    return rule.name or f"rule #{index + 1}"


@dataclass(frozen=True, slots=True)
class Sourced(Generic[T]):
    value: T
    source: str  # DEFAULTS or a rule's label


@dataclass(frozen=True, slots=True)
class PermissionSource:
    permission: str
    sources: tuple[str, ...]  # each place that granted it (the last one decided), in order


@dataclass(frozen=True, slots=True)
class BudgetSource:
    name: str
    value: int
    source: str


@dataclass(frozen=True, slots=True)
class Explanation:
    """`Policy.explain`: a `Grant` with the source of each part."""

    identity: Identity
    rules: tuple[str, ...]  # the matching rules, in the order they were applied
    permissions: tuple[PermissionSource, ...]  # sorted by permission
    denied: tuple[tuple[str, str], ...]  # (permission, the rule whose deny removed it)
    budgets: tuple[BudgetSource, ...]  # in the order of `Budgets`' fields
    repos: Sourced[frozenset[str]]
    skills: Sourced[frozenset[str]]
    pinned_skills: Sourced[tuple[str, ...]]
    model: Sourced[str | None]

    @property
    def mcp(self) -> tuple[PermissionSource, ...]:
        """The MCP grants among the permissions (`mcp:NAME`, `mcp:NAME.tool`)."""
        return tuple(p for p in self.permissions if p.permission.startswith("mcp:"))

    def grant(self) -> Grant:
        """The `Grant` this explains (what `Policy.resolve` returns for the same identity)."""
        return Grant(
            permissions=frozenset(p.permission for p in self.permissions),
            budgets=Budgets.model_validate({b.name: b.value for b in self.budgets}),
            rules=self.rules,
            repos=self.repos.value,
            skills=self.skills.value,
            pinned_skills=self.pinned_skills.value,
            model=self.model.value,
        )


def _matches(match: Match, who: Identity) -> bool:
    checks = (
        (match.platform, who.platform),
        (match.tenant, who.tenant),
        (match.channel, who.channel),
        (match.user, who.user),
    )
    if any(allowed is not None and value not in allowed for allowed, value in checks):
        return False
    return match.roles is None or bool(who.roles.intersection(match.roles))


class Policy:
    def __init__(self, document: PolicyDocument, source: str = "<memory>") -> None:
        self.document = document
        self.source = source

    @classmethod
    def load(cls, path: Path) -> Policy:
        try:
            raw = tomllib.loads(path.read_text(encoding="utf-8"))
        except FileNotFoundError:
            raise PolicyError(f"policy file {path} does not exist (THREADLINE_POLICY)") from None
        except tomllib.TOMLDecodeError as exc:
            raise PolicyError(f"policy file {path} is not valid TOML: {exc}") from None
        except UnicodeDecodeError:
            raise PolicyError(f"policy file {path} is not UTF-8 text") from None
        except OSError as exc:
            raise PolicyError(
                f"policy file {path} cannot be read: {exc.strerror or exc} (THREADLINE_POLICY)"
            ) from None
        return cls.from_dict(raw, source=str(path))

    @classmethod
    def from_dict(cls, raw: dict[str, object], source: str = "<memory>") -> Policy:
        try:
            return cls(PolicyDocument.model_validate(raw), source)
        except ValidationError as exc:
            raise PolicyError(_describe(exc, raw, source)) from None

    def resolve(self, who: Identity) -> Grant:
        doc = self.document
        # Stable sort keeps file order among rules of equal specificity.
        matching = sorted(
            ((i, r) for i, r in enumerate(doc.rules) if _matches(r.match, who)),
            key=lambda item: item[1].match.specificity(),
        )
        permissions = set(doc.defaults.permissions)
        budgets = doc.defaults.budgets.model_dump()
        repos = doc.defaults.repos
        skills, pinned, model = doc.defaults.skills, doc.defaults.pinned_skills, doc.defaults.model
        for _, rule in matching:
            permissions.update(rule.grant)
            permissions.difference_update(rule.deny)
            budgets.update(rule.budgets.model_dump(exclude_none=True))
            if rule.repos is not None:  # like a budget: the most specific setter wins
                repos = rule.repos
            if rule.skills is not None:
                skills = rule.skills
            if rule.pinned_skills is not None:
                pinned = rule.pinned_skills
            if rule.model is not None:
                model = rule.model
        return Grant(
            permissions=frozenset(permissions),
            budgets=Budgets.model_validate(budgets),
            rules=tuple(r.name or f"rule #{i + 1}" for i, r in matching),
            repos=frozenset(repos),
            skills=frozenset(skills),
            pinned_skills=tuple(dict.fromkeys(pinned)),
            model=model,
        )

    def explain(self, who: Identity) -> Explanation:
        """What `resolve` gives `who`, and where each part came from ("defaults" or the name of
        the rule that decided it). Walks the rules as `resolve` does; `Explanation.grant()`
        equals `resolve(who)` (tested), so the console's explainer cannot drift from it."""
        doc = self.document
        matching = sorted(
            ((i, r) for i, r in enumerate(doc.rules) if _matches(r.match, who)),
            key=lambda item: item[1].match.specificity(),
        )
        # Each permission held, with every place that granted it since it was last denied.
        held: dict[str, list[str]] = {p: [DEFAULTS] for p in doc.defaults.permissions}
        denied: dict[str, str] = {}
        budgets = {k: (v, DEFAULTS) for k, v in doc.defaults.budgets.model_dump().items()}
        repos = Sourced(frozenset(doc.defaults.repos), DEFAULTS)
        skills = Sourced(frozenset(doc.defaults.skills), DEFAULTS)
        pinned = Sourced(tuple(dict.fromkeys(doc.defaults.pinned_skills)), DEFAULTS)
        model = Sourced(doc.defaults.model, DEFAULTS)
        for i, rule in matching:
            label = rule_label(i, rule)
            for permission in rule.grant:
                held.setdefault(permission, []).append(label)
                denied.pop(permission, None)
            for permission in rule.deny:
                if held.pop(permission, None) is not None or permission in denied:
                    denied[permission] = label
            for key, value in rule.budgets.model_dump(exclude_none=True).items():
                budgets[key] = (value, label)
            if rule.repos is not None:
                repos = Sourced(frozenset(rule.repos), label)
            if rule.skills is not None:
                skills = Sourced(frozenset(rule.skills), label)
            if rule.pinned_skills is not None:
                pinned = Sourced(tuple(dict.fromkeys(rule.pinned_skills)), label)
            if rule.model is not None:
                model = Sourced(rule.model, label)
        return Explanation(
            identity=who,
            rules=tuple(rule_label(i, r) for i, r in matching),
            permissions=tuple(
                PermissionSource(p, tuple(dict.fromkeys(held[p]))) for p in sorted(held)
            ),
            denied=tuple(sorted(denied.items())),
            budgets=tuple(BudgetSource(k, v, source) for k, (v, source) in budgets.items()),
            repos=repos,
            skills=skills,
            pinned_skills=pinned,
            model=model,
        )

    def models(self) -> list[tuple[str, str]]:
        """(where, provider name) for every model the policy names, for start-up checks."""
        named = []
        if self.document.defaults.model is not None:
            named.append(("defaults", self.document.defaults.model))
        for i, rule in enumerate(self.document.rules):
            if rule.model is not None:
                where = f"rules[{i + 1}]" + (f" ({rule.name!r})" if rule.name else "")
                named.append((where, rule.model))
        return named


# What pydantic's type errors expect, in TOML's words.
_EXPECTED = {
    "int_type": "an integer",
    "string_type": "a string",
    "list_type": "an array",
    "dict_type": "a table",
    "model_type": "a table",
}


def toml_kind(value: object) -> str:
    """TOML's name for a value `tomllib` produced (never the value: it may be a secret)."""
    for kind, name in (
        (bool, "a boolean"),  # before int: a bool is an int in Python
        (int, "an integer"),
        (float, "a float"),
        (str, "a string"),
        (list, "an array"),
        (dict, "a table"),
    ):
        if isinstance(value, kind):
            return name
    return "a date or time"


def _describe(exc: ValidationError, raw: dict[str, object], source: str) -> str:
    lines = [f"policy file {source} has {exc.error_count()} problem(s):"]
    for err in exc.errors():
        loc = list(err["loc"])
        where = _location(loc, raw)
        expected = _EXPECTED.get(err["type"])
        if err["type"] == "literal_error" and not isinstance(err["input"], str):
            expected = "a string"
        if expected is not None:
            msg = f"must be {expected}, not {toml_kind(err['input'])}"
        elif err["type"] == "literal_error":  # Permission is the only Literal in the format
            msg = (
                f"unknown permission {err['input']!r}; known: {', '.join(sorted(ALL_PERMISSIONS))}"
            )
        elif err["type"] == "extra_forbidden":
            msg = "unknown key"
        else:
            msg = str(err["msg"]).removeprefix("Value error, ")
        lines.append(f"  - {where}: {msg}")
    return "\n".join(lines)


def _location(loc: list[int | str], raw: dict[str, object]) -> str:
    parts: list[str] = []
    if len(loc) >= 2 and loc[0] == "rules" and isinstance(loc[1], int):
        rules = raw.get("rules")
        name = ""
        if isinstance(rules, list) and loc[1] < len(rules) and isinstance(rules[loc[1]], dict):
            given = rules[loc[1]].get("name", "")
            name = given if isinstance(given, str) else ""  # a wrong type is the problem itself
        parts.append(f"rules[{loc[1] + 1}]" + (f" ({name!r})" if name else ""))
        loc = loc[2:]
    parts.extend(str(p) for p in loc if not isinstance(p, int))
    return ".".join(parts) or "(top level)"
