"""The command language every adapter shares: `/help`, `/budget`, `/ask ...`.

Slack's `/threadline budget` and Discord's `/threadline budget` both reach core as the text
`/budget`, so a command behaves the same everywhere. Each command is a small unit registered
in one `CommandRegistry`; later features add theirs the same way.
"""

from __future__ import annotations

import shlex
from collections.abc import Awaitable, Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, replace
from datetime import datetime
from typing import TYPE_CHECKING, Any, ClassVar, Generic, Literal, Protocol, TypeVar

from pydantic import BaseModel, ConfigDict, Field, ValidationError
from pydantic_core import PydanticUndefined

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


# -- declared arguments ----------------------------------------------------------------------
# A command declares what follows its name once, as a `CommandArgs` model: `parse_args` reads
# the words into it, its errors say what is wrong, and `syntax` writes the usage line /help and
# those errors show. Fields are, in order: positional words (`word`), a free-text tail
# (`rest`), options with a value (`option`, `--tz ZONE`) and flags (`flag`, `--voice`).

Kind = Literal["word", "rest", "option", "flag"]
_KINDS: dict[str, Kind] = {"word": "word", "rest": "rest", "option": "option", "flag": "flag"}
_QUOTES = str.maketrans({"“": '"', "”": '"', "‘": "'", "’": "'"})  # Slack and phones curl them


class UsageError(Exception):
    """The words do not fit the declaration. The message says what is wrong (empty: the usage
    alone says it)."""


class CommandArgs(BaseModel):
    """Base for a command's arguments."""

    model_config = ConfigDict(extra="forbid", frozen=True)
    # What to say when the positional words are missing, extra or invalid; `{command}` is the
    # command as typed (`/digest remove`); "": the usage alone. Default (None): the usage for
    # missing or extra words, and which value is invalid for an invalid one.
    words_needed: ClassVar[str | None] = None
    # Quotes group words (`"0 9 * * 1-5"`); off where a quote is just a character of a word.
    quotes: ClassVar[bool] = True
    # Flags and options of which at most one may be given (`/save --global | --me`); the usage
    # line shows them as alternatives.
    exclusive: ClassVar[tuple[str, ...]] = ()
    # Where an undeclared `--word` comes before a rest() tail: True, it starts the text (a
    # question may begin with dashes); False, it is refused as an unknown option (a typo in a
    # flag must not be saved as part of a fact).
    unknown_options_are_text: ClassVar[bool] = True
    # Words and options past the declared ones are ignored instead of refused: `/help me` still
    # helps, as it always has.
    ignores_extra: ClassVar[bool] = False


class NoArgs(CommandArgs):
    """Nothing follows the command's name (or its verb); words typed there are refused."""


class IgnoredArgs(CommandArgs):
    """Nothing is read after the command's name, and whatever is typed there is ignored."""

    quotes = False  # a stray quote is ignored with the rest, not refused as unbalanced
    ignores_extra = True


def _meta(kind: Kind, metavar: str) -> dict[str, Any]:
    return {"json_schema_extra": {"command_arg": kind, "metavar": metavar}}


def word(metavar: str, default: Any = PydanticUndefined) -> Any:
    """A positional word, shown as METAVAR (`[METAVAR]` when it has a default)."""
    return Field(default, **_meta("word", metavar))


def rest(metavar: str, default: Any = PydanticUndefined) -> Any:
    """The rest of the text, as typed (quotes and all), after any leading flags and words."""
    return Field(default, **_meta("rest", metavar))


def option(metavar: str) -> Any:
    """`--name VALUE` (the field's name with dashes); None when not given."""
    return Field(None, **_meta("option", metavar))


def flag() -> Any:
    """`--name`, present or not."""
    return Field(False, **_meta("flag", ""))


@dataclass(frozen=True, slots=True)
class _Param:
    field: str
    kind: Kind
    metavar: str
    required: bool

    @property
    def switch(self) -> str:
        # A trailing underscore only keeps a Python keyword a field name: `global_` is `--global`.
        return "--" + self.field.rstrip("_").replace("_", "-")


def _params(model: type[CommandArgs]) -> list[_Param]:
    out = []
    for name, info in model.model_fields.items():
        extra = info.json_schema_extra
        if not isinstance(extra, dict) or "command_arg" not in extra:
            raise TypeError(f"{model.__name__}.{name}: declare it with word/rest/option/flag")
        kind, metavar = _KINDS[str(extra["command_arg"])], str(extra["metavar"])
        out.append(_Param(name, kind, metavar, info.is_required()))
    if any(p.kind == "rest" for p in out) and any(p.kind == "option" for p in out):
        # The tail is the text as typed: only flags and words may come before it.
        raise TypeError(f"{model.__name__}: a rest() field goes with flags and words only")
    switches = {p.field for p in out if p.kind in ("option", "flag")}
    if not set(model.exclusive) <= switches:
        raise TypeError(f"{model.__name__}.exclusive: name flags and options only")
    return out


def syntax(model: type[CommandArgs]) -> str:
    """The usage of the words `model` declares: `SCHEDULE KIND [--tz ZONE] [--voice]`."""
    params = _params(model)
    group = [p for p in params if p.field in model.exclusive]

    def shown(p: _Param) -> str:
        return f"{p.switch} {p.metavar}" if p.kind == "option" else p.switch

    def part(p: _Param) -> str | None:
        if p.kind in ("word", "rest"):
            return p.metavar if p.required else f"[{p.metavar}]"
        if p not in group:
            return f"[{shown(p)}]"
        # Alternatives share one bracket, where the first of them is declared.
        return "[" + " | ".join(shown(q) for q in group) + "]" if p == group[0] else None

    if any(p.kind == "rest" for p in params):  # options first where a tail takes the rest
        params = sorted(params, key=lambda p: p.kind in ("word", "rest"))
    return " ".join(filter(None, map(part, params)))


def split_words(text: str) -> list[str]:
    """Words as a shell splits them (quotes group, curly quotes count as straight ones)."""
    try:
        return shlex.split(text.translate(_QUOTES))
    except ValueError:
        raise UsageError("Unbalanced quotes.") from None


M = TypeVar("M", bound=CommandArgs)


def parse_args(model: type[M], text: str, command: str) -> M:
    """Read `text` (what follows the command) into `model`; raises UsageError."""
    params = _params(model)
    tail = next((p for p in params if p.kind == "rest"), None)
    if tail is None:
        words = split_words(text) if model.quotes else text.split()
        return parse_words(model, words, command)
    switches = {p.switch: p for p in params if p.kind in ("option", "flag")}
    values: dict[str, Any] = {}
    remaining = text.strip()
    while remaining:  # leading options; the first other word starts the tail, as typed
        head, *after = remaining.split(maxsplit=1)
        p = switches.get(head.lower())
        if p is None and head.startswith("--") and not model.unknown_options_are_text:
            raise UsageError(f"Unknown option `{head[:40]}`.")
        if p is None or p.kind != "flag":
            break
        values[p.field] = True
        remaining = after[0].strip() if after else ""
    for p in (p for p in params if p.kind == "word"):  # then one word each, as typed
        if not remaining:
            if p.required:
                raise UsageError((model.words_needed or "").format(command=command))
            break
        head, *after = remaining.split(maxsplit=1)
        values[p.field] = head
        remaining = after[0].strip() if after else ""
    if remaining:
        values[tail.field] = remaining
    elif tail.required:
        raise UsageError("")
    return _validate(model, values, command)


def parse_words(model: type[M], words: list[str], command: str) -> M:
    """Read already split `words` into `model`; raises UsageError."""
    params = _params(model)
    switches = {p.switch: p for p in params if p.kind in ("option", "flag")}
    values: dict[str, Any] = {}
    positional: list[str] = []
    i = 0
    while i < len(words):
        w = words[i]
        p = switches.get(w)
        if p is not None and p.kind == "option":
            if i + 1 >= len(words):
                raise UsageError(f"`{w}` needs a value.")
            values[p.field] = words[i + 1]
            i += 2
            continue
        if p is not None:
            values[p.field] = True
        elif not w.startswith("--"):
            positional.append(w)
        elif not model.ignores_extra:
            raise UsageError(f"Unknown option `{w[:40]}`.")
        i += 1
    slots = [p for p in params if p.kind == "word"]
    if model.ignores_extra:
        positional = positional[: len(slots)]
    required = sum(p.required for p in slots)
    if not required <= len(positional) <= len(slots):
        raise UsageError((model.words_needed or "").format(command=command))
    values.update({p.field: w for p, w in zip(slots, positional, strict=False)})
    return _validate(model, values, command)


def _validate(model: type[M], values: dict[str, Any], command: str) -> M:
    by_field = {p.field: p for p in _params(model)}
    both = [by_field[f].switch for f in by_field if f in model.exclusive and values.get(f)]
    if len(both) > 1:
        listed = [f"`{s}`" for s in both]
        raise UsageError(f"Give only one of {', '.join(listed[:-1])} and {listed[-1]}.")
    try:
        return model.model_validate(values)
    except ValidationError as exc:
        for error in exc.errors():  # a validator's own words say best what is wrong
            if error["type"] == "value_error" and "error" in error.get("ctx", {}):
                raise UsageError(str(error["ctx"]["error"])) from None
        if model.words_needed is not None:
            raise UsageError(model.words_needed.format(command=command)) from None
        for error in exc.errors():
            p = by_field.get(str(error["loc"][0])) if error["loc"] else None
            if p is not None and p.field in values:
                given = str(values[p.field])[:40]
                raise UsageError(f"`{given}` is not a valid {p.metavar or p.switch}.") from None
        raise UsageError("") from None


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
