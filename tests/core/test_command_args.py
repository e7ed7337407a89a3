"""Declared command arguments (core/commands.py `CommandArgs`): one declaration gives the
parsing, the errors and the usage line."""

from __future__ import annotations

from typing import Annotated, Any

import pytest
from pydantic import AfterValidator, Field

from core.commands import (
    AskArgs,
    CommandArgs,
    CommandContext,
    IgnoredArgs,
    NoArgs,
    UsageError,
    Verb,
    flag,
    option,
    parse_args,
    rest,
    syntax,
    verbs_line,
    word,
)
from core.request import Reply


class AddArgs(CommandArgs):
    words_needed = "Give a schedule and a kind."
    schedule: str = word("SCHEDULE")
    kind: str = word("KIND")
    tz: str | None = option("ZONE")
    skip_empty: bool = flag()


class CountArgs(CommandArgs):
    words_needed = "`{command}` needs a number."
    count: Annotated[int, Field(ge=1)] = word("N")
    label: str | None = word("LABEL", None)


def test_the_usage_line_comes_from_the_declaration() -> None:
    assert syntax(AddArgs) == "SCHEDULE KIND [--tz ZONE] [--skip-empty]"
    assert syntax(CountArgs) == "N [LABEL]"
    assert syntax(AskArgs) == "[--voice] QUESTION"


def test_words_options_and_flags_in_any_order() -> None:
    parsed = parse_args(AddArgs, '--skip-empty "0 9 * * 1" activity --tz Europe/Paris', "/x")
    assert parsed == AddArgs(
        schedule="0 9 * * 1", kind="activity", tz="Europe/Paris", skip_empty=True
    )
    assert parse_args(AddArgs, "daily “activity”", "/x").kind == "activity"  # curly quotes


@pytest.mark.parametrize(
    ("model", "text", "error"),
    [
        (AddArgs, "daily activity --tz", "`--tz` needs a value."),
        (AddArgs, "daily activity --frob", "Unknown option `--frob`."),
        (AddArgs, "daily", "Give a schedule and a kind."),
        (AddArgs, "daily activity extra", "Give a schedule and a kind."),
        (AddArgs, '"daily activity', "Unbalanced quotes."),
        (CountArgs, "zero", "`/count` needs a number."),
        (CountArgs, "0", "`/count` needs a number."),
        (AskArgs, "--voice", ""),  # the usage alone says it
    ],
)
def test_words_that_do_not_fit_say_what_is_wrong(
    model: type[CommandArgs], text: str, error: str
) -> None:
    with pytest.raises(UsageError) as raised:
        parse_args(model, text, "/count")
    assert str(raised.value) == error


def test_a_free_text_tail_is_kept_as_typed() -> None:
    assert parse_args(AskArgs, '--VOICE  what\'s "x"?', "/ask") == AskArgs(
        voice=True, question='what\'s "x"?'
    )
    assert parse_args(AskArgs, "--verbose x", "/ask") == AskArgs(question="--verbose x")


def test_a_field_must_be_declared_as_a_command_argument() -> None:
    class Loose(CommandArgs):
        name: str

    with pytest.raises(TypeError, match="word/rest/option/flag"):
        syntax(Loose)


class NameArgs(CommandArgs):
    quotes = False
    name: str = word("NAME")


class LimitArgs(CommandArgs):
    limit: int = word("N")


def test_an_invalid_value_is_named() -> None:
    with pytest.raises(UsageError, match=r"^`ten` is not a valid N\.$"):
        parse_args(LimitArgs, "ten", "/top")
    with pytest.raises(UsageError, match=r"^$"):  # missing: the usage alone says it
        parse_args(LimitArgs, "", "/top")


def test_without_quotes_a_quote_is_part_of_the_word() -> None:
    assert parse_args(NameArgs, "it's", "/index").name == "it's"
    with pytest.raises(UsageError):
        parse_args(NameArgs, '"my repo"', "/index")


class RunArgs(CommandArgs):
    name: str = word("NAME")
    text: str = rest("text", "")


def test_words_before_a_tail() -> None:
    assert syntax(RunArgs) == "NAME [text]"
    assert parse_args(RunArgs, 'triage  look at "this"', "/skill") == RunArgs(
        name="triage", text='look at "this"'
    )
    assert parse_args(RunArgs, "triage", "/skill") == RunArgs(name="triage")
    with pytest.raises(UsageError):
        parse_args(RunArgs, "  ", "/skill")


class ScopeArgs(CommandArgs):
    exclusive = ("global_", "me")
    unknown_options_are_text = False
    global_: bool = flag()  # a keyword as a field name: the switch drops the underscore
    me: bool = flag()
    fact: str = rest("FACT")


def test_exclusive_flags_are_shown_as_alternatives_and_refused_together() -> None:
    assert syntax(ScopeArgs) == "[--global | --me] FACT"
    assert parse_args(ScopeArgs, "--GLOBAL we deploy", "/save") == ScopeArgs(
        global_=True, fact="we deploy"
    )
    with pytest.raises(UsageError, match=r"^Give only one of `--global` and `--me`\.$"):
        parse_args(ScopeArgs, "--me --global we deploy", "/save")


def test_an_unknown_option_before_the_text_is_refused_where_the_model_says_so() -> None:
    with pytest.raises(UsageError, match=r"^Unknown option `--everyone`\.$"):
        parse_args(ScopeArgs, "--everyone we deploy", "/save")
    assert parse_args(ScopeArgs, "we use --global flags", "/save").fact == "we use --global flags"
    assert parse_args(AskArgs, "--everyone x", "/ask").question == "--everyone x"  # a question


def test_exclusive_names_flags_and_options_only() -> None:
    class Wrong(CommandArgs):
        exclusive = ("name", "me")
        name: str = word("NAME")
        me: bool = flag()

    with pytest.raises(TypeError, match="exclusive"):
        syntax(Wrong)


@pytest.mark.parametrize("text", ["", "me", "extra words --verbose", 'a "stray quote'])
def test_ignored_arguments_accept_anything(text: str) -> None:
    assert syntax(IgnoredArgs) == ""
    assert parse_args(IgnoredArgs, text, "/help") == IgnoredArgs()


@pytest.mark.parametrize("text", ["extra", "--verbose"])
def test_no_arguments_refuse_words(text: str) -> None:
    assert parse_args(NoArgs, "", "/memory list") == NoArgs()
    with pytest.raises(UsageError):
        parse_args(NoArgs, text, "/memory list")


def _small(value: int) -> int:
    if value > 5:
        raise ValueError("--depth must be a number from 1 to 5.")
    return value


class DepthArgs(CommandArgs):
    depth: Annotated[int | None, AfterValidator(_small)] = option("N")


def test_a_validators_own_message_is_the_error() -> None:
    assert parse_args(DepthArgs, "--depth 3", "/graph").depth == 3
    with pytest.raises(UsageError, match=r"^--depth must be a number from 1 to 5\.$"):
        parse_args(DepthArgs, "--depth 9", "/graph")
    with pytest.raises(UsageError, match=r"^`x` is not a valid N\.$"):
        parse_args(DepthArgs, "--depth x", "/graph")


async def _verb(_ctx: CommandContext, _verb: str, _args: Any) -> Reply:
    raise AssertionError("not run")


def test_a_command_that_also_runs_without_a_verb_shows_its_verbs_in_brackets() -> None:
    bare = Verb((), NoArgs, _verb)
    show = Verb(("show",), NameArgs, _verb)
    reload = Verb(("reload",), NoArgs, _verb)
    assert bare.usage("skills") == "/skills"
    assert verbs_line("skills", [bare, show, reload]) == "/skills [show NAME | reload]"
    assert verbs_line("skills", [show, reload]) == "/skills show NAME | reload"
    many = [Verb((f"verb{i}",), NameArgs, _verb) for i in range(8)]
    shortened = "/x [" + "|".join(f"verb{i}" for i in range(8)) + " ...]"
    assert verbs_line("x", [bare, *many]) == shortened
