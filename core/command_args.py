"""A command's arguments, declared once, as a `CommandArgs` model: `parse_args` reads the words
into it, its errors say what is wrong, and `syntax` writes the usage line that /help and those
errors show. Fields are, in order: positional words (`word`), a free-text tail (`rest`), options
with a value (`option`, `--tz ZONE`) and flags (`flag`, `--voice`). `core.commands` builds
commands from these declarations (`declared`, `with_verbs`) and offers them under its own name.
"""

from __future__ import annotations

import shlex
from dataclasses import dataclass
from typing import Any, ClassVar, Literal, TypeVar

from pydantic import BaseModel, ConfigDict, Field, ValidationError
from pydantic_core import PydanticUndefined

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
