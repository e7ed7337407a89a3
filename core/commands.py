"""The command language every adapter shares: `/help`, `/budget`, `/ask ...`.

Slack's `/threadline budget` and Discord's `/threadline budget` both reach core as the text
`/budget`, so a command behaves the same everywhere. Each command is a small unit registered
in one `CommandRegistry`; later features add theirs the same way.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, replace
from datetime import datetime
from typing import TYPE_CHECKING, Protocol

from core import messages
from core.request import Reply
from core.session import ToolSession

if TYPE_CHECKING:
    from core.llm.usage import UsageRecorder
    from core.quotas import QuotaLedger


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


async def _help(ctx: CommandContext, _args: str) -> Reply:
    return Reply(help_text(ctx), ephemeral=True)


async def _ask(ctx: CommandContext, args: str) -> Reply:
    head, *rest = args.split(maxsplit=1) or [""]
    voice = head.lower() == "--voice"
    question = (rest[0].strip() if rest else "") if voice else args
    if not question:
        return Reply("Usage: `/ask [--voice] QUESTION`", ok=False, ephemeral=True)
    if not voice:
        return await ctx.ask(question)
    # Refused before the model runs: no tokens spent on an answer that was asked for as audio.
    ctx.session.require("tts")
    reply = await ctx.ask(question)
    if ctx.speak is None:
        return replace(reply, notices=(*reply.notices, messages.VOICE_NOT_SET_UP))
    return await ctx.speak(reply, question)


async def _budget(ctx: CommandContext, _args: str) -> Reply:
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
        Command(
            "help", "/help", "what I can do and the commands you can use", _help, personal=True
        ),
        Command(
            "ask",
            "/ask [--voice] QUESTION",
            "ask a question (same as mentioning me); --voice also reads the answer aloud",
            _ask,
            "ask",
        ),
        Command(
            "budget", "/budget", "your token and voice budgets for today", _budget, personal=True
        ),
    ]
