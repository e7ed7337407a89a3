"""Tool declarations and the registry the agent and dispatcher share.

A tool is declared once: name, description (the docstring), a pydantic argument model and the
permission it needs. The JSON schema the model sees is generated from the argument model; the
`ToolContext` the function also receives is not part of it.
"""

from __future__ import annotations

import copy
import functools
import inspect
import re
import string
from collections.abc import Awaitable, Callable, Iterable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, TypeVar, get_type_hints

from pydantic import BaseModel, ConfigDict

from core.policy import is_permission
from core.session import ToolSession
from core.tools.context import ToolContext
from core.tools.result import ToolResult

if TYPE_CHECKING:
    from core.chat import ToolSchema

_NAME = re.compile(r"^[a-zA-Z0-9_-]{1,64}$")

# A tool answers with text for the model, or a `ToolResult`: that text and the code it shows.
ToolFunc = Callable[[ToolContext, Any], Awaitable[str | ToolResult] | str | ToolResult]
A = TypeVar("A", bound=BaseModel)
# A handler as written: its `args` has the tool's own model type, which mypy checks inside the
# handler; `Tool.func` forgets it (the dispatcher validates before calling).
ToolHandler = Callable[[ToolContext, A], Awaitable[str | ToolResult] | str | ToolResult]
# Whether a tool is worth offering to this session right now (e.g. code tools only once a
# repository the session may read exists): its schema costs prompt tokens on every call.
Availability = Callable[[ToolSession], Awaitable[bool]]


class ToolArgs(BaseModel):
    """Base for argument models. Unknown keys are rejected: a model that adds `user` or
    `permissions` to a call gets a validation error, not a say in who it is."""

    model_config = ConfigDict(extra="forbid")


@dataclass(frozen=True, slots=True)
class Tool:
    name: str
    description: str
    args: type[BaseModel]
    permission: str
    func: ToolFunc
    timeout: float = 30.0
    available: Availability | None = None
    # Its own cap on what it returns (None: the dispatcher's); a skill's body needs more room
    # than a search result, and is still cut to the model's window by the agent.
    max_result_chars: int | None = None
    # Tools from elsewhere (MCP servers) bring a JSON schema instead of an argument model: it
    # is sent to the model as is, `check_args` validates calls against it (returning problems,
    # never input values) and the function receives `JsonArgs`.
    parameters: dict[str, Any] | None = None
    check_args: Callable[[dict[str, Any]], list[str]] | None = None
    label: str | None = None  # the name people see (`tracker.close_issue`); default: name
    # Why the tool cannot run right now (its server is down, its definition changed), or None;
    # a blocked tool is not offered, and a call to it is refused before anything runs.
    blocked: Callable[[], str | None] | None = None
    confirm: bool = False  # side effects: runs only once the requesting user confirms
    # What people see while it runs: a template over its validated arguments,
    # "Searching code for `{pattern}`" (values made safe by `core.agent.activity`).
    activity: str | None = None

    def __post_init__(self) -> None:
        if not _NAME.match(self.name):
            raise ValueError(f"tool name {self.name!r} must match {_NAME.pattern}")
        if not is_permission(self.permission):
            raise ValueError(f"tool {self.name!r} needs unknown permission {self.permission!r}")
        if self.args.model_config.get("extra") != "forbid":
            raise ValueError(f"tool {self.name!r}: argument model must forbid extra keys")
        if (self.parameters is None) != (self.check_args is None) or (
            self.parameters is not None and self.args is not JsonArgs
        ):
            raise ValueError(f"tool {self.name!r}: parameters need check_args and JsonArgs")
        if self.activity is not None:
            fields = {f for _, f, _, _ in string.Formatter().parse(self.activity) if f}
            if not fields <= set(self.args.model_fields):
                unknown = ", ".join(sorted(fields - set(self.args.model_fields)))
                raise ValueError(f"tool {self.name!r}: activity names unknown arguments {unknown}")

    @property
    def shown_name(self) -> str:
        return self.label or self.name

    def schema(self) -> ToolSchema:
        if self.parameters is not None:
            parameters = self.parameters
        else:
            parameters = copy.deepcopy(_args_schema(self.args))
        return {
            "type": "function",
            "function": {
                "name": self.name,
                "description": self.description,
                "parameters": parameters,
            },
        }


@functools.cache
def _args_schema(args: type[BaseModel]) -> dict[str, Any]:
    """An arguments model's JSON schema, made once: pydantic builds it afresh on every call,
    and every model step offers every tool (callers get a copy, so the cache stays as made)."""
    schema = args.model_json_schema()
    schema.pop("title", None)
    return schema


class JsonArgs(ToolArgs):
    """The arguments of a tool declared by a JSON schema, already checked against it."""

    values: dict[str, Any]


def tool(
    *,
    permission: str,
    name: str | None = None,
    description: str | None = None,
    timeout: float = 30.0,
    available: Availability | None = None,
    max_result_chars: int | None = None,
    parameters: dict[str, Any] | None = None,
    check_args: Callable[[dict[str, Any]], list[str]] | None = None,
    label: str | None = None,
    blocked: Callable[[], str | None] | None = None,
    confirm: bool = False,
    activity: str | None = None,
) -> Callable[[ToolHandler[A]], Tool]:
    """Declare a tool from a function `(ctx: ToolContext, args: SomeArgs) -> str` (or an
    async one). Every option of `Tool` can be given here; the name defaults to the function's
    and the description to its docstring. The argument model is read from the annotation of
    `args`, and the type checker holds the handler to it."""

    def wrap(func: ToolHandler[A]) -> Tool:
        tool_name = name if name is not None else getattr(func, "__name__", "")
        params = list(inspect.signature(func).parameters)
        if len(params) != 2:
            raise TypeError(f"tool {tool_name!r}: expected (ctx, args), got {params}")
        args_model = get_type_hints(func)[params[1]]
        if not (isinstance(args_model, type) and issubclass(args_model, BaseModel)):
            raise TypeError(f"tool {tool_name!r}: args must be annotated with a pydantic model")
        text = description if description is not None else func.__doc__
        text = inspect.cleandoc(text or "").strip()
        if not text:
            raise ValueError(f"tool {tool_name!r} needs a docstring: it is the model's description")
        return Tool(
            tool_name,
            text,
            args_model,
            permission,
            func,
            timeout=timeout,
            available=available,
            max_result_chars=max_result_chars,
            parameters=parameters,
            check_args=check_args,
            label=label,
            blocked=blocked,
            confirm=confirm,
            activity=activity,
        )

    return wrap


class ToolRegistry:
    def __init__(self, tools: Iterable[Tool] = ()) -> None:
        self._tools: dict[str, Tool] = {}
        for t in tools:
            self.add(t)

    def add(self, t: Tool) -> None:
        if t.name in self._tools:
            raise ValueError(f"tool {t.name!r} is registered twice")
        self._tools[t.name] = t

    def get(self, name: str) -> Tool | None:
        return self._tools.get(name)

    def names(self) -> list[str]:
        return sorted(self._tools)

    def visible_to(self, session: ToolSession) -> list[Tool]:
        """Tools whose permission the session holds: the model is only offered those (the
        dispatcher still checks every call, since a model may name a tool it was not shown)."""
        return [
            t
            for t in self._tools.values()
            if session.allows(t.permission)
            and session.narrowing.allows(t.name)
            and (t.blocked is None or t.blocked() is None)
        ]

    def remove(self, name: str) -> None:
        self._tools.pop(name, None)

    async def offered_tools(self, session: ToolSession) -> list[Tool]:
        """The tools worth offering: the permitted ones, minus those whose availability check
        says there is nothing for them to work on (each check runs once)."""
        checked: dict[Availability, bool] = {}
        out: list[Tool] = []
        for t in self.visible_to(session):
            if t.available is not None:
                if t.available not in checked:
                    checked[t.available] = await t.available(session)
                if not checked[t.available]:
                    continue
            out.append(t)
        return out

    async def offered(self, session: ToolSession) -> list[ToolSchema]:
        """The schemas of `offered_tools`, to send with a model call."""
        return [t.schema() for t in await self.offered_tools(session)]
