"""The settings file: where it is, and its reading as a file (unknown keys and values of the
wrong TOML type are refused, naming the key)."""

from __future__ import annotations

import difflib
import os
import tomllib
import types
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any, Union, get_args, get_origin

from pydantic import AliasChoices, BaseModel
from pydantic_settings import BaseSettings, TomlConfigSettingsSource

from config.errors import SettingsError
from core.policy import toml_kind

if TYPE_CHECKING:
    from importlib.resources.abc import Traversable

CONFIG_DIR = Path(__file__).resolve().parent
DEFAULT_CONFIG_FILE = CONFIG_DIR / "threadline.toml"


def config_file() -> Path:
    return Path(os.environ.get("THREADLINE_CONFIG") or DEFAULT_CONFIG_FILE)


def _plain_type(annotation: object) -> object:
    """`int | None` -> int; anything else unchanged."""
    if get_origin(annotation) in (Union, types.UnionType):
        args = [a for a in get_args(annotation) if a is not type(None)]
        if len(args) == 1:
            return args[0]
    return annotation


# What a TOML value must be for a field of this type. The environment only has text, so the
# model converts leniently ("32768" -> 32768, "false" -> False); the file has typed values, and
# there `true` for a number or `1` for a switch is a mistake to report, not to convert.
_TOML_TYPES: dict[object, tuple[str, Callable[[object], bool]]] = {
    int: ("an integer", lambda v: isinstance(v, int) and not isinstance(v, bool)),
    float: ("a number", lambda v: isinstance(v, int | float) and not isinstance(v, bool)),
    bool: ("true or false", lambda v: isinstance(v, bool)),
}


class SettingsFileSource(TomlConfigSettingsSource):
    """The settings file, checked as a file: unknown keys (typos such as `llm_context_windw`)
    and values of the wrong TOML type are refused, naming the key. The model itself ignores
    unknown names because the environment and `.env` hold many variables that are not ours."""

    def __init__(self, settings_cls: type[BaseSettings], path: Path) -> None:
        super().__init__(settings_cls, toml_file=path)
        problems = settings_file_problems(settings_cls, self.toml_data)
        if problems:
            raise SettingsError(
                "\n".join(
                    [
                        f"Threadline cannot start: the settings file {path} (THREADLINE_CONFIG) "
                        "has problems.",
                        *(f"  - {p}" for p in problems),
                    ]
                )
            )

    def _read_file(self, file_path: Path | Traversable) -> dict[str, Any]:
        where = f"the settings file {file_path} (THREADLINE_CONFIG)"
        try:
            return super()._read_file(file_path)
        except UnicodeDecodeError:
            raise SettingsError(
                f"Threadline cannot start: {where} is not UTF-8 text (save it as UTF-8)"
            ) from None
        except tomllib.TOMLDecodeError as exc:
            raise SettingsError(
                f"Threadline cannot start: {where} is not valid TOML: {exc}"
            ) from None
        except OSError as exc:
            raise SettingsError(
                f"Threadline cannot start: {where} cannot be read: {exc.strerror or exc}"
            ) from None


def settings_file_keys(settings_cls: type[BaseModel]) -> dict[str, str]:
    """Every key the settings file may use (lower case) -> its field: the field names and their
    validation aliases (the environment names, such as `threadline_data_dir`)."""
    keys: dict[str, str] = {}
    for name, field in settings_cls.model_fields.items():
        keys[name.lower()] = name
        alias = field.validation_alias
        choices = alias.choices if isinstance(alias, AliasChoices) else [alias]
        for choice in choices:
            if isinstance(choice, str):
                keys[choice.lower()] = name
    return keys


def settings_file_problems(settings_cls: type[BaseModel], data: dict[str, Any]) -> list[str]:
    keys = settings_file_keys(settings_cls)
    # Fields with a validator of their own parse several forms on purpose ("10MB", "1, 2").
    parsed = {
        field
        for decorator in settings_cls.__pydantic_decorators__.field_validators.values()
        if decorator.info.mode != "after"
        for field in decorator.info.fields
    }
    problems: list[str] = []
    for key, value in data.items():
        name = keys.get(key.lower())
        if name is None:
            close = difflib.get_close_matches(key.lower(), sorted(keys), n=1)
            hint = f" (did you mean {close[0]}?)" if close else ""
            problems.append(f"{key}: unknown key{hint}")
            continue
        if name in parsed:
            continue
        expected = _TOML_TYPES.get(_plain_type(settings_cls.model_fields[name].annotation))
        if expected is not None and not expected[1](value):
            problems.append(f"{key}: must be {expected[0]}, not {toml_kind(value)}")
    return problems
