"""`threadline skills check [DIR ...]`: the same report the bot logs when it loads skills."""

from __future__ import annotations

import sys
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from config.settings import Settings

EXIT_OK, EXIT_FAILED, EXIT_CONFIG = 0, 1, 2


def check(dirs: Sequence[str], settings: Settings | None) -> int:
    """Load the skills of `dirs` (else of the configured folders) and print every problem.
    Exits 1 when a skill has an error (it would be skipped), 0 when warnings at most."""
    import logging

    from core.skills.library import SkillLibrary, default_folders

    logging.getLogger("core.skills").setLevel(logging.CRITICAL)  # printed below instead

    if dirs:
        folders = [Path(d).expanduser() for d in dirs]
        missing = [str(f) for f in folders if not f.is_dir()]
        if missing:
            print(f"not a folder: {', '.join(missing)}", file=sys.stderr)
            return EXIT_CONFIG
        library = SkillLibrary([f.resolve() for f in folders], shipped=None)
    else:
        assert settings is not None
        folders = default_folders(settings.skills_dirs, examples=settings.skills_examples)
        library = SkillLibrary(folders)
    problems = library.load()
    for p in problems:
        print(p)
    errors = sum(p.error for p in problems)
    warnings = len(problems) - errors
    searched = ", ".join(str(f) for f in folders)
    print(
        f"{len(library.all())} skill(s) loaded, {errors} error(s), {warnings} warning(s) "
        f"(searched: {searched})"
    )
    return EXIT_FAILED if errors else EXIT_OK
