"""Path safety for the code tools: a path the model names is repo-relative, never absolute,
never `..`, and once resolved (symlinks followed) it stays inside the repository root."""

from __future__ import annotations

import re
from pathlib import Path, PurePosixPath

from core.code.secrets import looks_secret
from core.code.selection import MAX_FILE_BYTES, Refusal
from core.errors import ToolError

_DRIVE = re.compile(r"^[A-Za-z]:")


def clean_relative(path: str, what: str = "path") -> str:
    """A repo-relative path in "/" form; raises ToolError for absolute paths and `..`."""
    raw = path.strip().replace("\\", "/")
    if "\0" in raw:
        raise ToolError(f"refused: the {what} contains a NUL character")
    if raw.startswith("/") or _DRIVE.match(raw) or raw.startswith("~"):
        raise ToolError(f"refused: the {what} must be relative to the repository root")
    parts = [p for p in PurePosixPath(raw).parts if p != "."]
    if ".." in parts:
        raise ToolError(f"refused: the {what} may not contain '..'")
    return "/".join(parts)


def confine(root: Path, rel: str) -> tuple[Path, str]:
    """Resolve `rel` under `root` following symlinks; it must stay inside `root`. Returns the
    resolved path and its repo-relative form (what a symlink really points at)."""
    base = root.resolve()
    target = (base / rel).resolve()
    if not target.is_relative_to(base):
        raise ToolError("refused: that path leads outside the repository")
    return target, target.relative_to(base).as_posix()


def refuse_secret(rel: str) -> None:
    if looks_secret(rel):
        raise ToolError(f"refused: {rel} looks like it holds secrets (keys, credentials, .env)")


def refusal_message(refusal: Refusal, rel: str, repo: str) -> str:
    """Why `Selection` will not let a tool read `rel`, in words the model can act on."""
    return {
        "secret": f"refused: {rel} looks like it holds secrets (keys, credentials, .env)",
        "missing": f"no file {rel!r} in {repo}; use glob_files to find it",
        "ignored": f"refused: {rel} is ignored (.gitignore or a vendored folder)",
        "symlink": f"refused: {rel} is or goes through a symbolic link; read the real path",
        "large": f"refused: {rel} is larger than {MAX_FILE_BYTES:,} bytes",
        "binary": f"refused: {rel} is a binary file",
    }[refusal]
