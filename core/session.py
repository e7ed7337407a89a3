"""Trusted tool sessions: what one request may do, resolved from the verified identity.

A `ToolSession` is built by the server from a `core.Request` (which adapters build only from
verified platform events) and the policy file. Nothing the model writes can reach it: tools get
it through `ToolContext`, which is never part of a tool's JSON schema, and its permissions and
budgets are frozen. Only the per-request counters move, and only the dispatcher and the agent
loop move them.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from core.errors import PermissionDenied
from core.policy import ALL_REPOS, ALL_SKILLS, Budgets, Identity, Policy
from core.quotas import QuotaKey, QuotaLimit
from core.request import ConversationKey, Request


@dataclass(slots=True)
class RequestCounters:
    """Per-request spending; starts at zero for every request."""

    tool_calls: int = 0
    iterations: int = 0


@dataclass(slots=True)
class ToolNarrowing:
    """Tool limits that skills loaded during this request set (`allowed-tools`). Each one can
    only narrow what the session may do: the allowed set is the intersection of them all, and
    permissions are still checked for every call."""

    allowed: frozenset[str] | None = None  # tool names; None = not narrowed
    by: list[str] = field(default_factory=list)  # the skills that narrowed

    def narrow(self, tools: frozenset[str], source: str) -> None:
        self.allowed = tools if self.allowed is None else self.allowed & tools
        self.by.append(source)

    def allows(self, tool: str) -> bool:
        return self.allowed is None or tool in self.allowed


@dataclass(slots=True)
class RequestEffects:
    """What a tool asked core to do with this request's reply once the agent has answered
    (the `speak` tool: attach audio of the answer). Tools set it; only core acts on it.
    `voice_asked` is core's note that the message reads like a request for audio, so the
    `speak` tool is offered (its schema would cost prompt tokens on every call otherwise)."""

    speak: bool = False
    voice_asked: bool = False


@dataclass(frozen=True, slots=True)
class ToolSession:
    identity: Identity
    conversation: ConversationKey
    request_id: str
    permissions: frozenset[str]
    budgets: Budgets
    rules: tuple[str, ...] = ()
    counters: RequestCounters = field(default_factory=RequestCounters)
    repos: frozenset[str] = frozenset({ALL_REPOS})  # code repositories readable here
    skills: frozenset[str] = frozenset({ALL_SKILLS})  # skills usable here ("*" = all)
    pinned_skills: tuple[str, ...] = ()  # skills loaded in full up front
    model: str | None = None  # the provider the policy chose; None = the default model
    narrowing: ToolNarrowing = field(default_factory=ToolNarrowing)
    effects: RequestEffects = field(default_factory=RequestEffects)

    def allows(self, permission: str) -> bool:
        if permission in self.permissions:
            return True
        # `mcp:NAME` grants every tool of server NAME (`mcp:NAME.tool`).
        server, dot, _ = permission.partition(".")
        return bool(dot) and server.startswith("mcp:") and server in self.permissions

    def allows_repo(self, name: str) -> bool:
        """Whether this conversation may read (search, list, open) the repository `name`."""
        return ALL_REPOS in self.repos or name in self.repos

    def allows_skill(self, name: str) -> bool:
        """Whether this conversation may use the skill `name` (policy allowlist and the
        `skills.use` permission)."""
        return self.allows("skills.use") and (ALL_SKILLS in self.skills or name in self.skills)

    def require(self, permission: str) -> None:
        if permission not in self.permissions:
            raise PermissionDenied(permission)

    def token_limits(self) -> list[QuotaLimit]:
        who = self.identity
        return [
            QuotaLimit(
                QuotaKey(who.platform, who.tenant, "user", who.user, "tokens"),
                self.budgets.tokens_per_user_per_day,
                "your daily token budget",
            ),
            QuotaLimit(
                QuotaKey(who.platform, who.tenant, "channel", who.channel, "tokens"),
                self.budgets.tokens_per_channel_per_day,
                "this channel's daily token budget",
            ),
        ]

    def tts_limits(self) -> list[QuotaLimit]:
        who = self.identity
        return [
            QuotaLimit(
                QuotaKey(who.platform, who.tenant, "user", who.user, "tts_chars"),
                self.budgets.tts_chars_per_user_per_day,
                "your daily voice (TTS) budget",
            )
        ]


def open_session(request: Request, policy: Policy) -> ToolSession:
    identity = Identity(
        platform=request.platform,
        tenant=request.tenant,
        channel=request.channel,
        user=request.user,
        roles=frozenset(request.roles),
    )
    grant = policy.resolve(identity)
    return ToolSession(
        identity=identity,
        conversation=request.conversation,
        request_id=request.request_id,
        permissions=grant.permissions,
        budgets=grant.budgets,
        rules=grant.rules,
        repos=grant.repos,
        skills=grant.skills,
        pinned_skills=grant.pinned_skills,
        model=grant.model,
    )
