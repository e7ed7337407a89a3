"""The skills on disk: folders of `NAME/SKILL.md`, loaded once and reloaded when they change.

Folders are searched in order (the configured ones, then the working directory's `skills/`,
then the examples shipped with Threadline); a team's skill shadows a shipped example of the
same name, and two team skills with one name are a problem to report. Whatever is wrong with a
skill is reported once (logged at load, listed by `problems()` and `threadline skills check`)
and the skill is skipped; nothing here ever stops the bot.

Requests never touch the disk for the index: `refresh()` compares modification times and is
called by a background task and by `/skills reload`; reading a skill's files (`read_file`) is
the only per-use I/O, and only when the model or a user asks for a file.

A skill's files are chosen by the rules of a repository's (`core.code.selection`: no secret-
looking name, no symlink, nothing a `.gitignore` in the skill ignores, no binary) plus one: no
hidden file or folder (`.git/config`, `.env.local`); what is listed is exactly what can be read.
Text handed out (the body, a file) is redacted like code (`core.code.redact`): a skill folder
is often a copy of an ops repository, credentials and all.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath
from typing import Literal

from core.code.redact import redact
from core.code.secrets import looks_secret
from core.code.selection import Refusal, Selection, skipped_dir
from core.skills.format import SKILL_FILE, Frontmatter, SkillFormatError, read_skill

log = logging.getLogger(__name__)

SHIPPED_DIR = Path(__file__).resolve().parents[2] / "skills"
MAX_FILES_LISTED = 50  # per skill, in what load_skill tells the model
MAX_FILE_BYTES = 64 * 1024  # one reference file, as read by read_skill_file (cut there)
MAX_ENTRIES_EXAMINED = 2_000  # per skill, when listing its files: a folder may hold anything


@dataclass(frozen=True, slots=True)
class Skill:
    name: str
    description: str
    body: str
    folder: Path
    meta: Frontmatter
    shipped: bool = False
    files: tuple[str, ...] = ()  # paths relative to the folder, SKILL.md excluded, sorted
    # Files left out because they are unsafe or unreadable (a secret-looking name, a symbolic
    # link, too large, binary), with why: hidden and .gitignore'd files are left out by intent.
    refused: tuple[tuple[str, str], ...] = ()

    @property
    def allowed_tools(self) -> tuple[str, ...] | None:
        tools = self.meta.allowed_tools
        return tuple(tools) if tools is not None else None

    @property
    def channels(self) -> frozenset[str]:
        return frozenset(self.meta.channels or ())


@dataclass(frozen=True, slots=True)
class SkillProblem:
    path: Path
    reason: str
    error: bool = True  # False: a warning (the skill loads)

    def __str__(self) -> str:
        return f"{'error' if self.error else 'warning'}: {self.path}: {self.reason}"


class SkillFileError(ValueError):
    """A skill file that cannot be handed out; the message is safe to show."""


@dataclass(slots=True)
class _Scan:
    skills: dict[str, Skill] = field(default_factory=dict)
    problems: list[SkillProblem] = field(default_factory=list)


def default_folders(
    extra: Sequence[Path] = (), cwd: Path | None = None, examples: bool = True
) -> list[Path]:
    """The configured folders, then `./skills`, then the shipped examples (each once; without
    `examples`, never the shipped folder, even when `./skills` is it: a checkout's own)."""
    folders: list[Path] = []
    shipped = SHIPPED_DIR.resolve()
    for f in [*extra, (cwd or Path.cwd()) / "skills", SHIPPED_DIR]:
        resolved = f.expanduser().resolve()
        if resolved == shipped and not examples:
            continue
        if resolved not in folders:
            folders.append(resolved)
    return folders


def scan(folders: Iterable[Path], shipped: Path | None = SHIPPED_DIR) -> _Scan:
    """Load every skill under `folders` (blocking file I/O)."""
    out = _Scan()
    shipped_dir = shipped.resolve() if shipped is not None else None
    for root in folders:
        if not root.is_dir():
            continue
        is_shipped = shipped_dir is not None and root.resolve() == shipped_dir
        try:
            entries = sorted(p for p in root.iterdir() if (p / SKILL_FILE).is_file())
        except OSError as exc:
            out.problems.append(SkillProblem(root, f"cannot list the folder: {exc.strerror}"))
            continue
        for folder in entries:
            _load_one(out, folder, is_shipped)
    return out


def _load_one(out: _Scan, folder: Path, shipped: bool) -> None:
    path = folder / SKILL_FILE
    try:
        doc = read_skill(folder)
    except SkillFormatError as exc:
        out.problems.append(SkillProblem(path, str(exc)))
        return
    except OSError as exc:
        out.problems.append(SkillProblem(path, f"cannot be read: {exc.strerror or exc}"))
        return
    name = doc.meta.name
    earlier = out.skills.get(name)
    if earlier is not None:
        if shipped:  # a team's own skill of that name wins over the shipped example
            log.info("skill %s in %s shadows the shipped example", name, earlier.folder)
            return
        out.problems.append(
            SkillProblem(path, f"duplicate name {name!r}: already defined in {earlier.folder}")
        )
        return
    out.problems.extend(SkillProblem(path, w, error=False) for w in doc.warnings)
    files, refused = _list_files(folder)
    out.skills[name] = Skill(
        name=name,
        description=" ".join(redact(doc.meta.description, SKILL_FILE).split()),
        body=redact(doc.body, SKILL_FILE),
        folder=folder.resolve(),
        meta=doc.meta,
        shipped=shipped,
        files=files,
        refused=refused,
    )


def _hidden(rel: str) -> bool:
    return any(part.startswith(".") for part in rel.split("/"))


_REPORTED_REFUSALS = frozenset({"secret", "symlink", "large", "binary"})
MAX_REFUSED_LISTED = 20


def _list_files(folder: Path) -> tuple[tuple[str, ...], tuple[tuple[str, str], ...]]:
    """The files `read_file` would hand out, sorted, SKILL.md excluded; and the files refused
    as unsafe or unreadable, with why (`Skill.refused`)."""
    found: list[str] = []
    refused: list[tuple[str, str]] = []
    root = folder.resolve()
    selection = Selection(root)
    examined = 0
    for dirpath, dirnames, filenames in os.walk(root):  # symlinked folders are not entered
        # Pruned for speed only: `selection` refuses whatever lies below these anyway.
        dirnames[:] = sorted(d for d in dirnames if not d.startswith(".") and not skipped_dir(d))
        for name in sorted(filenames):
            examined += 1
            if examined > MAX_ENTRIES_EXAMINED:
                return tuple(found), tuple(refused)
            rel = (Path(dirpath) / name).relative_to(root).as_posix()
            if rel == SKILL_FILE or _hidden(rel):
                continue
            why = selection.refusal(rel)
            if why is not None:
                if why in _REPORTED_REFUSALS and len(refused) < MAX_REFUSED_LISTED:
                    refused.append((rel, _REFUSALS[why].format(rel=rel)))
                continue
            found.append(rel)
            if len(found) >= MAX_FILES_LISTED:
                return tuple(found), tuple(refused)
    return tuple(found), tuple(refused)


def _signature(folders: Iterable[Path]) -> tuple[tuple[str, int, int], ...]:
    """What changes when a skill is added, removed or edited: every folder's and SKILL.md's
    modification time (a reference file is read from disk when asked for, so it needs none)."""
    sig: list[tuple[str, int, int]] = []
    for root in folders:
        try:
            st = root.stat()
            sig.append((str(root), st.st_mtime_ns, 0))
            for p in sorted(root.iterdir()):
                try:
                    s = (p / SKILL_FILE).stat()
                except OSError:
                    continue
                sig.append((str(p), s.st_mtime_ns, s.st_size))
        except OSError:
            sig.append((str(root), -1, -1))
    return tuple(sig)


class SkillLibrary:
    """The loaded skills. Reads are plain attribute access (no I/O); `refresh` swaps in a new
    set atomically when something on disk changed."""

    def __init__(self, folders: Sequence[Path], shipped: Path | None = SHIPPED_DIR) -> None:
        self.folders = list(folders)
        self._shipped = shipped
        self._skills: dict[str, Skill] = {}
        self._problems: list[SkillProblem] = []
        self._reported: set[tuple[str, str]] = set()
        self._signature: tuple[tuple[str, int, int], ...] | None = None
        self.generation = 0  # bumped on every change; caches key on it

    def load(self) -> list[SkillProblem]:
        """(Re)load everything now; returns the problems found (each logged once ever)."""
        signature = _signature(self.folders)
        result = scan(self.folders, self._shipped)
        self._skills = dict(sorted(result.skills.items()))
        self._problems = result.problems
        self._signature = signature
        self.generation += 1
        for p in result.problems:
            key = (str(p.path), p.reason)
            if key not in self._reported:
                self._reported.add(key)
                (log.warning if p.error else log.info)("skill %s", p)
        return list(result.problems)

    def refresh(self) -> bool:
        """Reload if a folder or a SKILL.md changed since the last load; True if it did."""
        if self._signature is not None and _signature(self.folders) == self._signature:
            return False
        self.load()
        return True

    def ensure_loaded(self) -> None:
        if self._signature is None:
            self.load()

    def all(self) -> list[Skill]:
        return list(self._skills.values())

    def get(self, name: str) -> Skill | None:
        return self._skills.get(name.strip().lower())

    def problems(self) -> list[SkillProblem]:
        return list(self._problems)

    def relative(self, path: Path) -> str:
        """`path` as chat may show it: relative to the skills folder holding it (the server's
        absolute paths name its users and layout), or only its name."""
        for root in self.folders:
            if path.is_relative_to(root) and path != root:
                return path.relative_to(root).as_posix()
        return path.name

    def describe(self, problem: SkillProblem) -> str:
        """`problem` as chat may show it: no absolute path, in its place or in its reason."""
        reason = problem.reason
        for root in sorted(self.folders, key=lambda f: len(str(f)), reverse=True):
            reason = reason.replace(f"{root}{os.sep}", "")
        kind = "error" if problem.error else "warning"
        return f"{kind}: {self.relative(problem.path)}: {reason}"

    @staticmethod
    def read_file(skill: Skill, relative: str, max_bytes: int = MAX_FILE_BYTES) -> str:
        """One text file of a skill, by the rules in the module docstring, redacted. Raises
        `SkillFileError`; its message names the path as given, never where the skill is."""
        rel = _clean(relative)
        if looks_secret(rel):
            raise SkillFileError(_REFUSALS["secret"].format(rel=rel))
        if _hidden(rel):
            raise SkillFileError(_REFUSALS["hidden"].format(rel=rel))
        try:
            refusal = Selection(skill.folder).refusal(rel)
            if refusal is not None:
                if refusal == "missing":
                    listed = ", ".join(skill.files[:20]) or "none"
                    raise SkillFileError(f"the skill has no file {rel!r} (its files: {listed})")
                raise SkillFileError(_REFUSALS[refusal].format(rel=rel))
            # No symlink was on the path a moment ago; O_NOFOLLOW keeps it so for the file.
            fd = os.open(skill.folder / rel, os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0))
            with os.fdopen(fd, "rb") as fh:
                data = fh.read(max_bytes + 1)
        except OSError as exc:  # a name too long, a file gone or swapped since the check
            raise SkillFileError(f"{rel} cannot be read: {exc.strerror or 'error'}") from None
        cut = len(data) > max_bytes
        text = redact(data[:max_bytes].decode("utf-8", errors="replace"), rel)
        if cut:
            text += f"\n[cut at {max_bytes:,} bytes]"
        return text


_REFUSALS: dict[Refusal | Literal["hidden"], str] = {
    "hidden": "refused: {rel} is hidden (its name or a folder's starts with '.')",
    "secret": "refused: {rel} looks like it holds secrets (keys, credentials, .env)",
    "ignored": "refused: {rel} is ignored (the skill's .gitignore or a vendored folder)",
    "symlink": "refused: {rel} is or goes through a symbolic link",
    "large": "refused: {rel} is too large to read",
    "binary": "refused: {rel} is not a text file",
}


def _clean(relative: str) -> str:
    """`relative` as a clean "/"-separated path inside a skill; `SkillFileError` otherwise."""
    raw = relative.strip().replace("\\", "/")
    if "\x00" in raw:
        raise SkillFileError("that path is not valid")
    parts = [p for p in PurePosixPath(raw).parts if p != "."]
    if raw.startswith(("/", "~")) or ".." in parts:
        raise SkillFileError("that path is outside the skill's folder")
    if not parts:
        raise SkillFileError("give a file path inside the skill, e.g. references/notes.md")
    return "/".join(parts)
