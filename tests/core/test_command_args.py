"""Declared command arguments (core/commands.py `CommandArgs`): one declaration gives the
parsing, the errors and the usage line."""

from __future__ import annotations

from typing import Annotated

import pytest
from pydantic import Field

from core.commands import (
    AskArgs,
    CommandArgs,
    UsageError,
    flag,
    option,
    parse_args,
    rest,
    syntax,
    word,
)


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
