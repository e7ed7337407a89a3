"""The SKILL.md format: YAML frontmatter between `---` lines, then a Markdown body.

Frontmatter follows the public agent-skills format, so a skill written for another agent loads
unchanged: `name` (1-64 chars: lowercase letters, digits, single hyphens; equal to the folder
name), `description` (1-1,024 chars), optional `license`, `compatibility` (up to 500 chars),
`metadata` (string to string) and `allowed-tools`; plus Threadline's optional `channels` hint.
Keys other agents define (and Threadline does not use) are kept as warnings, not errors.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Annotated, Any

import yaml
from pydantic import BaseModel, BeforeValidator, ConfigDict, Field, ValidationError

SKILL_FILE = "SKILL.md"
NAME_PATTERN = re.compile(r"^[a-z0-9]+(?:-[a-z0-9]+)*$")
MAX_NAME = 64
MAX_DESCRIPTION = 1_024
MAX_COMPATIBILITY = 500
# A SKILL.md larger than this is a mistake (a log pasted in?), not a playbook: the public format
# asks for bodies under ~5,000 tokens, and a loaded skill has to fit beside the conversation.
MAX_SKILL_BYTES = 64 * 1024

_FENCE = re.compile(r"^---[ \t]*\r?\n(.*?)\r?\n---[ \t]*(?:\r?\n|$)", re.DOTALL)


class SkillFormatError(ValueError):
    """A SKILL.md that cannot be used; the message says why (without the file name)."""


def _words(value: object) -> object:
    # `allowed-tools: grep_code read_file` (the public format: space-delimited) or a YAML list.
    if isinstance(value, str):
        return value.split()
    return value


def _names(value: object) -> object:
    if isinstance(value, str | int):
        return [str(value)]
    if isinstance(value, list):
        return [str(v) if isinstance(v, int) else v for v in value]
    return value


class Frontmatter(BaseModel):
    # Unknown keys are allowed (other agents define their own); `unknown_keys` reports them.
    model_config = ConfigDict(extra="allow", strict=True, populate_by_name=True)

    name: str = Field(min_length=1, max_length=MAX_NAME)
    description: str = Field(min_length=1, max_length=MAX_DESCRIPTION)
    license: str | None = None
    compatibility: str | None = Field(None, min_length=1, max_length=MAX_COMPATIBILITY)
    metadata: dict[str, str] = {}
    allowed_tools: Annotated[list[str] | None, BeforeValidator(_words)] = Field(
        None, alias="allowed-tools"
    )
    # Threadline's hint: channel ids where this skill is always listed in the index.
    channels: Annotated[list[str] | None, BeforeValidator(_names)] = None

    def unknown_keys(self) -> list[str]:
        return sorted(self.model_extra or {})


@dataclass(frozen=True, slots=True)
class SkillDoc:
    """A parsed SKILL.md: its checked frontmatter, its body and what was odd but usable."""

    meta: Frontmatter
    body: str
    warnings: tuple[str, ...] = field(default=())


def parse_skill(text: str, folder_name: str) -> SkillDoc:
    """Parse and check one SKILL.md. Raises `SkillFormatError` saying what is wrong."""
    if len(text.encode("utf-8")) > MAX_SKILL_BYTES:
        raise SkillFormatError(
            f"{SKILL_FILE} is {len(text.encode('utf-8')):,} bytes; the limit is "
            f"{MAX_SKILL_BYTES:,} (move long material into references/ files)"
        )
    text = text.removeprefix("\ufeff")
    m = _FENCE.match(text)
    if m is None:
        raise SkillFormatError(
            f"{SKILL_FILE} must start with YAML frontmatter between two '---' lines"
        )
    try:
        raw: Any = yaml.safe_load(m[1])
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f" (line {mark.line + 2})" if mark is not None else ""
        problem = getattr(exc, "problem", None) or "invalid YAML"
        raise SkillFormatError(f"the frontmatter is not valid YAML{where}: {problem}") from None
    if not isinstance(raw, dict):
        raise SkillFormatError("the frontmatter must be a YAML mapping (key: value lines)")
    try:
        meta = Frontmatter.model_validate(raw)
    except ValidationError as exc:
        raise SkillFormatError(_describe(exc)) from None
    if not NAME_PATTERN.match(meta.name):
        raise SkillFormatError(
            f"name {meta.name!r} must be lowercase letters, digits and single hyphens "
            "(no leading, trailing or double hyphen)"
        )
    if meta.name != folder_name:
        raise SkillFormatError(f"name {meta.name!r} must equal its folder's name {folder_name!r}")
    if not meta.description.strip():
        raise SkillFormatError("description must not be blank")
    body = text[m.end() :].strip()
    warnings = [f"key {key!r} is not used by Threadline" for key in meta.unknown_keys()]
    if not body:
        warnings.append("the body is empty: loading this skill gives the model only its name")
    return SkillDoc(meta=meta, body=body, warnings=tuple(warnings))


def _describe(exc: ValidationError) -> str:
    problems = []
    for err in exc.errors():
        where = ".".join(str(p) for p in err["loc"]) or "frontmatter"
        kind = err["type"]
        if kind == "missing":
            problems.append(f"{where} is required")
        elif kind in ("string_too_long", "too_long"):
            limit = (err.get("ctx") or {}).get("max_length")
            problems.append(f"{where} is too long (at most {limit} characters)")
        elif kind in ("string_too_short", "too_short"):
            problems.append(f"{where} must not be empty")
        elif kind == "string_type":
            problems.append(f"{where} must be a string, not {type(err['input']).__name__}")
        elif kind == "dict_type":
            problems.append(f"{where} must be a mapping")
        elif kind == "list_type":
            problems.append(f"{where} must be a list or a space-separated string")
        else:
            problems.append(f"{where}: {err['msg']}")
    return "; ".join(problems)


def read_skill(folder: Path) -> SkillDoc:
    """Read and parse `folder/SKILL.md`. Raises `SkillFormatError` or `OSError`."""
    data = (folder / SKILL_FILE).read_bytes()
    if len(data) > MAX_SKILL_BYTES:
        raise SkillFormatError(
            f"{SKILL_FILE} is {len(data):,} bytes; the limit is {MAX_SKILL_BYTES:,} "
            "(move long material into references/ files)"
        )
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        raise SkillFormatError(f"{SKILL_FILE} is not UTF-8 text") from None
    return parse_skill(text, folder.name)
