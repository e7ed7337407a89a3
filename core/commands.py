"""The command language every adapter shares: `/help`, `/budget`, `/ask ...`.

Slack's `/threadline budget` and Discord's `/threadline budget` both reach core as the text
`/budget`, so a command behaves the same everywhere. Each command is a small unit registered
in one `CommandRegistry`; later features add theirs the same way.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, replace
from datetime import datetime
from typing import TYPE_CHECKING, Any, Generic, Protocol

from core import messages
from core.command_args import (
    CommandArgs,
    IgnoredArgs,
    Kind,
    NoArgs,
    UsageError,
    flag,
    option,
    parse_args,
    parse_words,
    rest,
    split_words,
    syntax,
    word,
)
from core.command_args import M as M
from core.request import Reply
from core.session import ToolSession

if TYPE_CHECKING:
    from core.llm.usage import UsageRecorder
    from core.quotas import QuotaLedger

# The argument declarations (`core.command_args`) are part of this module's face: a command is
# declared with both.
__all__ = [
    "Ask",
    "Command",
    "CommandArgs",
    "CommandContext",
    "CommandRegistry",
    "Fallback",
    "Handler",
    "IgnoredArgs",
    "Kind",
    "NoArgs",
    "ParsedCommand",
    "UsageError",
    "Verb",
    "builtin_commands",
    "declared",
    "flag",
    "help_text",
    "option",
    "parse",
    "parse_args",
    "parse_words",
    "rest",
    "split_words",
    "syntax",
    "usage_reply",
    "verbs_line",
    "verbs_usage",
    "with_verbs",
    "word",
]


@dataclass(frozen=True, slots=True)
class ParsedCommand:
    name: str
    args: str


def parse(text: str) -> ParsedCommand | None:
    """`/name rest...` -> ParsedCommand; anything else (free text) -> None."""
    text = text.strip()
    if len(text) < 2 or text[0] != "/" or not text[1].isalpha():
        return None
    head, *rest = text[1:].split(maxsplit=1)  # any whitespace ends the name (a newline too)
    if "/" in head:  # "/etc/hosts is wrong" is a question about a path, not a command
        return None
    return ParsedCommand(name=head.lower(), args=rest[0].strip() if rest else "")


class Ask(Protocol):
    """Ask the agent, as a free-text message would; `skills` are loaded up front."""

    def __call__(self, text: str, *, skills: Sequence[str] = ()) -> Awaitable[Reply]: ...


@dataclass(frozen=True, slots=True)
class CommandContext:
    session: ToolSession
    commands: CommandRegistry
    quotas: QuotaLedger
    usage: UsageRecorder
    model_configured: bool
    ask: Ask
    now: datetime
    # Short status lines for the thread while a long command runs (None: nobody listens).
    progress: Callable[[str], Awaitable[None]] | None = None
    model: str | None = None  # the model answering in this conversation, for people to read
    # Attaches audio of a reply's text (`/ask --voice`); None when voice is not set up.
    speak: Callable[[Reply, str], Awaitable[Reply]] | None = None


Handler = Callable[[CommandContext, str], Awaitable[Reply]]
# Answers a `/name` no command has (a skill of that name runs it); None: unknown command.
Fallback = Callable[[CommandContext, "ParsedCommand"], Awaitable[Reply | None]]


@dataclass(frozen=True, slots=True)
class Command:
    name: str
    usage: str
    summary: str
    handler: Handler
    permission: str | None = None
    # Its results are for the asker only: adapters that must pick visibility before the answer
    # exists (Discord defers an interaction as private or public) ask `is_personal`.
    personal: bool = False
    # Runs under the request deadline (THREADLINE_REQUEST_DEADLINE). Only work that reports its
    # progress in the thread and is worth finishing however long it takes opts out (`/index`).
    timed: bool = True
    # The declaration the usage line and the parsing come from (`declared`: its arguments,
    # `with_verbs`: its verbs); a command built by hand has neither, and nothing in core is.
    args: type[CommandArgs] | None = None
    verbs: tuple[Verb[Any], ...] = ()


class CommandRegistry:
    def __init__(self, commands: Iterable[Command] = (), fallback: Fallback | None = None) -> None:
        self._commands: dict[str, Command] = {}
        self.fallback = fallback
        for c in commands:
            self.add(c)

    def add(self, command: Command) -> None:
        if command.name in self._commands:
            raise ValueError(f"command /{command.name} is registered twice")
        self._commands[command.name] = command

    def get(self, name: str) -> Command | None:
        return self._commands.get(name)

    def __iter__(self) -> Iterator[Command]:
        return iter(self._commands.values())

    def is_personal(self, text: str) -> bool:
        parsed = parse(text)
        command = self.get(parsed.name) if parsed else None
        return command is not None and command.personal

    async def run(self, ctx: CommandContext, parsed: ParsedCommand) -> Reply:
        command = self.get(parsed.name)
        if command is None:
            reply = await self.fallback(ctx, parsed) if self.fallback is not None else None
            return reply or Reply(messages.unknown_command(parsed.name), ok=False)
        if command.permission:
            ctx.session.require(command.permission)
        return await command.handler(ctx, parsed.args)


Run = Callable[[CommandContext, M], Awaitable[Reply]]


def declared(
    name: str,
    summary: str,
    args: type[M],
    run: Run[M],
    *,
    permission: str | None = None,
    personal: bool = False,
    timed: bool = True,
    usage: str | None = None,
) -> Command:
    """A command whose arguments `args` declares: its usage line comes from the declaration,
    and words that do not fit it are answered with what is wrong and the usage (`usage`, if
    the command explains more than its syntax)."""
    line = f"/{name} {syntax(args)}".strip()
    shown = usage if usage is not None else f"Usage: `{line}`"

    async def handler(ctx: CommandContext, text: str) -> Reply:
        try:
            parsed = parse_args(args, text, f"/{name}")
        except UsageError as exc:
            return usage_reply(str(exc), shown)
        return await run(ctx, parsed)

    return Command(name, line, summary, handler, permission, personal, timed, args=args)


def usage_reply(problem: str, usage: str) -> Reply:
    return Reply("\n\n".join(t for t in (problem, usage) if t), ok=False, ephemeral=True)


@dataclass(frozen=True, slots=True)
class Verb(Generic[M]):
    """One verb of a command with several (`/digest add ...`, `/digest list`): the verbs that
    share its arguments, the permission it needs, and what runs it (given the verb typed).
    No names: what the command does when no verb is typed (`/mcp` alone, beside `/mcp diff`)."""

    names: tuple[str, ...]
    args: type[M]
    run: Callable[[CommandContext, str, M], Awaitable[Reply]]
    permission: str | None = None

    def usage(self, command: str) -> str:
        return " ".join(filter(None, (f"/{command}", "|".join(self.names), syntax(self.args))))


def verbs_usage(name: str, verbs: Sequence[Verb[Any]]) -> str:
    """`Usage: `/digest add SCHEDULE KIND ...`, `/digest list`, ...`, one verb after another."""
    return "Usage: " + ", ".join(f"`{v.usage(name)}`" for v in verbs) + "."


def with_verbs(
    name: str,
    summary: str,
    verbs: Sequence[Verb[Any]],
    *,
    default: str | None = None,
    permission: str | None = None,
    personal: bool = False,
    unknown_permission: str | None = None,
    notes: str = "",
    usage: str | None = None,
) -> Command:
    """A command of verbs, each declared by a `Verb`. No verb runs the `Verb` without names,
    else `default` (None: the usage answers); an unknown one is answered with the usage of all
    of them (after `unknown_permission`, so people who may use none of them learn nothing from
    it). `notes` follows the usage lines; `usage` replaces both where a command words its own."""
    table = {n: v for v in verbs for n in v.names or ("",)}
    shown = usage or verbs_usage(name, verbs) + (f"\n{notes}" if notes else "")

    async def handler(ctx: CommandContext, text: str) -> Reply:
        head, *after = text.split(maxsplit=1) or [""]
        typed = head.lower() or default or ""
        verb = table.get(typed)
        if verb is None:
            if unknown_permission:
                ctx.session.require(unknown_permission)
            return usage_reply("", shown)
        if verb.permission:
            ctx.session.require(verb.permission)
        try:
            parsed = parse_args(verb.args, after[0] if after else "", f"/{name} {typed}")
            return await verb.run(ctx, typed, parsed)
        except UsageError as exc:
            return usage_reply(str(exc), shown)

    return Command(
        name, verbs_line(name, verbs), summary, handler, permission, personal, verbs=tuple(verbs)
    )


def verbs_line(name: str, verbs: Sequence[Verb[Any]]) -> str:
    """The line /help shows: every verb with its words where that stays short, else the verbs;
    in brackets where the command also runs without one (`/skills [show NAME | reload]`)."""
    named = [v for v in verbs if v.names]

    def line(shown: str) -> str:
        return f"/{name} [{shown}]" if len(named) < len(verbs) else f"/{name} {shown}"

    full = line(" | ".join(v.usage(name).removeprefix(f"/{name} ") for v in named))
    return full if len(full) <= 60 else line("|".join(n for v in named for n in v.names) + " ...")


def help_text(ctx: CommandContext) -> str:
    lines = ["**Threadline** answers questions in this thread. Mention me or use a command:", ""]
    for c in ctx.commands:
        note = ""
        if c.permission and not ctx.session.allows(c.permission):
            note = f" (needs `{c.permission}`)"
        lines.append(f"- `{c.usage}` — {c.summary}{note}")
    if not ctx.model_configured:
        note = "No language model is configured: free-text questions get "
        if ctx.session.allows("code.read"):
            note += "the best matching code from the repositories you may read, not an answer."
        else:
            note += "a short notice."
        lines += ["", note]
    return "\n".join(lines)


async def _help(ctx: CommandContext, _args: IgnoredArgs) -> Reply:
    return Reply(help_text(ctx), ephemeral=True)


class AskArgs(CommandArgs):
    voice: bool = flag()
    question: str = rest("QUESTION")


async def _ask(ctx: CommandContext, args: AskArgs) -> Reply:
    if not args.voice:
        return await ctx.ask(args.question)
    # Refused before the model runs: no tokens spent on an answer that was asked for as audio.
    ctx.session.require("tts")
    reply = await ctx.ask(args.question)
    if ctx.speak is None:
        return replace(reply, notices=(*reply.notices, messages.VOICE_NOT_SET_UP))
    return await ctx.speak(reply, args.question)


async def _budget(ctx: CommandContext, _args: IgnoredArgs) -> Reply:
    session = ctx.session
    states = await ctx.quotas.snapshot(session.token_limits() + session.tts_limits())
    used_today = await ctx.usage.today(session)
    resets = ctx.quotas.resets_at()
    lines = [f"**Your budget today** (UTC day; resets {messages.until(resets, ctx.now)})"]
    for st in states:
        spent = st.used + st.reserved
        pct = f" ({100 * spent / st.limit.limit:.0f}%)" if st.limit.limit else ""
        lines.append(f"- {st.limit.label}: {spent:,} of {st.limit.limit:,} {st.limit.unit}{pct}")
    lines.append(
        f"- your model usage today: {used_today.prompt_tokens:,} prompt tokens "
        f"({used_today.cached_tokens:,} served from the provider's cache), "
        f"{used_today.completion_tokens:,} completion tokens"
    )
    lines.append(f"- model here: {ctx.model or 'none configured'}")
    b = session.budgets
    lines.append(
        f"- per request: up to {b.tool_calls_per_request} tool calls and "
        f"{b.iterations_per_request} model steps"
    )
    return Reply("\n".join(lines), ephemeral=True)


def builtin_commands() -> list[Command]:
    return [
        declared(
            "help",
            "what I can do and the commands you can use",
            IgnoredArgs,
            _help,
            personal=True,
        ),
        declared(
            "ask",
            "ask a question (same as mentioning me); --voice also reads the answer aloud",
            AskArgs,
            _ask,
            permission="ask",
        ),
        declared(
            "budget",
            "your token and voice budgets for today",
            IgnoredArgs,
            _budget,
            personal=True,
        ),
    ]
