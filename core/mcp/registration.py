"""A server's tool listing turned into registered tools: checked, pinned and named.

Apart from the manager (core/mcp/manager.py), which connects and lists: what of a listed tool is
pinned, which tools are unusable and why, whether a call needs confirmation, how its arguments
are checked, and which server holds which model-facing name in the `ToolRegistry`.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Awaitable, Callable, Mapping
from typing import Any

from jsonschema import Draft202012Validator
from jsonschema.exceptions import SchemaError

from core.mcp.config import McpServerSettings
from core.mcp.pins import UNAPPROVED, PinStatus, PinStore, canonical
from core.mcp.schema import MAX_SCHEMA_DEPTH, SchemaTooDeep, closed, depth, offered_schema
from core.mcp.state import McpToolInfo, ServerState, model_name, shown_name
from core.tools.context import ToolContext
from core.tools.registry import JsonArgs, Tool, ToolRegistry

# The name these warnings were logged under before the split: log filters may name it.
log = logging.getLogger("core.mcp.manager")

MAX_DESCRIPTION_CHARS = 1_000
MAX_SCHEMA_CHARS = 16_000

Caller = Callable[[str, str, dict[str, Any]], Awaitable[str]]  # (server, tool, arguments)


def definition_of(tool: Any) -> dict[str, Any]:
    """What is pinned of an MCP tool: name, description, input schema, annotations."""
    annotations = (
        tool.annotations.model_dump(mode="json", by_alias=True, exclude_none=True)
        if tool.annotations is not None
        else None
    )
    return {
        "name": tool.name,
        "description": tool.description or "",
        "inputSchema": tool.input_schema
        if isinstance(tool.input_schema, dict)
        else json.loads(json.dumps(tool.input_schema, default=str)),
        "annotations": annotations,
    }


def needs_confirmation(definition: dict[str, Any], config: McpServerSettings) -> bool:
    """Side effects unless the server says read-only and not destructive (the MCP defaults
    are readOnlyHint false, destructiveHint true) and the config does not mark it."""
    if definition["name"] in config.destructive_tools:
        return True
    hints = definition.get("annotations") or {}
    return hints.get("readOnlyHint") is not True or hints.get("destructiveHint") is True


def _argument_checker(
    schema: dict[str, Any], *, declared_only: bool = False
) -> Callable[[dict[str, Any]], list[str]]:
    """Problems of a call's arguments against the server's schema. `declared_only` (tools that
    ask for confirmation): also any property the schema does not declare, at any depth, so a
    question never carries an argument the server would ignore but a person must weigh."""
    validator = Draft202012Validator(closed(schema) if declared_only else schema)

    def check(values: dict[str, Any]) -> list[str]:
        problems = []
        for err in sorted(validator.iter_errors(values), key=lambda e: list(e.path))[:5]:
            where = ".".join(str(p) for p in err.path) or "arguments"
            # Keywords and the schema's expectations only: never the input value.
            if err.validator == "type":
                problems.append(f"{where}: must be of type {err.validator_value}")
            elif err.validator == "required":
                problems.append(f"{where}: {err.message}")
            elif err.validator == "additionalProperties":
                problems.append(f"{where}: unexpected properties")
            elif err.validator == "unevaluatedProperties" and err.validator_value is False:
                problems.append(
                    f"{where}: properties the tool's schema does not declare (a call that "
                    "needs confirmation may use declared ones only)"
                )
            else:
                problems.append(f"{where}: fails {err.validator} {err.validator_value!r:.80}")
        return problems

    return check


class ToolRegistrar:
    """Registers servers' tools in the registry and remembers which server holds which name."""

    def __init__(
        self, registry: ToolRegistry, servers: Mapping[str, ServerState], call: Caller
    ) -> None:
        self._registry = registry
        self._servers = servers
        self._call = call
        # Model-facing name -> the server whose tool it is: a name another server (or a
        # built-in tool) holds is never taken over, so two servers cannot evict each other.
        self._owners: dict[str, str] = {}

    async def register(self, state: ServerState, listed: list[Any], pins: PinStore) -> None:
        state.fingerprint = _fingerprint(listed)
        definitions: dict[str, dict[str, Any]] = {}
        offered: dict[str, dict[str, Any]] = {}
        state.skipped.clear()
        for t in listed:
            definition = definition_of(t)
            schema: dict[str, Any] | None = None
            problem = _unusable(state.name, definition)
            if not problem:
                schema, problem = offered_schema(state.name, definition["inputSchema"])
            problem = problem or self._claim(state.name, t.name)
            if problem:
                state.skipped[str(t.name)[:64]] = problem
                continue
            definitions[t.name] = definition
            assert schema is not None
            offered[t.name] = schema
        if state.skipped:
            log.warning(
                "MCP server %s: %d tool(s) not registered: %s",
                state.name,
                len(state.skipped),
                "; ".join(f"{k}: {v}" for k, v in sorted(state.skipped.items())[:5]),
            )
        checked = await pins.check(state.name, definitions)
        for status, what in (("changed", "changed the definition of"), ("unapproved", "added")):
            # Logged when it happens, not again at every listing while it awaits approval.
            fresh = sorted(
                t for t, p in checked.items() if p == status and _pin_of(state, t) != status
            )
            if fresh:
                log.warning(
                    "MCP server %s %s %s: disabled until an admin runs /mcp approve %s",
                    state.name,
                    what,
                    ", ".join(fresh),
                    state.name,
                )
        for old in state.tools:
            self._registry.remove(model_name(state.name, old))
        # Released only once out of the registry: another server may take a name at once.
        kept = {model_name(state.name, t) for t in definitions}
        for name, owner in list(self._owners.items()):
            if owner == state.name and name not in kept:
                del self._owners[name]
        state.tools = {}
        for tool, definition in definitions.items():
            state.tools[tool] = McpToolInfo(
                tool,
                definition["description"],
                needs_confirmation(definition, state.config),
                checked[tool],
            )
            self._registry.add(self._tool(state, tool, definition, offered[tool]))

    def _claim(self, server: str, tool: str) -> str | None:
        """Take the model-facing name of `server`'s `tool`, or say whose it is. Claimed before
        any await, so two servers registering at once cannot both take it."""
        name = model_name(server, tool)
        owner = self._owners.get(name)
        if owner is None and self._registry.get(name) is not None:
            return f"its name for the model, {name}, is a built-in tool's"
        if owner is not None and owner != server:
            return f"its name for the model, {name}, is already MCP server `{owner}`'s"
        self._owners[name] = server
        return None

    def _tool(
        self,
        state: ServerState,
        tool: str,
        definition: dict[str, Any],
        parameters: dict[str, Any],
    ) -> Tool:
        server = state.name
        description = definition["description"].strip() or "(no description)"
        if len(description) > MAX_DESCRIPTION_CHARS:
            description = description[:MAX_DESCRIPTION_CHARS] + "…"

        async def run(ctx: ToolContext, args: JsonArgs) -> str:
            return await self._call(server, tool, args.values)

        return Tool(
            name=model_name(server, tool),
            description=f"[MCP server {server} says] {description}",
            args=JsonArgs,
            permission=f"mcp:{shown_name(server, tool)}",
            func=run,
            timeout=state.config.timeout,
            parameters=parameters,  # framed and capped (core/mcp/schema.py)
            check_args=_argument_checker(
                definition["inputSchema"], declared_only=state.tools[tool].confirm
            ),
            label=shown_name(server, tool),
            blocked=lambda: self._servers[server].blocked(tool),
            confirm=state.tools[tool].confirm,
        )

    async def recheck(self, state: ServerState, listed: list[Any], pins: PinStore) -> None:
        """Register a listing again if it changed since the last one (checked while connected)."""
        # Re-checked also while a change awaits approval: another process may have
        # recorded the admin's `/mcp approve` meanwhile.
        waiting = any(info.pin in UNAPPROVED for info in state.tools.values())
        if waiting or _fingerprint(listed) != state.fingerprint:
            await self.register(state, listed, pins)


def _pin_of(state: ServerState, tool: str) -> PinStatus | None:
    info = state.tools.get(tool)
    return info.pin if info is not None else None


def _fingerprint(listed: list[Any]) -> str:
    return canonical({"tools": [definition_of(t) for t in listed]})


def _unusable(server: str, definition: dict[str, Any]) -> str | None:
    name = definition["name"]
    if not isinstance(name, str) or not name or not all(c.isalnum() or c in "_-" for c in name):
        return "name has characters other than letters, digits, '_' and '-'"
    if not name.isascii() or len(model_name(server, name)) > 64:
        return "name too long or not ASCII"
    schema = definition["inputSchema"]
    if not isinstance(schema, dict) or schema.get("type", "object") != "object":
        return "input schema is not an object schema"
    try:
        depth(schema)
    except SchemaTooDeep:
        return f"input schema nested deeper than {MAX_SCHEMA_DEPTH} levels"
    if len(json.dumps(schema)) > MAX_SCHEMA_CHARS:
        return f"input schema over {MAX_SCHEMA_CHARS} characters"
    try:
        Draft202012Validator.check_schema(schema)
    except SchemaError:
        return "input schema is not a valid JSON schema"
    if _outside_refs(schema):  # never fetched: validation must not reach the network
        return "input schema refers to other documents ($ref outside itself)"
    return None


def _outside_refs(node: Any) -> bool:
    if isinstance(node, dict):
        ref = node.get("$ref")
        if isinstance(ref, str) and not ref.startswith("#"):
            return True
        return any(_outside_refs(v) for v in node.values())
    if isinstance(node, list):
        return any(_outside_refs(v) for v in node)
    return False
