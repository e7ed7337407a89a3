"""The console's view of the MCP servers: their state and tools, the policy's grants for them in
one tenant, tool definitions that changed since approval (as a line diff), and the tenant's
calls waiting for a user's confirmation.

Servers and tool pins are global: the settings file configures a server for the whole
deployment, and `/mcp approve SERVER` trusts its new definitions for everyone. The console's
Approve is that same approval (`McpManager.approve`), allowed to whoever `/mcp approve` would
allow (the `ask` and `admin` permissions), and it approves exactly the changes the page showed:
a definition that changed again in between is not approved unseen.
"""

from __future__ import annotations

import difflib
import hashlib
import json
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any, Literal

from sqlmodel import col, select

from core.mcp.manager import McpManager
from core.mcp.pins import PendingChange
from core.mcp.state import ServerState, shown_name
from core.operator.policy import applies_in, describe_match
from core.policy import DEFAULTS, Identity, Policy, rule_label
from core.store.engine import Database

APPROVE_NEEDS = ("ask", "admin")  # what `/mcp approve` needs: the command's and the verb's
MAX_DIFF_LINES = 400  # a server may describe a tool at any length; the page stays readable
MAX_DIFF_LINE_CHARS = 400
MAX_CONFIRMATIONS = 100
LineKind = Literal["add", "del", "hunk", "ctx", "note"]


@dataclass(frozen=True, slots=True)
class ToolRow:
    name: str  # as people write it: SERVER.tool
    description: str
    confirm: bool  # asks the requesting user first
    pin: str  # new | pinned | changed | unapproved


@dataclass(frozen=True, slots=True)
class GrantRow:
    source: str  # "defaults" or a rule's label
    where: str  # the rule's match
    permission: str
    effect: Literal["grant", "deny"]


@dataclass(frozen=True, slots=True)
class DiffLine:
    kind: LineKind
    text: str


@dataclass(frozen=True, slots=True)
class ChangeRow:
    tool: str  # SERVER.tool
    new_tool: bool  # listed after the server was first trusted: nothing approved before
    since: datetime | None
    sha256: str
    diff: tuple[DiffLine, ...]


@dataclass(frozen=True, slots=True)
class ServerRow:
    name: str
    transport: str
    status: str
    reason: str
    retry_at: datetime | None
    tools: tuple[ToolRow, ...]
    skipped: tuple[tuple[str, str], ...]  # tools listed but not offered, and why
    grants: tuple[GrantRow, ...]
    changes: tuple[ChangeRow, ...]
    fingerprint: str  # of `changes`: what an Approve of this page names


@dataclass(frozen=True, slots=True)
class ConfirmationRow:
    tool: str
    channel: str
    user: str
    arguments: str
    created_at: datetime
    expires_at: datetime


@dataclass(frozen=True, slots=True)
class Approval:
    approved: tuple[str, ...]  # SERVER.tool of each definition now trusted
    refused: str = ""  # why nothing was approved, when so


def definition_diff(old: dict[str, Any], new: dict[str, Any]) -> tuple[DiffLine, ...]:
    """A unified diff of the two definitions as indented JSON (sorted keys), line by line."""

    def lines(definition: dict[str, Any]) -> list[str]:
        if not definition:
            return []
        return json.dumps(definition, indent=2, sort_keys=True, ensure_ascii=False).splitlines()

    raw = list(
        difflib.unified_diff(lines(old), lines(new), "approved", "listed now", lineterm="", n=3)
    )
    out: list[DiffLine] = []
    for line in raw[:MAX_DIFF_LINES]:
        text = line if len(line) <= MAX_DIFF_LINE_CHARS else line[:MAX_DIFF_LINE_CHARS] + "…"
        out.append(DiffLine(_kind(line), text))
    if len(raw) > MAX_DIFF_LINES:
        out.append(DiffLine("note", f"… {len(raw) - MAX_DIFF_LINES} more lines"))
    return tuple(out)


def _kind(line: str) -> LineKind:
    if line.startswith(("+++", "---")):
        return "note"
    if line.startswith("@@"):
        return "hunk"
    if line.startswith("+"):
        return "add"
    if line.startswith("-"):
        return "del"
    return "ctx"


_CHANGED_SINCE = (
    "The definitions changed since the page was shown (or were approved meanwhile); nothing "
    "was approved. Review them again."
)


def changes_fingerprint(pending: Mapping[str, str]) -> str:
    """Names the set of pending definitions (tool -> sha256) a reviewer saw, in one value."""
    return hashlib.sha256(json.dumps(sorted(pending.items())).encode()).hexdigest()


def _aware(at: datetime) -> datetime:
    return at if at.tzinfo is not None else at.replace(tzinfo=UTC)


class McpView:
    def __init__(
        self,
        manager: McpManager,
        policy: Policy,
        db: Database,
        clock: Callable[[], datetime],
    ) -> None:
        self._manager = manager
        self._policy = policy
        self._db = db
        self._clock = clock

    def may_approve(self, who: Identity) -> bool:
        permissions = self._policy.resolve(who).permissions
        return all(p in permissions for p in APPROVE_NEEDS)

    async def servers(self, platform: str, tenant: str) -> tuple[ServerRow, ...]:
        return tuple([await self._server(s, platform, tenant) for s in self._servers()])

    def _servers(self) -> list[ServerState]:
        return list(self._manager.servers.values())

    async def _server(self, state: ServerState, platform: str, tenant: str) -> ServerRow:
        changes = await self._manager.pins.pending(state.name)
        return ServerRow(
            name=state.name,
            transport=state.config.transport,
            status=state.status,
            reason=state.reason,
            retry_at=state.retry_at,
            tools=tuple(
                ToolRow(shown_name(state.name, name), info.description, info.confirm, info.pin)
                for name, info in sorted(state.tools.items())
            ),
            skipped=tuple(sorted(state.skipped.items())),
            grants=self._grants(state.name, platform, tenant),
            changes=tuple(self._change(state.name, c) for c in changes),
            fingerprint=changes_fingerprint({c.tool: c.sha256 for c in changes}),
        )

    @staticmethod
    def _change(server: str, change: PendingChange) -> ChangeRow:
        return ChangeRow(
            tool=shown_name(server, change.tool),
            new_tool=change.new_tool,
            since=_aware(change.since) if change.since is not None else None,
            sha256=change.sha256,
            diff=definition_diff(change.old, change.new),
        )

    def _grants(self, server: str, platform: str, tenant: str) -> tuple[GrantRow, ...]:
        """Where the policy grants or denies this server's tools to people of the tenant."""

        def mine(permission: str) -> bool:
            return permission == f"mcp:{server}" or permission.startswith(f"mcp:{server}.")

        doc = self._policy.document
        rows = [
            GrantRow(DEFAULTS, "everyone", p, "grant") for p in doc.defaults.permissions if mine(p)
        ]
        for i, rule in enumerate(doc.rules):
            if not applies_in(rule.match, platform, tenant):
                continue
            where = describe_match(rule.match)
            rows += [
                GrantRow(rule_label(i, rule), where, p, "grant") for p in rule.grant if mine(p)
            ]
            rows += [GrantRow(rule_label(i, rule), where, p, "deny") for p in rule.deny if mine(p)]
        return tuple(rows)

    async def confirmations(self, platform: str, tenant: str) -> tuple[ConfirmationRow, ...]:
        """The tenant's tool calls waiting for their user's yes or no, newest first."""
        from core.store.models import McpConfirmation

        async with self._db.session() as s:
            rows = (
                await s.exec(
                    select(McpConfirmation)
                    .where(
                        col(McpConfirmation.platform) == platform,
                        col(McpConfirmation.tenant) == tenant,
                        col(McpConfirmation.state) == "pending",
                        col(McpConfirmation.expires_at) > self._clock(),
                    )
                    .order_by(col(McpConfirmation.created_at).desc())
                    .limit(MAX_CONFIRMATIONS)
                )
            ).all()
        return tuple(
            ConfirmationRow(
                tool=r.tool,
                channel=r.channel,
                user=r.user,
                arguments=r.arguments,
                created_at=_aware(r.created_at),
                expires_at=_aware(r.expires_at),
            )
            for r in rows
        )

    async def approve(self, who: Identity, server: str, fingerprint: str) -> Approval:
        """`/mcp approve SERVER` for the changes the page showed (their `fingerprint`)."""
        if not self.may_approve(who):
            return Approval((), "Approving needs the ask and admin permissions.")
        if server not in self._manager.servers:
            return Approval((), "No MCP server of that name is configured.")
        pending = await self._manager.pins.pending(server)
        if not pending:
            return Approval((), "That server has no new or changed tool definitions to approve.")
        expected = {c.tool: c.sha256 for c in pending}
        if fingerprint != changes_fingerprint(expected):
            return Approval((), _CHANGED_SINCE)
        approved = await self._manager.approve(server, f"{who.platform}:{who.user}", expected)
        if not approved:
            return Approval((), _CHANGED_SINCE)
        return Approval(tuple(shown_name(server, t) for t in approved))
